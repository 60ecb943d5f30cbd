package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/govledger/govledger/entry"

	"golang.org/x/mod/sumdb/tlog"
)

// Snapshot is a manifest or lock file's bytes (the canonical bytes the
// caller hashes) to bring into force.
type Snapshot struct {
	What  string // entry.SnapshotManifest or entry.SnapshotLock
	Bytes []byte
}

// Request is one Append: snapshots to bring into force, then one entry.
type Request struct {
	// Snapshots to bring into force before the entry: for each whose
	// SHA-256 differs from the one in force, a snapshot entry {what,
	// content_sha256, size} is appended first and the bytes are stored as a
	// blob. At most one per What.
	Snapshots []Snapshot
	// Payload is stored verbatim as a blob keyed by its SHA-256 (nil:
	// nothing stored, e.g. too large). It requires a handoff entry whose
	// payload_sha256 and payload_size describe it.
	Payload []byte
	// Build is called by the committer, outside any storage lock, with
	// e.V, e.Seq, e.Prev and e.Time set, and st the ledger state as of just
	// before this entry (including earlier entries of the same commit and
	// this request's snapshots). It sets Kind and the kind's fields, and
	// must not change the four fields already set. It must be pure and
	// fast: commits wait for it. It may be called more than once for one
	// request: when another writer of a shared store appended first, the
	// commit is built again on the new state, and only the last call's
	// entry is stored. A Build error fails only this request; nothing of it
	// is written. Build may be nil when the request only brings snapshots
	// into force. Build may not make snapshot entries.
	Build func(st State, e *entry.Entry) error
	// Submitter is recorded as the submitter of the snapshot entries this
	// request brings into force (Build sets the entry's own).
	Submitter string
	// InForceOnly requires every one of Snapshots to be the one in force
	// already: when one differs (or none is in force), Append stores
	// nothing of the request and returns ErrPolicyChanged. Requests made
	// on behalf of anyone but an operator set it, so a process holding a
	// stale manifest or lock can never bring it (back) into force.
	InForceOnly bool
	// LockChanges, given the bytes of the lock in force and of a new lock
	// snapshot, returns the agents whose locked prompt hash differs
	// between them (added, removed or changed). A new lock lifts the
	// blocks of exactly those agents, and its snapshot entry lists them
	// (lifts). Nil: a new lock lifts no block.
	LockChanges func(old, new []byte) ([]string, error)

	// redact is set by Redact: the redacted payload must be stored.
	redact bool
	// Time, if not zero, is the proposed entry time, used instead of a
	// reading of Options.Now; like a clock reading it is raised to the
	// previous entry's time if earlier. It lets a caller decide before the
	// commit with the time the entry will most likely carry (Build sees the
	// time actually given).
	Time time.Time
}

// State is the ledger's derived state, as Build sees it (an *entry.State:
// the fold of every entry before the one being built).
type State interface {
	// Accepted returns the first accepted handoff entry with handoffID and
	// its payload hash.
	Accepted(handoffID string) (seq uint64, payload entry.Hash, ok bool)
	// Idempotent returns the first entry that used an idempotency key.
	Idempotent(key string) (entry.Accept, bool)
	// Blocked returns the entry that blocked agent (the latest handoff
	// entry listing it in "blocks" since the block last ended: an unblock
	// entry, or a lock snapshot that lifted it).
	Blocked(agent string) (seq uint64, ok bool)
	// InForce returns the content hashes of the snapshots in force; ok is
	// false until both a manifest and a lock snapshot were recorded.
	InForce() (manifest, lock entry.Hash, ok bool)
	// KeyInForce returns the checkpoint verifier key the last key
	// rotation brought into force ("" before the first).
	KeyInForce() string
}

// Result lists what an Append wrote: snapshot entries first, then the
// entry. It is empty when nothing needed writing.
type Result struct{ Entries []Appended }

// Appended is one written entry.
type Appended struct {
	Entry *entry.Entry
	Raw   []byte     // canonical bytes, as stored
	Hash  entry.Hash // entry.LeafHash(Raw)
}

