package bolt_test

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// sample builds a closed ledger with every kind of derived state: accepted
// and rejected handoffs, a block and an unblock, a redaction, two lock
// snapshots. It returns its path and head.
func sample(t *testing.T) (string, uint64) {
	t.Helper()
	o := newClockOpts()
	o.IndexBatch = 5 // seqs 1-15 indexed in three flushes, the tail not yet
	l := bolttest.MustCreate(t, o)
	for i := range 10 {
		h := handoff(i)
		if i == 4 {
			h.Reasons, h.Blocks = mismatch, []string{"domain-05-product"}
		}
		bolttest.AppendHandoff(t, l, h)
	}
	bolttest.AppendUnblock(t, l, "domain-05-product", "fixed")
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "z", Source: "a", Target: "b", Reasons: mismatch, Blocks: []string{"a"}})
	if _, err := l.Redact(context.Background(), 5, "pii"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), &ledger.Request{Snapshots: []ledger.Snapshot{{What: entry.SnapshotLock, Bytes: []byte("lock 2")}}}); err != nil {
		t.Fatal(err)
	}
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "y", Source: "a", Target: "b", NoSnapshots: true})
	head, _, _ := l.Head(t.Context())
	path := l.Path()
	l.Close()
	return path, head
}

func check(t *testing.T, path string) ([]ledger.Finding, error) {
	t.Helper()
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Check(context.Background())
}

