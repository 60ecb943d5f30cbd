package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("x"), 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		opts *bolt.Options
		want []error
	}{
		{"missing NoCreate", missing, &bolt.Options{NoCreate: true}, []error{ledger.ErrNotExist, fs.ErrNotExist}},
		{"missing ReadOnly", missing, &bolt.Options{ReadOnly: true}, []error{ledger.ErrNotExist, fs.ErrNotExist}},
		{"empty NoCreate", empty, &bolt.Options{NoCreate: true}, []error{ledger.ErrEmptyFile, ledger.ErrNotExist}},
		{"empty ReadOnly", empty, &bolt.Options{ReadOnly: true}, []error{ledger.ErrEmptyFile, ledger.ErrNotExist}},
		{"empty write", empty, nil, []error{ledger.ErrEmptyFile}},
		{"junk", junk, nil, []error{ledger.ErrCorrupt}},
		{"junk ReadOnly", junk, &bolt.Options{ReadOnly: true}, []error{ledger.ErrCorrupt}},
		{"directory", dir, nil, []error{ledger.ErrNotLedger}},
		{"bad origin", filepath.Join(dir, "o.db"), &bolt.Options{Origin: "has space"}, []error{ledger.ErrBadOptions}},
		{"bad batch", filepath.Join(dir, "o.db"), &bolt.Options{MaxBatch: -1}, []error{ledger.ErrBadOptions}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := bolt.Open(tt.path, tt.opts)
			if err == nil {
				l.Close()
				t.Fatalf("Open(%s, %v) succeeded", tt.path, tt.opts)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Open(%s, %v) = %v, want %v", tt.path, tt.opts, err, w)
				}
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Open created %s", missing)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("a refused Open changed the empty file: %v, %v", fi, err)
	}
}

func TestCreateAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	origin := l.Origin()
	if !strings.HasPrefix(origin, ledger.DefaultOriginPrefix) || len(origin) != len(ledger.DefaultOriginPrefix)+16 {
		t.Errorf("Origin() = %q", origin)
	}
	bolttest.AppendHandoff(t, l, handoff(1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if _, err := l.Append(context.Background(), handoff(2).Build()); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if _, _, err := l.Head(t.Context()); !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Head after Close = %v, want ErrClosed", err)
	}
	matches, _ := filepath.Glob(path + ".tmp-*")
	if len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
	l, err = bolt.Open(path, &bolt.Options{NoCreate: true, Origin: "other.example/x"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Origin() != origin {
		t.Errorf("reopened Origin() = %q, want %q (an existing ledger keeps its own)", l.Origin(), origin)
	}
	if seq, _, _ := l.Head(t.Context()); seq != 3 {
		t.Errorf("Head() = %d, want 3", seq)
	}
	l.Close()
	bolttest.MustCheck(t, path)
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, ro := range []bool{false, true} {
		start := time.Now()
		l2, err := bolt.Open(path, &bolt.Options{ReadOnly: ro, Timeout: 100 * time.Millisecond})
		if err == nil {
			l2.Close()
			t.Fatalf("second Open(ReadOnly=%t) succeeded", ro)
		}
		if !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), "is in use by another process") {
			t.Errorf("second Open(ReadOnly=%t) = %v, want ErrLocked", ro, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("second Open waited %s", d)
		}
	}
}

func TestReadersShareLock(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	bolttest.AppendHandoff(t, l, handoff(1))
	path := l.Path()
	l.Close()
	r1, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("second read-only Open = %v", err)
	}
	r2.Close()
	if _, err := r1.Append(context.Background(), handoff(2).Build()); !errors.Is(err, ledger.ErrReadOnly) {
		t.Errorf("Append on read-only = %v, want ErrReadOnly", err)
	}
}

func TestVersionMismatch(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	path := bolttest.CopyFile(t, l.Path())
	if err := bolttest.InsertKey(path, bolttest.BucketMeta, []byte("version"), bolttest.SeqKey(bolt.FormatVersion+1)); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := bolt.Open(path, &bolt.Options{ReadOnly: ro})
		if !errors.Is(err, ledger.ErrVersionMismatch) {
			t.Errorf("Open(ReadOnly=%t) of a version-%d file = %v, want ErrVersionMismatch", ro, bolt.FormatVersion+1, err)
		}
	}
}

