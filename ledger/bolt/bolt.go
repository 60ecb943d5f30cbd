// Package bolt is the bbolt driver of the ledger: one file holding the
// entries, the blobs they name, the Merkle tree's stored hashes, the
// derived tables the state fold reads and the secondary indexes Find uses
// (see layout.go), and the store's consistency check (Check). It is the
// only package of govledger that imports go.etcd.io/bbolt.
//
// Open opens a file as a *ledger.Ledger; OpenDriver returns the Driver
// alone, for a caller that wraps it.
//
// One writer per file: a writable open takes an exclusive file lock
// (read-only opens a shared one) and gives up after Options.Timeout with
// an error wrapping ledger.ErrLocked. Within the process, the ledger core
// serializes appends; Append still compares the stored head with the
// batch's (compare-and-append), so a batch built on a stale head is
// refused with ledger.ErrConflict and nothing is written.
//
// Corruption never panics: bbolt can panic on a damaged file; every read
// recovers such a panic and returns an error wrapping ledger.ErrCorrupt.
// The damage no recover catches (a page cycle: endless recursion in bbolt)
// is kept from bbolt by a page check: of the whole file at Open with
// Options.CheckPages, else of each page a view reads (see Options).
//
// A view is a bbolt read transaction. Hold it briefly: a commit that must
// grow the file past its memory map waits until every open view of the
// file is closed.
package bolt

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/fault"
	"github.com/govledger/govledger/ledger"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"golang.org/x/mod/sumdb/tlog"
)

// Defaults used for zero Options fields.
const (
	DefaultTimeout = 2 * time.Second
	// DefaultIndexBatch is the default Options.IndexBatch.
	DefaultIndexBatch = 128
)

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// CheckPages walks every page of the file's B+trees before Open returns
	// (see checkPages): a corrupted file then fails with ledger.ErrCorrupt
	// instead of sending bbolt into an unbounded recursion, a fatal stack
	// overflow that no recover can catch, and views then read through
	// bbolt. It costs one read of every page in use: for callers that read
	// everything anyway (verify, export, a server at start-up).
	//
	// Without it, Open checks only the few pages it reads itself (the root
	// and meta trees), and every view reads the pages it visits through its
	// own code, checking each one before use (guard.go): a point read (one
	// entry, a page of log, a proof) costs a few pages whatever the size of
	// the file, and a damaged page on its path gives an error wrapping
	// ledger.ErrCorrupt naming the bucket and the page. Appends still go
	// through bbolt unchecked, as does the upgrade of a file of an earlier
	// format. Check always walks the pages first.
	CheckPages bool

	// ReadOnly opens the file with a shared lock for readers (verify, show,
	// log). Append and Redact return ErrReadOnly. The file's bytes are never
	// changed. A read-only Open never creates a file.
	ReadOnly bool
	// Timeout bounds the wait for the file lock (default 2s; negative: wait
	// forever). On timeout Open returns an error wrapping ledger.ErrLocked.
	Timeout time.Duration
	// NoCreate makes Open refuse a missing file (ledger.ErrNotExist) instead of
	// creating a new ledger. A 0-byte file is always refused (ledger.ErrEmptyFile,
	// which a ReadOnly or NoCreate Open also wraps in ledger.ErrNotExist): bbolt
	// would initialize it silently, and an emptied ledger must not pass for
	// a new one.
	NoCreate bool
	// Now is the ledger clock (default time.Now). An entry's time is
	// max(Now().UTC(), previous entry's time).
	Now func() time.Time
	// Origin names a NEW ledger (default ledger.DefaultOriginPrefix + 16
	// random hex digits): 1-255 bytes of UTF-8 without spaces or control
	// characters. An existing ledger keeps the origin it was created with.
	Origin string
	// MaxBatch bounds how many Append requests share one commit (default
	// ledger.DefaultMaxBatch).
	MaxBatch int
	// IndexBatch is how far the secondary indexes (handoff id, agent,
	// workflow, decision, time) may trail the head: the commit that leaves
	// IndexBatch or more entries unindexed writes their keys, in sorted
	// order, with meta "indexed" (default DefaultIndexBatch; 1: every
	// commit). Appending then touches 5 fewer buckets per commit, which is
	// most of the ledger's write cost over a bare bbolt put. Find scans the
	// unindexed tail, so its answers do not depend on this; Check verifies
	// the indexes through meta "indexed" and that no key lies beyond it.
	// Decisions never read these indexes: idx_accepted and blocked are
	// written in the entry's own commit.
	IndexBatch int
}