// TestCheckFindsTampering: each named mutation gives a finding of its kind.
func TestCheckFindsTampering(t *testing.T) {
	src, head := sample(t)
	e3 := func(path string) *entry.Entry {
		l, _ := bolt.Open(path, &bolt.Options{ReadOnly: true})
		defer l.Close()
		e, _, _ := l.Get(t.Context(), 3)
		return e
	}(src)
	tests := []struct {
		name   string
		tamper func(path string) error
		want   string
	}{
		// No tile holds the leaf hash of entry 3 (format 7 stores no
		// level-0 tile): the prev link of entry 4 names it.
		{"flipped-byte-@seq3", func(p string) error { return bolttest.FlipByte(p, "entries", bolttest.SeqKey(3), 40) }, ledger.FindPrevLink},
		{"flipped-byte-@head", func(p string) error { return bolttest.FlipByte(p, "entries", bolttest.SeqKey(head), 40) }, ledger.FindMetaHead},
		{"deleted-entry-@seq4", func(p string) error { return bolttest.DeleteKey(p, "entries", bolttest.SeqKey(4)) }, ledger.FindSeqGap},
		{"inserted-key", func(p string) error { return bolttest.InsertKey(p, "entries", []byte("x"), []byte("{}")) }, ledger.FindUnknownKey},
		{"unknown-bucket", func(p string) error { return bolttest.InsertKey(p, "extra", []byte("k"), []byte("v")) }, ledger.FindUnknownBucket},
		{"unknown-meta-key", func(p string) error { return bolttest.InsertKey(p, "meta", []byte("k"), []byte("v")) }, ledger.FindUnknownKey},
		{"swapped-entries-4-5", func(p string) error {
			return bolttest.SwapValues(p, "entries", bolttest.SeqKey(4), bolttest.SeqKey(5))
		}, ledger.FindSeqMismatch},
		{"duplicated-entry-3", func(p string) error { return bolttest.DuplicateEntry(p, 3) }, ledger.FindMetaHead},
		{"edited-idx_handoff", func(p string) error { return bolttest.EditIndex(p, "idx_handoff", 3, 4) }, ledger.FindIndexMissing},
		{"edited-idx_agent", func(p string) error { return bolttest.EditIndex(p, "idx_agent", 3, 4) }, ledger.FindIndexMissing},
		{"inserted-idx_agent", func(p string) error {
			return bolttest.InsertKey(p, "idx_agent", append(make([]byte, 8), bolttest.SeqKey(3)...), []byte{})
		}, ledger.FindIndexExtra},
		{"edited-idx_decision", func(p string) error { return bolttest.EditIndex(p, "idx_decision", 3, 4) }, ledger.FindIndexMissing},
		{"edited-idx_workflow", func(p string) error { return bolttest.EditIndex(p, "idx_workflow", 3, 4) }, ledger.FindIndexMissing},
		{"idx_agent-key-beyond-indexed", func(p string) error {
			return bolttest.InsertKey(p, "idx_agent", append(make([]byte, 8), bolttest.SeqKey(head)...), []byte{})
		}, ledger.FindIndexExtra},
		{"rewound-meta-indexed", func(p string) error { return bolttest.InsertKey(p, "meta", []byte("indexed"), bolttest.SeqKey(2)) }, ledger.FindIndexExtra},
		{"advanced-meta-indexed", func(p string) error {
			return bolttest.InsertKey(p, "meta", []byte("indexed"), bolttest.SeqKey(head))
		}, ledger.FindIndexMissing},
		{"meta-indexed-beyond-head", func(p string) error {
			return bolttest.InsertKey(p, "meta", []byte("indexed"), bolttest.SeqKey(head+1))
		}, ledger.FindMetaHead},
		{"deleted-meta-indexed", func(p string) error { return bolttest.DeleteKey(p, "meta", []byte("indexed")) }, ledger.FindBadValue},
		{"edited-idx_accepted", func(p string) error { return bolttest.EditIndex(p, "idx_accepted", 3, 4) }, ledger.FindAccepted},
		{"inserted-blocked", func(p string) error {
			return bolttest.InsertKey(p, "blocked", []byte("never-blocked"), bolttest.SeqKey(head-3))
		}, ledger.FindBlocked},
		{"edited-redacted", func(p string) error { return bolttest.EditIndex(p, "redacted", head-2, 2) }, ledger.FindRedacted},
		{"stored-level-0-tile", func(p string) error { // format 7 stores none
			return bolttest.InsertKey(p, "tiles", append([]byte{0}, bolttest.SeqKey(0)...), make([]byte, 32*head))
		}, ledger.FindTreeExtra},
		{"extra-tree-tile", func(p string) error {
			return bolttest.InsertKey(p, "tiles", append([]byte{0}, bolttest.SeqKey(1000)...), make([]byte, 32))
		}, ledger.FindTreeExtra},
		{"rewound-meta-head", func(p string) error { return bolttest.RewindMetaHead(p, 2) }, ledger.FindMetaHead},
		{"edited-blob", func(p string) error { return bolttest.EditBlob(p, *e3.PayloadSHA256, []byte("forged")) }, ledger.FindBlobHash},
		{"orphan-blob", func(p string) error {
			return bolttest.InsertKey(p, "blobs", bolttest.SeqKey(head+5), []byte("orphan"))
		}, ledger.FindBlobOrphan},
		{"blob-under-a-hash-key", func(p string) error {
			s := entry.Sum256([]byte("orphan"))
			return bolttest.InsertKey(p, "blobs", s[:], []byte("orphan"))
		}, ledger.FindUnknownKey},
		{"deleted-snapshot-blob", func(p string) error {
			k, err := bolttest.BlobKey(p, entry.Sum256(bolttest.LockBytes))
			if err != nil {
				return err
			}
			return bolttest.DeleteKey(p, "blobs", k)
		}, ledger.FindBlobMissing},
		{"deleted-idx_blob-key", func(p string) error {
			s := entry.Sum256(bolttest.LockBytes)
			return bolttest.DeleteKey(p, "idx_blob", s[:])
		}, ledger.FindIndexMissing},
		{"edited-idx_blob-key", func(p string) error {
			s := entry.Sum256(bolttest.LockBytes)
			return bolttest.InsertKey(p, "idx_blob", s[:], bolttest.SeqKey(1))
		}, ledger.FindIndexExtra},
		{"stray-idx_blob-key", func(p string) error {
			s := entry.Sum256([]byte("never stored"))
			return bolttest.InsertKey(p, "idx_blob", s[:], bolttest.SeqKey(2))
		}, ledger.FindIndexExtra},
		{"idx_agent-listing-twice", func(p string) error {
			ax := binary.BigEndian.AppendUint64(nil, xxhash.Sum64String("domain-05-product"))
			return bolttest.InsertKey(p, "idx_agent", append(ax, bolttest.SeqKey(4)...), []byte{})
		}, ledger.FindIndexExtra},
		{"idx_workflow-truncated-uvarint", func(p string) error {
			return bolttest.InsertKey(p, "idx_workflow", append(make([]byte, 8), bolttest.SeqKey(1)...), []byte{0x80})
		}, ledger.FindBadValue},
		{"idx_decision-zero-difference", func(p string) error {
			return bolttest.InsertKey(p, "idx_decision", append([]byte("accepted"), bolttest.SeqKey(1)...), []byte{0})
		}, ledger.FindBadValue},
		{"idx_time-in-format-6", func(p string) error { // the time index of formats 1-5
			return bolttest.InsertKey(p, "idx_time", bolttest.SeqKey(1), []byte{})
		}, ledger.FindUnknownBucket},
		{"idx_accepted-key-of-another-seq", func(p string) error {
			return bolttest.InsertKey(p, "idx_accepted", append(make([]byte, 8), bolttest.SeqKey(3)...), []byte{})
		}, ledger.FindAccepted},
		{"edited-in-force", func(p string) error { return bolttest.InsertKey(p, "meta", []byte("lock"), make([]byte, 32)) }, ledger.FindInForce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tamperFinds(t, src, tt.tamper, tt.want) })
	}
}

