package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/govledger/govledger/entry"

	bolt "go.etcd.io/bbolt"
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
	// Build is called inside the write transaction with e.V, e.Seq, e.Prev
	// and e.Time set, and st a view of ledger state as of just before this
	// entry (including earlier entries of the same commit and this request's
	// snapshots). It sets Kind and the kind's fields, and must not change
	// the four fields already set. It must be pure and fast: it runs while
	// the commit holds the write lock. A Build error fails only this
	// request; nothing of it is written. Build may be nil when the request
	// only brings snapshots into force. Build may not make snapshot entries.
	Build func(st State, e *entry.Entry) error
	// Submitter is recorded as the submitter of the snapshot entries this
	// request brings into force (Build sets the entry's own).
	Submitter string
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

// Append records req and returns once its entries are durable (committed
// and fsynced). Concurrent Appends share commits. ctx is honoured while the
// request waits for a commit; once a commit has taken it, Append waits for
// that commit's outcome so that the answer is never ambiguous.
//
// Errors: the Build error or a validation error (entry.ErrMalformed, ...) for this
// request alone; ErrReadOnly, ErrClosed; ErrFailed after an earlier failed
// commit; and a commit's own error (e.g. an I/O error, ErrCorrupt), after
// which the entries may or may not be on disk and the Ledger refuses writes
// until reopened.
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
// batch one write transaction.
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
		n := min(len(l.queue), l.maxBatch)
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

// fatalError aborts a whole commit.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

func (l *Ledger) commit(batch []*pending) {
	var fnErr error
	var wr *writer
	written := 0
	hc := l.head
	l.head.ok = false // until this commit is known to have landed
	err := func() (err error) {
		defer recoverCorrupt(&err)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		return l.db.Update(func(tx *bolt.Tx) error {
			w, err := newWriter(tx, l.now, &hc)
			if err != nil {
				fnErr = err
				return err
			}
			defer func() { wr = w }()
			for _, p := range batch {
				p.res, p.err = w.apply(p.req)
				if f := (*fatalError)(nil); errors.As(p.err, &f) {
					fnErr = f.err
					return f.err
				}
				if p.err == nil {
					written += len(p.res.Entries)
				}
			}
			if err := w.persist(); err != nil {
				if f := (*fatalError)(nil); errors.As(err, &f) {
					err = f.err
				}
				fnErr = err
				return err
			}
			if w.seq-w.indexed >= l.indexBatch {
				if err := w.flushIndexes(l.unindexed); err != nil {
					if f := (*fatalError)(nil); errors.As(err, &f) {
						err = f.err
					}
					fnErr = err
					return err
				}
			}
			return nil
		})
	}()
	l.mu.Lock()
	hook := l.afterCommit
	l.mu.Unlock()
	if err == nil && hook != nil {
		err = hook()
	}
	if err != nil {
		if fnErr == nil || errors.Is(err, ErrCorrupt) {
			// The commit itself failed (I/O error, disk full, panic): its
			// outcome is unknown. Refuse writes until a reopen decides.
			l.mu.Lock()
			l.failed = err
			l.mu.Unlock()
			err = fmt.Errorf("ledger %s: commit: %w", l.path, err)
		}
		for _, p := range batch {
			p.res, p.err = nil, err
		}
	} else {
		if wr != nil {
			l.head = headCache{seq: wr.seq, hash: wr.head, time: wr.last, ok: true}
			if wr.indexed == wr.seq {
				l.unindexed = nil
			} else {
				l.unindexed = append(l.unindexed, wr.unindexed...)
			}
		}
		l.commits.Add(1)
		l.entries.Add(uint64(written))
	}
	for _, p := range batch {
		close(p.done)
	}
}

// writer applies requests inside one write transaction.
type writer struct {
	tx                               *bolt.Tx
	meta, entries, blobs, tree       *bolt.Bucket
	accepted, blocked, redacted, idm *bolt.Bucket
	now                              func() time.Time
	seq                              uint64
	head                             entry.Hash
	last                             time.Time
	// st is the fold of the stored entries and those of this writer's
	// requests so far; persist writes its Delta.
	st *entry.State
	// indexed is meta "indexed"; unindexed holds the secondary index keys
	// of this writer's entries (all beyond indexed).
	indexed   uint64
	unindexed []indexed
}

// indexed is one entry's secondary index keys (indexKeys).
type indexed struct {
	seq  uint64
	keys map[string][][]byte
}

// headCache is the head as the last successful commit left it, so the
// next commit need not decode the head entry again to learn its time. It
// is only read and written by the committer goroutine.
type headCache struct {
	seq  uint64
	hash entry.Hash
	time time.Time
	ok   bool
}