// Last returns the request's own entry (the last one), or nil.
func (r *Result) Last() *Appended {
	if r == nil || len(r.Entries) == 0 {
		return nil
	}
	return &r.Entries[len(r.Entries)-1]
}

const (
	queued int32 = iota
	taken
	cancelled
)

type pending struct {
	req   *Request
	state atomic.Int32
	done  chan struct{}
	res   *Result
	err   error
}

// Append records req and returns once its entries are durable (stored by
// the driver, which for bbolt means committed and fsynced). Concurrent
// Appends share commits. ctx is honoured while the request waits for a
// commit; once a commit has taken it, Append waits for that commit's
// outcome so that the answer is never ambiguous.
//
// Errors: the Build error or a validation error (entry.ErrMalformed, ...)
// for this request alone; ErrReadOnly, ErrClosed; ErrFailed after an
// earlier failed commit; ErrConflict when other writers of a shared store
// kept winning (nothing stored); and a driver's own error (e.g. an I/O
// error, ErrCorrupt), after which the entries may or may not be stored and
// the Ledger refuses writes until opened again.
func (l *Ledger) Append(ctx context.Context, req *Request) (*Result, error) {
	if l.readOnly {
		return nil, ErrReadOnly
	}
	if req == nil {
		return nil, errors.New("ledger: nil Request")
	}
	var seen [2]bool
	for _, s := range req.Snapshots {
		i := 0
		switch s.What {
		case entry.SnapshotManifest:
		case entry.SnapshotLock:
			i = 1
		default:
			return nil, fmt.Errorf("%w: snapshot what %q", entry.ErrMalformed, s.What)
		}
		if seen[i] {
			return nil, fmt.Errorf("%w: two %s snapshots in one request", entry.ErrMalformed, s.What)
		}
		seen[i] = true
		if s.Bytes == nil {
			return nil, fmt.Errorf("%w: %s snapshot without bytes", entry.ErrMalformed, s.What)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &pending{req: req, done: make(chan struct{})}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, ErrClosed
	case l.failed != nil:
		err := l.failed
		l.mu.Unlock()
		return nil, fmt.Errorf("%w (%v)", ErrFailed, err)
	}
	l.queue = append(l.queue, p)
	l.cond.Signal()
	l.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		if p.state.CompareAndSwap(queued, cancelled) {
			return nil, ctx.Err()
		}
		<-p.done
	}
	return p.res, p.err
}

// committer drains the queue in batches of up to maxBatch requests, each
// batch one driver Append.
func (l *Ledger) committer() {
	defer close(l.done)
	for {
		l.mu.Lock()
		for len(l.queue) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.queue) == 0 {
			l.mu.Unlock()
			return
		}
		n := endsAt(l.queue, l.maxBatch)
		batch := make([]*pending, 0, n)
		for _, p := range l.queue[:n] {
			if p.state.CompareAndSwap(queued, taken) {
				batch = append(batch, p)
			}
		}
		l.queue = append(l.queue[:0:0], l.queue[n:]...)
		failed := l.failed
		l.mu.Unlock()
		if failed != nil {
			for _, p := range batch {
				p.err = fmt.Errorf("%w (%v)", ErrFailed, failed)
				close(p.done)
			}
			continue
		}
		if len(batch) > 0 {
			l.commit(batch)
		}
	}
}

// endsAt returns how many requests at the head of queue the next batch
// takes: at most limit, and none after a redaction. A redaction is the last
// entry of its batch, so a later entry of the same batch cannot store the
// bytes it erases (a batch erases after it stores), and the driver's
// record of the erasure (View.Erased) names the redaction's own seq.
func endsAt(queue []*pending, limit int) int {
	n := max(min(len(queue), limit), 0)
	for i, p := range queue[:n] {
		if p.req.redact {
			return i + 1
		}
	}
	return n
}

// fatalError aborts a whole commit.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