// String makes Options loggable.
func (o *Options) String() string {
	if o == nil {
		return "{}"
	}
	return fmt.Sprintf("{ReadOnly: %t, Timeout: %s, NoCreate: %t, Now: %t, Origin: %q, MaxBatch: %d, IndexBatch: %d}",
		o.ReadOnly, o.Timeout, o.NoCreate, o.Now != nil, o.Origin, o.MaxBatch, o.IndexBatch)
}

// valid checks fields without side effects.
func (o *Options) valid() error {
	if o.MaxBatch < 0 {
		return fmt.Errorf("%w: MaxBatch %d < 0", ledger.ErrBadOptions, o.MaxBatch)
	}
	if o.IndexBatch < 0 {
		return fmt.Errorf("%w: IndexBatch %d < 0", ledger.ErrBadOptions, o.IndexBatch)
	}
	if o.Origin != "" {
		if err := ledger.CheckOrigin(o.Origin); err != nil {
			return fmt.Errorf("%w: %v", ledger.ErrBadOptions, err)
		}
	}
	return nil
}

// Driver is the bbolt ledger.Driver of one open file. Its methods are safe
// for concurrent use.
type Driver struct {
	path     string
	origin   string
	readOnly bool
	// walked is the database whose pages Open walked (Options.CheckPages)
	// under a shared lock: no writer can change them while it is open, so
	// Check need not walk them again. Nil otherwise.
	walked     *bolt.DB
	indexBatch uint64
	timeout    time.Duration

	// mu guards db, which a compaction (an erasure) replaces.
	mu sync.RWMutex
	db *bolt.DB
	// old counts files replaced by a compaction whose close (waiting for
	// the views still reading them) is under way.
	old sync.WaitGroup
	// gdb is the file Open opened when it did not walk its pages, and gfile
	// the same file for the guarded reads of its views (guard.go); a file a
	// compaction wrote is read through bbolt.
	gdb    *bolt.DB
	gfile  *os.File
	gcache *pageCache // pages checked by earlier views, for a read-only file

	// wmu serializes Append and the compaction after it.
	wmu       sync.Mutex
	unindexed []indexed // keys of committed entries beyond meta "indexed"

	// tmu guards tail, what the entries beyond meta "indexed" add to
	// the decision indexes (tail.go): set by each commit, and by the
	// first view of a read-only file that needs it.
	tmu    sync.Mutex
	tail   *tail
	leaves *leafCache // the last level-0 tile, as far as the head (tail.go)

	hmu  sync.Mutex
	last headTime // the head whose time is known
}

// headTime is a head and its entry's time, so a view need not decode the
// head entry to learn it.
type headTime struct {
	seq  uint64
	hash entry.Hash
	time time.Time
}

// Open opens the ledger at path as a *ledger.Ledger over a Driver (see
// OpenDriver).
func Open(path string, opts *Options) (*ledger.Ledger, error) {
	d, err := OpenDriver(path, opts)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	l, err := ledger.New(d, &ledger.Options{Now: o.Now, MaxBatch: o.MaxBatch, ReadOnly: o.ReadOnly})
	if err != nil {
		d.Close()
		return nil, err
	}
	return l, nil
}

// OpenDriver opens the ledger file at path, creating it unless
// opts.NoCreate or opts.ReadOnly is set. A new file is built under a
// temporary name, synced, and linked into place, so a crash never leaves a
// half-initialized ledger at path. A file of an earlier format is upgraded
// by a writable open. Errors wrap ledger.ErrNotExist, ledger.ErrEmptyFile,
// ledger.ErrLocked (with the message "ledger <path> is in use by another
// process"), ledger.ErrVersionMismatch, ledger.ErrNotLedger, ledger.ErrCorrupt or
// ledger.ErrBadOptions.
func OpenDriver(path string, opts *Options) (*Driver, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.valid(); err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	} else if o.Timeout < 0 {
		o.Timeout = 0 // bbolt: wait forever
	}
	if o.IndexBatch == 0 {
		o.IndexBatch = DefaultIndexBatch
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if o.NoCreate || o.ReadOnly {
			return nil, fmt.Errorf("ledger %s: %w", path, ledger.ErrNotExist)
		}
		if err := create(path, &o); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	case fi.IsDir():
		// A folder cannot be opened as a ledger file: an open failure,
		// as a missing permission is, and still not a ledger.
		return nil, fmt.Errorf("ledger %s could not be opened: %w: %w", path, &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}, ledger.ErrNotLedger)
	case fi.Size() == 0:
		return nil, emptyErr(path, &o)
	}
	db, err := openLocked(path, &o)
	if err != nil {
		return nil, err
	}
	d := &Driver{path: path, db: db, readOnly: o.ReadOnly, indexBatch: uint64(o.IndexBatch), timeout: o.Timeout}
	if err := d.guard(o.CheckPages); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if o.CheckPages && o.ReadOnly {
		d.walked = db
	}
	if err := d.read(func(tx *bolt.Tx) error {
		origin, err := checkMeta(tx)
		d.origin = origin
		return err
	}); err != nil {
		d.closeFiles()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if !d.readOnly {
		if err := d.upgrade(); err != nil {
			d.closeFiles()
			return nil, fmt.Errorf("ledger %s: upgrade to format %d: %w", path, FormatVersion, err)
		}
	}
	return d, nil
}