// tamperFinds checks a copy of the ledger file src after tamper: Check
// must give a finding of kind want. It returns the findings.
func tamperFinds(t *testing.T, src string, tamper func(path string) error, want string) []ledger.Finding {
	t.Helper()
	path := bolttest.CopyFile(t, src)
	if err := tamper(path); err != nil {
		t.Fatal(err)
	}
	fs, err := check(t, path)
	if err != nil {
		t.Fatalf("Check() error %v", err)
	}
	found := false
	for _, f := range fs {
		found = found || f.Kind == want
	}
	if !found {
		t.Errorf("Check() = %v, want a %s finding", fs, want)
	}
	return fs
}

// TestAnchorNeeded: a truncated tail and a rewritten suffix are
// structurally sound (Check and the chain walk pass); only the old tree
// hash, kept elsewhere, exposes them.
func TestAnchorNeeded(t *testing.T) {
	src, head := sample(t)
	l, _ := bolt.Open(src, &bolt.Options{ReadOnly: true})
	oldRoot, _ := l.TreeHash(t.Context(), head)
	oldRoot5, _ := l.TreeHash(t.Context(), 5)
	l.Close()
	tests := []struct {
		name   string
		tamper func(p string) error
		size   uint64
	}{
		{"truncated-tail-2", func(p string) error { return bolttest.TruncateTail(p, 2) }, head - 2},
		{"rewritten-suffix-@seq6", func(p string) error {
			return bolttest.RewriteSuffix(p, 6, func(e *entry.Entry) { e.Source = entry.Str("mallory") })
		}, head},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := bolttest.CopyFile(t, src)
			if err := tt.tamper(path); err != nil {
				t.Fatal(err)
			}
			bolttest.MustCheck(t, path)
			l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			chainWalk(t, l)
			if seq, _, _ := l.Head(t.Context()); seq != tt.size {
				t.Errorf("head = %d, want %d", seq, tt.size)
			}
			if r5, _ := l.TreeHash(t.Context(), 5); r5 != oldRoot5 {
				t.Errorf("the untouched prefix changed")
			}
			if tt.size == head {
				if r, _ := l.TreeHash(t.Context(), head); r == oldRoot {
					t.Errorf("rewritten ledger has the old root")
				}
			} else if _, err := l.TreeHash(t.Context(), head); !errors.Is(err, ledger.ErrBadRange) {
				t.Errorf("TreeHash(old size) = %v, want ErrBadRange", err)
			}
		})
	}
}

