package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/govern/governtest"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// TestTwoCores runs two ledger cores (ledger.New over two drivers with
// pools of their own, as two govledger processes on two machines would)
// on one database, each with many goroutines recording real hand-offs
// through govern.Record. Some hand-off ids are submitted on both cores at
// once: exactly one acceptance each, the other a REPLAY naming it. Some
// idempotency keys are used on both at once: one entry each, the other
// call told which entry used the key. Every acknowledged entry is stored
// exactly once at its seq with its hash, seq is gapless, and verify
// passes on the result (the structural check included).
func TestTwoCores(t *testing.T) {
	const perCore, workers, shared, keys = 24, 6, 8, 6
	ctx := context.Background()
	cfg := governtest.Config(t)
	dsn := pgtest.NewDB(t)
	cores := make([]*ledger.Ledger, 2)
	for i := range cores {
		d, err := postgres.Open(ctx, dsn, &postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		if cores[i], err = ledger.New(d, &ledger.Options{Now: cfg.Now}); err != nil {
			t.Fatal(err)
		}
		defer cores[i].Close()
	}

	type ack struct {
		id, key string
		seq     uint64
		hash    entry.Hash
		dec     string
		codes   []reason.Code
	}
	var mu sync.Mutex
	var acks []ack
	keyUsed := map[string][]uint64{} // key -> the entry each KeyUsedError named
	record := func(l *ledger.Ledger, id, key string) error {
		c := *cfg
		c.IdempotencyKey = key
		for {
			o, err := govern.Record(ctx, l, &c, id, governtest.Handoff(t, id))
			var used *govern.KeyUsedError
			switch {
			case errors.As(err, &used):
				mu.Lock()
				keyUsed[key] = append(keyUsed[key], used.Seq)
				mu.Unlock()
				return nil
			case errors.Is(err, ledger.ErrConflict):
				continue // the other core kept winning: nothing stored, retry
			case err != nil:
				return fmt.Errorf("record %s: %w", id, err)
			}
			a := o.Entry()
			var codes []reason.Code
			for _, r := range o.Decision.Reasons {
				codes = append(codes, r.Code)
			}
			mu.Lock()
			acks = append(acks, ack{id, key, a.Entry.Seq, a.Hash, a.Entry.Decision, codes})
			mu.Unlock()
			return nil
		}
	}
	id := func(kind string, i int) string { return fmt.Sprintf("00000000-0000-4000-%s-%012d", kind, i) }

	var wg sync.WaitGroup
	errs := make(chan error, 2*workers+2*(shared+keys))
	for c, l := range cores {
		for w := range workers {
			wg.Go(func() {
				for i := w; i < perCore; i += workers {
					if err := record(l, id(fmt.Sprintf("8%03d", c+1), i), ""); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		// The same hand-off ids and the same idempotency keys, at once on
		// both cores.
		for i := range shared {
			wg.Go(func() {
				if err := record(l, id("aaaa", i), ""); err != nil {
					errs <- err
				}
			})
		}
		for i := range keys {
			wg.Go(func() {
				if err := record(l, id("bbbb", i), fmt.Sprintf("key-%d", i)); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every acknowledged entry is stored once, at its seq, with its hash.
	d := openDSN(t, dsn, &postgres.Options{ReadOnly: true})
	es := checkChain(t, d)
	bySeq := map[uint64]ack{}
	for _, a := range acks {
		if _, dup := bySeq[a.seq]; dup {
			t.Fatalf("two acknowledgements name seq %d", a.seq)
		}
		bySeq[a.seq] = a
		if a.key != "" && a.dec != reason.Accepted {
			t.Fatalf("%s (key %s) was %s %v, want accepted", a.id, a.key, a.dec, a.codes)
		}
		if a.seq > uint64(len(es)) || es[a.seq-1].HandoffID.S != a.id {
			t.Fatalf("acknowledged %s at seq %d is not stored there (%d entries; there: %+v)", a.id, a.seq, len(es), es[min(int(a.seq), len(es))-1])
		}
		if raw, _ := es[a.seq-1].Canonical(); entry.LeafHash(raw) != a.hash {
			t.Fatalf("seq %d: stored hash differs from the acknowledged %s", a.seq, a.hash)
		}
	}
	handoffs := 0
	for _, e := range es {
		if e.Kind == entry.KindHandoff {
			handoffs++
			if _, ok := bySeq[e.Seq]; !ok {
				t.Fatalf("seq %d (%s) is stored but was never acknowledged", e.Seq, e.HandoffID.S)
			}
		}
	}
	if want := 2*perCore + 2*shared + keys; handoffs != want || len(acks) != want {
		t.Fatalf("%d hand-off entries, %d acknowledged; want %d", handoffs, len(acks), want)
	}
	for _, c := range []string{"8001", "8002"} {
		for i := range perCore {
			n := 0
			for _, a := range acks {
				if a.id == id(c, i) && a.dec == reason.Accepted {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("hand-off %s: %d acceptances, want 1", id(c, i), n)
			}
		}
	}
	// Each shared id: one acceptance, one REPLAY; each key: one entry,
	// and the other call was told its seq.
	for i := range shared {
		var acc, replay int
		for _, a := range acks {
			if a.id == id("aaaa", i) {
				switch {
				case a.dec == reason.Accepted:
					acc++
				case len(a.codes) == 1 && a.codes[0] == reason.Replay:
					replay++
				}
			}
		}
		if acc != 1 || replay != 1 {
			t.Fatalf("hand-off %s: %d acceptances and %d replays, want 1 and 1", id("aaaa", i), acc, replay)
		}
	}
	for i := range keys {
		key := fmt.Sprintf("key-%d", i)
		var seqs []uint64
		for _, a := range acks {
			if a.key == key {
				seqs = append(seqs, a.seq)
			}
		}
		if len(seqs) != 1 || len(keyUsed[key]) != 1 || keyUsed[key][0] != seqs[0] {
			t.Fatalf("key %s: entries %v, other call told %v; want one entry, named to the other", key, seqs, keyUsed[key])
		}
	}
	l, err := ledger.New(d, &ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Replay(ctx, verify.LedgerSource(l), verify.Options{Structural: l.Check, Head: l.Head})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v, %v", err, rep.Findings)
	}
	var conflicts uint64
	for _, c := range cores {
		conflicts += c.Stats().Conflicts
	}
	t.Logf("%d entries, %d compare-and-append conflicts between the two cores", len(es), conflicts)
}
