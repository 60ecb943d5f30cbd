package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/ledger/bolt"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newClockOpts() *bolt.Options {
	return &bolt.Options{Now: bolttest.NewClock(t0).Now, Origin: "test.example/ledger"}
}

func handoff(i int) bolttest.Handoff {
	return bolttest.Handoff{ID: fmt.Sprintf("h-%04d", i), Source: "domain-05-product", Target: "domain-02-analysis", Workflow: fmt.Sprintf("wf-%d", i%3)}
}

// chainWalk decodes every entry, checks seq, prev links and returns the hashes.
func chainWalk(t *testing.T, l *ledger.Ledger) []entry.Hash {
	t.Helper()
	var hashes []entry.Hash
	prev := entry.ZeroHash
	err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		e, err := entry.Decode(raw)
		if err != nil {
			return fmt.Errorf("seq %d: %w", seq, err)
		}
		if e.Seq != seq || seq != uint64(len(hashes))+1 {
			return fmt.Errorf("seq %d: entry says %d, want %d", seq, e.Seq, len(hashes)+1)
		}
		if e.Prev != prev {
			return fmt.Errorf("seq %d: prev %s, want %s", seq, e.Prev, prev)
		}
		prev = entry.LeafHash(raw)
		hashes = append(hashes, prev)
		return nil
	})
	if err != nil {
		t.Fatalf("chain walk: %v", err)
	}
	return hashes
}

// TestTreeExhaustive checks, after every append up to 64 entries, the head,
// the tree hash of every size against an independent RFC 6962 reference,
// and every inclusion and consistency proof with an independent verifier.
func TestTreeExhaustive(t *testing.T) {
	l := bolttest.MustCreate(t, newClockOpts())
	ref := testonly.New(rfc6962.DefaultHasher)
	h := rfc6962.DefaultHasher
	check := func(n uint64) {
		seq, head, err := l.Head(t.Context())
		if err != nil || seq != n {
			t.Fatalf("Head() = %d, %v; want %d", seq, err, n)
		}
		if n == 0 && head != entry.ZeroHash {
			t.Fatalf("Head() of empty = %s", head)
		}
		if n > 0 && !bytes.Equal(head[:], ref.LeafHash(n-1)) {
			t.Fatalf("Head() hash = %s, want leaf %x", head, ref.LeafHash(n-1))
		}
		if size, err := l.TreeSize(t.Context()); err != nil || size != n {
			t.Fatalf("TreeSize() = %d, %v; want %d", size, err, n)
		}
		if _, err := l.TreeHash(t.Context(), n+1); !errors.Is(err, ledger.ErrBadRange) {
			t.Fatalf("TreeHash(%d) = %v, want ErrBadRange", n+1, err)
		}
		root, err := l.TreeHash(t.Context(), n)
		if err != nil || !bytes.Equal(root[:], ref.HashAt(n)) {
			t.Fatalf("TreeHash(%d) = %x, %v; want %x", n, root, err, ref.HashAt(n))
		}
		from := n // every proof into the newest tree; all sizes once at the end
		if n == 64 {
			from = 1
		}
		for size := max(from, 1); size <= n; size++ {
			rootS, _ := l.TreeHash(t.Context(), size)
			for seq := uint64(1); seq <= size; seq++ {
				p, err := l.ProveInclusion(t.Context(), seq, size)
				if err != nil {
					t.Fatalf("ProveInclusion(%d, %d) = %v", seq, size, err)
				}
				if err := proof.VerifyInclusion(h, seq-1, size, ref.LeafHash(seq-1), hashes(p), rootS[:]); err != nil {
					t.Fatalf("n=%d: VerifyInclusion(%d, %d): %v", n, seq, size, err)
				}
			}
			for old := uint64(0); old <= size; old++ {
				p, err := l.ProveConsistency(t.Context(), old, size)
				if err != nil {
					t.Fatalf("ProveConsistency(%d, %d) = %v", old, size, err)
				}
				rootO, _ := l.TreeHash(t.Context(), old)
				if err := proof.VerifyConsistency(h, old, size, hashes(p), rootO[:], rootS[:]); err != nil {
					t.Fatalf("n=%d: VerifyConsistency(%d, %d): %v", n, old, size, err)
				}
			}
		}
		if _, err := l.ProveInclusion(t.Context(), 0, n); !errors.Is(err, ledger.ErrBadRange) {
			t.Fatalf("ProveInclusion(0, %d) = %v, want ErrBadRange", n, err)
		}
		if _, err := l.ProveConsistency(t.Context(), n+1, n); !errors.Is(err, ledger.ErrBadRange) {
			t.Fatalf("ProveConsistency(%d, %d) = %v, want ErrBadRange", n+1, n, err)
		}
	}
	check(0)
	for i := 0; ; i++ {
		var req *ledger.Request
		switch i {
		case 0:
			req = &ledger.Request{Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: bolttest.ManifestBytes}}}
		case 1:
			req = &ledger.Request{Snapshots: []ledger.Snapshot{{What: entry.SnapshotLock, Bytes: bolttest.LockBytes}}}
		default:
			h := handoff(i)
			h.NoSnapshots = true
			req = h.Build()
		}
		res, err := l.Append(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Entries) != 1 {
			t.Fatalf("Append %d wrote %d entries, want 1", i, len(res.Entries))
		}
		ref.AppendData(res.Entries[0].Raw)
		check(ref.Size())
		if ref.Size() >= 64 {
			break
		}
	}
	if got := chainWalk(t, l); len(got) != int(ref.Size()) {
		t.Fatalf("chain walk saw %d entries, want %d", len(got), ref.Size())
	}
}

