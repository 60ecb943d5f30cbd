package ledger

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govledger/govledger/entry"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Defaults used for zero Options fields.
const (
	DefaultTimeout  = 2 * time.Second
	DefaultMaxBatch = 256
	// DefaultIndexBatch is the default Options.IndexBatch.
	DefaultIndexBatch = 128
	// DefaultOriginPrefix starts the origin of a new ledger when
	// Options.Origin is empty; 16 random hex digits follow.
	DefaultOriginPrefix = "govledger.local/"
)

// Options configure Open. A nil *Options means all defaults.
type Options struct {
	// CheckPages walks every page of the file's B+trees before Open returns
	// (see checkPages): a corrupted file then fails with ErrCorrupt instead
	// of sending bbolt into an unbounded recursion, a fatal stack overflow
	// that no recover can catch. It costs one read of every page in use;
	// verify and export set it. Check always walks the pages first.
	CheckPages bool

	// ReadOnly opens the file with a shared lock for readers (verify, show,
	// log). Append and Redact return ErrReadOnly. The file's bytes are never
	// changed. A read-only Open never creates a file.
	ReadOnly bool
	// Timeout bounds the wait for the file lock (default 2s; negative: wait
	// forever). On timeout Open returns an error wrapping ErrLocked.
	Timeout time.Duration
	// NoCreate makes Open refuse a missing file (ErrNotExist) instead of
	// creating a new ledger. A 0-byte file is always refused (ErrEmptyFile,
	// which a ReadOnly or NoCreate Open also wraps in ErrNotExist): bbolt
	// would initialize it silently, and an emptied ledger must not pass for
	// a new one.
	NoCreate bool
	// Now is the ledger clock (default time.Now). An entry's time is
	// max(Now().UTC(), previous entry's time).
	Now func() time.Time
	// Origin names a NEW ledger (default DefaultOriginPrefix + 16 random hex
	// digits): 1-255 bytes of UTF-8 without spaces or control characters.
	// An existing ledger keeps the origin it was created with.
	Origin string
	// MaxBatch bounds how many Append requests share one commit (default 256).
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
		return fmt.Errorf("%w: MaxBatch %d < 0", ErrBadOptions, o.MaxBatch)
	}
	if o.IndexBatch < 0 {
		return fmt.Errorf("%w: IndexBatch %d < 0", ErrBadOptions, o.IndexBatch)
	}
	if o.Origin != "" {
		if err := checkOrigin(o.Origin); err != nil {
			return fmt.Errorf("%w: %v", ErrBadOptions, err)
		}
	}
	return nil
}

func checkOrigin(s string) error {
	if len(s) == 0 || len(s) > 255 || !utf8.ValidString(s) {
		return fmt.Errorf("origin %q: want 1-255 bytes of UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("origin %q contains a space or control character", s)
		}
	}
	return nil
}

// Ledger is an open ledger file. Its methods are safe for concurrent use.
type Ledger struct {
	path     string
	db       *bolt.DB
	origin   string
	readOnly bool
	now      func() time.Time
	maxBatch int
	// indexBatch is Options.IndexBatch.
	indexBatch uint64

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*pending
	closed bool
	failed error // the commit error that made the ledger refuse writes
	done   chan struct{}

	head      headCache // committer goroutine only
	unindexed []indexed // committer goroutine only: keys of committed entries beyond meta "indexed"

	commits atomic.Uint64
	entries atomic.Uint64

	// afterCommit, when set (tests only, export_test.go), runs after each
	// successful commit; an error it returns is handled as a failed commit
	// whose bytes are nevertheless durable: an ambiguous commit.
	afterCommit func() error
}

