package ledgerbackend

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
)

// filterIndex lists, in memory, the seqs of the entries by reason code, by
// format and by kind (every kind but handoff, which nearly every entry
// is): the filters the ledger's own indexes (agent, workflow, handoff id,
// decision, time) do not cover. It is built by one pass over the ledger
// the first time a query needs it, then caught up with the stored head on
// every use — so it sees entries whoever appended them. It costs about 8
// bytes per entry and per indexed value.
type filterIndex struct {
	mu     sync.Mutex
	upto   uint64 // entries 1..upto are listed
	code   map[string][]uint64
	format map[string][]uint64
	kind   map[string][]uint64
}

// errPast stops a catch-up scan at the head it was asked for.
var errPast = errors.New("past the head")

// catchUp lists the entries up to head. The caller holds ix.mu.
func (ix *filterIndex) catchUp(ctx context.Context, l *ledger.Ledger, head uint64) error {
	if ix.code == nil {
		ix.code, ix.format, ix.kind = map[string][]uint64{}, map[string][]uint64{}, map[string][]uint64{}
	}
	if ix.upto >= head {
		return nil
	}
	err := l.Scan(ctx, ix.upto+1, func(seq uint64, raw []byte) error {
		if seq > head {
			return errPast
		}
		e, err := entry.Decode(raw)
		if err != nil {
			return &ledger.RecordError{Seq: seq, Op: "index", Err: err}
		}
		if e.Kind != entry.KindHandoff {
			ix.kind[e.Kind] = append(ix.kind[e.Kind], seq)
		}
		if e.Format.Valid {
			ix.format[e.Format.S] = append(ix.format[e.Format.S], seq)
		}
		if e.Reasons != nil {
			var seen []string
			for _, r := range *e.Reasons {
				if c := string(r.Code); !slices.Contains(seen, c) {
					seen = append(seen, c)
					ix.code[c] = append(ix.code[c], seq)
				}
			}
		}
		ix.upto = seq
		return nil
	})
	if errors.Is(err, errPast) {
		err = nil
	}
	return err
}

// indexed reports whether q filters on a field the filter index lists.
func indexed(q server.Query) bool {
	return q.Code != "" || q.Format != "" || (q.Kind != "" && q.Kind != entry.KindHandoff)
}

// candidates returns, ascending, the seqs up to head of the entries that
// may match q: the shortest list among q's indexed fields (the caller
// confirms every filter on the entry). The slice is a copy.
func (ix *filterIndex) candidates(ctx context.Context, l *ledger.Ledger, head uint64, q server.Query) ([]uint64, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.catchUp(ctx, l, head); err != nil {
		return nil, err
	}
	var best []uint64
	first := true
	pick := func(list []uint64) {
		if first || len(list) < len(best) {
			best, first = list, false
		}
	}
	if q.Code != "" {
		pick(ix.code[q.Code])
	}
	if q.Format != "" {
		pick(ix.format[q.Format])
	}
	if q.Kind != "" && q.Kind != entry.KindHandoff {
		pick(ix.kind[q.Kind])
	}
	n, _ := slices.BinarySearch(best, head+1)
	return slices.Clone(best[:n]), nil
}
