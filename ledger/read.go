package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/govledger/govledger/entry"
)

// Get returns entry seq, decoded, and its stored bytes. It returns an error
// wrapping ErrNotFound for a seq that is not stored, and a *RecordError
// wrapping ErrCorrupt for bytes that do not decode.
func (l *Ledger) Get(ctx context.Context, seq uint64) (*entry.Entry, []byte, error) {
	var raw []byte
	err := l.view(ctx, func(v View) error {
		var err error
		raw, err = v.Entry(seq)
		return err
	})
	return decodeAt(seq, raw, err)
}

// decodeAt decodes raw, read as entry seq with error err.
func decodeAt(seq uint64, raw []byte, err error) (*entry.Entry, []byte, error) {
	if errors.Is(err, ErrNotFound) {
		return nil, nil, &RecordError{Seq: seq, Op: "get", Err: ErrNotFound}
	}
	if err != nil {
		return nil, nil, err
	}
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, raw, &RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	if e.Seq != seq {
		return nil, raw, &RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: stored under seq %d but says seq %d", ErrCorrupt, seq, e.Seq)}
	}
	return e, raw, nil
}

// Blob returns the payload or snapshot bytes whose SHA-256 is sum. It
// returns an error wrapping ErrRedacted for bytes a redaction removed,
// ErrNotFound for bytes never stored, and ErrCorrupt when the stored bytes
// do not hash to sum.
func (l *Ledger) Blob(ctx context.Context, sum entry.Hash) ([]byte, error) {
	var data []byte
	err := l.view(ctx, func(v View) error {
		var err error
		data, err = v.Blob(sum)
		return err
	})
	if err != nil {
		return nil, err
	}
	if got := entry.Sum256(data); got != sum {
		return nil, fmt.Errorf("blob %s: %w: stored bytes hash to %s", sum, ErrCorrupt, got)
	}
	return data, nil
}

// EntryBlob returns the bytes entry seq names by sum: its payload, or a
// snapshot's content. Redaction is per entry: it returns an error wrapping
// ErrRedacted for an entry whose payload a redaction erased (the redacted
// entry, and any entry before the redaction naming the same bytes), even
// when a later entry stored the same bytes again; that later entry's own
// payload is read. Otherwise it answers as Blob. Every reader of an
// entry's payload (the API, export, the viewer, show, copy) reads it so;
// Blob reads bytes by content alone.
func (l *Ledger) EntryBlob(ctx context.Context, seq uint64, sum entry.Hash) ([]byte, error) {
	var data []byte
	err := l.view(ctx, func(v View) error {
		var err error
		data, err = viewEntryBlob(v, seq, sum)
		return err
	})
	if err != nil {
		return nil, err
	}
	if got := entry.Sum256(data); got != sum {
		return nil, fmt.Errorf("blob %s: %w: stored bytes hash to %s", sum, ErrCorrupt, got)
	}
	return data, nil
}

// viewEntryBlob is EntryBlob on the view v, without the hash check.
func viewEntryBlob(v View, seq uint64, sum entry.Hash) ([]byte, error) {
	if r, ok, err := v.Erased(sum); err != nil {
		return nil, err
	} else if ok && seq < r {
		return nil, fmt.Errorf("payload of seq %d: %w by seq %d", seq, ErrRedacted, r)
	}
	return v.Blob(sum)
}

// errChunk stops a view's Scan when a chunk is full.
var errChunk = errors.New("chunk full")

// Scan calls fn for every stored entry with seq >= from, in seq order,
// with a copy of its stored bytes. It reads in chunks, each from its own
// short-lived view, and calls fn outside any view, so memory stays bounded
// and a concurrent writer is never held up for long; entries appended
// during the scan may or may not be seen. Scan stops at the first error of
// fn or ctx. It does not decode or check the bytes (see verify); a damaged
// store gives a *RecordError wrapping ErrCorrupt.
func (l *Ledger) Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error {
	return l.scan(ctx, from, false, func(seq uint64, raw, _ []byte) error { return fn(seq, raw) })
}

// ScanBlobs is Scan, with each entry's bytes the blob stored under the
// entry's own seq, when the driver keeps blobs so (a BlobScanner; nil
// otherwise, and for an entry that stored none). It is the blob of the
// first entry to name it, which a reader must still check against the
// hash its entry names; a blob stored earlier (the same bytes named again)
// or elsewhere is read with Blob.
func (l *Ledger) ScanBlobs(ctx context.Context, from uint64, fn func(seq uint64, raw, blob []byte) error) error {
	return l.scan(ctx, from, true, fn)
}

func (l *Ledger) scan(ctx context.Context, from uint64, blobs bool, fn func(seq uint64, raw, blob []byte) error) error {
	const maxCount, maxBytes = 512, 4 << 20
	type kv struct {
		seq       uint64
		raw, blob []byte
	}
	next := from
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var chunk []kv
		size := 0
		done := true
		err := l.view(ctx, func(v View) error {
			add := func(seq uint64, raw, blob []byte) error {
				if len(chunk) == maxCount || size >= maxBytes {
					done = false
					return errChunk
				}
				chunk = append(chunk, kv{seq, clone(raw), clone(blob)})
				size += len(raw) + len(blob)
				return nil
			}
			var err error
			if bs, ok := v.(BlobScanner); ok && blobs {
				err = bs.ScanBlobs(ctx, next, add)
			} else {
				err = v.Scan(ctx, next, func(seq uint64, raw []byte) error { return add(seq, raw, nil) })
			}
			if err == errChunk {
				err = nil
			}
			return err
		})
		if err != nil {
			return err
		}
		for _, x := range chunk {
			if err := fn(x.seq, x.raw, x.blob); err != nil {
				return err
			}
		}
		if done || len(chunk) == 0 {
			return nil
		}
		last := chunk[len(chunk)-1].seq
		if last == ^uint64(0) {
			return nil
		}
		next = last + 1
	}
}

