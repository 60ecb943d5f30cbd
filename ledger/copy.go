package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
)

// ErrNotEmpty is returned by Copy when the destination already holds
// entries: a copy starts a ledger, it never merges two.
var ErrNotEmpty = errors.New("ledger: the destination is not empty")

// CopyOptions configure Copy. A nil *CopyOptions means the defaults.
type CopyOptions struct {
	// MaxEntries bounds the entries of one destination batch (default
	// 1024); MaxBytes the entry and blob bytes (default 16 MiB; one
	// larger entry or blob still makes a batch of its own).
	MaxEntries int
	MaxBytes   int
	// Progress, if set, is called after each stored batch with the seq
	// copied so far and the source's head seq.
	Progress func(done, total uint64)
}

// CopyResult is what Copy stored.
type CopyResult struct {
	Entries  uint64     // entries copied: the source's head seq
	Head     entry.Hash // the head hash, the same in both
	Batches  int        // destination commits
	Blobs    int        // payloads and snapshots stored
	Redacted int        // payloads the source had erased, erased in the destination too
}

// Copy stores every entry of src in dst, which must be empty and have the
// same origin (a checkpoint names the origin): the same entries with the
// same bytes, so the same head hash and the same Merkle tree, and
// therefore every checkpoint and proof of one holds for the other. It goes
// through the Driver interface only, so it copies between any two drivers
// (bbolt to PostgreSQL and back).
//
// Nothing of the source is trusted: every entry is decoded and folded
// into the state (entry.State, the fold verify and the core use) on top of
// the destination's tables, every tree hash is recomputed and compared
// with the source's, and the destination's batches carry what the fold
// derives (accepted, idempotency, blocked, the snapshots and key in
// force), not the source's tables. A payload the source erased (a
// redaction) is not there to copy and is erased in the destination by the
// same redaction entry; a payload never stored (too large) stays absent.
// The source is read in one view (one consistent snapshot), however long
// the copy takes.
//
// An error wrapping ErrCorrupt names the source entry that does not follow
// the chain; ErrConflict means another writer appended to dst meanwhile.
// On error, dst holds a prefix of the source (whole batches): remove it,
// or empty it, before copying again.
func Copy(ctx context.Context, dst, src Driver, o *CopyOptions) (*CopyResult, error) {
	var opts CopyOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 1024
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 16 << 20
	}
	if dst.Origin() != src.Origin() {
		return nil, fmt.Errorf("%w: the destination's origin is %q, the source's %q: create the destination with the source's origin",
			ErrBadOptions, dst.Origin(), src.Origin())
	}
	sv, err := src.View(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: source: %w", err)
	}
	defer sv.Close()
	c := &copier{ctx: ctx, dst: dst, sv: sv, opts: opts, res: &CopyResult{}, total: sv.Head().Seq}
	dv, err := dst.View(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: destination: %w", err)
	}
	at := dv.Head()
	dv.Close()
	if at.Seq != 0 {
		return nil, fmt.Errorf("%w: it holds %d entries", ErrNotEmpty, at.Seq)
	}
	for at.Seq < c.total {
		if at, err = c.batch(at); err != nil {
			return c.res, err
		}
		if opts.Progress != nil {
			opts.Progress(at.Seq, c.total)
		}
	}
	want := sv.Head()
	if at.Seq != want.Seq || at.Hash != want.Hash || at.Manifest != want.Manifest || at.Lock != want.Lock ||
		at.HasManifest != want.HasManifest || at.HasLock != want.HasLock || at.Key != want.Key {
		return c.res, fmt.Errorf("%w: the source's stored head (seq %d, %s) is not the state its entries fold to (seq %d, %s)",
			ErrCorrupt, want.Seq, want.Hash, at.Seq, at.Hash)
	}
	c.res.Entries, c.res.Head = at.Seq, at.Hash
	return c.res, nil
}

type copier struct {
	ctx   context.Context
	dst   Driver
	sv    View
	opts  CopyOptions
	res   *CopyResult
	total uint64
}

// errBatchFull stops the source scan at the end of a batch.
var errBatchFull = errors.New("batch full")

