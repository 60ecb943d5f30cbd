package entry_test

import (
	"errors"
	"maps"
	"testing"
	"time"
	"unsafe"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

// TestJudge: Judge returns the state rule an entry breaks and still moves
// the head to it, so a checker goes on; PositionAt puts the head just
// before an entry whatever the chain before it was, so a broken link is
// not judged again by the fold.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	st := entry.NewState(entry.Head{}, nil)
	rot := func(seq uint64, prev entry.Hash, old, new string, at time.Time) *entry.Entry {
		return &entry.Entry{V: 1, Seq: seq, Prev: prev, Time: entry.Time{Time: at}, Kind: entry.KindKeyRotation, OldKey: old, NewKey: new, Note: "n"}
	}
	h1, h2, h3 := entry.Sum256([]byte("1")), entry.Sum256([]byte("2")), entry.Sum256([]byte("3"))
	if err := st.Judge(rot(1, entry.ZeroHash, "", "k1", t0), h1); err != nil {
		t.Fatalf("first rotation: %v", err)
	}
	// A rotation whose old key is not the key in force breaks the key
	// chain: the error names it, and the head is still at seq 2.
	err := st.Judge(rot(2, h1, "wrong", "k2", t0.Add(time.Second)), h2)
	if !errors.Is(err, entry.ErrKeyChain) {
		t.Fatalf("rotation from the wrong key: %v, want ErrKeyChain", err)
	}
	if st.Seq != 2 || st.Hash != h2 || !st.Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("head after a broken rule: %d %x %s, want seq 2 at its hash and time", st.Seq, st.Hash, st.Time)
	}
	// An entry whose prev and time do not follow (a broken chain, judged
	// elsewhere) is folded at its own position: no chain error from the fold.
	e3 := rot(3, h1, "k1", "k3", t0.Add(-time.Hour))
	st.Head = entry.PositionAt(st.Head, e3)
	if st.Seq != 2 || st.Hash != h1 || !st.Time.Equal(e3.Time.Time) {
		t.Fatalf("PositionAt: %d %x %s", st.Seq, st.Hash, st.Time)
	}
	if err := st.Judge(e3, h3); err != nil {
		t.Fatalf("entry folded at its own position: %v", err)
	}
	if st.KeyInForce() != "k3" {
		t.Errorf("key in force %q, want k3", st.KeyInForce())
	}
}

// TestReset: a State Reset after applying entries answers and applies as
// a new State at the same head and tables does; nothing of its earlier
// Delta or error survives.
func TestReset(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	man, lock, pay := entry.Sum256([]byte("m")), entry.Sum256([]byte("l")), entry.Sum256([]byte("p"))
	head := entry.Head{Seq: 1, Hash: entry.Sum256([]byte("e1")), Time: t0, Manifest: man, Lock: lock, HasManifest: true, HasLock: true}
	handoff := func(seq uint64, prev entry.Hash, id string, blocks ...string) *entry.Entry {
		size := int64(1)
		return &entry.Entry{V: 1, Seq: seq, Prev: prev, Time: entry.Time{Time: t0}, Kind: entry.KindHandoff, Decision: "accepted",
			HandoffID: entry.Str(id), ManifestSHA256: &man, LockSHA256: &lock, PayloadSHA256: &pay, PayloadSize: &size,
			IdempotencyKey: "key-" + id, Blocks: blocks}
	}
	used := entry.NewState(head, nil)
	if err := used.Apply(handoff(2, head.Hash, "a", "agent-x"), entry.Sum256([]byte("e2"))); err != nil {
		t.Fatal(err)
	}
	used.Delta.Redactions = append(used.Delta.Redactions, entry.Redaction{Seq: 9, Of: 1})
	used.Reset(head)
	fresh := entry.NewState(head, nil)
	for _, st := range []*entry.State{used, fresh} {
		if !st.Delta.Empty() || st.Err() != nil || st.Head != head {
			t.Fatalf("after Reset: delta %+v, err %v, head %+v", st.Delta, st.Err(), st.Head)
		}
		if _, _, ok := st.Accepted("a"); ok {
			t.Fatal("an acceptance of the Delta before Reset survives")
		}
		if _, ok := st.Blocked("agent-x"); ok {
			t.Fatal("a block of the Delta before Reset survives")
		}
		if err := st.Apply(handoff(2, head.Hash, "b", "agent-y"), entry.Sum256([]byte("e2'"))); err != nil {
			t.Fatal(err)
		}
	}
	if len(used.Delta.Accepted) != 1 || len(used.Delta.Blocked) != 1 || len(used.Delta.Idempotent) != 1 ||
		used.Delta.Accepted["b"] != fresh.Delta.Accepted["b"] || used.Head != fresh.Head {
		t.Errorf("Reset state applied: %+v %+v; new state: %+v %+v", used.Head, used.Delta, fresh.Head, fresh.Delta)
	}
}

