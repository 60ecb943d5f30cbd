package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/ledger"
)

const origin = "example.com/ledger"

// TestAnchorTamperClasses builds, through the ledger API, the tampered
// ledgers a chain cannot see: each passes a
// chain walk on its own, and each is caught against a checkpoint of the
// original.
func TestAnchorTamperClasses(t *testing.T) {
	s, _, vkey := testKey(t, origin, "k1")
	orig := openLedger(t, origin)
	fill(t, orig, 20, "h")
	cpMsg, err := checkpoint.Make(t.Context(), orig, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	tests := []struct {
		name  string
		build func(t *testing.T) *ledger.Ledger
		kind  string
		want  error
	}{
		{"truncated tail", func(t *testing.T) *ledger.Ledger {
			l := openLedger(t, origin)
			fill(t, l, 15, "h") // same bytes as orig's first 15
			return l
		}, checkpoint.KindTruncated, checkpoint.ErrTruncated},
		{"rewritten suffix re-hashed", func(t *testing.T) *ledger.Ledger {
			l := openLedger(t, origin)
			fill(t, l, 11, "h")
			fill(t, l, 25, "evil") // entries 12.. differ, chain re-hashed, even longer
			return l
		}, checkpoint.KindRewritten, checkpoint.ErrRewritten},
		{"rewritten same length", func(t *testing.T) *ledger.Ledger {
			l := openLedger(t, origin)
			fill(t, l, 19, "h")
			fill(t, l, 20, "evil")
			return l
		}, checkpoint.KindRewritten, checkpoint.ErrRewritten},
		{"fresh empty ledger, same origin", func(t *testing.T) *ledger.Ledger {
			return openLedger(t, origin)
		}, checkpoint.KindTruncated, checkpoint.ErrTruncated},
		{"fresh empty ledger, default origin", func(t *testing.T) *ledger.Ledger {
			return openLedger(t, "")
		}, checkpoint.KindOrigin, checkpoint.ErrOtherLedger},
		{"same entries, another origin", func(t *testing.T) *ledger.Ledger {
			l := openLedger(t, "example.com/impostor")
			fill(t, l, 20, "h")
			return l
		}, checkpoint.KindOrigin, checkpoint.ErrOtherLedger},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.build(t)
			// Documented limit: the chain alone does not see it.
			chainWalk(t, l)
			_, err := checkpoint.VerifyAnchorContext(ctx, l, cpMsg, vkey, "")
			var ae *checkpoint.AnchorError
			if !errors.As(err, &ae) || ae.Kind != tt.kind || !errors.Is(err, tt.want) || !errors.Is(err, checkpoint.ErrAnchor) {
				t.Fatalf("VerifyAnchor = %v, want AnchorError kind %s", err, tt.kind)
			}
			if ae.Size != 20 {
				t.Fatalf("AnchorError.Size = %d, want 20", ae.Size)
			}
		})
	}
	t.Run("untampered", func(t *testing.T) {
		fill(t, orig, 30, "h") // grows after the checkpoint: still extends it
		rep, err := checkpoint.VerifyAnchorContext(ctx, orig, cpMsg, vkey, "")
		if err != nil || !rep.Consistent || rep.CheckpointSize != 20 || rep.LedgerSize != 30 {
			t.Fatalf("VerifyAnchor = %+v, %v", rep, err)
		}
	})
	t.Run("attacker re-signs", func(t *testing.T) {
		evil, _, _ := testKey(t, origin, "attacker")
		l := openLedger(t, origin)
		fill(t, l, 5, "evil")
		msg, _ := checkpoint.Make(ctx, l, evil)
		if _, err := checkpoint.VerifyAnchorContext(ctx, l, msg, vkey, ""); !errors.Is(err, checkpoint.ErrUnknownKey) {
			t.Fatalf("VerifyAnchor(attacker checkpoint) = %v, want ErrUnknownKey", err)
		}
	})
}