// commit builds the batch on a view of the stored head, outside any
// storage lock (on a Locker shortly after a conflict: holding the head),
// and hands it to the driver; on a compare-and-append conflict it builds
// it again on the new head: holding the head when the driver is a
// Locker, so that the retry cannot lose.
func (l *Ledger) commit(batch []*pending) {
	var err error
	var b *Batch
	lk, locking := l.d.(Locker)
	for attempt := 0; ; attempt++ {
		if locking && (attempt > 0 || l.contended()) {
			b, batch, err = l.commitLocked(lk, batch)
		} else {
			b, err = l.build(batch)
			if err == nil && len(b.Entries) > 0 {
				err = l.d.Append(context.Background(), b)
			}
		}
		if !errors.Is(err, ErrConflict) {
			break
		}
		l.conflicts.Add(1)
		l.lockNext = ContendedCommits
		if attempt == l.maxRetries {
			err = fmt.Errorf("%w: %d retries spent", err, l.maxRetries)
			break
		}
		if attempt >= 2 {
			// Writers that keep colliding move in lockstep: a short
			// random pause lets one of them through.
			time.Sleep(rand.N(time.Duration(min(attempt, 20)) * time.Millisecond))
		}
	}
	switch {
	case err == nil:
		if len(b.Entries) > 0 {
			l.commits.Add(1)
			l.entries.Add(uint64(len(b.Entries)))
		}
	case errors.Is(err, ErrConflict), errors.Is(err, ErrUnavailable):
		// Nothing stored, or the store (not this process) knows whether it
		// was: the next batch is built on the head actually stored, so the
		// ledger stays writable.
	default:
		var f *fatalError
		if !errors.As(err, &f) || errors.Is(err, ErrCorrupt) {
			// The driver failed (I/O error, disk full, corrupt store): the
			// outcome is unknown. Refuse writes until a reopen decides.
			// A store found damaged while building stored nothing.
			built := errors.As(err, &f)
			if built {
				err = f.err
			}
			l.mu.Lock()
			l.failed = err
			l.mu.Unlock()
			if built {
				err = fmt.Errorf("ledger %s: commit: %w (%w)", l.name(), err, ErrNothingStored)
			} else {
				err = fmt.Errorf("ledger %s: commit: %w", l.name(), err)
			}
		} else {
			err = f.err
		}
	}
	for _, p := range batch {
		if err != nil {
			p.res, p.err = nil, err
		}
		close(p.done)
	}
}

// ContendedCommits is how many commits after a compare-and-append
// conflict on a Locker are built holding the head from the start: while
// other writers keep the store busy, a build outside the lock would
// mostly be thrown away (two PostgreSQL replicas at 64 clients: 0.6-0.8
// commits built again per commit without this, under 0.1 with it).
const ContendedCommits = 16

// contended reports whether this commit is to be built holding the head,
// counting it.
func (l *Ledger) contended() bool {
	if l.lockNext == 0 {
		return false
	}
	l.lockNext--
	return true
}

// name names the ledger in errors: its file, else its origin.
func (l *Ledger) name() string {
	if p := l.Path(); p != "" {
		return p
	}
	return l.origin
}

// builder assembles one Batch on a view.
type builder struct {
	l  *Ledger
	v  View
	st *entry.State // the fold of the view's head and of the requests so far
	b  *Batch
	// base is the index of the first stored hash of the batch.
	base  int64
	items map[uint64]*entry.Entry // the batch's entries by seq
	// dry: the build only finds the lookups (Ledger.lookups); its entries
	// are neither encoded nor hashed, nor added to the batch.
	dry bool
}

// A Locker is a Driver several writers share (PostgreSQL) that can hold
// its head for one of them. After a compare-and-append conflict the core
// builds the commit again on a view from Lock, which no other writer can
// move until the view's Append or Close: the retry cannot lose. A commit
// is first built outside any lock, except the ContendedCommits commits
// after a conflict, which are built on a view from Lock at once.
type Locker interface {
	Lock(ctx context.Context) (LockedView, error)
}

