package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// findLimited is Find for q.Limit > 0. In the view's transaction it walks
// the candidates in the answer's order — newest first with q.Newest — and
// confirms each against its decoded entry, stopping at q.Limit matches:
//
//   - without an indexed field and without a time bound, the candidates
//     are the seqs between the bounds, read from the entries themselves;
//   - with a handoff id, workflow, agent or decision, the seqs the records
//     of that index list under the value's prefix (in seq order) between
//     the bounds, and the entries after meta "indexed", which have none;
//   - a time bound narrows the bounds first (timeBounds): entry times
//     never decrease along the chain, so the entries are their own time
//     index.
//
// Its cost follows the size of the answer, not of the ledger (plus the
// at most Options.IndexBatch unindexed entries when a filter is given).
func (v *view) findLimited(ctx context.Context, q ledger.Query) ([]uint64, error) {
	var out []uint64
	err := v.do(func() error {
		head := v.head.Seq
		indexed, err := readIndexed(v.meta, head)
		if err != nil {
			return err
		}
		ents := v.entries
		if q.After == ^uint64(0) {
			return nil
		}
		get := func(seq uint64) (*entry.Entry, error) { return getEntry(ents, seq) }
		lo, hi := q.After+1, head
		if q.Before != 0 {
			hi = min(hi, q.Before-1)
		}
		if lo, hi, err = timeBounds(&q, lo, hi, get); err != nil || lo > hi {
			return err
		}
		// confirm adds seq when its entry matches; done when Limit is met.
		n := 0
		confirm := func(seq uint64) (done bool, err error) {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return true, err
				}
			}
			e, err := get(seq)
			if err != nil {
				return true, err
			}
			if q.Match(e) {
				out = append(out, seq)
			}
			return len(out) >= q.Limit, nil
		}
		// seqRange confirms the seqs from..to (inclusive) in walk order.
		seqRange := func(from, to uint64) (bool, error) {
			if from > to {
				return false, nil
			}
			if q.Newest {
				for seq := to; seq >= from; seq-- {
					if done, err := confirm(seq); done || err != nil {
						return true, err
					}
				}
				return false, nil
			}
			for seq := from; seq <= to; seq++ {
				if done, err := confirm(seq); done || err != nil {
					return true, err
				}
			}
			return false, nil
		}
		idx, prefix := index(&q)
		if prefix == nil {
			_, err := seqRange(lo, hi)
			return err
		}
		b := v.bucket(idx)
		if b == nil {
			return fmt.Errorf("%w: bucket %q missing", ledger.ErrCorrupt, idx)
		}
		ilo, ihi := lo, min(hi, indexed) // the part the index covers
		tlo, thi := max(lo, indexed+1), hi
		walk := func() (bool, error) {
			if ilo > ihi {
				return false, nil
			}
			return walkPrefix(b.Cursor(), idx, prefix, ilo, ihi, q.Newest, confirm)
		}
		if q.Newest {
			if done, err := seqRange(tlo, thi); done || err != nil {
				return err
			}
			_, err := walk()
			return err
		}
		if done, err := walk(); done || err != nil {
			return err
		}
		_, err = seqRange(tlo, thi)
		return err
	})
	if err != nil {
		return nil, err
	}
	if q.Newest {
		slices.Reverse(out)
	}
	return out, nil
}

// recordAtOrBefore moves c to the last index record of prefix whose
// first seq is at most seq and returns it; the key returned may be of
// another prefix (or nil) when there is none. Keys of prefix of another
// length (a longer decision sharing it) are passed over.
func recordAtOrBefore(c cursor, prefix []byte, seq uint64) (k, v []byte) {
	want := len(prefix) + 8
	if k, _ = c.Seek(cat(prefix, be64(seq+1))); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for k != nil && bytes.HasPrefix(k, prefix) && len(k) != want {
		k, v = c.Prev()
	}
	return k, v
}

