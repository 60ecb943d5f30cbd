package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/govledger/govledger/entry"
	bolt "go.etcd.io/bbolt"
)

// Get returns entry seq, decoded, and its stored bytes. It returns an error
// wrapping ErrNotFound for a seq that is not stored, and a *RecordError
// wrapping ErrCorrupt for bytes that do not decode.
func (l *Ledger) Get(seq uint64) (*entry.Entry, []byte, error) {
	var raw []byte
	err := l.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketEntries)
		if err != nil {
			return err
		}
		raw = clone(b.Get(be64(seq)))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if raw == nil {
		return nil, nil, &RecordError{Seq: seq, Op: "get", Err: ErrNotFound}
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

func bucket(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	b := tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, name)
	}
	return b, nil
}

// Blob returns the payload or snapshot bytes whose SHA-256 is sum. It
// returns an error wrapping ErrRedacted for bytes a redaction removed,
// ErrNotFound for bytes never stored, and ErrCorrupt when the stored bytes
// do not hash to sum.
func (l *Ledger) Blob(sum entry.Hash) ([]byte, error) {
	var data []byte
	var redacted bool
	err := l.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketBlobs)
		if err != nil {
			return err
		}
		data = clone(b.Get(sum[:]))
		if data == nil {
			r, err := bucket(tx, bucketRedacted)
			if err != nil {
				return err
			}
			redacted = r.Get(sum[:]) != nil
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case data != nil:
		if entry.Sum256(data) != sum {
			return nil, fmt.Errorf("blob %s: %w: stored bytes hash to %s", sum, ErrCorrupt, entry.Sum256(data))
		}
		return data, nil
	case redacted:
		return nil, fmt.Errorf("blob %s: %w", sum, ErrRedacted)
	default:
		return nil, fmt.Errorf("blob %s: %w", sum, ErrNotFound)
	}
}