// A LockedView is a View of the stored head that holds it.
type LockedView interface {
	View
	// Append stores b, built on this view, as Driver.Append does, and
	// releases the head; Close without Append releases it too.
	Append(ctx context.Context, b *Batch) error
}

// commitLocked builds batch on a locked view and stores it. Only a retry
// is built so: a commit built outside the lock holds the head only while
// the store commits it, one built holding it holds it while it is built
// too, and other writers wait. (Measured with two PostgreSQL replicas,
// building every commit of a writer that conflicted holding the head, until
// it found the head where its own last commit left it, was slower than
// this.)
func (l *Ledger) commitLocked(lk Locker, batch []*pending) (b *Batch, _ []*pending, err error) {
	v, err := lk.Lock(context.Background())
	if err != nil {
		return nil, batch, &fatalError{err}
	}
	l.locked.Add(1)
	// The requests queued while the lock was awaited join the commit.
	batch = l.takeMore(batch)
	defer func() {
		if cerr := v.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	b, err = l.buildOn(v, batch)
	if err != nil || len(b.Entries) == 0 {
		return b, batch, err
	}
	return b, batch, v.Append(context.Background(), b)
}

// takeMore adds queued requests to batch, up to Options.MaxBatch.
func (l *Ledger) takeMore(batch []*pending) []*pending {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range batch {
		if p.req.redact {
			return batch
		}
	}
	n := endsAt(l.queue, l.maxBatch-len(batch))
	if n <= 0 {
		return batch
	}
	for _, p := range l.queue[:n] {
		if p.state.CompareAndSwap(queued, taken) {
			batch = append(batch, p)
		}
	}
	l.queue = append(l.queue[:0:0], l.queue[n:]...)
	return batch
}

// build opens a view, applies every request of batch to a fork of its
// state and returns the Batch of those that succeeded; each pending gets
// its result or its own error. A *fatalError (a read of the view failed)
// aborts the whole batch.
func (l *Ledger) build(batch []*pending) (b *Batch, err error) {
	v, err := l.d.View(context.Background())
	if err != nil {
		return nil, &fatalError{err}
	}
	// The view must be closed before the driver's Append: bbolt cannot
	// grow its file while a read transaction is open.
	defer func() {
		if cerr := v.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return l.buildOn(v, batch)
}

// buildOn is build on the view v.
func (l *Ledger) buildOn(v View, batch []*pending) (*Batch, error) {
	if pf, ok := v.(Prefetcher); ok {
		if err := pf.Prefetch(context.Background(), l.lookups(v, batch)); err != nil {
			return nil, &fatalError{err}
		}
	}
	bd := l.builder(v, v)
	for _, p := range batch {
		p.res, p.err = bd.apply(p.req)
		if f := (*fatalError)(nil); errors.As(p.err, &f) {
			return nil, p.err
		}
	}
	if err := bd.st.Err(); err != nil {
		return nil, &fatalError{err}
	}
	bd.b.Head, bd.b.Delta = bd.st.Head, bd.st.Delta
	return bd.b, nil
}

// builder returns a builder of a batch on v whose state reads tables.
func (l *Ledger) builder(v View, tables entry.Tables) *builder {
	h := v.Head()
	return &builder{l: l, v: v, st: entry.NewState(h, tables), base: tlog.StoredHashIndex(0, int64(h.Seq)),
		b: &Batch{At: h, Blobs: map[entry.Hash][]byte{}}, items: map[uint64]*entry.Entry{}}
}

// A Prefetcher is a View whose reads each cost a round trip to a server
// (PostgreSQL). Before the core builds a commit on it, it hands Prefetch
// the lookups the build will make, which Prefetch loads in one read; the
// view then answers them without a round trip. Lookups Prefetch did not
// load are read as usual, so a Lookups that misses some only costs time.
type Prefetcher interface {
	Prefetch(ctx context.Context, k *Lookups) error
}

// Lookups are the table lookups and stored tree hashes a commit's build
// reads.
type Lookups struct {
	Accepted, Idempotent, Blocked []string
	// Hashes are stored hash indexes below the view's head.
	Hashes []int64
}

// lookups finds the lookups a build of batch on v makes by building it
// once on tables that answer every question "none" and record it (the
// common answer: a new handoff id, a new idempotency key, an agent not
// blocked). Request.Build may be called more than once; this call's
// entries are dropped, and the build that follows calls it again. It does
// not encode or hash the entries: the stored hashes a batch reads below
// it are those of the perfect subtrees the tree at v's head splits into.
func (l *Ledger) lookups(v View, batch []*pending) *Lookups {
	rec := &recordTables{}
	bd := l.builder(v, rec)
	bd.dry = true
	for _, p := range batch {
		bd.apply(p.req) // errors: the build that follows meets them again
	}
	k := &rec.k
	n := int64(v.Head().Seq)
	for level, start := 62, int64(0); level >= 0; level-- {
		if n&(1<<level) != 0 {
			k.Hashes = append(k.Hashes, tlog.StoredHashIndex(level, start>>level))
			start += 1 << level
		}
	}
	return k
}

// recordTables answers every lookup "none" and records it.
type recordTables struct{ k Lookups }

func (r *recordTables) Accepted(id string) (entry.Accept, bool, error) {
	r.k.Accepted = append(r.k.Accepted, id)
	return entry.Accept{}, false, nil
}

func (r *recordTables) Idempotent(key string) (entry.Accept, bool, error) {
	r.k.Idempotent = append(r.k.Idempotent, key)
	return entry.Accept{}, false, nil
}

func (r *recordTables) Blocked(agent string) (uint64, bool, error) {
	r.k.Blocked = append(r.k.Blocked, agent)
	return 0, false, nil
}

// item is an entry ready to store.
type item struct {
	e    *entry.Entry
	raw  []byte
	hash entry.Hash
	blob []byte // bytes to store under their SHA-256, or nil
}

// apply validates one request and adds its entries to the batch. A plain
// error fails the request (nothing of it stored); a *fatalError aborts
// the commit. The request's entries are folded into a fork of the
// builder's state, merged only when all of them were added.
func (bd *builder) apply(req *Request) (*Result, error) {
	st := bd.st.Fork()
	now := req.Time
	if now.IsZero() {
		now = bd.l.now()
	}
	now = now.UTC().Round(0)
	if now.Before(st.Time) {
		now = st.Time
	}
	var items []item
	fold := func(it item) error {
		if err := st.Apply(it.e, it.hash); err != nil {
			if st.Err() != nil {
				return &fatalError{st.Err()}
			}
			return err
		}
		items = append(items, it)
		return nil
	}
	for _, s := range req.Snapshots {
		sum := entry.Sum256(s.Bytes)
		cur, has := st.Manifest, st.HasManifest
		if s.What == entry.SnapshotLock {
			cur, has = st.Lock, st.HasLock
		}
		if has && cur == sum {
			continue
		}
		if req.InForceOnly {
			inForce := "none"
			if has {
				inForce = cur.String()
			}
			return nil, fmt.Errorf("%w: the %s in force is %s, the request's %s", ErrPolicyChanged, s.What, inForce, sum)
		}
		size := int64(len(s.Bytes))
		e := &entry.Entry{V: entry.Version, Seq: st.Seq + 1, Prev: st.Hash, Time: entry.Time{Time: now}, Kind: entry.KindSnapshot,
			What: s.What, ContentSHA256: &sum, Size: &size, Submitter: req.Submitter}
		if s.What == entry.SnapshotLock {
			lifts, err := bd.lifts(st, req.LockChanges, s.Bytes)
			if err != nil {
				return nil, err
			}
			e.Lifts = &lifts
		}
		it, err := bd.encode(e)
		if err != nil {
			return nil, err
		}
		if int64(len(s.Bytes)) > bd.l.maxBlob {
			return nil, fmt.Errorf("%w: %s snapshot of %d bytes is too large to store", entry.ErrMalformed, s.What, len(s.Bytes))
		}
		it.blob = s.Bytes
		if err := fold(it); err != nil {
			return nil, err
		}
	}
	var erase []entry.Hash
	if req.Build != nil {
		seq, prev := st.Seq, st.Hash
		e := &entry.Entry{V: entry.Version, Seq: seq + 1, Prev: prev, Time: entry.Time{Time: now}}
		if err := callBuild(req.Build, st, e); err != nil {
			return nil, err
		}
		if st.Err() != nil {
			return nil, &fatalError{st.Err()}
		}
		if e.V != entry.Version || e.Seq != seq+1 || e.Prev != prev || !e.Time.Equal(now) {
			return nil, fmt.Errorf("%w: Build changed v, seq, prev or time", entry.ErrMalformed)
		}
		if e.Kind == entry.KindSnapshot {
			return nil, fmt.Errorf("%w: snapshot entries come from Request.Snapshots, not Build", entry.ErrMalformed)
		}
		if e.Kind == entry.KindOutcome && !bd.dry { // before encode: a later decision_seq is a missing decision
			if err := bd.outcomeFollows(e); err != nil {
				return nil, err
			}
		}
		it, err := bd.encode(e)
		if err != nil {
			return nil, err
		}
		if req.Payload != nil && !bd.dry { // a dry build skips hashing the payload
			if e.Kind != entry.KindHandoff || *e.PayloadSHA256 != entry.Sum256(req.Payload) || *e.PayloadSize != int64(len(req.Payload)) {
				return nil, fmt.Errorf("%w: Payload given but the entry's payload_sha256/payload_size do not describe it", entry.ErrMalformed)
			}
			if int64(len(req.Payload)) > bd.l.maxBlob {
				return nil, fmt.Errorf("%w: payload of %d bytes is too large to store", entry.ErrMalformed, len(req.Payload))
			}
			it.blob = req.Payload
		}
		if e.Kind == entry.KindRedaction {
			sum, err := bd.redactable(e.RedactedSeq, req.redact)
			if err != nil {
				return nil, err
			}
			erase = append(erase, sum)
		}
		if err := fold(it); err != nil {
			return nil, err
		}
	}
	res := &Result{}
	for _, it := range items {
		if bd.dry {
			bd.items[it.e.Seq] = it.e
			continue
		}
		if err := bd.add(it); err != nil {
			return nil, &fatalError{err}
		}
		res.Entries = append(res.Entries, Appended{Entry: it.e, Raw: it.raw, Hash: it.hash})
	}
	bd.b.Erase = append(bd.b.Erase, erase...)
	bd.st.Merge(st)
	return res, nil
}

// encode is encode, or in a dry build an item of e alone (hash zero).
func (bd *builder) encode(e *entry.Entry) (item, error) {
	if bd.dry {
		return item{e: e}, nil
	}
	return encode(e)
}

// add appends one folded entry, its stored tree hashes and its blob to
// the batch.
func (bd *builder) add(it item) error {
	b := bd.b
	n := int64(it.e.Seq - 1)
	hashes, err := tlog.StoredHashesForRecordHash(n, tlog.Hash(it.hash), tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		var old []int64
		for i, x := range idx {
			if x >= bd.base {
				if x-bd.base >= int64(len(b.Hashes)) {
					return nil, fmt.Errorf("%w: tree hash %d is not yet computed", ErrCorrupt, x)
				}
				out[i] = b.Hashes[x-bd.base]
				continue
			}
			old = append(old, x)
		}
		if len(old) > 0 {
			got, err := bd.v.ReadHashes(old)
			if err != nil {
				return nil, err
			}
			if len(got) != len(old) {
				return nil, fmt.Errorf("%w: %d tree hashes for %d indexes", ErrCorrupt, len(got), len(old))
			}
			j := 0
			for i, x := range idx {
				if x < bd.base {
					out[i] = got[j]
					j++
				}
			}
		}
		return out, nil
	}))
	if err != nil {
		return err
	}
	if got := tlog.StoredHashIndex(0, n); got != bd.base+int64(len(b.Hashes)) {
		return fmt.Errorf("%w: tree hashes of seq %d start at %d, not %d", ErrCorrupt, it.e.Seq, got, bd.base+int64(len(b.Hashes)))
	}
	b.Hashes = append(b.Hashes, hashes...)
	if it.blob != nil {
		sum := entry.Sum256(it.blob)
		if _, ok := b.Blobs[sum]; !ok {
			b.Blobs[sum] = it.blob
		}
	}
	b.Entries = append(b.Entries, Appended{Entry: it.e, Raw: it.raw, Hash: it.hash})
	bd.items[it.e.Seq] = it.e
	return nil
}

