package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/memory"
)

// TestInForceOnly: a request with InForceOnly never brings a snapshot into
// force — not on an empty ledger, not over another in force — and stores
// nothing of itself then (ErrPolicyChanged); with the snapshots in force
// it is appended as any request.
func TestInForceOnly(t *testing.T) {
	ctx := context.Background()
	l, err := memory.Open("example.com/inforce", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	snaps := func(m, k string) []ledger.Snapshot {
		return []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: []byte(m)}, {What: entry.SnapshotLock, Bytes: []byte(k)}}
	}
	unblock := func(st ledger.State, e *entry.Entry) error {
		e.Kind, e.Agent, e.Note, e.Submitter = entry.KindUnblock, "a", "n", "writer"
		return nil
	}
	head := func() uint64 { s, _, _ := l.Head(ctx); return s }

	if _, err := l.Append(ctx, &ledger.Request{Snapshots: snaps("m1", "l1"), InForceOnly: true, Build: unblock, Submitter: "writer"}); !errors.Is(err, ledger.ErrPolicyChanged) || head() != 0 {
		t.Fatalf("InForceOnly on an empty ledger: %v, head %d; want ErrPolicyChanged and nothing stored", err, head())
	}
	if _, err := l.Append(ctx, &ledger.Request{Snapshots: snaps("m1", "l1"), Submitter: "operator"}); err != nil || head() != 2 {
		t.Fatalf("the operator's snapshots: %v, head %d", err, head())
	}
	for _, stale := range [][]ledger.Snapshot{snaps("m0", "l1"), snaps("m1", "l0"), snaps("m0", "l0")} {
		if _, err := l.Append(ctx, &ledger.Request{Snapshots: stale, InForceOnly: true, Build: unblock, Submitter: "writer"}); !errors.Is(err, ledger.ErrPolicyChanged) || head() != 2 {
			t.Errorf("InForceOnly with stale snapshots %q/%q: %v, head %d; want ErrPolicyChanged and nothing stored", stale[0].Bytes, stale[1].Bytes, err, head())
		}
	}
	res, err := l.Append(ctx, &ledger.Request{Snapshots: snaps("m1", "l1"), InForceOnly: true, Build: unblock, Submitter: "writer"})
	if err != nil || len(res.Entries) != 1 || head() != 3 {
		t.Fatalf("InForceOnly with the snapshots in force: %v, head %d; want the one entry appended", err, head())
	}
}