func emptyErr(path string, o *Options) error {
	if o.NoCreate || o.ReadOnly {
		return fmt.Errorf("ledger %s: %w (%w)", path, ledger.ErrEmptyFile, ledger.ErrNotExist)
	}
	return fmt.Errorf("ledger %s: %w; remove it to create a new ledger", path, ledger.ErrEmptyFile)
}

// pageSize is the page size of a new file. Entries, payloads and tree
// tiles are appended in key order and packed full (appendFill), so larger
// pages waste less of each page on a value that does not fit.
const pageSize = 16 << 10

// allocSize is how much a commit that needs room grows the file by (bbolt's
// default is 16 MiB): the room not yet used is on disk too, ~100 bytes an
// entry at 100,000 entries with the default, ~10 with this. Each growth
// costs a truncate and an fsync, once per few hundred entries.
const allocSize = 1 << 20

// initialMmapSize is the memory map of a file (address space, not
// memory): a commit that grows the file past the map must wait for every
// open read transaction, so a large map keeps views from holding up
// commits for files below it.
const initialMmapSize = 1 << 30

// openLocked opens an existing file and makes sure the file it locked is
// still the one at path: a compaction (ledger/bolt's erasure) renames a
// new file over the old one, and an Open that waited for the old file's
// lock must not use the unlinked file.
func openLocked(path string, o *Options) (*bolt.DB, error) {
	for try := 0; ; try++ {
		db, f, err := openBolt(path, o)
		if err != nil {
			return nil, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return db, nil
		}
		db.Close()
		if err2 != nil || try == 8 {
			return nil, fmt.Errorf("ledger %s: the file was replaced while opening it: %w", path, errors.Join(err1, err2, ledger.ErrLocked))
		}
	}
}

// openBolt opens an existing file. The OpenFile hook drops O_CREATE and
// refuses a 0-byte file after opening it, so neither a file removed nor
// one emptied since the Stat in Open can become a fresh database.
func openBolt(path string, o *Options) (db *bolt.DB, f *os.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			if f != nil {
				f.Close() // releases the flock bbolt took
			}
			db, f, err = nil, nil, fmt.Errorf("ledger %s: %w: bbolt panic: %v", path, ledger.ErrCorrupt, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	bo := &bolt.Options{
		Timeout:         o.Timeout,
		ReadOnly:        o.ReadOnly,
		NoSync:          fault.On(fault.BoltNoSync), // false outside a test build: see internal/fault
		InitialMmapSize: initialMmapSize,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			h, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
			if err != nil {
				return nil, err
			}
			fi, err := h.Stat()
			if err == nil && fi.Size() == 0 {
				err = emptyErr(path, o)
			}
			if err == nil {
				// Before bbolt reads the freelist (freelist.go).
				if err = lockAndCheck(h, o.ReadOnly, o.Timeout); errors.Is(err, ledger.ErrCorrupt) {
					err = fmt.Errorf("ledger %s: %w", path, err)
				}
			}
			if err != nil {
				h.Close()
				return nil, err
			}
			f = h
			return h, nil
		},
	}
	db, err = bolt.Open(path, 0o600, bo)
	switch {
	case err == nil:
		db.AllocSize = allocSize
		return db, f, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, nil, fmt.Errorf("ledger %s is in use by another process: %w", path, ledger.ErrLocked)
	case errors.Is(err, ledger.ErrEmptyFile), errors.Is(err, ledger.ErrCorrupt):
		return nil, nil, err
	case errors.Is(err, os.ErrNotExist):
		return nil, nil, fmt.Errorf("ledger %s: %w", path, ledger.ErrNotExist)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, nil, fmt.Errorf("ledger %s: %w: %v", path, ledger.ErrCorrupt, err)
	default:
		return nil, nil, fmt.Errorf("ledger %s: %w", path, err)
	}
}

