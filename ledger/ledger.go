package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govledger/govledger/entry"
)

// Defaults used for zero Options fields.
const (
	DefaultMaxBatch = 256
	// DefaultMaxRetries is the default Options.MaxRetries.
	DefaultMaxRetries = 64
	// DefaultOriginPrefix starts the origin a driver gives a new ledger
	// when none is asked for; 16 random hex digits follow.
	DefaultOriginPrefix = "govledger.local/"
)

// Options configure New. A nil *Options means all defaults. A driver's
// own Open (bolt.Open, ...) fills them from its options.
type Options struct {
	// Now is the ledger clock (default time.Now). An entry's time is
	// max(Now().UTC(), previous entry's time).
	Now func() time.Time
	// MaxBatch bounds how many Append requests share one commit (default
	// DefaultMaxBatch).
	MaxBatch int
	// MaxRetries bounds how often one commit is built again after the
	// driver reported a compare-and-append conflict (another writer of the
	// same store appended first; default DefaultMaxRetries). When they are
	// spent, the requests of that commit fail with an error wrapping
	// ErrConflict and nothing of them is stored.
	MaxRetries int
	// ReadOnly makes Append and Redact return ErrReadOnly.
	ReadOnly bool
}

// String makes Options loggable.
func (o *Options) String() string {
	if o == nil {
		return "{}"
	}
	return fmt.Sprintf("{ReadOnly: %t, Now: %t, MaxBatch: %d, MaxRetries: %d}",
		o.ReadOnly, o.Now != nil, o.MaxBatch, o.MaxRetries)
}

// CheckOrigin reports whether s may name a ledger: 1-255 bytes of UTF-8
// without spaces or control characters. Drivers check the origin of a new
// ledger with it, and the stored origin when they open one.
func CheckOrigin(s string) error {
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

// Ledger is an open ledger: the group-commit queue, the decisions' state
// and every read, over one Driver. Its methods are safe for concurrent use.
type Ledger struct {
	d          Driver
	origin     string
	readOnly   bool
	now        func() time.Time
	maxBatch   int
	maxRetries int
	maxBlob    int64

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*pending
	closed bool
	failed error // the commit error that made the ledger refuse writes
	done   chan struct{}

	// lockNext counts the commits still to be built holding the head
	// after the last conflict (committer goroutine only).
	lockNext int

	commits   atomic.Uint64
	entries   atomic.Uint64
	conflicts atomic.Uint64
	locked    atomic.Uint64
}

// New returns a Ledger over d. The Ledger owns d: Close closes it.
func New(d Driver, opts *Options) (*Ledger, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil Driver", ErrBadOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBatch < 0 {
		return nil, fmt.Errorf("%w: MaxBatch %d < 0", ErrBadOptions, o.MaxBatch)
	}
	if o.MaxRetries < 0 {
		return nil, fmt.Errorf("%w: MaxRetries %d < 0", ErrBadOptions, o.MaxRetries)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	l := &Ledger{d: d, origin: d.Origin(), readOnly: o.ReadOnly, now: o.Now, maxBatch: o.MaxBatch,
		maxRetries: o.MaxRetries, maxBlob: 1<<31 - 2, done: make(chan struct{})}
	if m, ok := d.(interface{ MaxBlobSize() int64 }); ok {
		l.maxBlob = m.MaxBlobSize()
	}
	l.cond = sync.NewCond(&l.mu)
	if l.readOnly {
		close(l.done)
	} else {
		go l.committer()
	}
	return l, nil
}

// Driver returns the driver the ledger stores through.
func (l *Ledger) Driver() Driver { return l.d }

// Path returns the file the ledger is stored in, when its driver keeps
// one (bbolt), and "" otherwise.
func (l *Ledger) Path() string {
	if p, ok := l.d.(interface{ Path() string }); ok {
		return p.Path()
	}
	return ""
}

// Origin returns the ledger's identity, fixed when it was created.
func (l *Ledger) Origin() string { return l.origin }

// Close waits for queued appends to commit, stops the committer and closes
// the driver, releasing its storage. Close is idempotent.
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
	return l.d.Close()
}

// Stats are counters of an open Ledger.
type Stats struct {
	Commits   uint64 // batches the driver stored for Append and Redact
	Entries   uint64 // entries those commits wrote
	Queued    int    // requests waiting for a commit now
	Conflicts uint64 // batches built again after a compare-and-append conflict
	Locked    uint64 // batches built holding the head of a shared store (a Locker)
}

// Stats returns the ledger's counters since New.
func (l *Ledger) Stats() Stats {
	l.mu.Lock()
	q := len(l.queue)
	l.mu.Unlock()
	return Stats{Commits: l.commits.Load(), Entries: l.entries.Load(), Queued: q, Conflicts: l.conflicts.Load(), Locked: l.locked.Load()}
}

// view opens a driver view, runs fn on it and closes it.
func (l *Ledger) view(ctx context.Context, fn func(v View) error) error {
	v, err := l.d.View(ctx)
	if err != nil {
		return err
	}
	err = fn(v)
	if cerr := v.Close(); err == nil {
		err = cerr
	}
	return err
}

// Head returns the seq and hash of the last entry: 0 and entry.ZeroHash
// for an empty ledger.
func (l *Ledger) Head(ctx context.Context) (seq uint64, h entry.Hash, err error) {
	err = l.view(ctx, func(v View) error {
		hd := v.Head()
		seq, h = hd.Seq, hd.Hash
		return nil
	})
	return seq, h, err
}

// Checker is implemented by drivers that can check their store's
// consistency (bbolt: bucket contents against the fold of the entries).
type Checker interface {
	Check(ctx context.Context) ([]Finding, error)
}

// Check runs the driver's store consistency check (see Checker). It
// returns ErrUnsupported for a driver without one.
func (l *Ledger) Check(ctx context.Context) ([]Finding, error) {
	c, ok := l.d.(Checker)
	if !ok {
		return nil, fmt.Errorf("ledger: store check: %w", errors.ErrUnsupported)
	}
	return c.Check(ctx)
}

// WriteTo writes a consistent copy of the whole store to w (a hot backup),
// when the driver can (bbolt: the file, in one read transaction). It
// returns ErrUnsupported otherwise.
func (l *Ledger) WriteTo(w io.Writer) (int64, error) {
	wt, ok := l.d.(io.WriterTo)
	if !ok {
		return 0, fmt.Errorf("ledger: backup: %w", errors.ErrUnsupported)
	}
	return wt.WriteTo(w)
}