// blob returns the bytes under sum from the batch or the view.
func (bd *builder) blob(sum entry.Hash) ([]byte, error) {
	if b, ok := bd.b.Blobs[sum]; ok {
		return b, nil
	}
	return bd.v.Blob(sum)
}

// lifts returns the blocked agents whose locked prompt hash differs
// between the lock in force and next, sorted.
func (bd *builder) lifts(st *entry.State, changes func(old, new []byte) ([]string, error), next []byte) ([]string, error) {
	lifts := []string{}
	if changes == nil || !st.HasLock {
		return lifts, nil
	}
	old, err := bd.blob(st.Lock)
	if err != nil {
		return nil, &fatalError{fmt.Errorf("%w: the lock in force (%s) is not stored: %v", ErrCorrupt, st.Lock, err)}
	}
	changed, err := changes(clone(old), next)
	if err != nil {
		return nil, fmt.Errorf("lock changes: %w", err)
	}
	slices.Sort(changed)
	for _, a := range slices.Compact(changed) {
		if _, ok := st.Blocked(a); ok {
			lifts = append(lifts, a)
		}
	}
	return lifts, nil
}

// entry returns entry seq from the batch or the view.
func (bd *builder) entry(seq uint64) (*entry.Entry, error) {
	if e, ok := bd.items[seq]; ok {
		return e, nil
	}
	if seq == 0 || seq > bd.b.At.Seq {
		return nil, fmt.Errorf("seq %d: %w", seq, ErrNotFound)
	}
	raw, err := bd.v.Entry(seq)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("seq %d: %w", seq, ErrNotFound)
	}
	if err != nil {
		return nil, &fatalError{err}
	}
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, &fatalError{&RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}}
	}
	return e, nil
}

