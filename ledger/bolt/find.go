package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

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
//   - with only a time bound, the time index's records. Entry times
//     never decrease along the chain (verify checks it), so time order is
//     seq order, and the walk starts at the time of the bounding seq.
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
		lo, hi := q.After+1, head
		if q.Before != 0 {
			hi = min(hi, q.Before-1)
		}
		if lo > hi {
			return nil
		}
		get := func(seq uint64) (*entry.Entry, error) {
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
		if prefix == nil && q.Since.IsZero() && q.Until.IsZero() {
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
			if prefix != nil {
				return walkPrefix(b.Cursor(), idx, prefix, ilo, ihi, q.Newest, confirm)
			}
			return walkTime(b.Cursor(), &q, ilo, ihi, get, confirm)
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
	var v []byte
	k, _ := c.Seek(cat(prefix, be64(bound+1)))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for k != nil && bytes.HasPrefix(k, prefix) && len(k) != want {
		k, v = c.Prev()
	}
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

// walkTime confirms, in seq order (descending when q.Newest), the seqs
// lo..hi of the time index between q.Since and q.Until. It starts at the
// time of the bounding entry (lo, or hi when newest), as times never
// decrease along the chain; a record lists seqs of one time.
func walkTime(c cursor, q *ledger.Query, lo, hi uint64, get func(uint64) (*entry.Entry, error), confirm func(uint64) (bool, error)) (bool, error) {
	var sinceKey, untilKey []byte
	if !q.Since.IsZero() {
		sinceKey = timeKey(q.Since.UTC())
	}
	if !q.Until.IsZero() {
		untilKey = timeKey(q.Until.UTC())
	}
	at := func(seq uint64) ([]byte, error) {
		e, err := get(seq)
		if err != nil {
			return nil, err
		}
		return timeKey(e.Time.Time.UTC()), nil
	}
	var k, v []byte
	step := c.Next
	if q.Newest {
		step = c.Prev
		start, err := at(hi)
		if err != nil {
			return true, err
		}
		start = cat(start, be64(hi+1))
		if untilKey != nil && bytes.Compare(untilKey, start) < 0 {
			start = untilKey
		}
		if k, _ = c.Seek(start); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	} else {
		start, err := at(lo) // a record of lo's time may begin before lo
		if err != nil {
			return true, err
		}
		if sinceKey != nil && bytes.Compare(sinceKey, start) > 0 {
			start = sinceKey
		}
		k, v = c.Seek(start)
	}
	var seqs []uint64
	last := uint64(0)
	if q.Newest {
		last = ^uint64(0)
	}
	for ; k != nil; k, v = step() {
		if len(k) != 12+8 {
			continue
		}
		if q.Newest && sinceKey != nil && bytes.Compare(k[:12], sinceKey) < 0 ||
			!q.Newest && untilKey != nil && bytes.Compare(k[:12], untilKey) >= 0 {
			break
		}
		var err error
		if seqs, err = decodePostings(seqs[:0], binary.BigEndian.Uint64(k[12:]), v); err != nil {
			return true, fmt.Errorf("%w: idx_time record %x: %v", ledger.ErrCorrupt, k, err)
		}
		if q.Newest {
			slices.Reverse(seqs)
		}
		for _, seq := range seqs {
			switch {
			case q.Newest && seq < lo || !q.Newest && seq > hi:
				return false, nil
			case seq < lo || seq > hi || q.Newest && seq >= last || !q.Newest && seq <= last:
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

// index returns the most selective index for q and the key prefix of q's
// value in it (nil for the time index), as Find chooses them.
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
	return bucketIdxTime, nil
}
