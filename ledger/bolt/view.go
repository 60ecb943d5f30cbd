package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"golang.org/x/mod/sumdb/tlog"
)

// View implements ledger.Driver: a read transaction. Close it soon (see
// the package doc).
func (d *Driver) View(ctx context.Context) (_ ledger.View, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db := d.current()
	tx, err := db.Begin(false)
	if err != nil {
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			return nil, ledger.ErrClosed
		}
		return nil, err
	}
	v := &view{tx: tx, d: d}
	if db == d.gdb {
		v.g = newPager(d.gfile, tx, db.Info().PageSize, d.gcache)
	}
	if err := v.init(d); err != nil {
		tx.Rollback()
		return nil, err
	}
	return v, nil
}

// view is a read transaction. A mutex makes its methods safe for
// concurrent use.
type view struct {
	mu   sync.Mutex
	tx   *bolt.Tx
	g    *pager // reads the pages itself when the file was not walked at Open (guard.go)
	head entry.Head
	// version is the file's format version.
	version uint64
	// buckets; idm is nil in a read-only view of a file before format 3;
	// tree is set in one before format 4, tiles in the others; idxBlob is
	// nil before format 5 (blobs keyed by their SHA-256).
	meta, entries, blobs, idxBlob, tree, tiles, accepted, blocked, redacted, idm rbucket
	// From format 7 on: d is the view's driver, indexed meta "indexed",
	// and tl the tail of entries indexed+1..head, read when a lookup
	// first needs it (tailOf).
	d       *Driver
	indexed uint64
	tl      *tail
}

// bucket returns the top-level bucket name, guarded or bbolt's; nil when
// there is none.
func (v *view) bucket(name []byte) rbucket {
	if v.g != nil {
		if b := v.g.bucket(name); b != nil {
			return b
		}
		return nil
	}
	if b := v.tx.Bucket(name); b != nil {
		return boltBucket{b}
	}
	return nil
}

func (v *view) init(d *Driver) error {
	err := v.initBuckets(d)
	if v.g != nil && v.g.err != nil {
		return v.g.take()
	}
	return err
}

func (v *view) initBuckets(d *Driver) error {
	v.meta, v.idm = v.bucket(bucketMeta), v.bucket(bucketIdxIdem)
	var version uint64
	if v.meta != nil {
		version = seqOf(v.meta.Get(metaVersion))
	}
	for _, name := range bucketsOf(version) {
		if v.bucket(name) == nil {
			return fmt.Errorf("%w: bucket %q missing", ledger.ErrCorrupt, name)
		}
	}
	v.version = version
	v.entries, v.blobs = v.bucket(bucketEntries), v.bucket(bucketBlobs)
	if version >= 5 {
		v.idxBlob = v.bucket(bucketIdxBlob)
	}
	if version < 4 {
		v.tree = v.bucket(bucketTree)
	} else {
		v.tiles = v.bucket(bucketTiles)
	}
	v.accepted, v.blocked, v.redacted = v.bucket(bucketIdxAccept), v.bucket(bucketBlocked), v.bucket(bucketRedacted)
	seq, hash, err := readHead(v.meta)
	if err != nil {
		return err
	}
	h := entry.Head{Seq: seq, Hash: hash, Key: string(v.meta.Get(metaKey))}
	h.Manifest, h.HasManifest = readHash(v.meta, metaManifest)
	h.Lock, h.HasLock = readHash(v.meta, metaLock)
	if seq > 0 {
		d.hmu.Lock()
		last := d.last
		d.hmu.Unlock()
		if last.seq == seq && last.hash == hash {
			h.Time = last.time
		} else if raw := v.entries.Get(be64(seq)); raw != nil {
			// A damaged head entry leaves Time zero: reads go on (verify
			// names the damage), and Append refuses a head whose entry
			// does not hash to it.
			if e, err := entry.Decode(raw); err == nil {
				h.Time = e.Time.Time
				if entry.LeafHash(raw) == hash {
					d.setLast(headTime{seq, hash, h.Time})
				}
			}
		}
	}
	v.head = h
	if version >= 7 {
		if v.indexed, err = readIndexed(v.meta, seq); err != nil {
			return err
		}
	}
	return nil
}

