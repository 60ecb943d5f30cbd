package tiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/internal/atomicfile"
)

// A Source is a log as Publish reads it. *ledger.Ledger implements it.
type Source interface {
	Origin() string
	TreeSize(ctx context.Context) (uint64, error)
	TreeHash(ctx context.Context, size uint64) (tlog.Hash, error)
	// Tile returns the bytes of a hash tile or entry bundle of a tree of
	// at least t.MinTreeSize() entries.
	Tile(ctx context.Context, t Tile) ([]byte, error)
}

// PublishOptions configure Publish.
type PublishOptions struct {
	// Signer signs the checkpoint at the source's head (required unless
	// Checkpoint is set).
	Signer note.Signer
	// Checkpoint, when set, is the signed checkpoint written instead (one
	// witnesses cosigned: its signature lines are kept): the tree is
	// published at its size, which the source must have with its root.
	// When dir already holds a larger checkpoint of the source's tree,
	// nothing is written (PublishResult.Size is that checkpoint's).
	Checkpoint []byte
	// Entries also writes the entry bundles, making every entry public.
	Entries bool
	// FileMode is the mode of the files written (default 0644: a static
	// host serves them).
	FileMode os.FileMode
	// AfterFile, when set, is called after each tile or bundle is written
	// (for progress, and for tests that stop a publish midway: an error
	// stops it, and the checkpoint is not written).
	AfterFile func(t Tile) error
}

// PublishResult says what Publish did.
type PublishResult struct {
	OldSize uint64 // the size of the checkpoint DIR held (0 for none)
	Size    uint64 // the size of the checkpoint written
	Tiles   int    // hash tiles written
	Bundles int    // entry bundles written
}

// ErrPublishedFork is wrapped by Publish's error when DIR holds a
// checkpoint the source does not extend: another log's, a larger tree, or
// a root the source's tree of that size does not have. Nothing is written.
var ErrPublishedFork = errors.New("the folder holds a checkpoint the ledger does not extend")

