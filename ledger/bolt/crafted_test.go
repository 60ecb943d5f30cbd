package bolt_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	bbolt "go.etcd.io/bbolt"
)

// craftedLedger writes a closed ledger of n ~1 KiB handoffs: enough that
// the entries and blobs buckets have branch pages.
func craftedLedger(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: "test.example/crafted"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append(context.Background(), benchHandoff(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCraftedFilesRefused: a crafted freelist (a count that would make
// bbolt allocate 2^40 page ids, ids it must never hand out) or a page loop
// on the path of an append is refused by every writable Open, and by the
// Open that walks every page (verify), with an error wrapping
// ledger.ErrCorrupt that names the page, before bbolt reads it: without
// the pre-open check the first craft kills the test binary (Go's fatal
// out-of-memory error), and a writable Open of a looped file hands the
// loop to bbolt's next write (a fatal stack overflow). A read-only Open
// for point reads refuses the freelist crafts that need no walk, and its
// reads of a looped file give ErrCorrupt or the intact answer.
func TestCraftedFilesRefused(t *testing.T) {
	orig := craftedLedger(t, 120)
	for _, c := range bolttest.Crafts {
		t.Run(c.Name, func(t *testing.T) {
			p := bolttest.CopyFile(t, orig)
			if err := c.Apply(p); err != nil {
				t.Fatalf("craft: %v", err)
			}
			for _, o := range []struct {
				name string
				opts bolt.Options
			}{
				{"writable", bolt.Options{NoCreate: true}},
				{"writable-checkpages", bolt.Options{NoCreate: true, CheckPages: true}},
				{"readonly-checkpages", bolt.Options{ReadOnly: true, CheckPages: true}},
			} {
				l, err := bolt.Open(p, &o.opts)
				if err == nil {
					// The write bbolt would have died in.
					_, aerr := l.Append(context.Background(), benchHandoff(1000))
					l.Close()
					t.Errorf("%s Open succeeded (then Append = %v), want ErrCorrupt", o.name, aerr)
					continue
				}
				if !errors.Is(err, ledger.ErrCorrupt) {
					t.Errorf("%s Open = %v, want ErrCorrupt", o.name, err)
				}
				t.Logf("%s: %v", o.name, err)
			}
			l, err := bolt.Open(p, &bolt.Options{ReadOnly: true})
			if err != nil {
				if !errors.Is(err, ledger.ErrCorrupt) {
					t.Errorf("read-only Open = %v, want ErrCorrupt", err)
				}
				return
			}
			defer l.Close()
			for _, seq := range []uint64{1, 60, 120} {
				if _, _, err := l.Get(t.Context(), seq); err != nil && !errors.Is(err, ledger.ErrCorrupt) {
					t.Errorf("read-only Get(%d) = %v, want nil or ErrCorrupt", seq, err)
				}
			}
		})
	}
}

// FuzzWritableOpen applies one of bolttest.Crafts (or none) and XOR
// patches (4-byte offset, 1-byte mask) to a small ledger file, then opens
// it for writing as record and serve do and appends one entry: the Open
// and the Append return an error or succeed, and never kill the process
// (a Go fatal error fails the fuzz run with the crashing input).
func FuzzWritableOpen(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "orig.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: "test.example/fuzzwrite"})
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		if _, err := l.Append(context.Background(), benchHandoff(i)); err != nil {
			f.Fatal(err)
		}
	}
	l.Close()
	orig, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	for i := range bolttest.Crafts {
		f.Add(byte(i), []byte{})
	}
	f.Add(byte(255), []byte{0x18, 0, 0, 0, 0x40})
	f.Fuzz(func(t *testing.T, craft byte, patches []byte) {
		p := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(p, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		if int(craft) < len(bolttest.Crafts) {
			if err := bolttest.Crafts[craft].Apply(p); err != nil {
				t.Skip("this craft does not apply to the fuzzed file: nothing to check, not a CI failure: ", err)
			}
		}
		if len(patches) >= 5 {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for ; len(patches) >= 5; patches = patches[5:] {
				b[binary.LittleEndian.Uint32(patches)%uint32(len(b))] ^= patches[4]
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		l, err := bolt.Open(p, &bolt.Options{NoCreate: true, Timeout: time.Second})
		if err != nil {
			if strings.Contains(err.Error(), "panic") && !errors.Is(err, ledger.ErrCorrupt) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		defer l.Close()
		if _, err := l.Append(context.Background(), benchHandoff(1000)); err != nil {
			t.Logf("Append: %v", err)
		}
	})
}

// TestOpenRefusesMissingBucket: a file without one of the format's
// buckets is refused by every Open (checkMeta), so verify reports it as
// a corrupt file (exit 1) before any replay; Check's own "missing_bucket"
// finding is for a file opened before the bucket went.
func TestOpenRefusesMissingBucket(t *testing.T) {
	orig := craftedLedger(t, 3)
	for _, name := range []string{"entries", "blobs", "idx_agent", "tiles"} {
		p := bolttest.CopyFile(t, orig)
		db, err := bbolt.Open(p, 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte(name)) }); err != nil {
			t.Fatal(err)
		}
		db.Close()
		for _, o := range []bolt.Options{{ReadOnly: true}, {ReadOnly: true, CheckPages: true}, {NoCreate: true}} {
			_, err := bolt.Open(p, &o)
			if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Errorf("bucket %s deleted: Open(%s) = %v, want ErrCorrupt naming it", name, o.String(), err)
			}
		}
	}
}
