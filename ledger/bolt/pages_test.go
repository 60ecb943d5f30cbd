package bolt_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// TestCheckPagesRefusesCycles: a branch page made to point at itself would
// send bbolt's cursor into endless recursion, a fatal stack overflow; with
// CheckPages (and in Check) the file is refused as corrupt instead.
func TestCheckPagesRefusesCycles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: "test.example/pages"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ { // enough entries for branch pages
		if _, err := l.Append(context.Background(), benchHandoff(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	intact, err := readOutcomes(path, false, []uint64{1, 2, 100, 200, 399, 400, 401}, 400, "domain-05-product", "wf-1", entry.Sum256(bolttest.LockBytes))
	if err != nil {
		t.Fatal(err)
	}
	ok, err := bolt.Open(path, &bolt.Options{ReadOnly: true, CheckPages: true})
	if err != nil {
		t.Fatalf("intact file refused: %v", err)
	}
	if f, err := ok.Check(context.Background()); err != nil || len(f) != 0 {
		t.Fatalf("intact file: Check = %v, %v", f, err)
	}
	ok.Close()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.LittleEndian.Uint32(b[16+8:])) // meta page: header, magic, version, page size
	// Loop every branch page onto itself: some are stale copy-on-write
	// copies outside the live tree, at least one is live.
	looped := false
	for p := 2; (p+1)*ps <= len(b); p++ {
		pg := b[p*ps:]
		if binary.LittleEndian.Uint64(pg) == uint64(p) && binary.LittleEndian.Uint16(pg[8:]) == 0x01 {
			binary.LittleEndian.PutUint64(pg[16+8:], uint64(p)) // first child := itself
			looped = true
		}
	}
	if !looped {
		t.Fatal("no branch page found to corrupt")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Open(path, &bolt.Options{ReadOnly: true, CheckPages: true}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Open(CheckPages) of a cyclic file = %v, want ErrCorrupt", err)
	}
	// Without the walk, the reads show, log, trace, prove and blocks make
	// meet the cycles on their paths: ErrCorrupt, or the intact answer
	// where a read's path has no looped page.
	seqs := []uint64{1, 2, 100, 200, 399, 400, 401}
	blob := entry.Sum256(bolttest.LockBytes)
	guarded, err := readOutcomes(path, false, seqs, 400, "domain-05-product", "wf-1", blob)
	if err == nil {
		if !slices.Contains(guarded, "error corrupt") {
			t.Errorf("no read met a looped page: %q", guarded)
		}
		checkOutcomes(t, "looped branch pages", guarded, intact, nil)
	} else if !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Open of a cyclic file = %v, want ErrCorrupt", err)
	}
	_ = bolttest.SeqKey // keep the helper package linked for the shared fixtures
}
