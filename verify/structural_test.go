package verify_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// structuralChain is a short valid chain: two snapshots and a handoff.
func structuralChain(t *testing.T) *chain {
	c := newChain(t)
	m, l := []byte(`{"manifest":1}`), []byte(`{"lock":1}`)
	c.snapshot(entry.SnapshotManifest, m)
	c.snapshot(entry.SnapshotLock, l)
	c.handoff("h1", []byte(`{"x":1}`), m, l, []reason.Reason{}, nil)
	return c
}

// TestStructuralBesideReplay: the store's check runs while the entries
// are replayed, not after them (the first entry's Progress waits until it
// has started), and its findings still come after the replay's of the
// same seq, as they would one after the other.
func TestStructuralBesideReplay(t *testing.T) {
	c := structuralChain(t)
	c.src.raws[2] = append([]byte(nil), c.src.raws[2]...)
	c.src.raws[2][len(c.src.raws[2])-2] ^= 1 // damage the last entry: a replay finding
	started := make(chan struct{})
	var waited atomic.Bool
	rep, err := verify.Replay(context.Background(), c.src, verify.Options{
		SkipReevaluate: true,
		Progress: func(seq uint64) {
			if seq != 1 {
				return
			}
			select {
			case <-started:
				waited.Store(true)
			case <-time.After(20 * time.Second):
			}
		},
		Structural: func(context.Context) ([]ledger.Finding, error) {
			close(started)
			return []ledger.Finding{{Seq: 3, Kind: ledger.FindIndexMissing, Want: "idx", Got: "absent"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !waited.Load() {
		t.Error("the structural check had not started while the first entry was judged")
	}
	fs := rep.Findings
	if len(fs) != 2 || fs[0].Structural || fs[0].Seq != 3 || fs[0].Kind != verify.KindMalformed ||
		!fs[1].Structural || fs[1].Seq != 3 || fs[1].Kind != verify.KindIndex || rep.FirstBad != 3 {
		t.Fatalf("findings %v, first bad %d: want the replay's malformed seq 3, then the structural index one; first bad 3", fs, rep.FirstBad)
	}
}

// TestStructuralStopsWithReplay: when the replay cannot be completed, the
// store's check is told to stop (its ctx is done) and Replay returns only
// after it has.
func TestStructuralStopsWithReplay(t *testing.T) {
	c := structuralChain(t)
	c.src.failAt, c.src.failErr = 1, errors.New("disk gone")
	var returned atomic.Bool
	_, err := verify.Replay(context.Background(), c.src, verify.Options{
		Structural: func(ctx context.Context) ([]ledger.Finding, error) {
			defer returned.Store(true)
			select {
			case <-ctx.Done():
				// Not synchronisation: a wider window for a Replay that
				// does not wait to return first.
				time.Sleep(50 * time.Millisecond)
				return nil, ctx.Err()
			case <-time.After(20 * time.Second):
				return nil, errors.New("never told to stop")
			}
		},
	})
	if !errors.Is(err, verify.ErrSource) {
		t.Errorf("Replay = %v, want ErrSource", err)
	}
	if !returned.Load() {
		t.Error("Replay returned before the structural check did")
	}
}

// TestStructuralFed: the store's check beside the replay of a ledger is
// handed each entry as the replay prepared it (ledger.CheckFeed): for the
// stored bytes, their leaf hash, the decoded entry and the blob found to
// hash to the sum it names; for other bytes, nothing.
func TestStructuralFed(t *testing.T) {
	f := buildLedger(t)
	l, err := bolt.Open(f.path, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var fed, blobs int
	rep, err := verify.Replay(t.Context(), verify.LedgerSource(l), verify.Options{
		Structural: func(ctx context.Context) ([]ledger.Finding, error) {
			feed := ledger.CheckFeedFrom(ctx)
			if feed == nil {
				t.Error("the store check of a ledger has no feed")
				return nil, nil
			}
			return nil, l.ScanBlobs(ctx, 0, func(seq uint64, raw, blob []byte) error {
				other := append([]byte(nil), raw...)
				other[len(other)/2] ^= 1
				if p := feed.Prepared(ctx, seq, other); p != nil {
					t.Errorf("seq %d: other bytes fed as the stored ones", seq)
				}
				p := feed.Prepared(ctx, seq, raw)
				if p == nil {
					return nil
				}
				fed++
				if p.Seq != seq || p.Hash != entry.LeafHash(raw) || p.Err != nil || p.Entry == nil || p.Entry.Seq != seq {
					t.Errorf("seq %d fed as seq %d, hash %s (want %s), err %v", seq, p.Seq, p.Hash, entry.LeafHash(raw), p.Err)
				}
				if p.Blob != nil {
					blobs++
					if sum := p.Entry.Blob(); sum == nil || entry.Sum256(p.Blob) != *sum || !bytes.Equal(p.Blob, blob) {
						t.Errorf("seq %d: the blob fed is not the one stored under it that hashes to the sum the entry names", seq)
					}
				}
				return nil
			})
		},
	})
	if err != nil || !rep.OK() {
		t.Fatalf("Replay: %v, %v", err, rep.Findings)
	}
	if fed != int(rep.Entries) || blobs == 0 {
		t.Errorf("%d of %d entries fed (%d with their blob), want all", fed, rep.Entries, blobs)
	}
}