// newWriter starts a writer on tx. hc (nil in read-only views) saves
// decoding the head entry when it still names the stored head.
func newWriter(tx *bolt.Tx, now func() time.Time, hc *headCache) (*writer, error) {
	w := &writer{tx: tx, now: now,
		meta: tx.Bucket(bucketMeta), entries: tx.Bucket(bucketEntries), blobs: tx.Bucket(bucketBlobs),
		tree: tx.Bucket(bucketTree), accepted: tx.Bucket(bucketIdxAccept), blocked: tx.Bucket(bucketBlocked),
		redacted: tx.Bucket(bucketRedacted), idm: tx.Bucket(bucketIdxIdem)}
	var version uint64
	if v := w.meta.Get(metaVersion); len(v) == 8 {
		version = binary.BigEndian.Uint64(v)
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil && !addedInV3(name, version) {
			return nil, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, name)
		}
	}
	var err error
	if w.seq, w.head, err = readHead(w.meta); err != nil {
		return nil, err
	}
	if w.seq > 0 {
		raw := w.entries.Get(be64(w.seq))
		if raw == nil {
			return nil, fmt.Errorf("%w: meta head seq %d has no entry", ErrCorrupt, w.seq)
		}
		if entry.LeafHash(raw) != w.head {
			return nil, fmt.Errorf("%w: meta head hash differs from entry %d", ErrCorrupt, w.seq)
		}
		if hc != nil && hc.ok && hc.seq == w.seq && hc.hash == w.head {
			w.last = hc.time
		} else {
			e, err := entry.Decode(raw)
			if err != nil {
				return nil, &RecordError{Seq: w.seq, Op: "decode head", Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
			}
			w.last = e.Time.Time
		}
	}
	if k, _ := w.entries.Cursor().Last(); k != nil && (len(k) != 8 || binary.BigEndian.Uint64(k) != w.seq) {
		return nil, fmt.Errorf("%w: last entry key %x differs from meta head seq %d", ErrCorrupt, k, w.seq)
	}
	h := entry.Head{Seq: w.seq, Hash: w.head, Time: w.last, Key: string(w.meta.Get(metaKey))}
	h.Manifest, h.HasManifest = readHash(w.meta, metaManifest)
	h.Lock, h.HasLock = readHash(w.meta, metaLock)
	w.st = entry.NewState(h, boltTables{w})
	if w.indexed, err = readIndexed(w.meta, w.seq); err != nil {
		return nil, err
	}
	return w, nil
}

// flushIndexes writes the secondary index keys of entries indexed+1..seq,
// each bucket's keys in sorted order, and moves meta "indexed" to seq.
// Keys come from earlier (the ledger's memory of earlier commits) and this
// writer's own entries; an entry found in neither is decoded from the file.
func (w *writer) flushIndexes(earlier []indexed) error {
	known := make(map[uint64]map[string][][]byte, len(earlier)+len(w.unindexed))
	for _, x := range earlier {
		known[x.seq] = x.keys
	}
	for _, x := range w.unindexed {
		known[x.seq] = x.keys
	}
	perBucket := map[string][][]byte{}
	for seq := w.indexed + 1; seq <= w.seq; seq++ {
		keys, ok := known[seq]
		if !ok {
			e, err := w.entry(seq)
			if err != nil {
				return err
			}
			keys = indexKeys(e)
		}
		for name, ks := range keys {
			perBucket[name] = append(perBucket[name], ks...)
		}
	}
	for _, name := range secondaryIndexes {
		keys := perBucket[string(name)]
		slices.SortFunc(keys, bytes.Compare)
		b := w.tx.Bucket(name)
		for _, k := range keys {
			if err := b.Put(k, []byte{}); err != nil {
				return err
			}
		}
	}
	w.indexed = w.seq
	return w.meta.Put(metaIndexed, be64(w.seq))
}

func readHash(b *bolt.Bucket, key []byte) (entry.Hash, bool) {
	var h entry.Hash
	v := b.Get(key)
	if len(v) != len(h) {
		return h, false
	}
	copy(h[:], v)
	return h, true
}

// item is an entry ready to write.
type item struct {
	e    *entry.Entry
	raw  []byte
	hash entry.Hash
	blob []byte // bytes to store under their SHA-256, or nil
}

