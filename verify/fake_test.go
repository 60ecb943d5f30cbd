package verify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
)

// fakeSource is a Source over entries and blobs held in memory, for
// handmade chains. Entries are delivered in slice order under their key.
type fakeSource struct {
	keys    []uint64
	raws    [][]byte
	blobs   map[entry.Hash][]byte
	redact  map[entry.Hash]bool
	failAt  int   // deliver this many entries, then return failErr (when failErr != nil)
	failErr error // returned by Entries
	blobErr error // returned by Blob for every blob, when set
}

func (f *fakeSource) Entries(ctx context.Context, fn func(uint64, []byte) error) error {
	for i := range f.raws {
		if f.failErr != nil && i == f.failAt {
			return f.failErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(f.keys[i], append([]byte(nil), f.raws[i]...)); err != nil {
			return err
		}
	}
	if f.failErr != nil && f.failAt >= len(f.raws) {
		return f.failErr
	}
	return nil
}

func (f *fakeSource) Blob(_ context.Context, sum entry.Hash) ([]byte, error) {
	if f.blobErr != nil {
		return nil, f.blobErr
	}
	if f.redact[sum] {
		return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrRedacted)
	}
	b, ok := f.blobs[sum]
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrNotFound)
	}
	return append([]byte(nil), b...), nil
}

// chain builds a valid chain entry by entry.
type chain struct {
	t    testing.TB
	src  *fakeSource
	head entry.Hash
	now  time.Time
}

func newChain(t testing.TB) *chain {
	return &chain{t: t, src: &fakeSource{blobs: map[entry.Hash][]byte{}, redact: map[entry.Hash]bool{}},
		now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
}

// add fills v, seq, prev and time, stores the entry and blob, and returns
// the entry's canonical bytes.
func (c *chain) add(e *entry.Entry, blob []byte) []byte {
	c.t.Helper()
	seq := uint64(len(c.src.raws)) + 1
	e.V, e.Seq, e.Prev = entry.Version, seq, c.head
	if e.Time.IsZero() {
		c.now = c.now.Add(time.Second)
		e.Time = entry.Time{Time: c.now}
	}
	raw, err := e.Canonical()
	if err != nil {
		c.t.Fatalf("Canonical(seq %d) = %v", seq, err)
	}
	c.src.keys = append(c.src.keys, seq)
	c.src.raws = append(c.src.raws, raw)
	if blob != nil {
		c.src.blobs[entry.Sum256(blob)] = blob
	}
	c.head = entry.LeafHash(raw)
	return raw
}

func hashPtr(h entry.Hash) *entry.Hash { return &h }
func int64Ptr(n int64) *int64          { return &n }

func (c *chain) snapshot(what string, content []byte) {
	c.add(&entry.Entry{Kind: entry.KindSnapshot, What: what,
		ContentSHA256: hashPtr(entry.Sum256(content)), Size: int64Ptr(int64(len(content)))}, content)
}

// handoff adds a handoff entry with the given reasons, naming the last
// manifest and lock snapshots given.
func (c *chain) handoff(id string, payload []byte, manifest, lock []byte, rs []reason.Reason, blocks []string) {
	if rs == nil {
		rs = []reason.Reason{}
	}
	c.add(&entry.Entry{Kind: entry.KindHandoff, Format: entry.Str("governed/1"), Decision: reason.Decide(rs), Reasons: &rs,
		HandoffID: entry.Str(id), Source: entry.Str("a"), Target: entry.Str("b"), WorkflowID: entry.Null(),
		PayloadSHA256: hashPtr(entry.Sum256(payload)), PayloadSize: int64Ptr(int64(len(payload))),
		ManifestSHA256: hashPtr(entry.Sum256(manifest)), LockSHA256: hashPtr(entry.Sum256(lock)), Blocks: blocks}, payload)
}

// entry reads the entry stored under seq again (for verify.Rereading).
func (f *fakeSource) entry(_ context.Context, seq uint64) (*entry.Entry, error) {
	for i, k := range f.keys {
		if k == seq {
			return entry.Decode(f.raws[i])
		}
	}
	return nil, fmt.Errorf("entry %d: %w", seq, ledger.ErrNotFound)
}