// Query selects entries for Find. Zero fields do not filter.
type Query struct {
	HandoffID  string
	Agent      string // source or target of a handoff, or agent of an unblock or an outcome
	WorkflowID string
	Decision   string    // "accepted" or "rejected"
	Since      time.Time // entry time >= Since
	Until      time.Time // entry time < Until
	Limit      int       // at most this many (0: no limit)
	Newest     bool      // with Limit: keep the newest matches, not the oldest
	// Before and After bound the seqs, for cursor paging: only entries
	// with seq < Before (0: no bound) and seq > After.
	Before, After uint64
}

// Find returns, in ascending order, the seqs of entries matching every
// field of q, as the driver's indexes find them (View.Find).
func (l *Ledger) Find(ctx context.Context, q Query) ([]uint64, error) {
	var out []uint64
	err := l.view(ctx, func(v View) error {
		var err error
		out, err = v.Find(ctx, q)
		return err
	})
	return out, err
}

// Match reports whether e matches every field of q but Limit and Newest.
// A driver's Find confirms each candidate its indexes give with it.
func (q *Query) Match(e *entry.Entry) bool {
	if e.Seq <= q.After || q.Before != 0 && e.Seq >= q.Before {
		return false
	}
	if q.HandoffID != "" && (!e.HandoffID.Valid || e.HandoffID.S != q.HandoffID) {
		return false
	}
	if q.WorkflowID != "" && (!e.WorkflowID.Valid || e.WorkflowID.S != q.WorkflowID) {
		return false
	}
	if q.Agent != "" {
		in := (e.Kind == entry.KindUnblock || e.Kind == entry.KindOutcome) && e.Agent == q.Agent ||
			e.Source.Valid && e.Source.S == q.Agent || e.Target.Valid && e.Target.S == q.Agent
		if !in {
			return false
		}
	}
	if q.Decision != "" && e.Decision != q.Decision {
		return false
	}
	if !q.Since.IsZero() && e.Time.Before(q.Since) {
		return false
	}
	if !q.Until.IsZero() && !e.Time.Before(q.Until) {
		return false
	}
	return true
}

// Cut applies q.Limit and q.Newest to the ascending matches seqs.
func (q *Query) Cut(seqs []uint64) []uint64 {
	if q.Limit > 0 && len(seqs) > q.Limit {
		if q.Newest {
			return seqs[len(seqs)-q.Limit:]
		}
		return seqs[:q.Limit]
	}
	return seqs
}

// Redact removes the stored payload bytes of handoff entry seq (its hash
// stays in the entry) and appends a redaction entry carrying note. The
// bytes are removed for every entry with the same payload stored before
// the redaction, and the driver makes them unrecoverable from its storage
// (Batch.Erase). Those entries' payloads stay erased (EntryBlob) when a
// later entry stores the same bytes again; the later entry's do not. Errors wrap
// ErrNotFound (no such entry), ErrNotRedactable (not a handoff, or its
// payload was never stored) or ErrRedacted (already removed), plus the
// errors of Append.
func (l *Ledger) Redact(ctx context.Context, seq uint64, note string) (*Result, error) {
	return l.RedactAs(ctx, seq, note, "")
}

// RedactAs is Redact recording submitter (the operator who asked; "" for
// none) as the redaction entry's submitter.
func (l *Ledger) RedactAs(ctx context.Context, seq uint64, note, submitter string) (*Result, error) {
	return l.Append(ctx, &Request{redact: true, Build: func(st State, e *entry.Entry) error {
		if seq == 0 || seq >= e.Seq {
			return fmt.Errorf("seq %d: %w", seq, ErrNotFound)
		}
		e.Kind, e.RedactedSeq, e.Note, e.Submitter = entry.KindRedaction, seq, note, submitter
		return nil
	}})
}

// View calls fn with the ledger's derived state (accepted handoff ids,
// blocked agents, snapshots in force) as of the last commit, on one
// consistent view, so a caller can decide without recording ("govledger
// validate"). st must not be used after fn returns.
func (l *Ledger) View(ctx context.Context, fn func(st State) error) error {
	return l.view(ctx, func(v View) error {
		st := entry.NewState(v.Head(), v)
		if err := fn(st); err != nil {
			return err
		}
		return st.Err()
	})
}

// Block is an agent blocked now, and the entry that blocked it.
type Block struct {
	Agent string
	Seq   uint64       // the entry that blocked it
	Entry *entry.Entry // that entry, decoded
}

// Blocks returns the agents blocked now (as of the last commit), sorted by
// agent, each with the entry that blocked it. A block ends only by an
// entry: an unblock, or a lock snapshot that lifts it.
func (l *Ledger) Blocks(ctx context.Context) ([]Block, error) {
	var out []Block
	err := l.view(ctx, func(v View) error {
		m, err := v.Blocks()
		if err != nil {
			return err
		}
		for a, seq := range m {
			out = append(out, Block{Agent: a, Seq: seq})
		}
		slices.SortFunc(out, func(a, b Block) int {
			if a.Agent < b.Agent {
				return -1
			}
			if a.Agent > b.Agent {
				return 1
			}
			return 0
		})
		for i := range out {
			raw, err := v.Entry(out[i].Seq)
			e, _, err := decodeAt(out[i].Seq, raw, err)
			if err != nil {
				return err
			}
			out[i].Entry = e
		}
		return nil
	})
	return out, err
}