// TestStateRollbackAndFork: T5 (restore an older copy) and T6 (fork).
func TestStateRollbackAndFork(t *testing.T) {
	s, v, vkey := testKey(t, origin, "k1")
	ctx := context.Background()
	dir := t.TempDir()
	l := openLedger(t, origin)
	fill(t, l, 10, "h")
	old, _ := checkpoint.Make(ctx, l, s)
	backup := openLedger(t, origin) // the "older backup": same first 10 entries
	fill(t, backup, 10, "h")

	rep, err := checkpoint.VerifyAnchorContext(ctx, l, old, vkey, dir)
	if err != nil || !rep.StateUpdated {
		t.Fatalf("first VerifyAnchor = %+v, %v", rep, err)
	}
	fill(t, l, 20, "h")
	newer, _ := checkpoint.Make(ctx, l, s)
	rep, err = checkpoint.VerifyAnchorContext(ctx, l, newer, vkey, dir)
	if err != nil || !rep.StateUpdated || rep.StateSize != 20 {
		t.Fatalf("second VerifyAnchor = %+v, %v", rep, err)
	}
	// The old checkpoint still verifies against the live ledger, without
	// moving the state back.
	rep, err = checkpoint.VerifyAnchorContext(ctx, l, old, vkey, dir)
	if err != nil || rep.StateUpdated || rep.StateSize != 20 {
		t.Fatalf("old checkpoint VerifyAnchor = %+v, %v", rep, err)
	}

	// T5: the DB is replaced by the backup; its own old checkpoint verifies
	// against it, but the state has seen size 20.
	_, err = checkpoint.VerifyAnchorContext(ctx, backup, old, vkey, dir)
	var se *checkpoint.StateError
	if !errors.Is(err, checkpoint.ErrRollback) || !errors.As(err, &se) || se.Stored.Size != 20 {
		t.Fatalf("rollback: VerifyAnchor = %v, want ErrRollback with stored size 20", err)
	}

	// T6: a fork of the same origin from seq 11 on, checkpointed with the
	// real key (the key holder forked, or the key leaked).
	fork := openLedger(t, origin)
	fill(t, fork, 10, "h")
	fill(t, fork, 25, "fork")
	forkCP, _ := checkpoint.Make(ctx, fork, s)
	_, err = checkpoint.VerifyAnchorContext(ctx, fork, forkCP, vkey, dir)
	if !errors.Is(err, checkpoint.ErrFork) || !errors.As(err, &se) || se.Stored.Size != 20 {
		t.Fatalf("fork: VerifyAnchor = %v, want ErrFork", err)
	}

	// State.Update directly: older → rollback, same size other root → fork,
	// bad proof → fork with the proof as evidence.
	st, err := checkpoint.OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := checkpoint.Open(old, note.VerifierList(v), origin)
	if _, err := st.Update(ctx, oc, func(o, n uint64) (tlog.TreeProof, error) { return l.ProveConsistency(ctx, o, n) }); !errors.Is(err, checkpoint.ErrRollback) {
		t.Fatalf("Update(older) = %v, want ErrRollback", err)
	}
	fork20 := openLedger(t, origin)
	fill(t, fork20, 10, "h")
	fill(t, fork20, 20, "fork")
	f20, _ := checkpoint.Make(ctx, fork20, s)
	fc, _ := checkpoint.Open(f20, note.VerifierList(v), origin)
	if _, err := st.Update(ctx, fc, func(o, n uint64) (tlog.TreeProof, error) { return fork20.ProveConsistency(ctx, o, n) }); !errors.Is(err, checkpoint.ErrFork) {
		t.Fatalf("Update(same size, other root) = %v, want ErrFork", err)
	}
	fc25, _ := checkpoint.Open(forkCP, note.VerifierList(v), origin)
	_, err = st.Update(ctx, fc25, func(o, n uint64) (tlog.TreeProof, error) { return fork.ProveConsistency(ctx, o, n) })
	if !errors.As(err, &se) || !errors.Is(err, checkpoint.ErrFork) || len(se.Proof) == 0 || se.Offered.Size != 25 {
		t.Fatalf("Update(fork with proof) = %v, want ErrFork with proof evidence", err)
	}
	if latest, _ := st.Latest(origin); latest.Size != 20 {
		t.Fatalf("state moved to %d after refusals", latest.Size)
	}
}