// create builds a new, empty ledger at a temporary name beside path and
// links it into place (never replacing a file that appeared meanwhile),
// then syncs the directory.
func create(path string, o *Options) error {
	origin := o.Origin
	if origin == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("ledger %s: origin: %w", path, err)
		}
		origin = ledger.DefaultOriginPrefix + hex.EncodeToString(b[:])
	}
	var rb [8]byte
	rand.Read(rb[:])
	tmp := fmt.Sprintf("%s.tmp-%s", path, hex.EncodeToString(rb[:]))
	defer os.Remove(tmp)
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: o.Timeout, PageSize: pageSize, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		return os.OpenFile(name, flag|os.O_EXCL, perm)
	}})
	if err != nil {
		return fmt.Errorf("ledger %s: create: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range bucketsOf(FormatVersion) {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		if err := m.Put(metaVersion, be64(FormatVersion)); err != nil {
			return err
		}
		if err := m.Put(metaOrigin, []byte(origin)); err != nil {
			return err
		}
		if err := m.Put(metaIndexed, be64(0)); err != nil {
			return err
		}
		return m.Put(metaCreated, []byte(o.Now().UTC().Format(time.RFC3339Nano)))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ledger %s: create: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("ledger %s: create: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("ledger %s: create: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a folder, making the names in it durable (a rename or
// link into it, or a file created in it).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// checkMeta validates the meta bucket and the presence of every bucket:
// the cheap checks that Open makes before anything else.
func checkMeta(tx *bolt.Tx) (origin string, err error) {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return "", ledger.ErrNotLedger
	}
	v := m.Get(metaVersion)
	if len(v) != 8 {
		return "", fmt.Errorf("%w: meta version is %d bytes", ledger.ErrCorrupt, len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if n < formatVersion1 || n > FormatVersion {
		return "", fmt.Errorf("format version %d, this build reads %d: %w", n, FormatVersion, ledger.ErrVersionMismatch)
	}
	origin = string(m.Get(metaOrigin))
	if err := ledger.CheckOrigin(origin); err != nil {
		return "", fmt.Errorf("%w: meta %v", ledger.ErrCorrupt, err)
	}
	for _, name := range bucketsOf(n) {
		if tx.Bucket(name) == nil {
			return "", fmt.Errorf("%w: bucket %q missing", ledger.ErrCorrupt, name)
		}
	}
	if _, _, err := readHead(m); err != nil {
		return "", err
	}
	return origin, nil
}

// upgrade brings a file of an earlier version to the current one in one
// transaction: a version 1 file's secondary indexes are complete, so meta
// "indexed" is its head; versions 1 and 2 gain the idx_idempotency bucket
// (no entry of theirs has an idempotency key) and meta "key", the new_key
// of their last key_rotation entry; versions 1 to 4 have their tree
// bucket or tiles replaced by format 5's tiles (rebuildTiles) and their
// blobs keyed by seq (blobsBySeq); versions 1 to 5 have their secondary
// indexes rebuilt as index records through the head (rebuildIndexes) and
// idx_accepted and idx_idempotency rekeyed without the payload
// (rekeyAccepts), and their time index dropped (the entries are their
// own, see timeBounds); each is checked against the entries before and
// after, and the whole store check (Check) runs on the upgraded file
// before it commits.
// Any difference fails the upgrade and the file is unchanged.
func (d *Driver) upgrade() (err error) {
	current := false
	if err := d.read(func(tx *bolt.Tx) error {
		current = binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(metaVersion)) == FormatVersion
		return nil
	}); err != nil || current {
		return err
	}
	defer recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return d.db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		v := binary.BigEndian.Uint64(m.Get(metaVersion))
		if v == FormatVersion {
			return nil
		}
		head, _, err := readHead(m)
		if err != nil {
			return err
		}
		if v == formatVersion1 {
			if err := m.Put(metaIndexed, be64(head)); err != nil {
				return err
			}
		}
		if v < formatVersion3 {
			if err := upgradeV2(tx, m); err != nil {
				return err
			}
		}
		if v < formatVersion5 {
			if err := rebuildTiles(tx, head, v); err != nil {
				return err
			}
			if err := blobsBySeq(tx, head); err != nil {
				return err
			}
		}
		indexed, err := readIndexed(m, head)
		if err != nil {
			return err
		}
		if v < formatVersion6 {
			if err := rebuildIndexes(tx, head, indexed); err != nil {
				return err
			}
			if err := rekeyAccepts(tx); err != nil {
				return err
			}
			if err := tx.DeleteBucket(bucketIdxTime); err != nil {
				return err
			}
		} else if err := indexThroughHead(tx, m, head, indexed); err != nil {
			return err
		}
		if err := dropLeafTiles(tx, head); err != nil {
			return err
		}
		if err := m.Put(metaIndexed, be64(head)); err != nil {
			return err
		}
		if err := m.Put(metaVersion, be64(FormatVersion)); err != nil {
			return err
		}
		// The whole store check on the upgraded file, before it commits:
		// what the steps above do not compare (the accepted and
		// idempotency tables against the first uses the fold finds, the
		// tables against the entries) is compared here.
		c := &checker{ctx: context.Background(), tx: tx}
		if err := c.run(); err != nil {
			return err
		}
		if len(c.findings) > 0 {
			f := c.findings[0]
			return fmt.Errorf("%w: the upgraded file fails its check: seq %d: %s: want %s, got %s (%d findings)", ledger.ErrCorrupt, f.Seq, f.Kind, f.Want, f.Got, len(c.findings))
		}
		return nil
	})
}

// indexThroughHead writes the secondary index records of a format 6
// file's entries indexed+1..head (its decision indexes reach the head
// already), so that the upgraded file starts with an empty tail.
func indexThroughHead(tx *bolt.Tx, m *bolt.Bucket, head, indexed uint64) error {
	w := &writer{tx: tx, meta: m, entries: tx.Bucket(bucketEntries), blobs: tx.Bucket(bucketBlobs), idxBlob: tx.Bucket(bucketIdxBlob),
		accepted: tx.Bucket(bucketIdxAccept), idm: tx.Bucket(bucketIdxIdem), indexed: indexed, seq: head, next: emptyTail(indexed)}
	return w.flushIndexes(nil)
}

// dropLeafTiles deletes the level-0 tiles of a file before format 7,
// which stores none (see tileHeight): formats 5 and 6 store the partial
// one, which must first hold exactly the leaf hashes of the entries after
// the last full tile through the head, else the upgrade fails.
func dropLeafTiles(tx *bolt.Tx, head uint64) error {
	b, ents := tx.Bucket(bucketTiles), boltBucket{tx.Bucket(bucketEntries)}
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.Seek([]byte{0}); k != nil && k[0] == 0; k, v = c.Next() {
		n := int64(seqOf(k[1:]))
		first := uint64(n) << tileHeight
		if len(k) != 9 || first >= head || uint64(len(v)) != (head-first)*tlog.HashSize {
			return fmt.Errorf("%w: level-0 tile %x of %d bytes at head %d", ledger.ErrCorrupt, k, len(v), head)
		}
		want, err := leafTile(ents, n, head-first)
		if err != nil {
			return err
		}
		if !bytes.Equal(v, want) {
			return fmt.Errorf("%w: level-0 tile %x differs from the leaf hashes of its entries", ledger.ErrCorrupt, k)
		}
		keys = append(keys, clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// upgradeV2 adds what format 3 brought to a file of format 1 or 2.
func upgradeV2(tx *bolt.Tx, m *bolt.Bucket) error {
	if _, err := tx.CreateBucketIfNotExists(bucketIdxIdem); err != nil {
		return err
	}
	key := ""
	if err := tx.Bucket(bucketEntries).ForEach(func(k, raw []byte) error {
		e, err := entry.Decode(raw)
		if err != nil {
			return &ledger.RecordError{Seq: seqOf(k), Op: "upgrade", Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
		}
		if e.Kind == entry.KindKeyRotation {
			key = e.NewKey
		}
		return nil
	}); err != nil {
		return err
	}
	if key != "" {
		return m.Put(metaKey, []byte(key))
	}
	return nil
}

// rebuildTiles replaces the tree of a file before format 5 — the tree
// bucket (every stored hash under its index; formats 1-3) or the tiles
// bucket with its full level-0 tiles (format 4) — by format 5's tiles.
// Before: every stored hash is recomputed from the entries and must equal
// the one the file holds, which holds no other. After: every stored hash
// read back from the new tiles (and the entries), and so the root, must
// equal the recomputed one.
func rebuildTiles(tx *bolt.Tx, head, version uint64) error {
	ents := tx.Bucket(bucketEntries)
	all := make([]tlog.Hash, 0, tlog.StoredHashCount(int64(head)))
	mem := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(all)) {
				return nil, fmt.Errorf("%w: tree hash %d not yet computed", ledger.ErrCorrupt, x)
			}
			out[i] = all[x]
		}
		return out, nil
	})
	for seq := uint64(1); seq <= head; seq++ {
		raw := ents.Get(be64(seq))
		if raw == nil {
			return fmt.Errorf("%w: entry %d missing", ledger.ErrCorrupt, seq)
		}
		hs, err := tlog.StoredHashesForRecordHash(int64(seq-1), tlog.Hash(entry.LeafHash(raw)), mem)
		if err != nil {
			return err
		}
		all = append(all, hs...)
	}
	if version < formatVersion4 {
		if err := sameTree(tx.Bucket(bucketTree), all); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketTree); err != nil {
			return err
		}
	} else {
		if err := sameTiles(tx.Bucket(bucketTiles), all); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketTiles); err != nil {
			return err
		}
	}
	tiles, err := tx.CreateBucket(bucketTiles)
	if err != nil {
		return err
	}
	tiles.FillPercent = appendFill
	if err := putTiles(tiles, 0, all); err != nil {
		return err
	}
	read := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) { return tileHashes(tiles, boltBucket{ents}, head, idx, nil) })
	const chunk = 4096
	idx := make([]int64, 0, chunk)
	for x := 0; x < len(all); x += chunk {
		idx = idx[:0]
		for i := x; i < min(x+chunk, len(all)); i++ {
			idx = append(idx, int64(i))
		}
		got, err := read(idx)
		if err != nil {
			return err
		}
		for i, h := range got {
			if h != all[idx[i]] {
				return fmt.Errorf("%w: tree hash %d read back from the tiles differs", ledger.ErrCorrupt, idx[i])
			}
		}
	}
	if head > 0 {
		before, err := tlog.TreeHash(int64(head), mem)
		if err != nil {
			return err
		}
		after, err := tlog.TreeHash(int64(head), read)
		if err != nil || after != before {
			return fmt.Errorf("%w: the root from the tiles differs (%v)", ledger.ErrCorrupt, err)
		}
	}
	return nil
}

