package verify

import (
	"context"

	"github.com/govledger/govledger/entry"
)

// ReplayWorkers is Replay with the given number of workers (below 2: none,
// each entry is prepared by the goroutine that judges it), handed batch
// entries at a time. It also returns how many decisions were taken again
// in stored order because no worker's speculation could be used.
func ReplayWorkers(ctx context.Context, src Source, opts Options, workers, batch int) (*Report, int, error) {
	var st replayStats
	rep, err := replay(ctx, src, opts, pool{workers, batch}, &st)
	return rep, st.decidedAgain, err
}

// Rereading returns src as a source that reads an entry again by seq with
// get, as a ledger's source does: Replay then keeps its compact tables
// (the table of tags, no outcome links) and confirms with get.
func Rereading(src Source, get func(ctx context.Context, seq uint64) (*entry.Entry, error)) Source {
	return rereading{src, get}
}

type rereading struct {
	Source
	get func(ctx context.Context, seq uint64) (*entry.Entry, error)
}

func (r rereading) entry(ctx context.Context, seq uint64) (*entry.Entry, error) {
	return r.get(ctx, seq)
}
