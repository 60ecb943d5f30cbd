package verify_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	bbolt "go.etcd.io/bbolt"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// live is one stored value of a ledger file: where its bytes are in the
// file, and the lowest seq whose judgement depends on them.
type live struct {
	name string // "entry 7", "blob <sum> (seq 9)"
	seq  uint64
	off  int
	n    int
}

// liveValues locates, in the file at path, the bytes of every stored entry
// and blob as bbolt reads them (the live copy, not a stale page), using the
// address of the value inside bbolt's read-only memory map.
func liveValues(t testing.TB, path string) []live {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := db.Info().Data
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []live
	err = db.View(func(tx *bbolt.Tx) error {
		// A small bucket is inline, in the root bucket's page, and bbolt
		// gives a read transaction a copy of it: its values are found
		// there instead.
		ps := db.Info().PageSize
		root := int(tx.Cursor().Bucket().Root()) * ps
		rootEnd := root + (1+int(binary.LittleEndian.Uint32(file[root+12:])))*ps
		at := func(v []byte) int {
			off := int(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - base)
			if off >= 0 && off+len(v) <= len(file) {
				return off
			}
			i := bytes.Index(file[root:rootEnd], v)
			if i < 0 {
				t.Fatalf("a value of %d bytes is neither in the map nor in the root page", len(v))
			}
			return root + i
		}
		err := tx.Bucket([]byte(bolttest.BucketEntries)).ForEach(func(k, v []byte) error {
			e, err := entry.Decode(v)
			if err != nil {
				return err
			}
			out = append(out, live{name: fmt.Sprintf("entry %d", e.Seq), seq: e.Seq, off: at(v), n: len(v)})
			return nil
		})
		if err != nil {
			return err
		}
		// A blob is stored under the seq of the first entry naming it.
		return tx.Bucket([]byte(bolttest.BucketBlobs)).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("blobs key %x is not a seq", k)
			}
			seq := binary.BigEndian.Uint64(k)
			out = append(out, live{name: fmt.Sprintf("blob of seq %d", seq), seq: seq, off: at(v), n: len(v)})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tally counts tamper cases for the lead's report.
type tally struct {
	tried, detected, rightSeq, refused int
}

func (c *tally) String() string {
	return fmt.Sprintf("%d tried, %d detected (%d naming the right seq, %d refused at open), %d undetected",
		c.tried, c.detected, c.rightSeq, c.refused, c.tried-c.detected)
}

// TestTamperEveryByte flips (XOR 0x01) every byte of every stored entry and
// every stored payload and snapshot blob of a real ledger file, one at a
// time, in a copy of the file, and verifies the copy as `govledger verify`
// does. Every flip must be detected, naming the entry (for a blob: the
// first entry naming it). A flipped entry byte can never leave an
// equivalent entry: the stored bytes are the canonical encoding, which is
// injective, so any other bytes either fail DecodeEntry or decode to
// another entry, whose hash breaks the link to the next entry (or the
// stored head, for the last one).
//
// Every entry byte is flipped; blob bytes are sampled (the first and last
// byte and every 16th: a blob is judged by its SHA-256, which any change
// breaks wherever it is). Under -short and -race (every 5th)
// entry bytes are sampled too. Each
// flip is verified with the stored head (Options.Head) and, for every 16th
// case, also with the structural check and decision re-evaluation, as
// `govledger verify` runs; the others skip those two (they cannot hide a
// finding, only add one) to keep the suite fast.
func TestTamperEveryByte(t *testing.T) {
	f := buildLedger(t)
	entryStride := 1
	switch {
	case testing.Short():
		entryStride = 5
	case raceEnabled:
		entryStride = 5 // the race detector makes each case ~5x slower
	}
	entries, blobs := flipEvery(t, f.path, entryStride, 16, func(p string, n int) (*verify.Report, error) {
		return flippedReport(t, p, n%16 == 0)
	})
	t.Logf("tamper (a) single-byte flips in entries: %s", &entries)
	t.Logf("tamper (a) single-byte flips in payload/snapshot blobs: %s", &blobs)
}

// flipEvery flips (XOR 0x01), one at a time in a copy of the ledger file
// at path, every entryStride-th byte of every stored entry and every
// blobStride-th byte of every stored blob (and always the last byte of
// each), verifies the copy with check (n counts the cases), and requires
// every flip to be detected, naming the entry (for a blob: the first
// entry naming it) as the first bad seq.
func flipEvery(t *testing.T, path string, entryStride, blobStride int, check func(path string, n int) (*verify.Report, error)) (entries, blobs tally) {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "flipped.db")
	if err := os.WriteFile(work, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(work, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	flip := func(off int) {
		if _, err := w.WriteAt([]byte{orig[off] ^ 0x01}, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	restore := func(off int) {
		if _, err := w.WriteAt(orig[off:off+1], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	var failures []string
	n := 0
	for _, v := range liveValues(t, path) {
		c, stride := &entries, entryStride
		if strings.HasPrefix(v.name, "blob") {
			c, stride = &blobs, blobStride
		}
		for i := 0; i < v.n; i += stride {
			if stride > 1 && i+stride >= v.n && i != v.n-1 {
				i = v.n - 1 // always the last byte too
			}
			flip(v.off + i)
			c.tried++
			n++
			rep, err := check(work, n)
			restore(v.off + i)
			switch {
			case err != nil:
				c.detected++
				c.refused++
			case rep.OK():
				failures = append(failures, fmt.Sprintf("%s byte %d (%q): not detected", v.name, i, orig[v.off+i]))
			default:
				c.detected++
				if rep.FirstBad == v.seq {
					c.rightSeq++
				} else {
					failures = append(failures, fmt.Sprintf("%s byte %d (%q): first bad seq %d, want %d: %v", v.name, i, orig[v.off+i], rep.FirstBad, v.seq, rep.Findings))
				}
			}
		}
	}
	for i, m := range failures {
		if i == 20 {
			t.Errorf("... and %d more", len(failures)-20)
			break
		}
		t.Error(m)
	}
	if entries.tried == 0 || blobs.tried == 0 {
		t.Fatal("no values found to flip")
	}
	return entries, blobs
}

// flippedReport verifies the file at path with its stored head; full adds
// the structural check and re-evaluation.
func flippedReport(t *testing.T, path string, full bool) (*verify.Report, error) {
	if full {
		return verifyFile(t, path, verify.Options{})
	}
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return verify.Replay(t.Context(), verify.LedgerSource(l), verify.Options{SkipReevaluate: true, Head: l.Head})
}

// TestTamperNamed applies one named mutation each (ledgertest helpers on a
// closed copy of the file) and checks what verify reports.
func TestTamperNamed(t *testing.T) {
	f := buildLedger(t)
	entryBytes := func(t *testing.T, path string, seq uint64) *entry.Entry {
		l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		e, _, err := l.Get(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	k := bolttest.SeqKey
	tests := []struct {
		name     string
		tamper   func(t *testing.T, path string) error
		firstBad uint64 // 0: none expected
		kind     string // a kind that must be among the findings ("" with firstBad 0: report OK)
	}{
		{"deleted-entry-@7", func(t *testing.T, p string) error { return bolttest.DeleteKey(p, bolttest.BucketEntries, k(7)) }, 7, verify.KindGap},
		{"deleted-last-entry-@19", func(t *testing.T, p string) error { return bolttest.DeleteKey(p, bolttest.BucketEntries, k(19)) }, 19, verify.KindMetaHead},
		{"inserted-entry-@20", func(t *testing.T, p string) error {
			e := entryBytes(t, p, 12)
			e.Seq, e.Time = 20, entry.Time{Time: e.Time.Add(time.Hour)}
			raw, err := e.Canonical()
			if err != nil {
				return err
			}
			return bolttest.InsertKey(p, bolttest.BucketEntries, k(20), raw)
		}, 20, verify.KindPrev},
		{"inserted-key-between-@7-@8", func(t *testing.T, p string) error {
			return bolttest.InsertKey(p, bolttest.BucketEntries, append(k(7), 0x80), []byte("{}"))
		}, 0, verify.KindUnknownKey},
		{"swapped-entries-@7-@8", func(t *testing.T, p string) error {
			return bolttest.SwapValues(p, bolttest.BucketEntries, k(7), k(8))
		}, 7, verify.KindGap},
		{"duplicated-entry-@9", func(t *testing.T, p string) error { return bolttest.DuplicateEntry(p, 9) }, 20, verify.KindGap},
		{"edited-snapshot-lock-@2", func(t *testing.T, p string) error {
			e := entryBytes(t, p, 2)
			return bolttest.EditBlob(p, *e.ContentSHA256, []byte(`{"agents":{},"lock_version":1}`))
		}, 2, verify.KindSnapshot},
		{"edited-payload-@9", func(t *testing.T, p string) error {
			e := entryBytes(t, p, 9)
			return bolttest.EditBlob(p, *e.PayloadSHA256, []byte(`{}`))
		}, 9, verify.KindPayload},
		{"edited-entry-decision-@4", func(t *testing.T, p string) error {
			e := entryBytes(t, p, 4)
			e.Decision, e.Reasons = reason.Accepted, &[]reason.Reason{}
			raw, err := e.Canonical()
			if err != nil {
				return err
			}
			return bolttest.InsertKey(p, bolttest.BucketEntries, k(4), raw)
		}, 4, verify.KindHash},
		{"edited-index-handoff-@3", func(t *testing.T, p string) error {
			return bolttest.EditIndex(p, bolttest.BucketIdxHandoff, 3, 4)
		}, 3, verify.KindIndex},
		{"edited-accepted-table-@3", func(t *testing.T, p string) error {
			return bolttest.EditIndex(p, bolttest.BucketIdxAccept, 3, 5)
		}, 3, verify.KindIndex},
		{"rewound-meta-head-by-2", func(t *testing.T, p string) error { return bolttest.RewindMetaHead(p, 2) }, 18, verify.KindMetaHead},
		{"unknown-bucket", func(t *testing.T, p string) error {
			return bolttest.InsertKey(p, "evil", []byte("k"), []byte("v"))
		}, 0, verify.KindUnknownKey},
		{"unknown-meta-key", func(t *testing.T, p string) error {
			return bolttest.InsertKey(p, bolttest.BucketMeta, []byte("evil"), []byte("v"))
		}, 0, verify.KindUnknownKey},
		// A rewritten suffix that changes a decision is caught by
		// re-evaluation (T12) even though every hash was recomputed.
		{"rewritten-suffix-decision-@4", func(t *testing.T, p string) error {
			return bolttest.RewriteSuffix(p, 4, func(e *entry.Entry) { e.Decision, e.Reasons = reason.Accepted, &[]reason.Reason{} })
		}, 4, verify.KindDecision},
		// (c) Needs an anchor: not detectable by the chain alone.
		{"truncated-tail-by-3 (needs a checkpoint)", func(t *testing.T, p string) error { return bolttest.TruncateTail(p, 3) }, 0, ""},
		{"rewritten-suffix-note-@8 (needs a checkpoint)", func(t *testing.T, p string) error {
			return bolttest.RewriteSuffix(p, 8, func(e *entry.Entry) { e.Note = "nothing happened" })
		}, 0, ""},
	}
	var c tally
	var anchorOnly []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := bolttest.CopyFile(t, f.path)
			if err := tt.tamper(t, p); err != nil {
				t.Fatalf("tamper: %v", err)
			}
			rep, err := verifyFile(t, p, verify.Options{})
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if tt.kind != "" {
				c.tried++
			}
			var kinds []string
			for _, x := range rep.Findings {
				kinds = append(kinds, x.Kind)
			}
			if tt.kind == "" {
				if !rep.OK() {
					t.Errorf("verify found %v; a chain alone cannot see this mutation, the test's premise is wrong", rep.Findings)
				}
				anchorOnly = append(anchorOnly, fmt.Sprintf("%s: %d entries, head %s", tt.name, rep.Entries, rep.Head))
				return
			}
			if rep.OK() {
				t.Fatalf("not detected")
			}
			c.detected++
			t.Logf("%s: first bad %d, %v", tt.name, rep.FirstBad, rep.Findings)
			if rep.FirstBad == tt.firstBad {
				c.rightSeq++
			} else {
				t.Errorf("FirstBad = %d, want %d\n%v", rep.FirstBad, tt.firstBad, rep.Findings)
			}
			if rep.Entries < 16 {
				t.Errorf("replay read %d entries: it stopped early", rep.Entries)
			}
			if !slices.Contains(kinds, tt.kind) {
				t.Errorf("kinds = %v, want %s among them\n%v", kinds, tt.kind, rep.Findings)
			}
		})
	}
	t.Logf("tamper (b) named mutations: %s", &c)
	for _, s := range anchorOnly {
		t.Logf("tamper (c) not detectable without a checkpoint (as documented): %s", s)
	}
}

// FuzzVerifyLedgerFile overwrites up to two bytes of a real ledger file
// anywhere (meta pages, branch pages, free pages, values) and requires that
// opening it read-only, replaying it and checking it never panics.
func FuzzVerifyLedgerFile(f *testing.F) {
	fx := buildLedger(f)
	orig, err := os.ReadFile(fx.path)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range liveValues(f, fx.path) {
		f.Add(uint32(v.off), byte(1), uint32(0), byte(0))
	}
	f.Add(uint32(0), byte(0xff), uint32(4096), byte(0xff))
	f.Add(uint32(16), byte(0x10), uint32(4096+16), byte(0x10))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, off1 uint32, x1 byte, off2 uint32, x2 byte) {
		b := slices.Clone(orig)
		b[int(off1)%len(b)] ^= x1
		b[int(off2)%len(b)] ^= x2
		p := filepath.Join(dir, "fuzz.db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := verifyFile(t, p, verify.Options{})
		if err == nil && rep == nil {
			t.Fatal("Replay returned neither a report nor an error")
		}
	})
}

// TestBlobAsReadersReachIt: a payload whose bytes are still stored but
// which readers no longer reach by its hash (its idx_blob row deleted, or
// pointing at another entry's blob) is missing to the chain-only replay,
// as it is to show and export.
func TestBlobAsReadersReachIt(t *testing.T) {
	f := buildLedger(t)
	var sum entry.Hash
	func() {
		l, err := bolt.Open(f.path, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		e, _, err := l.Get(t.Context(), 9)
		if err != nil {
			t.Fatal(err)
		}
		sum = *e.PayloadSHA256
	}()
	for _, tt := range []struct {
		name   string
		tamper func(p string) error
		kind   string
	}{
		{"deleted-idx_blob-row-@9", func(p string) error { return bolttest.DeleteKey(p, "idx_blob", sum[:]) }, verify.KindPayloadMissing},
		{"idx_blob-row-@9-to-@3", func(p string) error { return bolttest.InsertKey(p, "idx_blob", sum[:], bolttest.SeqKey(3)) }, verify.KindPayload},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := bolttest.CopyFile(t, f.path)
			if err := tt.tamper(p); err != nil {
				t.Fatal(err)
			}
			rep, err := flippedReport(t, p, false)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, x := range rep.Findings {
				found = found || x.Seq == 9 && x.Kind == tt.kind
			}
			if !found {
				t.Errorf("chain-only findings %v, want %s at 9", rep.Findings, tt.kind)
			}
		})
	}
}

// TestTamperEveryByteSmall is TestTamperEveryByte on a small ledger (a
// manifest and a lock snapshot, an accepted handoff, a rejected one that
// blocks an agent, an unblock, a redaction of the first handoff's
// payload), with no sampling under -race or -short: CI flips every byte
// of every stored entry and every stored payload and snapshot blob. Each
// flip is verified as `govledger verify` does (stored head, structural
// check) without re-evaluation, which cannot hide a finding (the decisions
// here are written by hand, not taken by policy.Decide).
func TestTamperEveryByteSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.db")
	l, err := bolt.Open(path, &bolt.Options{Now: bolttest.NewClock(start).Now, Origin: "test.example/small", IndexBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "h1", Source: "agent-a", Target: "agent-b", Workflow: "wf-1"})
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "h2", Source: "agent-b", Target: "agent-c", Workflow: "wf-1",
		Reasons: []reason.Reason{{Code: reason.HashMismatch, Severity: reason.Error, Field: "source_agent.prompt_hash", Message: "m"}},
		Blocks:  []string{"agent-b"}, NoSnapshots: true})
	bolttest.AppendUnblock(t, l, "agent-b", "reviewed")
	if _, err := l.Redact(t.Context(), 3, "pii"); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(p string, _ int) (*verify.Report, error) {
		return verifyFile(t, p, verify.Options{SkipReevaluate: true})
	}
	if rep, err := check(path, 0); err != nil || !rep.OK() || rep.Entries != 6 {
		t.Fatalf("the intact ledger: %v, %+v", err, rep)
	}
	entries, blobs := flipEvery(t, path, 1, 1, check)
	t.Logf("tamper (a) every byte of a small ledger's entries: %s", &entries)
	t.Logf("tamper (a) every byte of a small ledger's payload/snapshot blobs: %s", &blobs)
}