// tailOf returns the tail of entries indexed+1..head (format 7 on): the
// driver's, when it covers them, else read from the view's file (and kept
// by the driver of a read-only file, which does not change).
func (v *view) tailOf() (*tail, error) {
	if v.tl != nil {
		return v.tl, nil
	}
	t := v.d.tailFor(v.indexed, v.head.Seq)
	if t == nil {
		var err error
		if t, err = readTail(v.entries, v.blobs, v.indexed, v.head.Seq, false); err != nil {
			return nil, err
		}
		if v.d.readOnly {
			v.d.setTail(t)
		}
	}
	v.tl = t
	return t, nil
}

// lookupTail completes a lookup of s in idx_accepted or idx_idempotency
// (name) that found no row: from format 7 on, the first use of s by an
// entry beyond meta "indexed".
func (v *view) lookupTail(s, name string) (entry.Accept, bool, error) {
	if v.version < 7 {
		return entry.Accept{}, false, nil
	}
	t, err := v.tailOf()
	if err != nil {
		return entry.Accept{}, false, err
	}
	m := t.accepted
	if name == string(bucketIdxIdem) {
		m = t.idem
	}
	a, ok := t.lookup(m, s, v.head.Seq)
	return a, ok, nil
}

// blobKey returns the blobs key idx_blob maps sum to or, from format 7
// on, the key an entry beyond meta "indexed" stored it under, whether or
// not it is still stored there; nil when neither.
func (v *view) blobKey(sum entry.Hash) ([]byte, error) {
	if key := v.idxBlob.Get(sum[:]); key != nil || v.version < 7 {
		return key, nil
	}
	t, err := v.tailOf()
	if err != nil {
		return nil, err
	}
	if seq, ok := t.blob(sum, v.head.Seq); ok {
		return be64(seq), nil
	}
	return nil, nil
}

// do runs fn under the view's lock, turning a bbolt panic into ErrCorrupt.
// A damaged page a guarded read met is the error, whatever fn made of the
// read's empty answer.
func (v *view) do(fn func() error) (err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tx == nil {
		return ledger.ErrClosed
	}
	defer recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if v.g == nil {
		return fn()
	}
	v.g.take()
	err = fn()
	if gerr := v.g.take(); gerr != nil {
		return gerr
	}
	return err
}

func (v *view) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tx == nil {
		return nil
	}
	err := v.tx.Rollback()
	v.tx = nil
	return err
}

func (v *view) Head() entry.Head { return v.head }

func (v *view) Accepted(id string) (a entry.Accept, ok bool, err error) {
	err = v.do(func() error {
		if a, ok, err = v.readAccept(v.accepted, id, "idx_accepted"); err != nil || ok {
			return err
		}
		a, ok, err = v.lookupTail(id, "idx_accepted")
		return err
	})
	return a, ok, err
}

func (v *view) Idempotent(key string) (a entry.Accept, ok bool, err error) {
	err = v.do(func() error {
		if a, ok, err = v.readAccept(v.idm, key, "idx_idempotency"); err != nil || ok {
			return err
		}
		a, ok, err = v.lookupTail(key, "idx_idempotency")
		return err
	})
	return a, ok, err
}

// readAccept reads the entry s maps to in idx_accepted (a handoff id) or
// idx_idempotency (an idempotency key): from format 6 on, the first of
// the entries its acceptKeys name that is the handoff s names (see
// acceptKey); the payload's SHA-256 comes from that entry.
func (v *view) readAccept(b rbucket, s, name string) (entry.Accept, bool, error) {
	if b == nil { // a read-only view of a file before format 3
		return entry.Accept{}, false, nil
	}
	sum := entry.Sum256([]byte(s))
	if v.version < 6 {
		val := b.Get(sum[:])
		if val == nil {
			return entry.Accept{}, false, nil
		}
		if len(val) != acceptLenV5 {
			return entry.Accept{}, false, fmt.Errorf("%w: %s value is %d bytes", ledger.ErrCorrupt, name, len(val))
		}
		a := entry.Accept{Seq: binary.BigEndian.Uint64(val)}
		copy(a.Payload[:], val[8:])
		return a, true, nil
	}
	prefix := sum[:acceptPrefix]
	c := b.Cursor()
	for k, val := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, val = c.Next() {
		if len(k) != acceptPrefix+8 || len(val) != 0 {
			return entry.Accept{}, false, fmt.Errorf("%w: %s key %x value %x", ledger.ErrCorrupt, name, k, val)
		}
		seq := binary.BigEndian.Uint64(k[acceptPrefix:])
		e, err := acceptEntry(v.entries.Get(k[acceptPrefix:]), seq, prefix, name)
		if err != nil {
			return entry.Accept{}, false, err
		}
		if acceptString(e, name) == s {
			return entry.Accept{Seq: seq, Payload: *e.PayloadSHA256}, true, nil
		}
	}
	return entry.Accept{}, false, nil
}

