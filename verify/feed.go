package verify

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"

	"github.com/govledger/govledger/ledger"
)

// checkFeed hands Options.Structural (the store's check, running beside
// the replay) every entry once judge is done with it: its bytes, leaf
// hash, decoded form and the blob found to hash to the sum it names, so
// that the check does not hash and decode each entry again
// (ledger.CheckFeed). Only for a source whose bytes stay valid and
// unchanged once delivered (a ledger).
//
// At most feedDepth runs of feedRun entries wait for the check. Until it
// first asks, a run that finds them full is dropped (a check that takes no
// feed never holds up the replay, and one that starts late still finds
// the first entries); once it asked, and until it returns, a check that
// lags holds up judge, and one that runs ahead waits for judge, so each
// entry is prepared once and memory stays bounded.
type checkFeed struct {
	ch      chan []ledger.Prepared
	asked   atomic.Bool
	done    chan struct{} // closed when the check returned
	eof     chan struct{} // closed when the replay delivered its last run
	endOnce sync.Once
	endRuns sync.Once

	run []ledger.Prepared // being gathered by judge

	// The check's side.
	cur []ledger.Prepared
}

const (
	feedRun   = batchSize
	feedDepth = 4
)

func newCheckFeed() *checkFeed {
	return &checkFeed{ch: make(chan []ledger.Prepared, feedDepth), done: make(chan struct{}), eof: make(chan struct{})}
}

// add takes judge's job j, once judged.
func (f *checkFeed) add(j *job) {
	if j.failed != nil || !j.decoded {
		// A panic while preparing: the check meets the entry itself.
		return
	}
	p := ledger.Prepared{Seq: j.seq, Raw: j.raw, Hash: j.h, Entry: j.e, Err: j.decErr}
	if j.storedOK {
		p.Blob = j.stored
	}
	if f.run == nil {
		f.run = make([]ledger.Prepared, 0, feedRun)
	}
	f.run = append(f.run, p)
	if len(f.run) == feedRun {
		f.flush()
	}
}

// flush sends the run gathered: waiting for room once the check asked,
// until it returns; dropping the run when there is none before.
func (f *checkFeed) flush() {
	if len(f.run) == 0 {
		return
	}
	if f.asked.Load() {
		select {
		case f.ch <- f.run:
		case <-f.done:
		}
	} else {
		select {
		case f.ch <- f.run:
		default:
		}
	}
	f.run = nil
}

// end sends what is gathered and tells the check the replay delivered
// everything.
func (f *checkFeed) end() {
	f.endRuns.Do(func() {
		f.flush()
		close(f.eof)
	})
}

// checked is called once the check returned.
func (f *checkFeed) checked() { f.endOnce.Do(func() { close(f.done) }) }

// Prepared implements ledger.CheckFeed.
func (f *checkFeed) Prepared(ctx context.Context, seq uint64, raw []byte) *ledger.Prepared {
	f.asked.Store(true)
	for {
		for len(f.cur) > 0 && f.cur[0].Seq < seq {
			f.cur = f.cur[1:]
		}
		if len(f.cur) > 0 {
			p := &f.cur[0]
			if p.Seq == seq && bytes.Equal(p.Raw, raw) {
				return p
			}
			return nil
		}
		select {
		case f.cur = <-f.ch:
			continue
		default:
		}
		select {
		case f.cur = <-f.ch:
		case <-f.eof:
			select {
			case f.cur = <-f.ch:
			default:
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}
