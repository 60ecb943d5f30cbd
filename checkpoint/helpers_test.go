package checkpoint_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
)

var _ checkpoint.TreeReader = (*ledger.Ledger)(nil)

// detRand is a deterministic entropy source for reproducible keys.
type detRand struct{ seed string }

func (r detRand) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 32 {
		s := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", r.seed, i)))
		copy(p[i:], s[:])
	}
	return len(p), nil
}

var _ io.Reader = detRand{}

func testKey(t testing.TB, name, seed string) (note.Signer, note.Verifier, string) {
	t.Helper()
	skey, vkey, err := checkpoint.GenerateKey(detRand{seed}, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v, vkey
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// openLedger creates a real ledger in a temp dir with a fixed clock, so two
// ledgers given the same appends hold the same bytes.
func openLedger(t testing.TB, origin string) *ledger.Ledger {
	t.Helper()
	l, err := bolt.Open(filepath.Join(t.TempDir(), "l.db"), &bolt.Options{Origin: origin, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// appendHandoff appends an accepted handoff whose payload is text.
func appendHandoff(t testing.TB, l *ledger.Ledger, text string) uint64 {
	t.Helper()
	payload := []byte(text)
	res, err := l.Append(context.Background(), &ledger.Request{
		Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: []byte(`{"m":1}`)}, {What: entry.SnapshotLock, Bytes: []byte(`{"l":1}`)}},
		Payload:   payload,
		Build: func(st ledger.State, e *entry.Entry) error {
			m, lk, _ := st.InForce()
			sum := entry.Sum256(payload)
			size := int64(len(payload))
			rs := []reason.Reason{}
			e.Kind, e.Format, e.Decision, e.Reasons = entry.KindHandoff, entry.Str("governed/1"), reason.Accepted, &rs
			e.HandoffID, e.Source, e.Target, e.WorkflowID = entry.Str(text), entry.Str("a"), entry.Str("b"), entry.Null()
			e.PayloadSHA256, e.PayloadSize, e.ManifestSHA256, e.LockSHA256 = &sum, &size, &m, &lk
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Last().Entry.Seq
}

// fill appends handoffs "h1".."hN" to reach n entries (the first append
// also writes the two snapshots).
func fill(t testing.TB, l *ledger.Ledger, n uint64, tag string) {
	t.Helper()
	for i := 0; ; i++ {
		size, err := l.TreeSize(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if size >= n {
			if size != n {
				t.Fatalf("fill: size %d, want %d", size, n)
			}
			return
		}
		appendHandoff(t, l, fmt.Sprintf("%s%d", tag, size+1))
	}
}

// chainWalk is what a hash chain alone can check: each entry's prev is the
// previous entry's hash and seq runs 1..n. It returns the head hash.
func chainWalk(t testing.TB, l *ledger.Ledger) (uint64, entry.Hash) {
	t.Helper()
	var prev entry.Hash
	var n uint64
	err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		e, err := entry.Decode(raw)
		if err != nil {
			return err
		}
		if e.Seq != n+1 || e.Prev != prev {
			return fmt.Errorf("chain broken at %d", seq)
		}
		n, prev = e.Seq, entry.LeafHash(raw)
		return nil
	})
	if err != nil {
		t.Fatalf("chain walk: %v", err)
	}
	return n, prev
}

func ledgerLeaf(b []byte) entry.Hash { return entry.LeafHash(b) }
