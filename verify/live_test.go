package verify_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// TestReplayLiveLedger verifies a ledger that is written while it is
// verified. The ledger source reads blobs from a view shared over 256
// reads; entries appended after that view opened are delivered by a later
// read of the entries, and their blobs must not pass for missing. The
// ledger is laid out so that, replaying entry by entry, they are: 514
// entries, 10 of them without a stored blob, so the view opened for the
// 257th blob read still has reads left when entry 513 comes; 20 entries
// are appended while entry 300 is judged.
//
// The workers are handed liveBatch entries at a time, so that the window
// in flight (eight batches per worker and one being filled) ends before
// the last entry when entry 300 is judged, and the appended ones are read.
func TestReplayLiveLedger(t *testing.T) {
	l, err := bolt.Open(filepath.Join(t.TempDir(), "live.db"), &bolt.Options{Now: bolttest.NewClock(start).Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tooLarge := []reason.Reason{{Code: reason.PayloadTooLarge, Severity: reason.Error, Message: "too large"}}
	appendN := func(from, n int) {
		var wg sync.WaitGroup
		ch := make(chan int)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range ch {
					h := bolttest.Handoff{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Source: "a", Target: "b"}
					if i < 10 {
						h.Reasons = tooLarge
					}
					if _, err := l.Append(context.Background(), h.Build()); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		for i := from; i < from+n; i++ {
			ch <- i
		}
		close(ch)
		wg.Wait()
	}
	appendN(0, 512)
	if t.Failed() {
		t.FailNow()
	}
	for _, workers := range []int{0, 2} {
		appended := false
		rep, _, err := verify.ReplayWorkers(context.Background(), verify.LedgerSource(l), verify.Options{SkipReevaluate: true, Progress: func(seq uint64) {
			if seq == 300 && !appended {
				appended = true
				before, _, _ := l.Head(t.Context())
				appendN(1000*(workers+1), 20)
				if after, _, _ := l.Head(t.Context()); after != before+20 {
					t.Errorf("head %d after appending 20 to %d", after, before)
				}
			}
		}}, workers, liveBatch)
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(514 + 20*(workers/2+1))
		if !rep.OK() || rep.Entries != want {
			t.Errorf("%d workers: Replay of a ledger written meanwhile = %d entries, findings %v; want %d entries, none", workers, rep.Entries, rep.Findings, want)
		}
	}
}

// liveBatch is the batch size of TestReplayLiveLedger's workers.
const liveBatch = 8