// apply validates and writes one request. A plain error fails the request
// (nothing written); a *fatalError aborts the commit. The request's entries
// are folded into a fork of the writer's state, merged only when all of
// them were written.
func (w *writer) apply(req *Request) (*Result, error) {
	st := w.st.Fork()
	now := req.Time
	if now.IsZero() {
		now = w.now()
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
		size := int64(len(s.Bytes))
		e := &entry.Entry{V: entry.Version, Seq: st.Seq + 1, Prev: st.Hash, Time: entry.Time{Time: now}, Kind: entry.KindSnapshot,
			What: s.What, ContentSHA256: &sum, Size: &size, Submitter: req.Submitter}
		if s.What == entry.SnapshotLock {
			lifts, err := w.lifts(st, req.LockChanges, s.Bytes)
			if err != nil {
				return nil, err
			}
			e.Lifts = &lifts
		}
		it, err := encode(e)
		if err != nil {
			return nil, err
		}
		it.blob = s.Bytes
		if err := fold(it); err != nil {
			return nil, err
		}
	}
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
		it, err := encode(e)
		if err != nil {
			return nil, err
		}
		if req.Payload != nil {
			if e.Kind != entry.KindHandoff || *e.PayloadSHA256 != entry.Sum256(req.Payload) || *e.PayloadSize != int64(len(req.Payload)) {
				return nil, fmt.Errorf("%w: Payload given but the entry's payload_sha256/payload_size do not describe it", entry.ErrMalformed)
			}
			if int64(len(req.Payload)) > bolt.MaxValueSize {
				return nil, fmt.Errorf("%w: payload of %d bytes is too large to store", entry.ErrMalformed, len(req.Payload))
			}
			it.blob = req.Payload
		}
		if e.Kind == entry.KindRedaction {
			if err := w.redactable(e.RedactedSeq, req.redact); err != nil {
				return nil, err
			}
		}
		if err := fold(it); err != nil {
			return nil, err
		}
	}
	res := &Result{}
	for _, it := range items {
		if err := w.put(it); err != nil {
			return nil, &fatalError{err}
		}
		res.Entries = append(res.Entries, Appended{Entry: it.e, Raw: it.raw, Hash: it.hash})
	}
	w.st.Merge(st)
	return res, nil
}

// lifts returns the blocked agents whose locked prompt hash differs
// between the lock in force and next, sorted.
func (w *writer) lifts(st *entry.State, changes func(old, new []byte) ([]string, error), next []byte) ([]string, error) {
	lifts := []string{}
	if changes == nil || !st.HasLock {
		return lifts, nil
	}
	old := w.blobs.Get(st.Lock[:])
	if old == nil {
		return nil, &fatalError{fmt.Errorf("%w: the lock in force (%s) is not stored", ErrCorrupt, st.Lock)}
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

// redactable checks that seq is a handoff entry and, with stored, that its
// payload bytes are stored and not removed by an earlier redaction.
func (w *writer) redactable(seq uint64, stored bool) error {
	t, err := w.entry(seq)
	if err != nil {
		return err
	}
	if t.Kind != entry.KindHandoff {
		return fmt.Errorf("seq %d is a %s entry: %w", seq, t.Kind, ErrNotRedactable)
	}
	if !stored {
		return nil
	}
	for _, r := range w.st.Delta.Redactions {
		if r.Of == seq {
			return fmt.Errorf("payload of seq %d: %w", seq, ErrRedacted)
		}
	}
	if w.blobs.Get(t.PayloadSHA256[:]) == nil {
		if w.redacted.Get(t.PayloadSHA256[:]) != nil {
			return fmt.Errorf("payload of seq %d: %w", seq, ErrRedacted)
		}
		return fmt.Errorf("payload of seq %d was not stored: %w", seq, ErrNotRedactable)
	}
	return nil
}

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
		if a == "" || len(a) > maxIndexedString {
			return item{}, fmt.Errorf("%w: seq %d: blocks entry of %d bytes (want 1-%d)", entry.ErrMalformed, e.Seq, len(a), maxIndexedString)
		}
	}
	if len(e.Agent) > maxIndexedString {
		return item{}, fmt.Errorf("%w: seq %d: agent of %d bytes (want <= %d)", entry.ErrMalformed, e.Seq, len(e.Agent), maxIndexedString)
	}
	return item{e: e, raw: raw, hash: entry.LeafHash(raw)}, nil
}

// entry reads and decodes a stored entry inside the transaction.
func (w *writer) entry(seq uint64) (*entry.Entry, error) {
	raw := w.entries.Get(be64(seq))
	if raw == nil {
		return nil, fmt.Errorf("seq %d: %w", seq, ErrNotFound)
	}
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, &fatalError{&RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}}
	}
	return e, nil
}

