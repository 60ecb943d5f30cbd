package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/memory"
)

// sharedStore is a memory driver shared by several cores, with a head
// lock as a database's head row: Append takes it for the compare and
// append, Lock holds it until the locked view's Append or Close.
type sharedStore struct {
	*memory.Driver
	head *sync.Mutex

	mu     sync.Mutex
	before func() // run once before the next plain Append
	onLock func() // run once after the next Lock took the head
}

func (s *sharedStore) hook(f *func()) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := *f
	*f = nil
	return g
}

func (s *sharedStore) Append(ctx context.Context, b *ledger.Batch) error {
	if f := s.hook(&s.before); f != nil {
		f()
	}
	s.head.Lock()
	defer s.head.Unlock()
	return s.Driver.Append(ctx, b)
}

func (s *sharedStore) Lock(ctx context.Context) (ledger.LockedView, error) {
	s.head.Lock()
	v, err := s.Driver.View(ctx)
	if err != nil {
		s.head.Unlock()
		return nil, err
	}
	if f := s.hook(&s.onLock); f != nil {
		f()
	}
	return &lockedView{View: v, s: s}, nil
}

// Close leaves the shared driver open: the test closes it.
func (s *sharedStore) Close() error { return nil }

type lockedView struct {
	ledger.View
	s        *sharedStore
	released bool
}

func (v *lockedView) release() {
	if !v.released {
		v.released = true
		v.s.head.Unlock()
	}
}

func (v *lockedView) Append(ctx context.Context, b *ledger.Batch) error {
	defer v.release()
	return v.s.Driver.Append(ctx, b)
}

func (v *lockedView) Close() error {
	v.release()
	return v.View.Close()
}

func note(s string) *ledger.Request {
	return &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.Agent, e.Note = entry.KindUnblock, "nobody", s
		return nil
	}}
}

// TestLockerRetry holds the core's use of a ledger.Locker to its word: a
// commit that conflicts is built again holding the head, with the
// requests queued while the lock was awaited, and stored once; the next
// ledger.ContendedCommits commits are built holding the head at once, and
// the one after them outside the lock again.
func TestLockerRetry(t *testing.T) {
	ctx := context.Background()
	d, err := memory.New("locker.example/ledger")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	head := &sync.Mutex{}
	a, b := &sharedStore{Driver: d, head: head}, &sharedStore{Driver: d, head: head}
	la, err := ledger.New(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	lb, err := ledger.New(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	mustAppend := func(l *ledger.Ledger, r *ledger.Request) *ledger.Result {
		t.Helper()
		res, err := l.Append(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := func(step string, conflicts, locked uint64) {
		t.Helper()
		if st := la.Stats(); st.Conflicts != conflicts || st.Locked != locked {
			t.Fatalf("%s: Stats = %+v, want %d conflicts and %d locked commits", step, st, conflicts, locked)
		}
	}
	mustAppend(la, note("first"))
	want("no other writer", 0, 0)

	// B commits between A's build and A's Append: A's retry holds the
	// head, and takes the requests queued meanwhile.
	const queued = 5
	a.before = func() { mustAppend(lb, note("b")) }
	var wg sync.WaitGroup
	results := make([]*ledger.Result, queued)
	errs := make([]error, queued)
	a.onLock = func() {
		for i := range queued {
			wg.Go(func() { results[i], errs[i] = la.Append(ctx, note(fmt.Sprint("queued ", i))) })
		}
		for range 500 {
			if la.Stats().Queued == queued {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("%d requests queued after 5s, want %d", la.Stats().Queued, queued)
	}
	commits := la.Stats().Commits
	var saw []string
	r := note("retried")
	build := r.Build
	r.Build = func(st ledger.State, e *entry.Entry) error {
		if err := build(st, e); err != nil {
			return err
		}
		saw = append(saw, fmt.Sprint(e.Seq))
		return nil
	}
	res := mustAppend(la, r)
	wg.Wait()
	want("after the conflict", 1, 1)
	if got := la.Stats().Commits - commits; got != 1 {
		t.Fatalf("the retried request and the %d queued ones took %d commits, want 1", queued, got)
	}
	seq := res.Last().Entry.Seq
	for i, q := range results {
		if errs[i] != nil || q == nil || q.Last().Entry.Seq <= seq || q.Last().Entry.Seq > seq+queued {
			t.Fatalf("queued request %d: %+v, want stored after seq %d in the same commit", i, q, seq)
		}
	}
	if seq != 3 || saw[len(saw)-1] != "3" {
		t.Fatalf("the retried request is seq %d (Build saw seqs %v), want 3: after B's entry", seq, saw)
	}

	for i := range ledger.ContendedCommits {
		mustAppend(la, note(fmt.Sprint("contended ", i)))
		want(fmt.Sprintf("commit %d after the conflict", i+1), 1, uint64(i+2))
	}
	mustAppend(la, note("next"))
	want("the commit after those", 1, 1+ledger.ContendedCommits)

	l, err := ledger.New(d, &ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := uint64(3 + queued + ledger.ContendedCommits + 1)
	if got, _, err := l.Head(ctx); err != nil || got != stored {
		t.Fatalf("head seq %d (%v), want %d: every request stored once", got, err, stored)
	}
}
