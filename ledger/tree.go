package ledger

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/tiles"
)

// The ledger's entries are the leaves of an RFC 6962 Merkle tree: leaf i
// (0-based) is entry seq i+1, and its leaf hash is the entry hash,
// tlog.RecordHash(canonical bytes). The tree's stored hashes
// (tlog.StoredHashes) are stored in the same batch as each entry, so
// every method below reads O(log n) hashes.

// TreeSize returns the number of leaves: the head seq.
func (l *Ledger) TreeSize(ctx context.Context) (uint64, error) {
	seq, _, err := l.Head(ctx)
	return seq, err
}

// TreeHash returns the RFC 6962 root hash of the first size entries. It
// returns an error wrapping ErrBadRange when size exceeds TreeSize.
func (l *Ledger) TreeHash(ctx context.Context, size uint64) (h tlog.Hash, err error) {
	err = l.treeView(ctx, size, func(r tlog.HashReader) error {
		h, err = tlog.TreeHash(int64(size), r)
		return err
	})
	return h, err
}

// ProveInclusion returns the proof that entry seq (leaf index seq-1) is in
// the tree of the first size entries. Requires 1 <= seq <= size <= TreeSize
// (else ErrBadRange). Check it with tlog.CheckRecord or any RFC 6962
// verifier.
func (l *Ledger) ProveInclusion(ctx context.Context, seq, size uint64) (p tlog.RecordProof, err error) {
	if seq < 1 || seq > size {
		return nil, fmt.Errorf("inclusion of seq %d in tree size %d: %w", seq, size, ErrBadRange)
	}
	err = l.treeView(ctx, size, func(r tlog.HashReader) error {
		p, err = tlog.ProveRecord(int64(size), int64(seq-1), r)
		return err
	})
	return p, err
}

// ProveConsistency returns the proof that the tree of size newSize extends
// the tree of size oldSize. Requires oldSize <= newSize <= TreeSize (else
// ErrBadRange). The proof is empty when oldSize is 0 or equals newSize.
func (l *Ledger) ProveConsistency(ctx context.Context, oldSize, newSize uint64) (p tlog.TreeProof, err error) {
	if oldSize > newSize {
		return nil, fmt.Errorf("consistency of size %d with size %d: %w", oldSize, newSize, ErrBadRange)
	}
	err = l.treeView(ctx, newSize, func(r tlog.HashReader) error {
		if oldSize == 0 || oldSize == newSize {
			p = tlog.TreeProof{}
			return nil
		}
		p, err = tlog.ProveTree(int64(newSize), int64(oldSize), r)
		return err
	})
	return p, err
}

// treeView runs fn over the stored tree of one view after checking
// size <= head.
func (l *Ledger) treeView(ctx context.Context, size uint64, fn func(tlog.HashReader) error) error {
	if size > 1<<62 {
		return fmt.Errorf("tree size %d: %w", size, ErrBadRange)
	}
	return l.view(ctx, func(v View) error {
		if head := v.Head().Seq; size > head {
			return fmt.Errorf("tree size %d > %d: %w", size, head, ErrBadRange)
		}
		return fn(v)
	})
}

// errBundleFull stops the scan of an entry bundle.
var errBundleFull = errors.New("bundle full")

// Tile returns the bytes of the tlog-tiles resource t of the stored tree:
// a hash tile's t.Width hashes, or an entry bundle of the canonical bytes
// of entries t.Index*256+1 … t.Index*256+t.Width, each prefixed by its
// length. Its bytes never change once the tree has t.MinTreeSize()
// leaves; before that it fails with an error wrapping ErrNotFound. An
// entry longer than tiles.MaxEntrySize fails the bundle with a
// *RecordError (naming its seq) wrapping tiles.ErrEntryTooLarge.
func (l *Ledger) Tile(ctx context.Context, t tiles.Tile) (data []byte, err error) {
	if err := t.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRange, err)
	}
	err = l.view(ctx, func(v View) error {
		if need, head := t.MinTreeSize(), v.Head().Seq; need > head {
			return fmt.Errorf("%s: %w: needs %d entries, the ledger has %d", t.Path(), ErrNotFound, need, head)
		}
		if !t.Entries {
			data, err = tiles.HashTile(v, t)
			return err
		}
		first, last := t.Index*tiles.Width+1, t.Index*tiles.Width+uint64(t.Width)
		data = make([]byte, 0, t.Width*512)
		err := v.Scan(ctx, first, func(seq uint64, raw []byte) error {
			var err error
			if data, err = tiles.AppendEntry(data, raw); err != nil {
				return &RecordError{Seq: seq, Op: "entry bundle", Err: err}
			}
			if seq == last {
				return errBundleFull
			}
			return nil
		})
		if err == errBundleFull {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%w: %s: the scan ended before seq %d", ErrCorrupt, t.Path(), last)
		}
		return err
	})
	return data, err
}