// put writes one entry and everything derived from it.
func (w *writer) put(it item) error {
	e := it.e
	key := be64(e.Seq)
	if e.Seq != w.seq+1 || w.entries.Get(key) != nil {
		return fmt.Errorf("%w: entry %d already exists", ErrCorrupt, e.Seq)
	}
	if err := w.entries.Put(key, it.raw); err != nil {
		return err
	}
	hashes, err := tlog.StoredHashesForRecordHash(int64(e.Seq-1), tlog.Hash(it.hash), treeReader(w.tree))
	if err != nil {
		return err
	}
	base := tlog.StoredHashIndex(0, int64(e.Seq-1))
	for i, h := range hashes {
		if err := w.tree.Put(be64(uint64(base)+uint64(i)), clone(h[:])); err != nil {
			return err
		}
	}
	if it.blob != nil {
		sum := entry.Sum256(it.blob)
		if w.blobs.Get(sum[:]) == nil {
			if err := w.blobs.Put(sum[:], append(make([]byte, 0, len(it.blob)), it.blob...)); err != nil {
				return err
			}
		}
	}
	w.unindexed = append(w.unindexed, indexed{e.Seq, indexKeys(e)})
	w.seq, w.head, w.last = e.Seq, it.hash, e.Time.Time
	return w.meta.Put(metaHead, cat(key, it.hash[:]))
}

// persist writes what the writer's entries changed in the derived state
// (the fold's Delta and the scalars of its Head) into the state tables and
// meta, once per commit.
func (w *writer) persist() error {
	d, h := &w.st.Delta, &w.st.Head
	if d.ClearBlocked {
		if err := w.tx.DeleteBucket(bucketBlocked); err != nil {
			return err
		}
		b, err := w.tx.CreateBucket(bucketBlocked)
		if err != nil {
			return err
		}
		w.blocked = b
	}
	for _, a := range sortedKeys(d.Unblocked) {
		if err := w.blocked.Delete([]byte(a)); err != nil {
			return err
		}
	}
	for _, a := range sortedKeys(d.Blocked) {
		if err := w.blocked.Put([]byte(a), be64(d.Blocked[a])); err != nil {
			return err
		}
	}
	for _, id := range sortedKeys(d.Accepted) {
		a := d.Accepted[id]
		k := entry.Sum256([]byte(id))
		if err := w.accepted.Put(k[:], cat(be64(a.Seq), a.Payload[:])); err != nil {
			return err
		}
	}
	for _, key := range sortedKeys(d.Idempotent) {
		a := d.Idempotent[key]
		k := entry.Sum256([]byte(key))
		if err := w.idm.Put(k[:], cat(be64(a.Seq), a.Payload[:])); err != nil {
			return err
		}
	}
	for _, r := range d.Redactions {
		t, err := w.entry(r.Of)
		if err != nil {
			return err
		}
		if err := w.blobs.Delete(t.PayloadSHA256[:]); err != nil {
			return err
		}
		if err := w.redacted.Put(clone(t.PayloadSHA256[:]), be64(r.Seq)); err != nil {
			return err
		}
	}
	if h.HasManifest {
		if err := w.meta.Put(metaManifest, clone(h.Manifest[:])); err != nil {
			return err
		}
	}
	if h.HasLock {
		if err := w.meta.Put(metaLock, clone(h.Lock[:])); err != nil {
			return err
		}
	}
	if h.Key != "" {
		if err := w.meta.Put(metaKey, []byte(h.Key)); err != nil {
			return err
		}
	}
	// The tables now hold the delta: start the next requests from them.
	w.st = entry.NewState(*h, boltTables{w})
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// treeReader reads stored tlog hashes from the tree bucket.
func treeReader(b *bolt.Bucket) tlog.HashReaderFunc {
	return func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			v := b.Get(be64(uint64(x)))
			if len(v) != len(tlog.Hash{}) {
				return nil, fmt.Errorf("%w: tree hash %d is %d bytes", ErrCorrupt, x, len(v))
			}
			copy(out[i][:], v)
		}
		return out, nil
	}
}

// boltTables reads the state tables of a writer's transaction.
type boltTables struct{ w *writer }

func (t boltTables) Accepted(id string) (entry.Accept, bool, error) {
	return readAccept(t.w.accepted, id, "idx_accepted")
}

func (t boltTables) Idempotent(key string) (entry.Accept, bool, error) {
	return readAccept(t.w.idm, key, "idx_idempotency")
}

func readAccept(b *bolt.Bucket, s, name string) (entry.Accept, bool, error) {
	if b == nil { // a read-only view of a file before format 3
		return entry.Accept{}, false, nil
	}
	k := entry.Sum256([]byte(s))
	v := b.Get(k[:])
	if v == nil {
		return entry.Accept{}, false, nil
	}
	if len(v) != 40 {
		return entry.Accept{}, false, fmt.Errorf("%w: %s value is %d bytes", ErrCorrupt, name, len(v))
	}
	a := entry.Accept{Seq: binary.BigEndian.Uint64(v)}
	copy(a.Payload[:], v[8:])
	return a, true, nil
}

func (t boltTables) Blocked(agent string) (uint64, bool, error) {
	if agent == "" || len(agent) > maxIndexedString {
		return 0, false, nil
	}
	v := t.w.blocked.Get([]byte(agent))
	if v == nil {
		return 0, false, nil
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("%w: blocked value is %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
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