func hashes[T ~[]H, H ~[32]byte](p T) [][]byte {
	out := make([][]byte, len(p))
	for i := range p {
		out[i] = append([]byte(nil), p[i][:]...)
	}
	return out
}

// TestConcurrentAppend: many goroutines append; every acknowledged entry
// is in the chain under its seq with its hash, no gaps, no forks, and the
// appends shared commits.
func TestConcurrentAppend(t *testing.T) {
	for _, workers := range []int{8, 64} {
		per := 64 / workers * 2
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			l := bolttest.MustCreate(t, nil)
			var mu sync.Mutex
			acked := map[uint64]entry.Hash{}
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						res, err := l.Append(context.Background(), handoff(w*per+i).Build())
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, a := range res.Entries {
							if _, dup := acked[a.Entry.Seq]; dup {
								t.Errorf("seq %d acknowledged twice", a.Entry.Seq)
							}
							acked[a.Entry.Seq] = a.Hash
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			chain := chainWalk(t, l)
			if len(chain) != workers*per+2 || len(acked) != len(chain) {
				t.Fatalf("chain %d entries, acked %d, want %d", len(chain), len(acked), workers*per+2)
			}
			for seq, h := range acked {
				if chain[seq-1] != h {
					t.Errorf("seq %d: chain hash %s, acked %s", seq, chain[seq-1], h)
				}
			}
			st := l.Stats()
			if st.Entries != uint64(len(chain)) || st.Commits >= uint64(workers*per) {
				t.Errorf("Stats() = %+v: want %d entries in fewer than %d commits", st, len(chain), workers*per)
			}
			t.Logf("%d appends in %d commits", workers*per, st.Commits)
		})
	}
}

// blockCommitter starts an Append whose Build waits for release, so that
// later Appends queue up; it returns once the Build is running.
func blockCommitter(t *testing.T, l *ledger.Ledger) (release func(), wait func()) {
	started, rel := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
			close(started)
			<-rel
			e.Kind, e.Agent, e.Note = entry.KindUnblock, "nobody", "barrier"
			return nil
		}})
		done <- err
	}()
	<-started
	return func() { close(rel) }, func() {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func waitQueued(t *testing.T, l *ledger.Ledger, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Queued < n {
		if time.Now().After(deadline) {
			t.Fatalf("Queued = %d, want %d", l.Stats().Queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommit: requests queued behind a commit share the next commits,
// at most MaxBatch each; a Build error fails only its own request.
func TestGroupCommit(t *testing.T) {
	for _, maxBatch := range []int{0, 8} {
		t.Run(fmt.Sprint("max", maxBatch), func(t *testing.T) {
			l := bolttest.MustCreate(t, &bolt.Options{MaxBatch: maxBatch})
			bolttest.AppendHandoff(t, l, handoff(0)) // snapshots in force
			before := l.Stats()
			release, wait := blockCommitter(t, l)
			const n = 50
			errs := make([]error, n)
			results := make([]*ledger.Result, n)
			var wg sync.WaitGroup
			boom := errors.New("boom")
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := handoff(i + 1).Build()
					if i == 7 {
						inner := req.Build
						req.Snapshots = []ledger.Snapshot{{What: entry.SnapshotLock, Bytes: []byte("new lock")}}
						req.Build = func(st ledger.State, e *entry.Entry) error { inner(st, e); return boom }
					}
					results[i], errs[i] = l.Append(context.Background(), req)
				}()
			}
			waitQueued(t, l, n)
			release()
			wait()
			wg.Wait()
			for i, err := range errs {
				if (i == 7) != (err != nil) || i == 7 && !errors.Is(err, boom) {
					t.Errorf("Append %d = %v", i, err)
				}
				if i != 7 && len(results[i].Entries) != 1 {
					t.Errorf("Append %d wrote %d entries, want 1", i, len(results[i].Entries))
				}
			}
			st := l.Stats()
			commits := st.Commits - before.Commits
			want := uint64(1 + 1) // the barrier, then one batch
			if maxBatch == 8 {
				want = 1 + (n+7)/8
			}
			if commits != want {
				t.Errorf("commits = %d, want %d", commits, want)
			}
			chain := chainWalk(t, l)
			if len(chain) != 3+1+n-1 {
				t.Errorf("chain has %d entries, want %d", len(chain), 3+n)
			}
			if _, err := l.Blob(t.Context(), entry.Sum256([]byte("new lock"))); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("failed request's snapshot bytes: Blob = %v, want ErrNotFound", err)
			}
		})
	}
}
