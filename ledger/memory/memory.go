// Package memory is an in-memory ledger.Driver: the reference driver of
// the conformance suite (ledger/ledgertest) and a store for tests and
// demos that need no file. Nothing survives the process.
//
// Every stored value carries the head seq of the batch that stored it,
// so a View is a head and a read lock: it answers from the values stored
// at or before its head, however many batches land meanwhile.
package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// Driver is an in-memory ledger.Driver. The zero value is not usable; call
// New.
type Driver struct {
	origin string

	mu     sync.RWMutex
	closed bool
	head   entry.Head
	raw    [][]byte // raw[i] is entry i+1
	dec    []*entry.Entry
	hashes []tlog.Hash // stored tree hashes, in tlog order

	accepted   map[string]entry.Accept // first acceptance; visible when Seq <= view head
	idempotent map[string]entry.Accept
	blocked    map[string][]blockEvent // per agent, in batch order
	clears     []uint64                // batch heads of ClearBlocked
	blobs      map[entry.Hash][]blobEvent
}

// blockEvent is a change of an agent's block by the batch with head at.
type blockEvent struct {
	at, by  uint64 // by: the blocking entry (0: unblocked)
	blocked bool
}

// blobEvent is a blob stored (data) or erased (data nil) by the batch
// with head at.
type blobEvent struct {
	at   uint64
	data []byte
}

// New returns an empty in-memory ledger named origin ("": a random
// ledger.DefaultOriginPrefix origin).
func New(origin string) (*Driver, error) {
	if origin == "" {
		var b [8]byte
		rand.Read(b[:])
		origin = ledger.DefaultOriginPrefix + hex.EncodeToString(b[:])
	}
	if err := ledger.CheckOrigin(origin); err != nil {
		return nil, fmt.Errorf("%w: %v", ledger.ErrBadOptions, err)
	}
	return &Driver{origin: origin, accepted: map[string]entry.Accept{}, idempotent: map[string]entry.Accept{},
		blocked: map[string][]blockEvent{}, blobs: map[entry.Hash][]blobEvent{}}, nil
}

// Open returns a Ledger over a new in-memory driver.
func Open(origin string, opts *ledger.Options) (*ledger.Ledger, error) {
	d, err := New(origin)
	if err != nil {
		return nil, err
	}
	return ledger.New(d, opts)
}

// Origin implements ledger.Driver.
func (d *Driver) Origin() string { return d.origin }

// Close implements ledger.Driver. Views fail afterwards with
// ledger.ErrClosed.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return nil
}

// View implements ledger.Driver.
func (d *Driver) View(ctx context.Context) (ledger.View, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return nil, ledger.ErrClosed
	}
	return &view{d: d, head: d.head}, nil
}

// Append implements ledger.Driver: compare-and-append under the write lock.
func (d *Driver) Append(ctx context.Context, b *ledger.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.Check(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ledger.ErrClosed
	}
	if b.At.Seq != d.head.Seq || b.At.Hash != d.head.Hash {
		return fmt.Errorf("%w: batch at seq %d, stored head seq %d", ledger.ErrConflict, b.At.Seq, d.head.Seq)
	}
	if want := tlog.StoredHashIndex(0, int64(b.At.Seq)); int64(len(d.hashes)) != want {
		return fmt.Errorf("%w: %d stored tree hashes at seq %d, want %d", ledger.ErrCorrupt, len(d.hashes), b.At.Seq, want)
	}
	at := b.Head.Seq
	dec := make([]*entry.Entry, len(b.Entries))
	for i, a := range b.Entries {
		e, err := entry.Decode(a.Raw)
		if err != nil {
			return fmt.Errorf("%w: batch entry %d: %v", ledger.ErrCorrupt, a.Entry.Seq, err)
		}
		dec[i] = e
	}
	for i, a := range b.Entries {
		d.raw = append(d.raw, clone(a.Raw))
		d.dec = append(d.dec, dec[i])
	}
	d.hashes = append(d.hashes, b.Hashes...)
	for sum, data := range b.Blobs {
		if ev := d.blobs[sum]; len(ev) == 0 || ev[len(ev)-1].data == nil {
			d.blobs[sum] = append(ev, blobEvent{at, clone(data)})
		}
	}
	for _, sum := range b.Erase {
		ev := d.blobs[sum]
		for i := range ev {
			clear(ev[i].data) // unrecoverable, also for older views
		}
		d.blobs[sum] = append(ev, blobEvent{at: at})
	}
	delta := &b.Delta
	for k, a := range delta.Accepted {
		if _, ok := d.accepted[k]; !ok {
			d.accepted[k] = a
		}
	}
	for k, a := range delta.Idempotent {
		if _, ok := d.idempotent[k]; !ok {
			d.idempotent[k] = a
		}
	}
	if delta.ClearBlocked {
		d.clears = append(d.clears, at)
	}
	for a := range delta.Unblocked {
		d.blocked[a] = append(d.blocked[a], blockEvent{at: at})
	}
	for a, by := range delta.Blocked {
		d.blocked[a] = append(d.blocked[a], blockEvent{at: at, by: by, blocked: true})
	}
	d.head = b.Head
	return nil
}