// outcomeFollows checks that the outcome e follows an accepted handoff
// (of this batch or stored) whose target and workflow it names, and that
// no outcome of that handoff is stored or in the batch already: an
// *OutcomeError otherwise. The outcomes of one decision are found among
// the entries of its target after it (View.Find by agent), so the cost
// grows with the entries naming that agent since the decision.
func (bd *builder) outcomeFollows(e *entry.Entry) error {
	refuse := func(why, detail string, existing uint64) error {
		return &OutcomeError{DecisionSeq: e.DecisionSeq, Why: why, Detail: detail, Existing: existing}
	}
	d, err := bd.entry(e.DecisionSeq)
	switch {
	case errors.Is(err, ErrNotFound) || e.DecisionSeq >= e.Seq:
		return refuse(OutcomeNoDecision, "", 0)
	case err != nil:
		return err
	case d.Kind != entry.KindHandoff:
		return refuse(OutcomeNotHandoff, d.Kind, 0)
	case d.Decision != "accepted":
		return refuse(OutcomeRejected, "", 0)
	case !d.Target.Valid || d.Target.S != e.Agent:
		return refuse(OutcomeMismatch, fmt.Sprintf("agent %q is not the handoff's target %q", e.Agent, d.Target.S), 0)
	case d.WorkflowID != e.WorkflowID:
		return refuse(OutcomeMismatch, "workflow_id is not the handoff's", 0)
	}
	var first uint64
	for seq, it := range bd.items {
		if it.Kind == entry.KindOutcome && it.DecisionSeq == e.DecisionSeq && (first == 0 || seq < first) {
			first = seq
		}
	}
	if first == 0 {
		seqs, err := bd.v.Find(context.Background(), Query{Agent: e.Agent, After: e.DecisionSeq})
		if err != nil {
			return &fatalError{err}
		}
		for _, seq := range seqs {
			o, err := bd.entry(seq)
			if err != nil {
				return err
			}
			if o.Kind == entry.KindOutcome && o.DecisionSeq == e.DecisionSeq {
				first = seq
				break
			}
		}
	}
	if first != 0 {
		return refuse(OutcomeDuplicate, "", first)
	}
	return nil
}

