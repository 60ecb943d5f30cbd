// Package memlog is an in-memory ledger for tests and benchmarks of the
// checkpoint packages: entries in their canonical bytes, payload blobs, and
// the Merkle tree's stored hashes kept with golang.org/x/mod/sumdb/tlog, in
// the shape of *ledger.Ledger's read API.
package memlog

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
)

// Errors returned by Blob.
var (
	ErrNotFound = fmt.Errorf("memlog: %w", ledger.ErrNotFound)
	ErrRedacted = fmt.Errorf("memlog: %w", ledger.ErrRedacted)
)

// Log is an in-memory ledger. It is not safe for concurrent writes.
type Log struct {
	origin   string
	entries  [][]byte
	leaves   []tlog.Hash
	hashes   []tlog.Hash // tlog stored hashes
	blobs    map[entry.Hash][]byte
	redacted map[entry.Hash]bool
	start    time.Time

	// Reads counts hashes read through ReadHashes; Calls counts calls.
	Reads, Calls atomic.Int64
}

// New returns an empty log named origin.
func New(origin string) *Log {
	return &Log{origin: origin, blobs: map[entry.Hash][]byte{}, redacted: map[entry.Hash]bool{},
		start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// ReadHashes implements tlog.HashReader over the stored hashes.
func (l *Log) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	l.Calls.Add(1)
	l.Reads.Add(int64(len(idx)))
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x < 0 || x >= int64(len(l.hashes)) {
			return nil, fmt.Errorf("memlog: hash index %d out of range", x)
		}
		out[i] = l.hashes[x]
	}
	return out, nil
}

// AppendLeaf appends a record hash only (no entry bytes): for benchmarks.
func (l *Log) AppendLeaf(h tlog.Hash) error {
	hs, err := tlog.StoredHashesForRecordHash(int64(len(l.leaves)), h, l)
	if err != nil {
		return err
	}
	l.hashes = append(l.hashes, hs...)
	l.leaves = append(l.leaves, h)
	l.entries = append(l.entries, nil)
	return nil
}

// AppendRaw appends canonical bytes as the next entry without checking them.
func (l *Log) AppendRaw(canonical []byte) error {
	if err := l.AppendLeaf(tlog.RecordHash(canonical)); err != nil {
		return err
	}
	l.entries[len(l.entries)-1] = append([]byte(nil), canonical...)
	return nil
}

// AppendHandoff appends a handoff entry recording payload with the given
// decision, and returns its seq.
func (l *Log) AppendHandoff(id string, payload []byte) (uint64, error) {
	sum := entry.Sum256(payload)
	size := int64(len(payload))
	// Not the zero hash: omitzero would drop a *Hash to all zeros.
	snap := entry.Sum256([]byte("snapshot"))
	rs := []reason.Reason{}
	e := &entry.Entry{Kind: entry.KindHandoff,
		Format: entry.Str("governed/1"), Decision: reason.Accepted, Reasons: &rs,
		HandoffID: entry.Str(id), Source: entry.Str("domain-05-product"), Target: entry.Str("domain-02-analysis"),
		WorkflowID: entry.Null(), PayloadSHA256: &sum, PayloadSize: &size,
		ManifestSHA256: &snap, LockSHA256: &snap}
	if err := l.append(e); err != nil {
		return 0, err
	}
	l.blobs[sum] = append([]byte(nil), payload...)
	return e.Seq, nil
}

// AppendEntry fills e's v, seq, prev and time and appends it.
func (l *Log) AppendEntry(e *entry.Entry) (uint64, error) {
	if err := l.append(e); err != nil {
		return 0, err
	}
	return e.Seq, nil
}

func (l *Log) append(e *entry.Entry) error {
	e.V = entry.Version
	e.Seq = uint64(len(l.entries)) + 1
	if n := len(l.entries); n > 0 {
		e.Prev = entry.Hash(l.leaves[n-1])
	}
	e.Time = entry.Time{Time: l.start.Add(time.Duration(e.Seq) * time.Second)}
	c, err := e.Canonical()
	if err != nil {
		return err
	}
	return l.AppendRaw(c)
}

// Redact removes the payload of entry seq (Blob then returns ErrRedacted).
func (l *Log) Redact(seq uint64) error {
	e, _, err := l.Get(context.Background(), seq)
	if err != nil {
		return err
	}
	if e.PayloadSHA256 == nil {
		return fmt.Errorf("memlog: entry %d has no payload", seq)
	}
	delete(l.blobs, *e.PayloadSHA256)
	l.redacted[*e.PayloadSHA256] = true
	return nil
}

// Origin returns the log's origin.
func (l *Log) Origin() string { return l.origin }

// TreeSize returns the number of entries.
func (l *Log) TreeSize(context.Context) (uint64, error) { return uint64(len(l.leaves)), nil }

// TreeHash returns the root over the first size entries.
func (l *Log) TreeHash(_ context.Context, size uint64) (tlog.Hash, error) {
	if size > uint64(len(l.leaves)) {
		return tlog.Hash{}, fmt.Errorf("memlog: size %d > %d", size, len(l.leaves))
	}
	return tlog.TreeHash(int64(size), l)
}

// ProveInclusion proves entry seq (leaf seq-1) in the tree of size entries.
func (l *Log) ProveInclusion(_ context.Context, seq, size uint64) (tlog.RecordProof, error) {
	if seq == 0 || seq > size || size > uint64(len(l.leaves)) {
		return nil, fmt.Errorf("memlog: bad inclusion request seq %d size %d (have %d)", seq, size, len(l.leaves))
	}
	return tlog.ProveRecord(int64(size), int64(seq-1), l)
}

// ProveConsistency proves the tree of oldSize is a prefix of newSize.
func (l *Log) ProveConsistency(_ context.Context, oldSize, newSize uint64) (tlog.TreeProof, error) {
	if oldSize == 0 || oldSize > newSize || newSize > uint64(len(l.leaves)) {
		return nil, fmt.Errorf("memlog: bad consistency request %d..%d (have %d)", oldSize, newSize, len(l.leaves))
	}
	return tlog.ProveTree(int64(newSize), int64(oldSize), l)
}

// Get returns entry seq, decoded, and its canonical bytes.
func (l *Log) Get(_ context.Context, seq uint64) (*entry.Entry, []byte, error) {
	if seq == 0 || seq > uint64(len(l.entries)) || l.entries[seq-1] == nil {
		return nil, nil, fmt.Errorf("memlog: entry %d: %w", seq, ErrNotFound)
	}
	b := append([]byte(nil), l.entries[seq-1]...)
	e, err := entry.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	return e, b, nil
}

// Blob returns the bytes with SHA-256 sum, ErrRedacted or ErrNotFound.
func (l *Log) Blob(_ context.Context, sum entry.Hash) ([]byte, error) {
	if l.redacted[sum] {
		return nil, ErrRedacted
	}
	b, ok := l.blobs[sum]
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), b...), nil
}

// Copy returns a new log with the first n entries of l (and their blobs),
// under origin: a truncated or re-rooted copy for tamper tests.
func (l *Log) Copy(origin string, n uint64) (*Log, error) {
	c := New(origin)
	for i := uint64(0); i < n; i++ {
		if err := c.AppendRaw(l.entries[i]); err != nil {
			return nil, err
		}
	}
	for k, v := range l.blobs {
		c.blobs[k] = v
	}
	return c, nil
}