// acceptString is the string entry e is listed under in idx_accepted (its
// handoff id) or idx_idempotency (its idempotency key).
func acceptString(e *entry.Entry, name string) string {
	if name == string(bucketIdxIdem) {
		return e.IdempotencyKey
	}
	return e.HandoffID.S
}

// acceptEntry decodes raw, the entry seq that an idx_accepted or
// idx_idempotency (name) key of prefix names, and checks that it is a
// handoff listed there: accepted with a handoff id (for idx_accepted) or
// with an idempotency key (idx_idempotency), whose SHA-256 begins with
// prefix.
func acceptEntry(raw []byte, seq uint64, prefix []byte, name string) (*entry.Entry, error) {
	if raw == nil {
		return nil, &ledger.RecordError{Seq: seq, Op: name, Err: fmt.Errorf("%w: %s names entry %d, which is missing", ledger.ErrCorrupt, name, seq)}
	}
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, &ledger.RecordError{Seq: seq, Op: name, Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
	}
	ok := e.Seq == seq && e.Kind == entry.KindHandoff && e.PayloadSHA256 != nil
	if name == string(bucketIdxIdem) {
		ok = ok && e.IdempotencyKey != ""
	} else {
		ok = ok && e.HandoffID.Valid && e.Decision == reason.Accepted
	}
	if sum := entry.Sum256([]byte(acceptString(e, name))); !ok || !bytes.HasPrefix(sum[:], prefix) {
		return nil, &ledger.RecordError{Seq: seq, Op: name, Err: fmt.Errorf("%w: %s key %x names entry %d, which is not a handoff it lists", ledger.ErrCorrupt, name, prefix, seq)}
	}
	return e, nil
}

func (v *view) Blocked(agent string) (seq uint64, ok bool, err error) {
	if agent == "" || len(agent) > ledger.MaxIndexedString {
		return 0, false, nil
	}
	err = v.do(func() error {
		b := v.blocked.Get([]byte(agent))
		if b == nil {
			return nil
		}
		if len(b) != 8 {
			return fmt.Errorf("%w: blocked value is %d bytes", ledger.ErrCorrupt, len(b))
		}
		seq, ok = binary.BigEndian.Uint64(b), true
		return nil
	})
	return seq, ok, err
}

func (v *view) Blocks() (out map[string]uint64, err error) {
	out = map[string]uint64{}
	err = v.do(func() error {
		return v.blocked.ForEach(func(k, b []byte) error {
			if len(b) != 8 {
				return fmt.Errorf("%w: blocked value for %q is %d bytes", ledger.ErrCorrupt, k, len(b))
			}
			out[string(k)] = binary.BigEndian.Uint64(b)
			return nil
		})
	})
	return out, err
}

// ReadHashes implements tlog.HashReader over the tiles (or, in a file
// before format 4, the tree bucket).
func (v *view) ReadHashes(indexes []int64) (out []tlog.Hash, err error) {
	err = v.do(func() error {
		if v.tiles != nil {
			out, err = tileHashes(v.tiles, v.entries, v.head.Seq, indexes, v.d.lastLeaves())
			return err
		}
		out = make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			b := v.tree.Get(be64(uint64(x)))
			if len(b) != len(tlog.Hash{}) {
				return fmt.Errorf("%w: tree hash %d is %d bytes", ledger.ErrCorrupt, x, len(b))
			}
			copy(out[i][:], b)
		}
		return nil
	})
	return out, err
}