// TestFoldKeepsNoDecodedBytes: the strings the fold keeps as table keys
// (handoff ids, idempotency keys, blocked agents) are copies: Decode gives
// an entry's strings one backing array, and a kept substring would keep
// every decoded entry of a long replay alive.
func TestFoldKeepsNoDecodedBytes(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	man, lock, pay := entry.Sum256([]byte("m")), entry.Sum256([]byte("l")), entry.Sum256([]byte("p"))
	size := int64(1)
	head := entry.Head{Seq: 1, Hash: entry.Sum256([]byte("e1")), Time: t0, Manifest: man, Lock: lock, HasManifest: true, HasLock: true}
	e := &entry.Entry{V: 1, Seq: 2, Prev: head.Hash, Time: entry.Time{Time: t0}, Kind: entry.KindHandoff, Decision: "accepted",
		HandoffID: entry.Str("h-1"), ManifestSHA256: &man, LockSHA256: &lock, PayloadSHA256: &pay, PayloadSize: &size,
		IdempotencyKey: "key-1", Blocks: []string{"agent-b"}, Format: entry.Str("governed/1"), Source: entry.Str("agent-a"), Target: entry.Str("agent-b"), WorkflowID: entry.Str("wf")}
	e.Reasons = &[]reason.Reason{}
	raw, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	d, err := entry.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	st := entry.NewState(head, nil)
	if err := st.Judge(d, entry.LeafHash(raw)); err != nil {
		t.Fatal(err)
	}
	decoded := map[string]string{"handoff id": d.HandoffID.S, "idempotency key": d.IdempotencyKey, "blocked agent": d.Blocks[0]}
	kept := map[string][]string{"handoff id": keys(st.Delta.Accepted), "idempotency key": keys(st.Delta.Idempotent), "blocked agent": keys(st.Delta.Blocked)}
	for what, s := range decoded {
		if len(kept[what]) != 1 || kept[what][0] != s {
			t.Fatalf("%s: the fold keeps %q, want [%q]", what, kept[what], s)
		}
		if unsafe.StringData(kept[what][0]) == unsafe.StringData(s) {
			t.Errorf("%s: the fold's key shares the decoded entry's bytes", what)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestApplyBlocked: a Delta applied to a blocked table adds its blocks
// and drops its unblocks; a lock that lifted every block empties the
// table before the blocks that came after it.
func TestApplyBlocked(t *testing.T) {
	base := map[string]uint64{"a": 1, "b": 2, "c": 3}
	for _, tc := range []struct {
		name string
		d    entry.Delta
		want map[string]uint64
	}{
		{"nothing", entry.Delta{}, map[string]uint64{"a": 1, "b": 2, "c": 3}},
		{"block and unblock", entry.Delta{Blocked: map[string]uint64{"d": 9, "a": 8}, Unblocked: map[string]bool{"b": true}},
			map[string]uint64{"a": 8, "c": 3, "d": 9}},
		{"all lifted, then a block", entry.Delta{ClearBlocked: true, Blocked: map[string]uint64{"e": 7}},
			map[string]uint64{"e": 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := maps.Clone(base)
			tc.d.ApplyBlocked(got)
			if !maps.Equal(got, tc.want) {
				t.Errorf("ApplyBlocked = %v, want %v", got, tc.want)
			}
		})
	}
}
