package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
	"github.com/govledger/govledger/reason"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// This file builds batches the way the ledger core does (fold each entry
// into an entry.State over a view, collect the tree's new stored hashes),
// so the driver can be tested on its own.

// req is one entry to build: its kind and fields (seq, prev and time are
// filled in) and the blob it stores.
type req struct {
	e     entry.Entry
	blob  []byte
	erase []entry.Hash
}

var (
	manifestBytes = []byte(`{"agents":[]}`)
	lockBytes     = []byte(`{"lock_version":1}`)
	manifestSum   = entry.Sum256(manifestBytes)
	lockSum       = entry.Sum256(lockBytes)
	baseTime      = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
)

func n64(v int64) *int64 { return &v }

func snapshots() []req {
	return []req{
		{e: entry.Entry{Kind: entry.KindSnapshot, What: entry.SnapshotManifest, ContentSHA256: &manifestSum, Size: n64(int64(len(manifestBytes)))}, blob: manifestBytes},
		{e: entry.Entry{Kind: entry.KindSnapshot, What: entry.SnapshotLock, ContentSHA256: &lockSum, Size: n64(int64(len(lockBytes)))}, blob: lockBytes},
	}
}

// handoff is a handoff entry with its payload; rejected ones carry a
// HASH_MISMATCH that blocks the source.
func handoff(id, src, tgt, wf string, accepted bool, payload []byte) req {
	sum := entry.Sum256(payload)
	e := entry.Entry{Kind: entry.KindHandoff, Format: entry.Str("governed/1"), HandoffID: entry.StrOrNull(id),
		Source: entry.StrOrNull(src), Target: entry.StrOrNull(tgt), WorkflowID: entry.StrOrNull(wf),
		PayloadSHA256: &sum, PayloadSize: n64(int64(len(payload))), ManifestSHA256: &manifestSum, LockSHA256: &lockSum}
	rs := []reason.Reason{}
	e.Decision = reason.Accepted
	if !accepted {
		rs = append(rs, reason.Reason{Code: reason.HashMismatch, Severity: reason.Critical, Message: "drift"})
		e.Decision = reason.Rejected
		if src != "" {
			e.Blocks = []string{src}
		}
	}
	e.Reasons = &rs
	return req{e: e, blob: payload}
}

func unblock(agent string) req {
	return req{e: entry.Entry{Kind: entry.KindUnblock, Agent: agent, Note: "checked"}}
}

// build folds rs onto the view's head and returns the batch that appends
// them, with the state after it.
func build(t testing.TB, v ledger.View, rs ...req) (*ledger.Batch, *entry.State) {
	t.Helper()
	b, st, err := tryBuild(v, rs...)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func tryBuild(v ledger.View, rs ...req) (*ledger.Batch, *entry.State, error) {
	at := v.Head()
	st := entry.NewState(at, v)
	b := &ledger.Batch{At: at, Blobs: map[entry.Hash][]byte{}}
	base := tlog.StoredHashIndex(0, int64(at.Seq))
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= base {
				out[i] = b.Hashes[x-base]
				continue
			}
			h, err := v.ReadHashes([]int64{x})
			if err != nil {
				return nil, err
			}
			out[i] = h[0]
		}
		return out, nil
	})
	for _, r := range rs {
		e := r.e
		e.V, e.Seq, e.Prev = entry.Version, st.Seq+1, st.Hash
		// Nanoseconds, so that a store keeping microseconds is caught.
		e.Time = entry.Time{Time: baseTime.Add(time.Duration(e.Seq)*time.Millisecond + time.Duration(e.Seq%1000) + 1)}
		raw, err := e.Canonical()
		if err != nil {
			return nil, nil, err
		}
		h := entry.LeafHash(raw)
		if err := st.Apply(&e, h); err != nil {
			return nil, nil, err
		}
		hs, err := tlog.StoredHashesForRecordHash(int64(e.Seq-1), tlog.Hash(h), reader)
		if err != nil {
			return nil, nil, err
		}
		b.Hashes = append(b.Hashes, hs...)
		b.Entries = append(b.Entries, ledger.Appended{Entry: &e, Raw: raw, Hash: h})
		if r.blob != nil {
			b.Blobs[entry.Sum256(r.blob)] = r.blob
		}
		b.Erase = append(b.Erase, r.erase...)
	}
	b.Head, b.Delta = st.Head, st.Delta
	return b, st, st.Err()
}

// appendAll appends rs in one batch built on a fresh view.
func appendAll(t testing.TB, d ledger.Driver, rs ...req) *ledger.Batch {
	t.Helper()
	ctx := context.Background()
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	b, _ := build(t, v, rs...)
	if err := d.Append(ctx, b); err != nil {
		t.Fatalf("Append(seq %d..%d) = %v", b.At.Seq+1, b.Head.Seq, err)
	}
	return b
}

// open opens a driver on a fresh database of the shared server.
func open(t testing.TB, o *postgres.Options) (*postgres.Driver, string) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	d := openDSN(t, dsn, o)
	return d, dsn
}

func openDSN(t testing.TB, dsn string, o *postgres.Options) *postgres.Driver {
	t.Helper()
	d, err := postgres.Open(context.Background(), dsn, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// rootOf computes the RFC 6962 root of raws from scratch.
func rootOf(t testing.TB, raws [][]byte) tlog.Hash {
	t.Helper()
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, raw := range raws {
		hs, err := tlog.StoredHashes(int64(i), raw, r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	h, err := tlog.TreeHash(int64(len(raws)), r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// checkChain reads every entry of a fresh view and checks that they are
// seq 1..head, chained, decodable, with the tree root of their bytes. It
// returns the decoded entries.
func checkChain(t testing.TB, d ledger.Driver) []*entry.Entry {
	t.Helper()
	ctx := context.Background()
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var raws [][]byte
	var out []*entry.Entry
	prev := entry.ZeroHash
	err = v.Scan(ctx, 1, func(seq uint64, raw []byte) error {
		e, err := entry.Decode(raw)
		if err != nil {
			return fmt.Errorf("seq %d: %v", seq, err)
		}
		if e.Seq != seq || e.Seq != uint64(len(raws)+1) || e.Prev != prev {
			return fmt.Errorf("seq %d: entry says seq %d prev %s, want seq %d prev %s", seq, e.Seq, e.Prev, len(raws)+1, prev)
		}
		prev = entry.LeafHash(raw)
		raws = append(raws, raw)
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	h := v.Head()
	if uint64(len(raws)) != h.Seq || prev != h.Hash {
		t.Fatalf("scan ended at seq %d hash %s, head is seq %d hash %s", len(raws), prev, h.Seq, h.Hash)
	}
	if h.Seq > 0 {
		got, err := tlog.TreeHash(int64(h.Seq), v)
		if err != nil {
			t.Fatal(err)
		}
		if want := rootOf(t, raws); got != want {
			t.Fatalf("TreeHash(%d) from stored hashes = %s, want %s", h.Seq, got, want)
		}
	}
	return out
}