// Entry returns the stored bytes under seq. It reads the entries bucket
// as it is, so a damaged file may give entries past the head.
func (v *view) Entry(seq uint64) (raw []byte, err error) {
	err = v.do(func() error {
		raw = clone(v.entries.Get(be64(seq)))
		if raw == nil {
			return fmt.Errorf("seq %d: %w", seq, ledger.ErrNotFound)
		}
		return nil
	})
	return raw, err
}

// Scan walks the entries bucket from key from to its end: through the
// head, or past it in a damaged file. A key that is not 8 bytes gives a
// *ledger.RecordError wrapping ErrCorrupt. fn runs under the view's lock.
func (v *view) Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error {
	return v.do(func() error {
		c := v.entries.Cursor()
		n := 0
		for k, b := c.Seek(be64(from)); k != nil; k, b = c.Next() {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if len(k) != 8 {
				return &ledger.RecordError{Op: "scan", Err: fmt.Errorf("%w: entry key %x is not 8 bytes", ledger.ErrCorrupt, k)}
			}
			if err := fn(binary.BigEndian.Uint64(k), b); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

// ScanBlobs implements ledger.BlobScanner: Scan, with a cursor on the
// blobs bucket moving beside the entries' (from format 5 on, a blob's key
// is the seq of the entry that stored it). Before format 5 every blob is
// nil. A blobs key with no entry is passed over (Check reports it).
func (v *view) ScanBlobs(ctx context.Context, from uint64, fn func(seq uint64, raw, blob []byte) error) error {
	if v.idxBlob == nil {
		return v.Scan(ctx, from, func(seq uint64, raw []byte) error { return fn(seq, raw, nil) })
	}
	var bc cursor
	var bk, bv []byte
	// at is the seq of the blobs key under the cursor; a key that is not
	// 8 bytes is passed over (Check reports it).
	at := func() uint64 {
		for bk != nil && len(bk) != 8 {
			bk, bv = bc.Next()
		}
		if bk == nil {
			return ^uint64(0)
		}
		return binary.BigEndian.Uint64(bk)
	}
	return v.Scan(ctx, from, func(seq uint64, raw []byte) error {
		if bc == nil {
			bc = v.blobs.Cursor()
			bk, bv = bc.Seek(be64(seq))
		}
		for bk != nil && at() < seq {
			bk, bv = bc.Next()
		}
		if bk != nil && at() == seq {
			return fn(seq, raw, bv)
		}
		return fn(seq, raw, nil)
	})
}

// BlobSeq implements ledger.BlobScanner: the seq idx_blob maps sum to
// (format 5 on), or from format 7 on the seq an entry beyond meta
// "indexed" stored it under, while it is stored there.
func (v *view) BlobSeq(sum entry.Hash) (seq uint64, ok bool, err error) {
	if v.idxBlob == nil {
		return 0, false, nil
	}
	err = v.do(func() error {
		if key := v.idxBlob.Get(sum[:]); len(key) == 8 {
			seq, ok = binary.BigEndian.Uint64(key), true
			return nil
		}
		if v.version < 7 {
			return nil
		}
		t, err := v.tailOf()
		if err != nil {
			return err
		}
		if s, found := t.blob(sum, v.head.Seq); found && v.blobs.Get(be64(s)) != nil {
			seq, ok = s, true
		}
		return nil
	})
	return seq, ok, err
}

func (v *view) Blob(sum entry.Hash) (data []byte, err error) {
	err = v.do(func() error {
		key := sum[:] // formats 1-4
		if v.idxBlob != nil {
			var err error
			if key, err = v.blobKey(sum); err != nil {
				return err
			}
		}
		if key != nil {
			data = clone(v.blobs.Get(key))
		}
		switch {
		case data != nil:
			return nil
		case v.redacted.Get(sum[:]) != nil:
			return fmt.Errorf("blob %s: %w", sum, ledger.ErrRedacted)
		default:
			return fmt.Errorf("blob %s: %w", sum, ledger.ErrNotFound)
		}
	})
	return data, err
}

// Erased implements ledger.View: the redacted table's seq for sum.
func (v *view) Erased(sum entry.Hash) (seq uint64, ok bool, err error) {
	err = v.do(func() error {
		r := v.redacted.Get(sum[:])
		if r == nil {
			return nil
		}
		if len(r) != 8 {
			return fmt.Errorf("%w: redacted value for %s is %d bytes", ledger.ErrCorrupt, sum, len(r))
		}
		seq, ok = binary.BigEndian.Uint64(r), true
		return nil
	})
	return seq, ok, err
}

// Find reads candidates from the most selective index, adds the entries
// the secondary indexes do not cover yet (Options.IndexBatch), and
// confirms each against the decoded entry (index keys are hashes).
// Without an indexed field the candidates are the stored entries between
// the bounds q's seqs and times give (timeBounds).
func (v *view) Find(ctx context.Context, q ledger.Query) (out []uint64, err error) {
	if q.Limit > 0 {
		return v.findLimited(ctx, q) // walks in the answer's order, stops at Limit
	}
	idx, prefix := index(&q)
	err = v.do(func() error {
		head := v.head.Seq
		indexed, err := readIndexed(v.meta, head)
		if err != nil {
			return err
		}
		if q.After == ^uint64(0) {
			return nil
		}
		lo, hi := q.After+1, head
		if q.Before != 0 {
			hi = min(hi, q.Before-1)
		}
		var cands []uint64
		// stored appends the seqs from..to, read from the entries bucket,
		// not counted up to the head: a damaged head seq must not size a
		// list.
		stored := func(from, to uint64) error {
			if from > to {
				return nil
			}
			ec, next := v.entries.Cursor(), from
			for k, _ := ec.Seek(be64(next)); k != nil && next <= to; k, _ = ec.Next() {
				if len(k) != 8 || binary.BigEndian.Uint64(k) != next {
					break
				}
				cands = append(cands, next)
				next++
			}
			if next <= to {
				return &ledger.RecordError{Seq: next, Op: "find", Err: fmt.Errorf("%w: entry %d missing below the head %d", ledger.ErrCorrupt, next, head)}
			}
			return nil
		}
		if prefix == nil {
			if lo, hi, err = timeBounds(&q, lo, hi, func(seq uint64) (*entry.Entry, error) { return getEntry(v.entries, seq) }); err != nil {
				return err
			}
			if err := stored(lo, hi); err != nil {
				return err
			}
		} else {
			b := v.bucket(idx)
			if b == nil {
				return fmt.Errorf("%w: bucket %q missing", ledger.ErrCorrupt, idx)
			}
			c := b.Cursor()
			var seqs []uint64
			for k, val := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, val = c.Next() {
				if len(k) != len(prefix)+8 {
					continue // a longer decision string sharing the prefix
				}
				if seqs, err = decodePostings(seqs[:0], binary.BigEndian.Uint64(k[len(k)-8:]), val); err != nil {
					return fmt.Errorf("%w: %s record %x: %v", ledger.ErrCorrupt, idx, k, err)
				}
				for _, seq := range seqs {
					if seq <= indexed && seq >= lo && seq <= hi {
						cands = append(cands, seq)
					}
				}
			}
			// Records of a prefix list increasing seqs and never overlap:
			// only a damaged file lists one out of order or twice.
			if !slices.IsSorted(cands) {
				slices.Sort(cands)
			}
			cands = slices.Compact(cands)
			// Entries beyond meta "indexed" have no index keys yet: every
			// one is a candidate, confirmed below like the others.
			if err := stored(max(lo, indexed+1), hi); err != nil {
				return err
			}
		}
		for i, seq := range cands {
			if i%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			e, err := getEntry(v.entries, seq)
			if err != nil {
				return err
			}
			if q.Match(e) {
				out = append(out, seq)
			}
		}
		return nil
	})
	return q.Cut(out), err
}

// WriteTo writes a consistent copy of the whole ledger file to w (a hot
// backup), in one read transaction.
func (d *Driver) WriteTo(w io.Writer) (n int64, err error) {
	err = d.read(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
