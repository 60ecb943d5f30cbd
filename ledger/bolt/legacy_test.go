package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/ledgertest"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
)

// toFormat3 rewrites the ledger file at path the way format 3 stored it:
// every stored tree hash under be64(index) in a tree bucket, no tiles. It
// computes the hashes from the entries, independently of the driver.
func toFormat3(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		var all []tlog.Hash
		r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				out[i] = all[x]
			}
			return out, nil
		})
		n := int64(0)
		if err := tx.Bucket([]byte("entries")).ForEach(func(_, raw []byte) error {
			hs, err := tlog.StoredHashesForRecordHash(n, tlog.Hash(entry.LeafHash(raw)), r)
			all = append(all, hs...)
			n++
			return err
		}); err != nil {
			return err
		}
		tree, err := tx.CreateBucket([]byte("tree"))
		if err != nil {
			return err
		}
		for i, h := range all {
			if err := tree.Put(ledgertest.SeqKey(uint64(i)), append([]byte(nil), h[:]...)); err != nil {
				return err
			}
		}
		if err := tx.DeleteBucket([]byte("tiles")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), ledgertest.SeqKey(3))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fileVersion(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v uint64
	db.View(func(tx *bbolt.Tx) error {
		v = binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("version")))
		return nil
	})
	return v
}

// treeAnswers returns, encoded, the root of every tree size and the
// inclusion and consistency proofs of a sample of entries and sizes.
func treeAnswers(t *testing.T, l *ledger.Ledger) []byte {
	t.Helper()
	size, err := l.TreeSize()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for n := uint64(1); n <= size; n++ {
		h, err := l.TreeHash(n)
		if err != nil {
			t.Fatalf("TreeHash(%d) = %v", n, err)
		}
		out.Write(h[:])
		if n%7 != 0 && n != size {
			continue
		}
		for _, seq := range []uint64{1, n / 2, n / 3, n} {
			if seq == 0 {
				continue
			}
			p, err := l.ProveInclusion(seq, n)
			if err != nil {
				t.Fatalf("ProveInclusion(%d, %d) = %v", seq, n, err)
			}
			for _, h := range p {
				out.Write(h[:])
			}
			c, err := l.ProveConsistency(seq, n)
			if err != nil {
				t.Fatalf("ProveConsistency(%d, %d) = %v", seq, n, err)
			}
			for _, h := range c {
				out.Write(h[:])
			}
		}
	}
	return out.Bytes()
}

// TestUpgradeToTiles: a format 3 file (every tree hash stored) reads as
// it is when opened read-only, and a writable Open replaces its tree by
// tiles; every root and proof is byte-identical in the format 4 file, the
// format 3 file and the upgraded file, which Check passes and which then
// takes appends.
func TestUpgradeToTiles(t *testing.T) {
	l := ledgertest.MustCreate(t, &bolt.Options{MaxBatch: 64})
	for i := range 600 { // two full level-0 tiles and a partial one; a level-1 tile
		ledgertest.AppendHandoff(t, l, handoff(i))
	}
	want := treeAnswers(t, l)
	v3 := ledgertest.CopyFile(t, l.Path())
	toFormat3(t, v3)

	r, err := bolt.Open(v3, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of a format 3 file = %v", err)
	}
	if got := treeAnswers(t, r); !bytes.Equal(got, want) {
		t.Errorf("format 3 file: roots and proofs differ from the format 4 file's")
	}
	if fs, err := r.Check(context.Background()); err != nil || len(fs) != 0 {
		t.Errorf("Check of a format 3 file = %v, %v", fs, err)
	}
	r.Close()
	if v := fileVersion(t, v3); v != 3 {
		t.Fatalf("read-only Open changed the version to %d", v)
	}

	w, err := bolt.Open(v3, nil)
	if err != nil {
		t.Fatalf("writable Open of a format 3 file = %v", err)
	}
	if got := treeAnswers(t, w); !bytes.Equal(got, want) {
		t.Errorf("upgraded file: roots and proofs differ from the format 4 file's")
	}
	ledgertest.AppendHandoff(t, w, handoff(1000))
	w.Close()
	if v := fileVersion(t, v3); v != bolt.FormatVersion {
		t.Errorf("upgraded file has version %d, want %d", v, bolt.FormatVersion)
	}
	ledgertest.MustCheck(t, v3)
}

// TestUpgradeRefusesABadTree: a format 3 file whose tree bucket disagrees
// with its entries is not upgraded (the writable Open fails with
// ErrCorrupt and leaves the file's bytes as they were).
func TestUpgradeRefusesABadTree(t *testing.T) {
	l := ledgertest.MustCreate(t, nil)
	for i := range 40 {
		ledgertest.AppendHandoff(t, l, handoff(i))
	}
	for _, tt := range []struct {
		name   string
		tamper func(string) error
	}{
		{"edited", func(p string) error { return ledgertest.InsertKey(p, "tree", ledgertest.SeqKey(17), make([]byte, 32)) }},
		{"deleted", func(p string) error { return ledgertest.DeleteKey(p, "tree", ledgertest.SeqKey(3)) }},
		{"extra", func(p string) error {
			return ledgertest.InsertKey(p, "tree", ledgertest.SeqKey(5000), make([]byte, 32))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := ledgertest.CopyFile(t, l.Path())
			toFormat3(t, p)
			if err := tt.tamper(p); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if w, err := bolt.Open(p, nil); !errors.Is(err, ledger.ErrCorrupt) {
				if err == nil {
					w.Close()
				}
				t.Fatalf("writable Open = %v, want ErrCorrupt", err)
			}
			after, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("the failed upgrade changed the file")
			}
		})
	}
}
