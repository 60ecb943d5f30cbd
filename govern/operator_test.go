package govern_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger/bolt"
)

// TestUnblockOnce blocks an agent through a real hash mismatch, then lets
// eight operators race to lift the block: exactly one unblock entry is
// appended, naming the blocking entry; the others get ErrNotBlocked and
// append nothing; a second unblock and one without a reason are refused.
func TestUnblockOnce(t *testing.T) {
	cfg, dir := setup(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	out, err := govern.Record(ctx, l, cfg, "doc", payload(t, "04-research-hash-mismatch.json", 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	blockSeq := out.Entry().Entry.Seq
	if _, err := govern.Unblock(ctx, l, "domain-01-research", "  ", "op"); !errors.Is(err, govern.ErrNoReason) {
		t.Fatalf("unblock without a reason = %v, want ErrNoReason", err)
	}
	if _, err := govern.Unblock(ctx, l, "domain-02-analysis", "reviewed", "op"); !errors.Is(err, govern.ErrNotBlocked) {
		t.Fatalf("unblock of an agent never blocked = %v, want ErrNotBlocked", err)
	}
	var wg sync.WaitGroup
	res := make([]*govern.Unblocked, 8)
	errs := make([]error, 8)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = govern.Unblock(ctx, l, "domain-01-research", "prompt diff reviewed", "op")
		}()
	}
	wg.Wait()
	won := 0
	for i := range res {
		switch {
		case errs[i] == nil:
			won++
			if res[i].BlockedBy != blockSeq || res[i].Entry.Submitter != "op" || res[i].Entry.Agent != "domain-01-research" {
				t.Errorf("unblock entry %+v, blocked by %d; want blocked by %d, submitter op", res[i].Entry, res[i].BlockedBy, blockSeq)
			}
		case !errors.Is(errs[i], govern.ErrNotBlocked):
			t.Errorf("racing unblock: %v", errs[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d of 8 racing unblocks appended, want exactly 1", won)
	}
	blocks, err := l.Blocks(ctx)
	if err != nil || len(blocks) != 0 {
		t.Fatalf("blocks after the unblock: %v %v", blocks, err)
	}
	mustVerify(t, l)
}

// TestRotateKeyChain: the first rotation may name no old key; each later
// one must name the key in force; a key already in force, a missing or
// wrong old key and a rotation to the same key are refused and append
// nothing.
func TestRotateKeyChain(t *testing.T) {
	cfg, dir := setup(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	const k1, k2, k3 = "example.com+1111+AAAA", "example.com+2222+BBBB", "example.com+3333+CCCC"
	steps := []struct {
		name             string
		old, new, reason string
		ok               bool
	}{
		{"first key, no old key", "", k1, "first", true},
		{"same key in force again", k1, k1, "again", false},
		{"new key already in force", "", k1, "again", false},
		{"old key missing while one is in force", "", k2, "next", false},
		{"old key not the one in force", k3, k2, "next", false},
		{"no reason", k1, k2, " ", false},
		{"second key", k1, k2, "yearly", true},
		{"retired key as old key", k1, k3, "next", false},
		{"third key", k2, k3, "compromise drill", true},
	}
	for _, s := range steps {
		before, _, _ := l.Head(ctx)
		a, err := govern.RotateKey(ctx, l, s.old, s.new, s.reason, "op")
		after, _, _ := l.Head(ctx)
		switch {
		case s.ok && err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case s.ok && (a.Entry.NewKey != s.new || a.Entry.OldKey != s.old || a.Entry.Submitter != "op"):
			t.Errorf("%s: entry %+v", s.name, a.Entry)
		case !s.ok && !errors.Is(err, govern.ErrKeyRotation) && !errors.Is(err, govern.ErrNoReason):
			t.Errorf("%s: %v, want a refusal", s.name, err)
		case !s.ok && after != before:
			t.Errorf("%s: refused, but the head moved %d -> %d", s.name, before, after)
		}
	}
	mustVerify(t, l)
}