var (
	flips       = flag.Int("corrupt-flips", 200, "random byte flips in TestCorruptNeverPanics")
	corruptSeed = flag.Uint64("corrupt-seed", 0, "the seed of TestCorruptNeverPanics (0: from the clock), to repeat a run")
)

// TestCorruptNeverPanics flips random bytes of a ledger file copy, then
// opens, scans, gets, finds and checks it: every outcome must be a clean
// error or a result, never a panic (C8). Every copy is also read as show,
// log, trace, prove and blocks read it (a read-only Open without the page
// walk, pointReads): after a single flip each read fails with ErrCorrupt
// or returns what the intact file or the walked file gives
// (checkOutcomes).
func TestCorruptNeverPanics(t *testing.T) {
	src, head := sample(t)
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]uint64, 0, head+1)
	for seq := uint64(1); seq <= head+1; seq++ {
		seqs = append(seqs, seq)
	}
	points := func(walk bool) ([]string, error) {
		return readOutcomes(src, walk, seqs, head, "domain-05-product", "wf-1", entry.Sum256(bolttest.LockBytes))
	}
	intact, err := points(false)
	if err != nil {
		t.Fatal(err)
	}
	var pointsFailed int
	// Flip bytes of the pages in use: the file is mostly room to grow.
	r := parseRaw(t, orig)
	inUse := int(min(r.hw*r.ps, uint64(len(orig))))
	seed := *corruptSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (file %d bytes; -corrupt-seed to repeat)", seed, len(orig))
	rng := rand.New(rand.NewPCG(seed, 1))
	path := t.TempDir() + "/c.db"
	var opened, detected, corruptErrs int
	for i := range *flips {
		it := time.Now()
		data := append([]byte(nil), orig...)
		n := 1 + rng.IntN(4)
		for range n {
			data[rng.IntN(inUse)] ^= byte(1 + rng.IntN(255))
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		src = path
		if guarded, err := points(false); err == nil {
			if n == 1 {
				walked, _ := points(true)
				checkOutcomes(t, fmt.Sprintf("flip %d", i), guarded, intact, walked)
			}
			if slices.Contains(guarded, "error corrupt") {
				pointsFailed++
			}
		}
		l, err := bolt.Open(path, &bolt.Options{ReadOnly: i%2 == 0, NoCreate: true, CheckPages: i%2 == 0})
		tOpen := time.Since(it)
		if err != nil {
			if errors.Is(err, ledger.ErrCorrupt) {
				corruptErrs++
			}
			continue
		}
		opened++
		ctx := context.Background()
		if i%2 == 1 {
			// Write mode: Open and Close only. bbolt may grow a damaged
			// file opened for writing (seen: 128 KiB to 600 MB), so reads
			// of damaged files are run read-only, as the CLI does.
			l.Close()
			continue
		}
		l.Scan(ctx, 0, func(seq uint64, raw []byte) error { _, err := entry.Decode(raw); return err })
		for seq := uint64(1); seq <= head+1; seq++ {
			l.Get(ctx, seq)
		}
		l.Blob(ctx, entry.Sum256(bolttest.LockBytes))
		l.Find(ctx, ledger.Query{Agent: "domain-05-product"})
		l.Find(ctx, ledger.Query{})
		l.TreeHash(ctx, head)
		l.ProveInclusion(ctx, 3, head)
		tc := time.Now()
		fs, err := l.Check(ctx)
		tCheck := time.Since(tc)
		if len(fs) > 0 || err != nil {
			detected++
		}
		l.Close()
		if d := time.Since(it); d > 300*time.Millisecond {
			fi, _ := os.Stat(path)
			t.Logf("flip %d (ro=%t) took %s, open %s, check %s, size %d", i, i%2 == 0, d, tOpen, tCheck, fi.Size())
		}
	}
	t.Logf("%d flips: %d refused at Open (%d ErrCorrupt), %d opened, %d with findings or errors; point reads failed as corrupt on %d", *flips, *flips-opened, corruptErrs, opened, detected, pointsFailed)
}