// redactable checks that seq is a handoff entry and, with stored, that its
// payload bytes are stored and not removed by an earlier redaction. It
// returns the payload's SHA-256.
func (bd *builder) redactable(seq uint64, stored bool) (entry.Hash, error) {
	t, err := bd.entry(seq)
	if err != nil {
		return entry.Hash{}, err
	}
	if t.Kind != entry.KindHandoff {
		return entry.Hash{}, fmt.Errorf("seq %d is a %s entry: %w", seq, t.Kind, ErrNotRedactable)
	}
	sum := *t.PayloadSHA256
	if !stored {
		return sum, nil
	}
	if slices.Contains(bd.b.Erase, sum) {
		return sum, fmt.Errorf("payload of seq %d: %w", seq, ErrRedacted)
	}
	// Per entry: bytes stored again after a redaction of seq are not
	// seq's to redact again.
	if r, ok, rerr := bd.v.Erased(sum); rerr != nil {
		return sum, &fatalError{rerr}
	} else if ok && seq < r {
		return sum, fmt.Errorf("payload of seq %d: %w by seq %d", seq, ErrRedacted, r)
	}
	_, err = bd.blob(sum)
	switch {
	case err == nil:
		return sum, nil
	case errors.Is(err, ErrRedacted):
		return sum, fmt.Errorf("payload of seq %d: %w", seq, ErrRedacted)
	case errors.Is(err, ErrNotFound):
		return sum, fmt.Errorf("payload of seq %d was not stored: %w", seq, ErrNotRedactable)
	default:
		return sum, &fatalError{err}
	}
}