// view is a head of the driver and a read lock per call.
type view struct {
	d    *Driver
	head entry.Head

	mu     sync.Mutex
	closed bool
}

func (v *view) lock() error {
	v.d.mu.RLock()
	v.mu.Lock()
	closed := v.closed
	v.mu.Unlock()
	if closed || v.d.closed {
		v.d.mu.RUnlock()
		return ledger.ErrClosed
	}
	return nil
}

func (v *view) unlock() { v.d.mu.RUnlock() }

func (v *view) Close() error {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	return nil
}

func (v *view) Head() entry.Head { return v.head }

func (v *view) Accepted(id string) (entry.Accept, bool, error) {
	return v.first(v.d.accepted, id)
}

func (v *view) Idempotent(key string) (entry.Accept, bool, error) {
	return v.first(v.d.idempotent, key)
}

func (v *view) first(m map[string]entry.Accept, k string) (entry.Accept, bool, error) {
	if err := v.lock(); err != nil {
		return entry.Accept{}, false, err
	}
	defer v.unlock()
	a, ok := m[k]
	if !ok || a.Seq > v.head.Seq {
		return entry.Accept{}, false, nil
	}
	return a, true, nil
}

func (v *view) Blocked(agent string) (uint64, bool, error) {
	if err := v.lock(); err != nil {
		return 0, false, err
	}
	defer v.unlock()
	by, ok := v.blocked(agent)
	return by, ok, nil
}

// blocked answers for agent as of the view's head; the caller holds the
// read lock. Within one batch a clear comes before the agent's changes.
func (v *view) blocked(agent string) (uint64, bool) {
	var last *blockEvent
	for i, ev := range v.d.blocked[agent] {
		if ev.at > v.head.Seq {
			break
		}
		last = &v.d.blocked[agent][i]
	}
	if last == nil || !last.blocked {
		return 0, false
	}
	for _, c := range v.d.clears {
		if c > last.at && c <= v.head.Seq {
			return 0, false
		}
	}
	return last.by, true
}

func (v *view) Blocks() (map[string]uint64, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.unlock()
	out := map[string]uint64{}
	for a := range v.d.blocked {
		if by, ok := v.blocked(a); ok {
			out[a] = by
		}
	}
	return out, nil
}

func (v *view) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.unlock()
	n := tlog.StoredHashIndex(0, int64(v.head.Seq))
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= n {
			return nil, fmt.Errorf("tree hash %d of %d: %w", x, n, ledger.ErrBadRange)
		}
		out[i] = v.d.hashes[x]
	}
	return out, nil
}

func (v *view) Entry(seq uint64) ([]byte, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.unlock()
	if seq == 0 || seq > v.head.Seq {
		return nil, fmt.Errorf("seq %d: %w", seq, ledger.ErrNotFound)
	}
	return clone(v.d.raw[seq-1]), nil
}

func (v *view) Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error {
	for seq := max(from, 1); seq <= v.head.Seq; seq++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := v.Entry(seq)
		if err != nil {
			return err
		}
		if err := fn(seq, raw); err != nil {
			return err
		}
	}
	return nil
}

func (v *view) Blob(sum entry.Hash) ([]byte, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.unlock()
	var last *blobEvent
	for i, ev := range v.d.blobs[sum] {
		if ev.at > v.head.Seq {
			break
		}
		last = &v.d.blobs[sum][i]
	}
	switch {
	case last == nil:
		return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrNotFound)
	case last.data == nil || entry.Sum256(last.data) != sum && isZero(last.data):
		// Erased, or erased after this view was opened.
		return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrRedacted)
	}
	return clone(last.data), nil
}

// Erased implements ledger.View: the batch of the last erasure of sum at
// or before the view's head, whose last entry is the redaction.
func (v *view) Erased(sum entry.Hash) (uint64, bool, error) {
	if err := v.lock(); err != nil {
		return 0, false, err
	}
	defer v.unlock()
	var at uint64
	for _, ev := range v.d.blobs[sum] {
		if ev.at > v.head.Seq {
			break
		}
		if ev.data == nil {
			at = ev.at
		}
	}
	return at, at != 0, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (v *view) Find(ctx context.Context, q ledger.Query) ([]uint64, error) {
	if err := v.lock(); err != nil {
		return nil, err
	}
	defer v.unlock()
	var out []uint64
	for seq := uint64(1); seq <= v.head.Seq; seq++ {
		if seq%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if q.Match(v.d.dec[seq-1]) {
			out = append(out, seq)
		}
	}
	return q.Cut(out), nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