// TestStateConcurrentCAS: many goroutines offer checkpoints of growing
// sizes; the state ends at the largest, never goes back, and every refusal
// is a rollback (never a torn or forked state).
func TestStateConcurrentCAS(t *testing.T) {
	s, v, _ := testKey(t, origin, "k1")
	l := openLedger(t, origin)
	var cps []*checkpoint.Checkpoint
	for n := uint64(3); n <= 41; n += 2 {
		fill(t, l, n, "h")
		msg, _ := checkpoint.Make(t.Context(), l, s)
		c, err := checkpoint.Open(msg, note.VerifierList(v), origin)
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, c)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, len(cps)*2)
	for i := range 2 {
		for j := range cps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := cps[(j*7+i*3)%len(cps)]
				st, err := checkpoint.OpenState(dir) // as separate processes would
				if err != nil {
					errs <- err
					return
				}
				if _, err := st.Update(context.Background(), c, func(o, n uint64) (tlog.TreeProof, error) { return l.ProveConsistency(context.Background(), o, n) }); err != nil && !errors.Is(err, checkpoint.ErrRollback) {
					errs <- fmt.Errorf("size %d: %w", c.Size, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, _ := checkpoint.OpenState(dir)
	latest, err := st.Latest(origin)
	if err != nil || latest.Size != 41 {
		t.Fatalf("Latest = %v, %v; want size 41", latest, err)
	}
}

func TestStateLockHonoursContext(t *testing.T) {
	s, v, _ := testKey(t, origin, "k1")
	l := openLedger(t, origin)
	open := func() *checkpoint.Checkpoint {
		msg, _ := checkpoint.Make(t.Context(), l, s)
		c, err := checkpoint.Open(msg, note.VerifierList(v), origin)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fill(t, l, 3, "h")
	c3 := open()
	fill(t, l, 5, "h")
	c5 := open()
	st, _ := checkpoint.OpenState(t.TempDir())
	if _, err := st.Update(context.Background(), c3, func(o, n uint64) (tlog.TreeProof, error) { return l.ProveConsistency(context.Background(), o, n) }); err != nil {
		t.Fatal(err)
	}
	// A second update holds the lock while its proof is being made.
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		_, err := st.Update(context.Background(), c5, func(o, n uint64) (tlog.TreeProof, error) {
			close(holding)
			<-release
			return l.ProveConsistency(t.Context(), o, n)
		})
		done <- err
	}()
	<-holding
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Update(ctx, c5, func(o, n uint64) (tlog.TreeProof, error) { return l.ProveConsistency(ctx, o, n) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with cancelled ctx while locked = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRootFromLeaves(t *testing.T) {
	l := openLedger(t, origin)
	fill(t, l, 33, "h")
	for _, n := range []uint64{0, 1, 2, 3, 17, 32, 33} {
		got, err := checkpoint.RootFromLeaves(context.Background(), n, func(i uint64) (tlog.Hash, error) {
			_, raw, err := l.Get(t.Context(), i+1)
			return tlog.RecordHash(raw), err
		})
		want, _ := l.TreeHash(t.Context(), n)
		if err != nil || got != want {
			t.Fatalf("RootFromLeaves(%d) = %x, %v; want %x", n, got, err, want)
		}
	}
}

// TestStatePin: the first Pin of a source is kept; the same origin again
// changes nothing, another origin is an *OriginError naming both and the
// file, and the pin stays; Check says the same without writing.
func TestStatePin(t *testing.T) {
	st, err := checkpoint.OpenState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := "https://ledger.example.com"
	if p, err := st.Pinned(src); p != nil || err != nil {
		t.Fatalf("Pinned before any pin = %v, %v", p, err)
	}
	if err := st.Check(src, "example.com/a"); err != nil {
		t.Fatalf("Check before any pin: %v", err)
	}
	if created, err := st.Pin(ctx, checkpoint.Pin{Source: src, Origin: "example.com/a", KeyName: "k"}); !created || err != nil {
		t.Fatalf("first Pin = %v, %v", created, err)
	}
	if created, err := st.Pin(ctx, checkpoint.Pin{Source: src, Origin: "example.com/a", KeyName: "k2"}); created || err != nil {
		t.Fatalf("same origin again = %v, %v", created, err)
	}
	for _, err := range []error{
		func() error {
			_, err := st.Pin(ctx, checkpoint.Pin{Source: src, Origin: "example.com/b", KeyName: "k"})
			return err
		}(),
		st.Check(src, "example.com/b"),
	} {
		var oe *checkpoint.OriginError
		if !errors.As(err, &oe) || !errors.Is(err, checkpoint.ErrOriginChanged) || oe.Pinned.Origin != "example.com/a" || oe.Offered != "example.com/b" ||
			!strings.Contains(err.Error(), ".pin") {
			t.Errorf("another origin: %v, want an *OriginError a -> b naming the pin file", err)
		}
	}
	if p, err := st.Pinned(src); err != nil || p.Origin != "example.com/a" || p.KeyName != "k" {
		t.Errorf("pin after the refusals = %+v, %v; want origin a, key k", p, err)
	}
	if err := st.Check("https://other.example.com", "example.com/b"); err != nil {
		t.Errorf("another source: %v", err)
	}
}