// Publish writes src's tree under dir as the static files of a tlog-tiles
// log (dir/checkpoint, dir/tile/...), so that any static host serves it.
//
// It is incremental: it reads dir's checkpoint and writes only the tiles
// (and, with Entries, bundles) that the tree gained since, then the
// partial tiles of the new size. Every file is written atomically
// (temporary file, fsync, rename, folder fsync), and the new checkpoint
// last: a publish interrupted at any point leaves the old checkpoint in
// place, with every tile it needs, and a reader never sees a checkpoint
// whose tiles are missing. Partial tiles of older sizes are kept, so a
// client holding an older checkpoint can still read its tree.
//
// The checkpoint in dir is not trusted: the source's tree at its size
// must have its root (ErrPublishedFork otherwise, nothing written).
func Publish(ctx context.Context, src Source, dir string, o PublishOptions) (*PublishResult, error) {
	if o.Signer == nil && o.Checkpoint == nil {
		return nil, errors.New("tiles: publish needs a checkpoint signer")
	}
	if o.FileMode == 0 {
		o.FileMode = 0o644
	}
	size, err := src.TreeSize(ctx)
	if err != nil {
		return nil, fmt.Errorf("tiles: tree size: %w", err)
	}
	var given *checkpoint.Checkpoint
	if o.Checkpoint != nil {
		if given, err = checkpoint.Parse(o.Checkpoint); err != nil {
			return nil, fmt.Errorf("tiles: the checkpoint to publish: %w", err)
		}
		if given.Origin != src.Origin() {
			return nil, fmt.Errorf("tiles: the checkpoint to publish is of origin %q, the ledger's %q", given.Origin, src.Origin())
		}
		if given.Size > size {
			return nil, fmt.Errorf("tiles: the checkpoint to publish has %d entries, the ledger %d", given.Size, size)
		}
		size = given.Size
	}
	root, err := src.TreeHash(ctx, size)
	if err != nil {
		return nil, fmt.Errorf("tiles: tree hash at %d: %w", size, err)
	}
	if given != nil && given.Hash != root {
		return nil, fmt.Errorf("tiles: the checkpoint to publish: its root at size %d is %x, the ledger's %x", size, given.Hash[:], root[:])
	}
	res := &PublishResult{Size: size}
	cpPath := filepath.Join(dir, CheckpointPath)
	if old, err := os.ReadFile(cpPath); err == nil {
		c, err := checkpoint.Parse(old)
		if err != nil {
			return nil, fmt.Errorf("tiles: %s: %w", cpPath, err)
		}
		if c.Origin != src.Origin() {
			return nil, fmt.Errorf("tiles: %s: %w: its origin is %q, the ledger's %q", cpPath, ErrPublishedFork, c.Origin, src.Origin())
		}
		if c.Size > size && given == nil {
			return nil, fmt.Errorf("tiles: %s: %w: it has %d entries, the ledger %d", cpPath, ErrPublishedFork, c.Size, size)
		}
		if head, _ := src.TreeSize(ctx); c.Size > head {
			return nil, fmt.Errorf("tiles: %s: %w: it has %d entries, the ledger %d", cpPath, ErrPublishedFork, c.Size, head)
		}
		h, err := src.TreeHash(ctx, c.Size)
		if err != nil {
			return nil, fmt.Errorf("tiles: tree hash at %d: %w", c.Size, err)
		}
		if h != c.Hash {
			return nil, fmt.Errorf("tiles: %s: %w: its root at size %d is %x, the ledger's %x", cpPath, ErrPublishedFork, c.Size, c.Hash[:], h[:])
		}
		res.OldSize = c.Size
		if c.Size > size {
			// A newer checkpoint of this tree is published already.
			res.Size = c.Size
			return res, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tiles: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tiles: %w", err)
	}
	w := writer{dir: dir, mode: o.FileMode, made: map[string]bool{}}
	write := func(t Tile) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := src.Tile(ctx, t)
		if err != nil {
			return fmt.Errorf("tiles: %s: %w", t.Path(), err)
		}
		if err := w.file(t.Path(), data); err != nil {
			return err
		}
		if o.AfterFile != nil {
			return o.AfterFile(t)
		}
		return nil
	}
	for t := range HashTiles(res.OldSize, size) {
		if err := write(t); err != nil {
			return res, err
		}
		res.Tiles++
	}
	if o.Entries {
		from := res.OldSize
		if !w.hasBundles(from) {
			from = 0 // first publish with entries: all of them
		}
		for t := range EntryBundles(from, size) {
			if err := write(t); err != nil {
				return res, err
			}
			res.Bundles++
		}
	}
	signed := o.Checkpoint
	if signed == nil {
		if signed, err = checkpoint.Sign(&checkpoint.Checkpoint{Origin: src.Origin(), Size: size, Hash: root}, o.Signer); err != nil {
			return res, fmt.Errorf("tiles: checkpoint: %w", err)
		}
	}
	if err := w.file(CheckpointPath, signed); err != nil {
		return res, err
	}
	return res, nil
}

// writer writes files under dir atomically, creating folders durably.
type writer struct {
	dir  string
	mode os.FileMode
	made map[string]bool
}

// hasBundles reports whether dir holds the entry bundles of a tree of
// size (true for 0): the last bundle of that size exists.
func (w *writer) hasBundles(size uint64) bool {
	var last Tile
	for t := range EntryBundles(0, size) {
		last = t
	}
	if size == 0 {
		return true
	}
	_, err := os.Stat(filepath.Join(w.dir, filepath.FromSlash(last.Path())))
	return err == nil
}

func (w *writer) file(rel string, data []byte) error {
	path := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := w.mkdir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, data, w.mode); err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	return nil
}

// mkdir creates dir and its missing parents, fsyncing the parent of each
// folder it creates so the new entry survives a crash.
func (w *writer) mkdir(dir string) error {
	if w.made[dir] || dir == w.dir {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		w.made[dir] = true
		return nil
	}
	parent := filepath.Dir(dir)
	if err := w.mkdir(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("tiles: %w", err)
	}
	d, err := os.Open(parent)
	if err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("tiles: fsync %s: %w", parent, err)
	}
	w.made[dir] = true
	return nil
}