// Open opens the ledger at path, creating it unless opts.NoCreate or
// opts.ReadOnly is set. A new file is built under a temporary name, synced,
// and linked into place, so a crash never leaves a half-initialized ledger
// at path. Errors wrap ErrNotExist, ErrEmptyFile, ErrLocked (with the
// message "ledger <path> is in use by another process"),
// ErrVersionMismatch, ErrNotLedger, ErrCorrupt or ErrBadOptions.
func Open(path string, opts *Options) (*Ledger, error) {
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
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
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
			return nil, fmt.Errorf("ledger %s: %w", path, ErrNotExist)
		}
		if err := create(path, &o); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("ledger %s: is a directory: %w", path, ErrNotLedger)
	case fi.Size() == 0:
		return nil, emptyErr(path, &o)
	}
	db, err := openBolt(path, &o)
	if err != nil {
		return nil, err
	}
	l := &Ledger{path: path, db: db, readOnly: o.ReadOnly, now: o.Now, maxBatch: o.MaxBatch,
		indexBatch: uint64(o.IndexBatch), done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	if o.CheckPages {
		if err := l.checkPages(); err != nil {
			db.Close()
			return nil, fmt.Errorf("ledger %s: %w", path, err)
		}
	}
	if err := l.view(func(tx *bolt.Tx) error {
		origin, err := checkMeta(tx)
		l.origin = origin
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if !l.readOnly {
		if err := l.upgrade(); err != nil {
			db.Close()
			return nil, fmt.Errorf("ledger %s: upgrade to format %d: %w", path, FormatVersion, err)
		}
	}
	if l.readOnly {
		close(l.done)
	} else {
		go l.committer()
	}
	return l, nil
}

func emptyErr(path string, o *Options) error {
	if o.NoCreate || o.ReadOnly {
		return fmt.Errorf("ledger %s: %w (%w)", path, ErrEmptyFile, ErrNotExist)
	}
	return fmt.Errorf("ledger %s: %w; remove it to create a new ledger", path, ErrEmptyFile)
}

// openBolt opens an existing file. The OpenFile hook drops O_CREATE and
// refuses a 0-byte file after opening it, so neither a file removed nor
// one emptied since the Stat in Open can become a fresh database.
func openBolt(path string, o *Options) (db *bolt.DB, err error) {
	var f *os.File
	defer func() {
		if r := recover(); r != nil {
			if f != nil {
				f.Close() // releases the flock bbolt took
			}
			db, err = nil, fmt.Errorf("ledger %s: %w: bbolt panic: %v", path, ErrCorrupt, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	bo := &bolt.Options{
		Timeout:  o.Timeout,
		ReadOnly: o.ReadOnly,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			h, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
			if err != nil {
				return nil, err
			}
			fi, err := h.Stat()
			if err == nil && fi.Size() == 0 {
				err = emptyErr(path, o)
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
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("ledger %s is in use by another process: %w", path, ErrLocked)
	case errors.Is(err, ErrEmptyFile):
		return nil, err
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("ledger %s: %w", path, ErrNotExist)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return nil, fmt.Errorf("ledger %s: %w: %v", path, ErrCorrupt, err)
	default:
		return nil, fmt.Errorf("ledger %s: %w", path, err)
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
		origin = DefaultOriginPrefix + hex.EncodeToString(b[:])
	}
	var rb [8]byte
	rand.Read(rb[:])
	tmp := fmt.Sprintf("%s.tmp-%s", path, hex.EncodeToString(rb[:]))
	defer os.Remove(tmp)
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: o.Timeout, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		return os.OpenFile(name, flag|os.O_EXCL, perm)
	}})
	if err != nil {
		return fmt.Errorf("ledger %s: create: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
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
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("ledger %s: create: sync directory: %w", path, err)
		}
	}
	return nil
}

// checkMeta validates the meta bucket and the presence of every bucket:
// the cheap checks that Open makes before anything else.
func checkMeta(tx *bolt.Tx) (origin string, err error) {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return "", ErrNotLedger
	}
	v := m.Get(metaVersion)
	if len(v) != 8 {
		return "", fmt.Errorf("%w: meta version is %d bytes", ErrCorrupt, len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if n != FormatVersion && n != formatVersion1 && n != formatVersion2 {
		return "", fmt.Errorf("format version %d, this build reads %d: %w", n, FormatVersion, ErrVersionMismatch)
	}
	origin = string(m.Get(metaOrigin))
	if err := checkOrigin(origin); err != nil {
		return "", fmt.Errorf("%w: meta %v", ErrCorrupt, err)
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil && !addedInV3(name, n) {
			return "", fmt.Errorf("%w: bucket %q missing", ErrCorrupt, name)
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
// of their last key_rotation entry.
func (l *Ledger) upgrade() (err error) {
	current := false
	if err := l.view(func(tx *bolt.Tx) error {
		current = binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(metaVersion)) == FormatVersion
		return nil
	}); err != nil || current {
		return err
	}
	defer recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return l.db.Update(func(tx *bolt.Tx) error {
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
		if _, err := tx.CreateBucketIfNotExists(bucketIdxIdem); err != nil {
			return err
		}
		key := ""
		if err := tx.Bucket(bucketEntries).ForEach(func(k, raw []byte) error {
			e, err := entry.Decode(raw)
			if err != nil {
				return &RecordError{Seq: seqOf(k), Op: "upgrade", Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
			}
			if e.Kind == entry.KindKeyRotation {
				key = e.NewKey
			}
			return nil
		}); err != nil {
			return err
		}
		if key != "" {
			if err := m.Put(metaKey, []byte(key)); err != nil {
				return err
			}
		}
		return m.Put(metaVersion, be64(FormatVersion))
	})
}

// addedInV3 reports whether bucket name may be absent from a file of
// format version v (it came with version 3).
func addedInV3(name []byte, v uint64) bool {
	return v < 3 && string(name) == string(bucketIdxIdem)
}

// Path returns the file path given to Open.
func (l *Ledger) Path() string { return l.path }

// Origin returns the ledger's identity, fixed when it was created.
func (l *Ledger) Origin() string { return l.origin }

// Close waits for queued appends to commit, stops the committer and closes
// the file, releasing its lock. Close is idempotent.
func (l *Ledger) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
	return l.db.Close()
}

// Stats are counters of an open Ledger.
type Stats struct {
	Commits uint64 // write transactions committed by Append and Redact
	Entries uint64 // entries those commits wrote
	Queued  int    // requests waiting for a commit now
}

// Stats returns the ledger's counters since Open.
func (l *Ledger) Stats() Stats {
	l.mu.Lock()
	q := len(l.queue)
	l.mu.Unlock()
	return Stats{Commits: l.commits.Load(), Entries: l.entries.Load(), Queued: q}
}

// view runs fn in a read transaction, turning a bbolt panic into ErrCorrupt.
func (l *Ledger) view(fn func(tx *bolt.Tx) error) (err error) {
	defer recoverCorrupt(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	err = l.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: bbolt panic: %v", ErrCorrupt, r)
	}
}

// Head returns the seq and hash of the last entry: 0 and entry.ZeroHash for an
// empty ledger.
func (l *Ledger) Head() (seq uint64, h entry.Hash, err error) {
	err = l.view(func(tx *bolt.Tx) error {
		seq, h, err = readHead(tx.Bucket(bucketMeta))
		return err
	})
	return seq, h, err
}

func readHead(m *bolt.Bucket) (uint64, entry.Hash, error) {
	var h entry.Hash
	if m == nil {
		return 0, h, fmt.Errorf("%w: meta bucket missing", ErrCorrupt)
	}
	v := m.Get(metaHead)
	if v == nil {
		return 0, h, nil
	}
	if len(v) != 40 {
		return 0, h, fmt.Errorf("%w: meta head is %d bytes", ErrCorrupt, len(v))
	}
	copy(h[:], v[8:])
	return binary.BigEndian.Uint64(v), h, nil
}