// sameTree checks that a tree bucket (formats 1-3) holds exactly the
// stored hashes all.
func sameTree(old *bolt.Bucket, all []tlog.Hash) error {
	n := 0
	if err := old.ForEach(func(k, v []byte) error {
		n++
		if len(k) != 8 || binary.BigEndian.Uint64(k) >= uint64(len(all)) || !bytes.Equal(v, all[binary.BigEndian.Uint64(k)][:]) {
			return fmt.Errorf("%w: tree key %x does not hold the hash the entries give", ledger.ErrCorrupt, k)
		}
		return nil
	}); err != nil {
		return err
	}
	if n != len(all) {
		return fmt.Errorf("%w: tree bucket holds %d hashes, the entries give %d", ledger.ErrCorrupt, n, len(all))
	}
	return nil
}

// sameTiles checks that a format 4 tiles bucket holds exactly the tiles
// of the stored hashes all, full level-0 tiles included.
func sameTiles(old *bolt.Bucket, all []tlog.Hash) error {
	want := map[string][]byte{}
	for x, h := range all {
		level, n := tlog.SplitStoredHashIndex(int64(x))
		if level%tileHeight == 0 {
			k := string(tileKey(level/tileHeight, n>>tileHeight))
			want[k] = append(want[k], h[:]...)
		}
	}
	n := 0
	if err := old.ForEach(func(k, v []byte) error {
		n++
		if w, ok := want[string(k)]; !ok || !bytes.Equal(v, w) {
			return fmt.Errorf("%w: tile %x does not hold the hashes the entries give", ledger.ErrCorrupt, k)
		}
		return nil
	}); err != nil {
		return err
	}
	if n != len(want) {
		return fmt.Errorf("%w: tiles bucket holds %d tiles, the entries give %d", ledger.ErrCorrupt, n, len(want))
	}
	return nil
}