// MaxIndexedString bounds the strings a driver may use as raw keys
// (blocked agents). Longer ones make Append fail the request rather than
// the batch.
const MaxIndexedString = 4096

// encode validates e and returns its canonical bytes and hash; e's index
// strings must be storable as keys. The bytes decode back to e (every
// stored entry is readable): Canonical validates everything entry.Decode
// does, and TestMarshalIsCanonical and FuzzCanonical hold the two to each
// other, so the commit does not decode each entry again.
func encode(e *entry.Entry) (item, error) {
	raw, err := e.Canonical()
	if err != nil {
		return item{}, err
	}
	for _, a := range e.Blocks {
		if a == "" || len(a) > MaxIndexedString {
			return item{}, fmt.Errorf("%w: seq %d: blocks entry of %d bytes (want 1-%d)", entry.ErrMalformed, e.Seq, len(a), MaxIndexedString)
		}
	}
	if len(e.Agent) > MaxIndexedString {
		return item{}, fmt.Errorf("%w: seq %d: agent of %d bytes (want <= %d)", entry.ErrMalformed, e.Seq, len(e.Agent), MaxIndexedString)
	}
	return item{e: e, raw: raw, hash: entry.LeafHash(raw)}, nil
}

// callBuild runs a caller's Build, turning its panic into this request's
// error.
func callBuild(build func(State, *entry.Entry) error, st State, e *entry.Entry) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("ledger: Build panicked: %v", r)
		}
	}()
	return build(st, e)
}

// clone copies b (nil stays nil).
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