// Scan calls fn for every stored entry with seq >= from, in key order, with
// a copy of its stored bytes. It reads in chunks, each in its own short read
// transaction, and calls fn outside any transaction, so memory stays
// bounded and a concurrent writer is never held up for long; entries
// appended during the scan may or may not be seen. Scan stops at the first
// error of fn or ctx. It does not decode or check the bytes (see verify);
// a key that is not 8 bytes gives a *RecordError wrapping ErrCorrupt.
func (l *Ledger) Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error {
	const maxCount, maxBytes = 512, 4 << 20
	type kv struct {
		seq uint64
		raw []byte
	}
	next := from
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var chunk []kv
		done := true
		err := l.view(func(tx *bolt.Tx) error {
			b, err := bucket(tx, bucketEntries)
			if err != nil {
				return err
			}
			c := b.Cursor()
			size := 0
			for k, v := c.Seek(be64(next)); k != nil; k, v = c.Next() {
				if len(chunk) == maxCount || size >= maxBytes {
					done = false
					break
				}
				if len(k) != 8 {
					return &RecordError{Op: "scan", Err: fmt.Errorf("%w: entry key %x is not 8 bytes", ErrCorrupt, k)}
				}
				chunk = append(chunk, kv{binary.BigEndian.Uint64(k), clone(v)})
				size += len(v)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, x := range chunk {
			if err := fn(x.seq, x.raw); err != nil {
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
	Agent      string // source or target of a handoff, or agent of an unblock
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
// field of q. It reads candidates from the most selective index, adds the
// entries the secondary indexes do not cover yet (Options.IndexBatch), and
// confirms each against the decoded entry (index keys are hashes).
//
// With a Limit, the walk goes in the answer's order (newest first with
// Newest) and stops at Limit matches, so its cost follows the size of the
// answer and not of the ledger (see findLimited).
func (l *Ledger) Find(q Query) ([]uint64, error) {
	if q.Limit > 0 {
		return l.findLimited(q)
	}
	idx, prefix := q.index()
	var cands []uint64
	var indexed, head uint64
	err := l.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, idx)
		if err != nil {
			return err
		}
		m := tx.Bucket(bucketMeta)
		if head, _, err = readHead(m); err != nil {
			return err
		}
		if indexed, err = readIndexed(m, head); err != nil {
			return err
		}
		c := b.Cursor()
		var k []byte
		switch {
		case prefix != nil:
			k, _ = c.Seek(prefix)
		case !q.Since.IsZero():
			k, _ = c.Seek(timeKey(q.Since.UTC()))
		default:
			k, _ = c.First()
		}
		for ; k != nil; k, _ = c.Next() {
			if prefix != nil && !bytes.HasPrefix(k, prefix) {
				break
			}
			if prefix == nil && !q.Until.IsZero() && bytes.Compare(k, timeKey(q.Until.UTC())) >= 0 {
				break
			}
			want := len(prefix) + 8
			if prefix == nil {
				want = 12 + 8
			}
			if len(k) != want {
				continue // a longer decision string sharing the prefix
			}
			if seq := binary.BigEndian.Uint64(k[len(k)-8:]); seq <= indexed {
				cands = append(cands, seq)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if prefix != nil {
		sortSeqs(cands)
	}
	// Entries beyond meta "indexed" have no index keys yet: every one is a
	// candidate, confirmed below like the others.
	for seq := indexed + 1; seq <= head; seq++ {
		cands = append(cands, seq)
	}
	var out []uint64
	for _, seq := range cands {
		e, _, err := l.Get(seq)
		if err != nil {
			return nil, err
		}
		if q.matches(e) {
			out = append(out, seq)
		}
	}
	if q.Limit > 0 && len(out) > q.Limit {
		if q.Newest {
			out = out[len(out)-q.Limit:]
		} else {
			out = out[:q.Limit]
		}
	}
	return out, nil
}

// index returns the most selective index for q and the key prefix of q's
// value in it (nil for the time index).
func (q *Query) index() (idx, prefix []byte) {
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

func (q *Query) matches(e *entry.Entry) bool {
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
		in := e.Kind == entry.KindUnblock && e.Agent == q.Agent ||
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

func sortSeqs(s []uint64) {
	// Index keys are prefix||seq, so one prefix's seqs are already sorted;
	// this only guards against a hostile file.
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			slices.Sort(s)
			return
		}
	}
}

// WriteTo writes a consistent copy of the whole ledger file to w (a hot
// backup), in one read transaction.
func (l *Ledger) WriteTo(w io.Writer) (n int64, err error) {
	err = l.view(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// Redact removes the stored payload bytes of handoff entry seq (its hash
// stays in the entry) and appends a redaction entry carrying note. The
// bytes are removed for every entry with the same payload. Errors wrap
// ErrNotFound (no such entry), ErrNotRedactable (not a handoff, or its
// payload was never stored) or ErrRedacted (already removed), plus the
// errors of Append.
func (l *Ledger) Redact(ctx context.Context, seq uint64, note string) (*Result, error) {
	return l.Append(ctx, &Request{redact: true, Build: func(st State, e *entry.Entry) error {
		if seq == 0 || seq >= e.Seq {
			return fmt.Errorf("seq %d: %w", seq, ErrNotFound)
		}
		e.Kind, e.RedactedSeq, e.Note = entry.KindRedaction, seq, note
		return nil
	}})
}

// View calls fn with the ledger's derived state (accepted handoff ids,
// blocked agents, snapshots in force) as of the last commit, inside one
// read transaction, so a caller can decide without recording ("govledger
// validate"). st must not be used after fn returns.
func (l *Ledger) View(fn func(st State) error) error {
	return l.view(func(tx *bolt.Tx) error {
		w, err := newWriter(tx, l.now, nil)
		if err != nil {
			return err
		}
		if err := fn(w.st); err != nil {
			return err
		}
		return w.st.Err()
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
func (l *Ledger) Blocks() ([]Block, error) {
	var out []Block
	err := l.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketBlocked)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: blocked value for %q is %d bytes", ErrCorrupt, k, len(v))
			}
			out = append(out, Block{Agent: string(k), Seq: binary.BigEndian.Uint64(v)})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		e, _, err := l.Get(out[i].Seq)
		if err != nil {
			return nil, err
		}
		out[i].Entry = e
	}
	return out, nil
}