// TestVersion1 reads a format 1 file (no meta "indexed"; indexes always
// complete; every tree hash stored) as it is, and a writable Open
// upgrades it to the current format.
func TestVersion1(t *testing.T) {
	l := bolttest.MustCreate(t, &bolt.Options{IndexBatch: 1})
	for i := range 6 {
		bolttest.AppendHandoff(t, l, handoff(i))
	}
	v1 := bolttest.CopyFile(t, l.Path())
	toFormat3(t, v1)
	if err := bolttest.InsertKey(v1, bolttest.BucketMeta, []byte("version"), bolttest.SeqKey(1)); err != nil {
		t.Fatal(err)
	}
	if err := bolttest.DeleteKey(v1, bolttest.BucketMeta, []byte("indexed")); err != nil {
		t.Fatal(err)
	}
	r, err := bolt.Open(v1, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of a version-1 file = %v", err)
	}
	if fs, err := r.Check(context.Background()); err != nil || len(fs) != 0 {
		t.Errorf("Check of a version-1 file = %v, %v; want no findings", fs, err)
	}
	if got, err := r.Find(t.Context(), ledger.Query{Agent: "domain-02-analysis"}); err != nil || len(got) != 6 {
		t.Errorf("Find on a version-1 file = %v, %v; want 6 seqs", got, err)
	}
	r.Close()
	w, err := bolt.Open(v1, &bolt.Options{IndexBatch: 4})
	if err != nil {
		t.Fatalf("writable Open of a version-1 file = %v", err)
	}
	bolttest.AppendHandoff(t, w, handoff(7))
	w.Close()
	bolttest.MustCheck(t, v1)
	if err := bolttest.DeleteKey(v1, bolttest.BucketMeta, []byte("indexed")); err != nil {
		t.Fatal(err)
	}
	r, err = bolt.Open(v1, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Find(t.Context(), ledger.Query{Agent: "domain-02-analysis"}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("upgraded file without meta indexed: Find = %v, want ErrCorrupt", err)
	}
}

// TestReadOnlyNoChange proves the read paths do not write: the file's bytes
// are the same before and after.
func TestReadOnlyNoChange(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	for i := range 20 {
		bolttest.AppendHandoff(t, l, handoff(i))
	}
	path := bolttest.CopyFile(t, l.Path())
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Head(t.Context())
	r.Scan(context.Background(), 0, func(uint64, []byte) error { return nil })
	if fs, err := r.Check(context.Background()); err != nil || len(fs) != 0 {
		t.Errorf("Check() = %v, %v", fs, err)
	}
	r.Get(t.Context(), 5)
	r.Find(t.Context(), ledger.Query{Agent: "domain-05-product"})
	r.ProveInclusion(t.Context(), 3, 10)
	r.ProveConsistency(t.Context(), 3, 10)
	r.Blob(t.Context(), entry.Sum256(bolttest.LockBytes))
	r.WriteTo(&bytes.Buffer{})
	if _, err := r.Redact(context.Background(), 3, "x"); !errors.Is(err, ledger.ErrReadOnly) {
		t.Errorf("Redact on read-only = %v", err)
	}
	r.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("read-only use changed the file")
	}
}

// TestWriteTo: the backup is a ledger with the same chain.
func TestWriteTo(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	for i := range 5 {
		bolttest.AppendHandoff(t, l, handoff(i))
	}
	var buf bytes.Buffer
	if _, err := l.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	os.WriteFile(path, buf.Bytes(), 0o600)
	bolttest.MustCheck(t, path)
	b, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s1, h1, _ := l.Head(t.Context())
	s2, h2, _ := b.Head(t.Context())
	if s1 != s2 || h1 != h2 || b.Origin() != l.Origin() {
		t.Errorf("backup head %d %s %s, want %d %s %s", s2, h2, b.Origin(), s1, h1, l.Origin())
	}
}