// batch builds one destination batch from the source entries after at,
// stores it and returns the destination's new head.
func (c *copier) batch(at entry.Head) (entry.Head, error) {
	dv, err := c.dst.View(c.ctx)
	if err != nil {
		return at, fmt.Errorf("copy: destination: %w", err)
	}
	defer dv.Close()
	if h := dv.Head(); h.Seq != at.Seq || h.Hash != at.Hash {
		return at, fmt.Errorf("%w: the destination moved to seq %d during the copy", ErrConflict, h.Seq)
	}
	st := entry.NewState(at, dv)
	b := &Batch{At: at, Blobs: map[entry.Hash][]byte{}}
	base := tlog.StoredHashIndex(0, int64(at.Seq))
	items := map[uint64]*entry.Entry{}
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= base {
				out[i] = b.Hashes[x-base]
				continue
			}
			h, err := dv.ReadHashes([]int64{x})
			if err != nil {
				return nil, err
			}
			out[i] = h[0]
		}
		return out, nil
	})
	corrupt := func(seq uint64, format string, args ...any) error {
		return &RecordError{Seq: seq, Op: "copy", Err: fmt.Errorf("%w: source entry %d: %s", ErrCorrupt, seq, fmt.Sprintf(format, args...))}
	}
	// Read the batch's entries first: a view's reads may not be called
	// from inside its Scan (bbolt holds the view while it scans).
	type row struct {
		seq uint64
		raw []byte
	}
	var rows []row
	size := 0
	err = c.sv.Scan(c.ctx, at.Seq+1, func(seq uint64, raw []byte) error {
		if len(rows) >= c.opts.MaxEntries || len(rows) > 0 && size+len(raw) > c.opts.MaxBytes {
			return errBatchFull
		}
		rows = append(rows, row{seq, bytes.Clone(raw)})
		size += len(raw)
		return nil
	})
	if err != nil && !errors.Is(err, errBatchFull) {
		return at, fmt.Errorf("copy: source: %w", err)
	}
	size = 0
	add := func(seq uint64, raw []byte) error {
		if len(b.Entries) > 0 && size > c.opts.MaxBytes {
			return errBatchFull
		}
		e, err := entry.Decode(raw)
		if err != nil {
			return corrupt(seq, "%v", err)
		}
		if e.Seq != seq {
			return corrupt(seq, "it says seq %d", e.Seq)
		}
		h := entry.LeafHash(raw)
		if err := st.Apply(e, h); err != nil {
			if st.Err() != nil {
				return fmt.Errorf("copy: destination: %w", st.Err())
			}
			return corrupt(seq, "%v", err)
		}
		hashes, err := tlog.StoredHashesForRecordHash(int64(seq-1), tlog.Hash(h), reader)
		if err != nil {
			return fmt.Errorf("copy: tree hashes of seq %d: %w", seq, err)
		}
		b.Hashes = append(b.Hashes, hashes...)
		b.Entries = append(b.Entries, Appended{Entry: e, Raw: raw, Hash: h})
		items[seq] = e
		size += len(raw)
		var sum *entry.Hash
		switch e.Kind {
		case entry.KindHandoff:
			sum = e.PayloadSHA256
		case entry.KindSnapshot:
			sum = e.ContentSHA256
		case entry.KindRedaction:
			t, ok := items[e.RedactedSeq]
			if !ok {
				tr, err := c.sv.Entry(e.RedactedSeq)
				if err != nil {
					return fmt.Errorf("copy: the entry seq %d redacts: %w", seq, err)
				}
				if t, err = entry.Decode(tr); err != nil {
					return corrupt(e.RedactedSeq, "%v", err)
				}
			}
			if t.Kind != entry.KindHandoff {
				return corrupt(seq, "redacts seq %d, a %s entry", e.RedactedSeq, t.Kind)
			}
			b.Erase = append(b.Erase, *t.PayloadSHA256)
			c.res.Redacted++
			// Bytes stored after a redaction are stored again by a later
			// batch: a batch erases after it stores.
			return errBatchFull
		}
		if sum != nil {
			if _, ok := b.Blobs[*sum]; ok {
				return nil
			}
			data, err := viewEntryBlob(c.sv, seq, *sum)
			switch {
			case err == nil:
				b.Blobs[*sum] = bytes.Clone(data)
				size += len(data)
				c.res.Blobs++
			case errors.Is(err, ErrRedacted) && e.Kind == entry.KindHandoff:
				// Erased by a later redaction entry, which erases it here too.
			case errors.Is(err, ErrNotFound) && e.Kind == entry.KindHandoff:
				// Never stored (larger than the store's limit): verify
				// reports it the same way in both.
			default:
				return corrupt(seq, "its %s bytes %s: %v", e.Kind, *sum, err)
			}
		}
		return nil
	}
	for _, r := range rows {
		if err := add(r.seq, r.raw); errors.Is(err, errBatchFull) {
			break
		} else if err != nil {
			return at, err
		}
	}
	// The source's stored tree hashes must be the ones its entries give:
	// one read for the batch.
	if len(b.Hashes) > 0 {
		idx := make([]int64, len(b.Hashes))
		for i := range idx {
			idx[i] = base + int64(i)
		}
		stored, err := c.sv.ReadHashes(idx)
		if err != nil {
			return at, fmt.Errorf("copy: source tree hashes: %w", err)
		}
		for i := range idx {
			if stored[i] != b.Hashes[i] {
				seq := at.Seq + 1
				for seq < at.Seq+uint64(len(b.Entries)) && tlog.StoredHashIndex(0, int64(seq)) <= idx[i] {
					seq++
				}
				return at, corrupt(seq, "stored tree hash %d is %s, the entries give %s", idx[i], stored[i], b.Hashes[i])
			}
		}
	}
	if err := st.Err(); err != nil {
		return at, fmt.Errorf("copy: destination: %w", err)
	}
	if len(b.Entries) == 0 {
		return at, fmt.Errorf("%w: the source holds no entry %d below its head %d", ErrCorrupt, at.Seq+1, c.total)
	}
	b.Head, b.Delta = st.Head, st.Delta
	if err := b.Check(); err != nil {
		return at, err
	}
	// A bbolt destination cannot grow its file while a read transaction
	// is open.
	dv.Close()
	if err := c.dst.Append(c.ctx, b); err != nil {
		return at, fmt.Errorf("copy: destination: store seq %d-%d: %w", b.At.Seq+1, b.Head.Seq, err)
	}
	c.res.Batches++
	return b.Head, nil
}