// walkPrefix confirms, in seq order (descending when newest), the seqs
// lo..hi of the index records of prefix (see maxPostings) in bucket name.
// It starts at the last record beginning at or before the bound (lo, or
// hi when newest), which may list seqs beyond it. Keys of other lengths
// (another decision sharing the prefix) are skipped, and so are seqs a
// damaged file lists out of order or twice.
func walkPrefix(c cursor, name, prefix []byte, lo, hi uint64, newest bool, confirm func(uint64) (bool, error)) (bool, error) {
	want := len(prefix) + 8
	bound := lo
	if newest {
		bound = hi
	}
	k, v := recordAtOrBefore(c, prefix, bound)
	step := c.Next
	if newest {
		step = c.Prev
	} else if k == nil || !bytes.HasPrefix(k, prefix) {
		k, v = c.Seek(cat(prefix, be64(lo)))
	}
	var seqs []uint64
	last := uint64(0) // the last seq walked, so none is confirmed twice
	if newest {
		last = ^uint64(0)
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = step() {
		if len(k) != want {
			continue
		}
		var err error
		if seqs, err = decodePostings(seqs[:0], binary.BigEndian.Uint64(k[len(prefix):]), v); err != nil {
			return true, fmt.Errorf("%w: %s record %x: %v", ledger.ErrCorrupt, name, k, err)
		}
		if newest {
			slices.Reverse(seqs)
		}
		for _, seq := range seqs {
			switch {
			case newest && seq < lo || !newest && seq > hi:
				return false, nil
			case seq < lo || seq > hi || newest && seq >= last || !newest && seq <= last:
				continue
			}
			last = seq
			if done, err := confirm(seq); done || err != nil {
				return true, err
			}
		}
	}
	return false, nil
}

// getEntry reads and decodes entry seq of the entries bucket ents.
func getEntry(ents rbucket, seq uint64) (*entry.Entry, error) {
	raw := ents.Get(be64(seq))
	if raw == nil {
		return nil, &ledger.RecordError{Seq: seq, Op: "get", Err: ledger.ErrNotFound}
	}
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, &ledger.RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
	}
	if e.Seq != seq {
		return nil, &ledger.RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: stored under seq %d but says seq %d", ledger.ErrCorrupt, seq, e.Seq)}
	}
	return e, nil
}

// timeBounds narrows the seqs lo..hi to those of the entries whose time
// lies in [q.Since, q.Until). Entry times never decrease along the chain
// (verify reports an entry earlier than the one before it), so the
// entries are their own time index: a binary search per bound reads
// about 2·log2(hi-lo) entries, whatever the ledger's size. In a ledger
// whose times do go back, the bounds are those of one crossing: a
// matching entry beyond them can be missed, and every entry returned
// still matches q (each is confirmed against it).
func timeBounds(q *ledger.Query, lo, hi uint64, get func(uint64) (*entry.Entry, error)) (uint64, uint64, error) {
	// first returns the first seq of lo..hi whose time is t or later
	// (hi+1 when none is).
	first := func(t time.Time) (uint64, error) {
		a, b := lo, hi+1
		for a < b {
			m := a + (b-a)/2
			e, err := get(m)
			if err != nil {
				return 0, err
			}
			if e.Time.Before(t) {
				a = m + 1
			} else {
				b = m
			}
		}
		return a, nil
	}
	if lo > hi {
		return lo, hi, nil
	}
	from, to := lo, hi
	if !q.Until.IsZero() {
		u, err := first(q.Until)
		if err != nil {
			return 0, 0, err
		}
		if u == lo {
			return 1, 0, nil // nothing before Until
		}
		to = u - 1
	}
	if !q.Since.IsZero() {
		f, err := first(q.Since)
		if err != nil {
			return 0, 0, err
		}
		from = f
	}
	return from, to, nil
}

// index returns the most selective index for q and the key prefix of q's
// value in it, as Find chooses them; nil, nil without an indexed field.
func index(q *ledger.Query) (idx, prefix []byte) {
	switch {
	case q.HandoffID != "":
		return bucketIdxHandoff, xxh(q.HandoffID)
	case q.WorkflowID != "":
		return bucketIdxWork, xxh(q.WorkflowID)
	case q.Agent != "":
		return bucketIdxAgent, xxh(q.Agent)
	case q.Decision != "":
		return bucketIdxDecide, []byte(q.Decision)
	}
	return nil, nil
}