// blobsBySeq rekeys the blobs of a file before format 5 from their SHA-256
// to the seq of the entry that stored them — the first entry naming them,
// or the first after the last redaction erasing them — and builds
// idx_blob. Every stored blob must hash to its key and have such an entry
// (a blob no entry names, or one a redaction erased, fails the upgrade).
// The upgrade's store check then reads every blob back beside its entry
// and through idx_blob.
func blobsBySeq(tx *bolt.Tx, head uint64) error {
	old, ents := tx.Bucket(bucketBlobs), tx.Bucket(bucketEntries)
	owner := map[entry.Hash]uint64{}
	for seq := uint64(1); seq <= head; seq++ {
		e, err := entry.Decode(ents.Get(be64(seq)))
		if err != nil {
			return &ledger.RecordError{Seq: seq, Op: "upgrade", Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
		}
		if sum := e.Blob(); sum != nil {
			if _, ok := owner[*sum]; !ok && old.Get(sum[:]) != nil {
				owner[*sum] = seq
			}
		}
		if e.Kind == entry.KindRedaction {
			t, err := entry.Decode(ents.Get(be64(e.RedactedSeq)))
			if err != nil || t.Kind != entry.KindHandoff {
				return &ledger.RecordError{Seq: seq, Op: "upgrade", Err: fmt.Errorf("%w: redacted_seq %d is not a readable handoff", ledger.ErrCorrupt, e.RedactedSeq)}
			}
			delete(owner, *t.PayloadSHA256)
		}
	}
	type blob struct {
		seq  uint64
		sum  entry.Hash
		data []byte
	}
	var moved []blob
	if err := old.ForEach(func(k, v []byte) error {
		var sum entry.Hash
		if len(k) != len(sum) || v == nil {
			return fmt.Errorf("%w: blob key %x", ledger.ErrCorrupt, k)
		}
		copy(sum[:], k)
		if entry.Sum256(v) != sum {
			return fmt.Errorf("%w: blob %s does not hash to its key", ledger.ErrCorrupt, sum)
		}
		seq, ok := owner[sum]
		if !ok {
			return fmt.Errorf("%w: blob %s: no entry stores it (unnamed, or erased by a redaction)", ledger.ErrCorrupt, sum)
		}
		moved = append(moved, blob{seq, sum, v})
		return nil
	}); err != nil {
		return err
	}
	if err := tx.DeleteBucket(bucketBlobs); err != nil {
		return err
	}
	blobs, err := tx.CreateBucket(bucketBlobs)
	if err != nil {
		return err
	}
	idx, err := tx.CreateBucket(bucketIdxBlob)
	if err != nil {
		return err
	}
	blobs.FillPercent, idx.FillPercent = appendFill, appendFill
	slices.SortFunc(moved, func(a, b blob) int { return cmp.Compare(a.seq, b.seq) })
	for _, b := range moved {
		if err := blobs.Put(be64(b.seq), b.data); err != nil {
			return err
		}
	}
	slices.SortFunc(moved, func(a, b blob) int { return bytes.Compare(a.sum[:], b.sum[:]) })
	for _, b := range moved {
		if err := idx.Put(clone(b.sum[:]), be64(b.seq)); err != nil {
			return err
		}
	}
	return nil
}

// rebuildIndexes replaces the secondary indexes of a file before format
// 6, one key prefix || be64(seq) per listing, by the index records of
// entries 1..head, written as flushes of upgradeChunk entries. The keys
// must list exactly what entries 1..indexed imply (compared as pairSets,
// see checkindex.go); the records written are checked with the whole
// file by the upgrade's store check. The caller moves meta "indexed" to
// head.
func rebuildIndexes(tx *bolt.Tx, head, indexed uint64) error {
	p := newPairHasher()
	got := map[string]pairSet{}
	for _, name := range secondaryIndexes {
		s, err := readListingsV5(tx.Bucket(name), name, p)
		if err != nil {
			return err
		}
		got[string(name)] = s
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	before := map[string]pairSet{}
	ents := tx.Bucket(bucketEntries)
	lists := newPostingLists()
	for seq := uint64(1); seq <= head; seq++ {
		e, err := entry.Decode(ents.Get(be64(seq)))
		if err != nil || e.Seq != seq {
			return &ledger.RecordError{Seq: seq, Op: "upgrade", Err: fmt.Errorf("%w: entry %d: %v", ledger.ErrCorrupt, seq, err)}
		}
		prefixes := indexPrefixes(e)
		if seq <= indexed {
			for name, ps := range prefixes {
				b := before[name]
				for _, x := range ps {
					p.add(&b, x, seq)
				}
				before[name] = b
			}
		}
		lists.add(seq, prefixes)
		if seq%upgradeChunk == 0 || seq == head {
			if err := lists.put(tx); err != nil {
				return err
			}
			lists = newPostingLists()
		}
	}
	for _, name := range secondaryIndexes {
		if got[string(name)] != before[string(name)] {
			return fmt.Errorf("%w: %s: its %d keys differ from the %d the entries through meta indexed %d imply", ledger.ErrCorrupt, name, got[string(name)].n, before[string(name)].n, indexed)
		}
	}
	return nil
}

// upgradeChunk is the number of entries whose index records the upgrade
// writes at once (rebuildIndexes).
const upgradeChunk = 4096

// readListingsV5 returns the pairSet of the listings of b, the format 5
// index bucket name: one key prefix || be64(seq) per listing, with an
// empty value. Any other key or value is an error.
func readListingsV5(b *bolt.Bucket, name []byte, p *pairHasher) (pairSet, error) {
	var out pairSet
	err := b.ForEach(func(k, v []byte) error {
		prefix, seq, ok := recordKey(name, k)
		if !ok || v == nil || len(v) != 0 {
			return fmt.Errorf("%w: %s key %x (value %x)", ledger.ErrCorrupt, name, k, v)
		}
		p.add(&out, prefix, seq)
		return nil
	})
	return out, err
}

// rekeyAccepts rekeys idx_accepted and idx_idempotency of a file before
// format 6, sha256(s) -> be64(seq) || payload sha256, as acceptKey(s,
// seq) -> "". Before: each value must name a handoff listed there
// (acceptEntry) whose string hashes to the key and whose payload is the
// one stored. The new tables are compared with the first uses the
// entries imply by the upgrade's store check.
func rekeyAccepts(tx *bolt.Tx) error {
	ents := tx.Bucket(bucketEntries)
	for _, name := range [][]byte{bucketIdxAccept, bucketIdxIdem} {
		var keys [][acceptPrefix + 8]byte
		if err := tx.Bucket(name).ForEach(func(k, v []byte) error {
			if len(k) != 32 || len(v) != acceptLenV5 {
				return fmt.Errorf("%w: %s key %x value %x", ledger.ErrCorrupt, name, k, v)
			}
			seq := binary.BigEndian.Uint64(v)
			e, err := acceptEntry(ents.Get(v[:8]), seq, k, string(name))
			if err != nil {
				return err
			}
			if !bytes.Equal(e.PayloadSHA256[:], v[8:]) {
				return fmt.Errorf("%w: %s key %x: payload %x, entry %d's is %s", ledger.ErrCorrupt, name, k, v[8:], seq, e.PayloadSHA256)
			}
			var nk [acceptPrefix + 8]byte
			copy(nk[:], acceptKey(acceptString(e, string(name)), seq))
			keys = append(keys, nk)
			return nil
		}); err != nil {
			return err
		}
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
		b, err := tx.CreateBucket(name)
		if err != nil {
			return err
		}
		slices.SortFunc(keys, func(x, y [acceptPrefix + 8]byte) int { return bytes.Compare(x[:], y[:]) })
		for _, k := range keys {
			if err := b.Put(clone(k[:]), []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Path returns the file path given to Open.
func (d *Driver) Path() string { return d.path }

// Origin implements ledger.Driver.
func (d *Driver) Origin() string { return d.origin }

// MaxBlobSize is the largest blob bbolt stores as one value.
func (d *Driver) MaxBlobSize() int64 { return bolt.MaxValueSize }

// Close implements ledger.Driver: it closes the file, releasing its lock,
// once every view of it is closed.
func (d *Driver) Close() error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.old.Wait()
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.closeFiles()
}

// closeFiles closes the bbolt file and the guarded reads' handle.
func (d *Driver) closeFiles() error {
	err := d.db.Close()
	if d.gfile != nil {
		d.gfile.Close()
	}
	return err
}

// current returns the open file.
func (d *Driver) current() *bolt.DB {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.db
}

// read runs fn in a read transaction, turning a bbolt panic into ErrCorrupt.
func (d *Driver) read(fn func(tx *bolt.Tx) error) (err error) {
	defer recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	err = d.current().View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ledger.ErrClosed
	}
	return err
}

func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: bbolt panic: %v", ledger.ErrCorrupt, r)
	}
}

func readHead(m getter) (uint64, entry.Hash, error) {
	var h entry.Hash
	if m == nil {
		return 0, h, fmt.Errorf("%w: meta bucket missing", ledger.ErrCorrupt)
	}
	v := m.Get(metaHead)
	if v == nil {
		return 0, h, nil
	}
	if len(v) != 40 {
		return 0, h, fmt.Errorf("%w: meta head is %d bytes", ledger.ErrCorrupt, len(v))
	}
	copy(h[:], v[8:])
	return binary.BigEndian.Uint64(v), h, nil
}
