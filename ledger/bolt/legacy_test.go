package bolt_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// storedHashes computes every stored tree hash of the entries in tx with
// tlog, independently of the driver.
func storedHashes(tx *bbolt.Tx) ([]tlog.Hash, error) {
	var all []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = all[x]
		}
		return out, nil
	})
	n := int64(0)
	err := tx.Bucket([]byte("entries")).ForEach(func(_, raw []byte) error {
		hs, err := tlog.StoredHashesForRecordHash(n, tlog.Hash(entry.LeafHash(raw)), r)
		all = append(all, hs...)
		n++
		return err
	})
	return all, err
}

// refill replaces the bucket name of tx by a new one that put fills.
func refill(tx *bbolt.Tx, name string, put func(b *bbolt.Bucket) error) error {
	if err := tx.DeleteBucket([]byte(name)); err != nil {
		return err
	}
	b, err := tx.CreateBucket([]byte(name))
	if err != nil {
		return err
	}
	return put(b)
}

// timeKeyV5 is the time prefix of a format 1-5 idx_time key: be64(unix
// seconds with the sign bit flipped) || be32(nanoseconds).
func timeKeyV5(t time.Time) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint64(b, uint64(t.Unix())^(1<<63))
	binary.BigEndian.PutUint32(b[8:], uint32(t.Nanosecond()))
	return b
}

// toFormat6 rewrites the format 7 ledger file at path the way format 6
// stored it: the partial level-0 tile (the leaf hashes of the entries
// after the last full tile) stored, and idx_accepted, idx_idempotency and
// idx_blob complete through the head, not only through meta "indexed".
func toFormat6(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if v := binary.BigEndian.Uint64(meta.Get([]byte("version"))); v != 7 {
			return fmt.Errorf("toFormat6 of a format %d file", v)
		}
		ents, blobs := tx.Bucket([]byte("entries")), tx.Bucket([]byte("blobs"))
		head := binary.BigEndian.Uint64(meta.Get([]byte("head"))[:8])
		accepted, idem, idxBlob := tx.Bucket([]byte("idx_accepted")), tx.Bucket([]byte("idx_idempotency")), tx.Bucket([]byte("idx_blob"))
		firstAccepted, firstIdem := map[string]bool{}, map[string]bool{}
		var leaves []byte
		for seq := uint64(1); seq <= head; seq++ {
			raw := ents.Get(bolttest.SeqKey(seq))
			e, err := entry.Decode(raw)
			if err != nil {
				return err
			}
			if seq > head&^255 {
				h := entry.LeafHash(raw)
				leaves = append(leaves, h[:]...)
			}
			if sum := e.Blob(); sum != nil && blobs.Get(bolttest.SeqKey(seq)) != nil {
				if err := idxBlob.Put(sum[:], bolttest.SeqKey(seq)); err != nil {
					return err
				}
			}
			if e.Kind != entry.KindHandoff || e.PayloadSHA256 == nil {
				continue
			}
			if id := e.HandoffID.S; e.HandoffID.Valid && e.Decision == "accepted" && !firstAccepted[id] {
				firstAccepted[id] = true
				sum := entry.Sum256([]byte(id))
				if err := accepted.Put(append(sum[:8:8], bolttest.SeqKey(seq)...), []byte{}); err != nil {
					return err
				}
			}
			if k := e.IdempotencyKey; k != "" && !firstIdem[k] {
				firstIdem[k] = true
				sum := entry.Sum256([]byte(k))
				if err := idem.Put(append(sum[:8:8], bolttest.SeqKey(seq)...), []byte{}); err != nil {
					return err
				}
			}
		}
		if len(leaves) > 0 {
			if err := tx.Bucket([]byte("tiles")).Put(append([]byte{0}, bolttest.SeqKey(head>>8)...), leaves); err != nil {
				return err
			}
		}
		return meta.Put([]byte("version"), bolttest.SeqKey(6))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toFormat5 rewrites the format 6 ledger file at path the way format 5
// stored it: one secondary index key prefix || be64(seq) per listing,
// with an empty value, a time index (idx_time: the entry's time, then
// its seq), and idx_accepted and idx_idempotency keyed by sha256(string)
// -> be64(seq) || the entry's payload SHA-256.
func toFormat5(t *testing.T, path string) {
	t.Helper()
	toFormat6(t, path)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("version"))); v != 6 {
			return fmt.Errorf("toFormat5 of a format %d file", v)
		}
		for _, name := range []string{"idx_handoff", "idx_agent", "idx_workflow", "idx_decision"} {
			var keys [][]byte
			if err := tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
				seq := binary.BigEndian.Uint64(k[len(k)-8:])
				for {
					keys = append(keys, append(append([]byte(nil), k[:len(k)-8]...), bolttest.SeqKey(seq)...))
					if len(v) == 0 {
						return nil
					}
					d, n := binary.Uvarint(v)
					if n <= 0 || d == 0 {
						return fmt.Errorf("%s record %x: bad value", name, k)
					}
					seq, v = seq+d, v[n:]
				}
			}); err != nil {
				return err
			}
			if err := refill(tx, name, func(b *bbolt.Bucket) error {
				for _, k := range keys {
					if err := b.Put(k, []byte{}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		ents := tx.Bucket([]byte("entries"))
		times, err := tx.CreateBucket([]byte("idx_time"))
		if err != nil {
			return err
		}
		if err := ents.ForEach(func(k, raw []byte) error {
			e, err := entry.Decode(raw)
			if err != nil {
				return err
			}
			return times.Put(append(timeKeyV5(e.Time.Time), k...), []byte{})
		}); err != nil {
			return err
		}
		for _, name := range []string{"idx_accepted", "idx_idempotency"} {
			vals := map[string][]byte{}
			if err := tx.Bucket([]byte(name)).ForEach(func(k, _ []byte) error {
				e, err := entry.Decode(ents.Get(k[8:]))
				if err != nil {
					return err
				}
				s := e.HandoffID.S
				if name == "idx_idempotency" {
					s = e.IdempotencyKey
				}
				sum := entry.Sum256([]byte(s))
				vals[string(sum[:])] = append(append([]byte(nil), k[8:]...), e.PayloadSHA256[:]...)
				return nil
			}); err != nil {
				return err
			}
			if err := refill(tx, name, func(b *bbolt.Bucket) error {
				for k, v := range vals {
					if err := b.Put([]byte(k), v); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), bolttest.SeqKey(5))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toFormat4 rewrites the format 6 ledger file at path the way format 4
// stored it: as format 5 (toFormat5), with blobs keyed by their SHA-256
// (no idx_blob) and every tile, full level-0 tiles included, computed
// from the entries.
func toFormat4(t *testing.T, path string) {
	t.Helper()
	toFormat5(t, path)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("version"))); v != 5 {
			return fmt.Errorf("toFormat4 of a format %d file", v)
		}
		blobs := map[string][]byte{}
		if err := tx.Bucket([]byte("idx_blob")).ForEach(func(sum, key []byte) error {
			blobs[string(sum)] = append([]byte(nil), tx.Bucket([]byte("blobs")).Get(key)...)
			return nil
		}); err != nil {
			return err
		}
		for _, name := range []string{"blobs", "idx_blob", "tiles"} {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		b, err := tx.CreateBucket([]byte("blobs"))
		if err != nil {
			return err
		}
		for sum, data := range blobs {
			if err := b.Put([]byte(sum), data); err != nil {
				return err
			}
		}
		all, err := storedHashes(tx)
		if err != nil {
			return err
		}
		tiles, err := tx.CreateBucket([]byte("tiles"))
		if err != nil {
			return err
		}
		for x, h := range all {
			level, n := tlog.SplitStoredHashIndex(int64(x))
			if level%8 != 0 {
				continue
			}
			k := append([]byte{byte(level / 8)}, bolttest.SeqKey(uint64(n>>8))...)
			if err := tiles.Put(k, append(append([]byte(nil), tiles.Get(k)...), h[:]...)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), bolttest.SeqKey(4))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toFormat3 rewrites the format 5 ledger file at path the way format 3
// stored it: as format 4 (toFormat4), with every stored tree hash under
// be64(index) in a tree bucket instead of tiles.
func toFormat3(t *testing.T, path string) {
	t.Helper()
	toFormat4(t, path)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		all, err := storedHashes(tx)
		if err != nil {
			return err
		}
		tree, err := tx.CreateBucket([]byte("tree"))
		if err != nil {
			return err
		}
		for i, h := range all {
			if err := tree.Put(bolttest.SeqKey(uint64(i)), append([]byte(nil), h[:]...)); err != nil {
				return err
			}
		}
		if err := tx.DeleteBucket([]byte("tiles")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), bolttest.SeqKey(3))
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
	size, err := l.TreeSize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for n := uint64(1); n <= size; n++ {
		h, err := l.TreeHash(t.Context(), n)
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
			p, err := l.ProveInclusion(t.Context(), seq, n)
			if err != nil {
				t.Fatalf("ProveInclusion(%d, %d) = %v", seq, n, err)
			}
			for _, h := range p {
				out.Write(h[:])
			}
			c, err := l.ProveConsistency(t.Context(), seq, n)
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
	l := bolttest.MustCreate(t, &bolt.Options{MaxBatch: 64})
	for i := range 600 { // two full level-0 tiles and a partial one; a level-1 tile
		bolttest.AppendHandoff(t, l, handoff(i))
	}
	want := treeAnswers(t, l)
	v3 := bolttest.CopyFile(t, l.Path())
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
	bolttest.AppendHandoff(t, w, handoff(1000))
	w.Close()
	if v := fileVersion(t, v3); v != bolt.FormatVersion {
		t.Errorf("upgraded file has version %d, want %d", v, bolt.FormatVersion)
	}
	bolttest.MustCheck(t, v3)
}

// TestUpgradeRefusesABadTree: a format 3 file whose tree bucket disagrees
// with its entries is not upgraded (the writable Open fails with
// ErrCorrupt and leaves the file's bytes as they were).
func TestUpgradeRefusesABadTree(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	for i := range 40 {
		bolttest.AppendHandoff(t, l, handoff(i))
	}
	for _, tt := range format3TreeTampers {
		t.Run(tt.name, func(t *testing.T) {
			p := bolttest.CopyFile(t, l.Path())
			toFormat3(t, p)
			if err := tt.tamper(p); err != nil {
				t.Fatal(err)
			}
			wantUpgradeRefused(t, p)
		})
	}
}

// format4Fixture copies testdata/format4.db.gz, unpacked, into
// t.TempDir(). The file was written by the format 4 driver (before blobs
// were keyed by seq): 300 handoffs over 5 agents and 7 workflows with
// IndexBatch 16, every tenth sharing one payload, a block and its unblock,
// the redaction of entry 102's payload "secret payload" and the same
// payload stored again by a later handoff; then compacted.
func format4Fixture(t *testing.T) string {
	t.Helper()
	return unpackFixture(t, "testdata/format4.db.gz")
}

// ledgerAnswers returns, encoded, what a reader sees of the whole ledger:
// the head, every entry's bytes and the blob it names (or the error kind
// in its place), and the Find answers by agent and workflow.
func ledgerAnswers(t *testing.T, l *ledger.Ledger) []byte {
	t.Helper()
	var out bytes.Buffer
	seq, hash, err := l.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "head %d %s\n", seq, hash)
	for s := uint64(1); s <= seq; s++ {
		e, raw, err := l.Get(t.Context(), s)
		if err != nil {
			t.Fatalf("Get(%d) = %v", s, err)
		}
		out.Write(raw)
		for _, sum := range []*entry.Hash{e.PayloadSHA256, e.ContentSHA256} {
			if sum == nil {
				continue
			}
			b, err := l.Blob(t.Context(), *sum)
			switch {
			case err == nil:
				fmt.Fprintf(&out, "\nblob %q\n", b)
			case errors.Is(err, ledger.ErrRedacted):
				fmt.Fprintf(&out, "\nblob redacted\n")
			default:
				t.Fatalf("Blob(%s) of entry %d = %v", sum, s, err)
			}
		}
	}
	for _, q := range []ledger.Query{{Agent: "agent-0"}, {Agent: "agent-3"}, {WorkflowID: "wf-2"}, {HandoffID: "h-0100"}} {
		got, err := l.Find(t.Context(), q)
		if err != nil {
			t.Fatalf("Find(%+v) = %v", q, err)
		}
		fmt.Fprintf(&out, "find %+v: %v\n", q, got)
	}
	return out.Bytes()
}

// upgradeCompared opens the file at path, of format v, read-only — Check
// finds nothing, and the file's bytes do not change — then writable with
// o, which upgrades it, and compares the roots and proofs, the entries,
// payloads and Find answers, and the table answers with the read-only
// ones. It returns the upgraded ledger and the read-only answers.
func upgradeCompared(t *testing.T, path string, v uint64, o *bolt.Options) (w *ledger.Ledger, wantLedger, wantIdx []byte) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of a format %d file = %v", v, err)
	}
	wantTree, wantLedger, wantIdx := treeAnswers(t, r), ledgerAnswers(t, r), indexAnswers(t, r)
	if fs, err := r.Check(context.Background()); err != nil || len(fs) != 0 {
		t.Errorf("Check of a format %d file = %v, %v", v, fs, err)
	}
	r.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) || fileVersion(t, path) != v {
		t.Fatalf("read-only use changed the format %d file", v)
	}
	if w, err = bolt.Open(path, o); err != nil {
		t.Fatalf("writable Open of a format %d file = %v", v, err)
	}
	t.Cleanup(func() { w.Close() })
	if got := treeAnswers(t, w); !bytes.Equal(got, wantTree) {
		t.Errorf("upgraded file: roots and proofs differ from the format %d file's", v)
	}
	if got := ledgerAnswers(t, w); !bytes.Equal(got, wantLedger) {
		t.Errorf("upgraded file: entries, payloads or Find answers differ from the format %d file's", v)
	}
	if got := indexAnswers(t, w); !bytes.Equal(got, wantIdx) {
		t.Errorf("upgraded file: table answers differ from the format %d file's:\n%s\nwant\n%s", v, got, wantIdx)
	}
	return w, wantLedger, wantIdx
}

// closeUpgraded closes w, an upgraded ledger, checks that its file has the
// current format and passes Check, and returns its path and the file
// opened read-only with bbolt, to look at the layout.
func closeUpgraded(t *testing.T, w *ledger.Ledger) (string, *bbolt.DB) {
	t.Helper()
	path := w.Path()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if v := fileVersion(t, path); v != bolt.FormatVersion {
		t.Errorf("upgraded file has version %d, want %d", v, bolt.FormatVersion)
	}
	bolttest.MustCheck(t, path)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return path, db
}

// TestUpgradeFormat4: a format 4 file written by the format 4 driver reads
// as it is when opened read-only (Check finds nothing; the file's bytes do
// not change), and a writable Open upgrades it to format 5: the head,
// every root and proof, every entry and payload and the Find answers are
// byte-identical before and after, the blobs are keyed by seq, Check
// passes, appends work, and a redaction still erases the payload's bytes
// from the file.
func TestUpgradeFormat4(t *testing.T) {
	// IndexBatch 1: idx_blob reaches the head after each append below.
	w, wantLedger, _ := upgradeCompared(t, format4Fixture(t), 4, &bolt.Options{IndexBatch: 1})
	if !bytes.Contains(wantLedger, []byte(`blob "secret payload"`)) || !bytes.Contains(wantLedger, []byte("blob redacted")) {
		t.Fatalf("the fixture lacks the redacted and re-stored payload: the test proves less than it says")
	}
	a := bolttest.AppendHandoff(t, w, bolttest.Handoff{ID: "after", Source: "agent-1", Target: "agent-2", Payload: []byte("after the upgrade")})
	again, err := w.Find(t.Context(), ledger.Query{HandoffID: "h-0250"}) // "secret payload" stored again
	if err != nil || len(again) != 1 {
		t.Fatalf("Find(h-0250) = %v, %v", again, err)
	}
	if _, err := w.Redact(context.Background(), again[0], "erase again"); err != nil {
		t.Fatal(err)
	}
	if b, err := w.Blob(t.Context(), *a.Entry.PayloadSHA256); err != nil || string(b) != "after the upgrade" {
		t.Errorf("Blob of an entry appended after the upgrade = %q, %v", b, err)
	}
	path, db := closeUpgraded(t, w)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("secret payload")) || !bytes.Contains(raw, []byte("after the upgrade")) {
		t.Errorf("after the redaction: file holds the erased payload %t (want false), the last one %t (want true)",
			bytes.Contains(raw, []byte("secret payload")), bytes.Contains(raw, []byte("after the upgrade")))
	}
	db.View(func(tx *bbolt.Tx) error {
		n := 0
		tx.Bucket([]byte("blobs")).ForEach(func(k, _ []byte) error {
			if n++; len(k) != 8 {
				t.Errorf("blobs key %x is not a seq", k)
			}
			return nil
		})
		if m := tx.Bucket([]byte("idx_blob")).Stats().KeyN; n == 0 || m != n {
			t.Errorf("%d blobs, %d idx_blob keys", n, m)
		}
		return nil
	})
}

// TestUpgradeRefusesFormat4: a format 4 file whose tiles or blobs disagree
// with its entries is not upgraded (the writable Open fails with
// ErrCorrupt and leaves the file's bytes as they were).
func TestUpgradeRefusesFormat4(t *testing.T) {
	secret := entry.Sum256([]byte("secret payload"))
	for _, tt := range []struct {
		name   string
		tamper func(string) error
	}{
		{"edited-tile", func(p string) error {
			return bolttest.FlipByte(p, "tiles", append([]byte{0}, bolttest.SeqKey(0)...), 40)
		}},
		{"deleted-tile", func(p string) error {
			return bolttest.DeleteKey(p, "tiles", append([]byte{0}, bolttest.SeqKey(0)...))
		}},
		{"extra-tile", func(p string) error {
			return bolttest.InsertKey(p, "tiles", append([]byte{0}, bolttest.SeqKey(7)...), make([]byte, 32))
		}},
		{"edited-blob", func(p string) error { return bolttest.EditBlob(p, secret, []byte("forged")) }},
		{"orphan-blob", func(p string) error {
			s := entry.Sum256([]byte("orphan"))
			return bolttest.InsertKey(p, "blobs", s[:], []byte("orphan"))
		}},
		{"blob-under-a-seq-key", func(p string) error { return bolttest.InsertKey(p, "blobs", bolttest.SeqKey(3), []byte("x")) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := format4Fixture(t)
			if err := tt.tamper(p); err != nil {
				t.Fatal(err)
			}
			wantUpgradeRefused(t, p)
		})
	}
}

// wantUpgradeRefused: a writable Open of the old-format file p fails with
// ErrCorrupt and leaves its bytes as they were.
func wantUpgradeRefused(t *testing.T, p string) {
	t.Helper()
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
}

// format5Fixture copies testdata/format5.db.gz, unpacked, into
// t.TempDir(). The file was written by the format 5 driver (one index key
// per listing, idx_accepted values with the payload): 300 handoffs over 5
// agents and 7 workflows with IndexBatch 16 and MaxBatch 8 (entries 303
// and after not yet indexed), every tenth sharing one payload, every
// thirteenth rejected, every seventeenth reusing an earlier handoff id,
// every sixth with an idempotency key, a block and its unblock, the
// redaction of handoff 101's payload "secret payload" and the same
// payload stored again by handoff 250; then compacted.
func format5Fixture(t *testing.T) string {
	t.Helper()
	return unpackFixture(t, "testdata/format5.db.gz")
}

// unpackFixture copies the gzipped file name, unpacked, into t.TempDir().
func unpackFixture(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(name[:len(name)-3]))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// indexAnswers returns, encoded, the answers of the secondary indexes and
// tables: Find by agent, workflow, handoff id, decision and time (all and
// Limit 5 oldest and newest), and Accepted and Idempotent of every id and
// key of the fixture.
func indexAnswers(t *testing.T, l *ledger.Ledger) []byte {
	t.Helper()
	var out bytes.Buffer
	_, _, err := l.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := l.Get(t.Context(), 150)
	if err != nil {
		t.Fatal(err)
	}
	qs := []ledger.Query{{Agent: "agent-0"}, {Agent: "agent-3"}, {Agent: "agent-9"}, {WorkflowID: "wf-2"}, {WorkflowID: "wf-6"},
		{HandoffID: "h-0100"}, {HandoffID: "h-0000"}, {Decision: "rejected"}, {Decision: "accepted"}, {Since: e.Time.Time},
		{Until: e.Time.Time}, {Agent: "agent-1", After: 100, Before: 290}}
	for _, q := range qs {
		for _, lim := range []struct {
			n      int
			newest bool
		}{{0, false}, {5, false}, {5, true}} {
			q.Limit, q.Newest = lim.n, lim.newest
			got, err := l.Find(t.Context(), q)
			if err != nil {
				t.Fatalf("Find(%+v) = %v", q, err)
			}
			fmt.Fprintf(&out, "find %+v: %v\n", q, got)
		}
	}
	err = l.View(t.Context(), func(st ledger.State) error {
		for i := range 310 {
			id, key := fmt.Sprintf("h-%04d", i), fmt.Sprintf("idem-%d", i)
			seq, p, ok := st.Accepted(id)
			b, ok2 := st.Idempotent(key)
			fmt.Fprintf(&out, "accepted %s %v %d %s idempotent %s %v %+v\n", id, ok, seq, p, key, ok2, b)
		}
		for i := range 45 { // the handoffs the format 6 fixture adds
			id, key := fmt.Sprintf("tail-%02d", i), fmt.Sprintf("tail-idem-%d", i)
			seq, p, ok := st.Accepted(id)
			b, ok2 := st.Idempotent(key)
			fmt.Fprintf(&out, "accepted %s %v %d %s idempotent %s %v %+v\n", id, ok, seq, p, key, ok2, b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View = %v", err)
	}
	return out.Bytes()
}

// TestUpgradeFormat5: a format 5 file written by the format 5 driver reads
// as it is when opened read-only (Check finds nothing, Find and the tables
// answer; the file's bytes do not change), and a writable Open upgrades it
// to format 6: the head, every root and proof, entry, payload, Find
// answer and table answer are byte-identical before and after, the
// indexes are index records, Check passes and appends work.
func TestUpgradeFormat5(t *testing.T) {
	w, wantLedger, wantIdx := upgradeCompared(t, format5Fixture(t), 5, &bolt.Options{IndexBatch: 16})
	for _, want := range []string{"accepted h-0000 true", "idempotent idem-3 true", `blob "secret payload"`} {
		if !bytes.Contains(append(wantLedger, wantIdx...), []byte(want)) {
			t.Fatalf("the fixture's answers lack %q: the test proves less than it says", want)
		}
	}
	for i := range 40 {
		bolttest.AppendHandoff(t, w, bolttest.Handoff{ID: fmt.Sprintf("after-%d", i), Source: "agent-1", Target: "agent-2", NoSnapshots: true})
	}
	if got, err := w.Find(t.Context(), ledger.Query{Agent: "agent-1", Newest: true, Limit: 3}); err != nil || len(got) != 3 {
		t.Errorf("Find after the upgrade = %v, %v", got, err)
	}
	_, db := closeUpgraded(t, w)
	db.View(func(tx *bbolt.Tx) error {
		if n := tx.Bucket([]byte("idx_agent")).Stats().KeyN; n > 60 {
			t.Errorf("idx_agent holds %d keys: not index records", n)
		}
		tx.Bucket([]byte("idx_accepted")).ForEach(func(k, v []byte) error {
			if len(k) != 16 || len(v) != 0 {
				t.Errorf("idx_accepted %x -> %x: not an acceptKey", k, v)
			}
			return nil
		})
		return nil
	})
}

// format6Fixture copies testdata/format6.db.gz, unpacked, into
// t.TempDir(). The file was written by the format 6 driver (commit
// 7b303c6, TestWriteFormat6Fixture): the format 5 fixture opened writable
// with IndexBatch 16 (upgraded to format 6), then 45 handoffs "tail-00"
// to "tail-44" from agent-1 to agent-2, every fifth with one shared
// payload, every third with idempotency key "tail-idem-(i%9)" and a
// payload naming it, handoff 41 accepted again as "tail-33", 42 as
// "h-0000", 43 with handoff h-0007's payload; its last 13 entries are
// beyond meta "indexed", its partial level-0 tile is stored and its
// decision indexes reach the head.
func format6Fixture(t *testing.T) string {
	t.Helper()
	return unpackFixture(t, "testdata/format6.db.gz")
}

// TestUpgradeFormat6: a format 6 file written by the format 6 driver reads
// as it is when opened read-only, and a writable Open upgrades it to
// format 7: every root and proof, entry, payload, Find and table answer is
// byte-identical before and after; the upgraded file stores no level-0
// tile and starts with the indexes through its head; appends after it
// leave the decision indexes trailing the head (a tail) and are decided
// as before (a handoff id accepted in the tail, then again, is a
// duplicate); Check passes.
func TestUpgradeFormat6(t *testing.T) {
	w, wantLedger, wantIdx := upgradeCompared(t, format6Fixture(t), 6, &bolt.Options{IndexBatch: 16})
	for _, want := range []string{"accepted tail-33 true", "idempotent tail-idem-6 true", "accepted h-0000 true", `blob "{\"tail\":\"shared\"}"`} {
		if !bytes.Contains(append(wantLedger, wantIdx...), []byte(want)) {
			t.Fatalf("the fixture's answers lack %q: the test proves less than it says", want)
		}
	}
	for i := range 20 { // 20 < IndexBatch 16 + the flush: a tail of 4
		bolttest.AppendHandoff(t, w, bolttest.Handoff{ID: fmt.Sprintf("after-%d", i%18), Source: "agent-1", Target: "agent-2", NoSnapshots: true})
	}
	first, _, ok := stateAccepted(t, w, "after-17")
	again, _, ok2 := stateAccepted(t, w, "after-1")
	if !ok || !ok2 || first == 0 || again == 0 {
		t.Errorf("Accepted after the upgrade: after-17 %d %v, after-1 %d %v", first, ok, again, ok2)
	}
	path, db := closeUpgraded(t, w)
	db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("tiles")).Cursor()
		if k, _ := c.Seek([]byte{0}); k != nil && k[0] == 0 {
			t.Errorf("the upgraded file stores level-0 tile %x", k)
		}
		meta := tx.Bucket([]byte("meta"))
		head, indexed := binary.BigEndian.Uint64(meta.Get([]byte("head"))[:8]), binary.BigEndian.Uint64(meta.Get([]byte("indexed")))
		if head-indexed != 4 {
			t.Errorf("head %d, indexed %d: want a tail of 4 entries", head, indexed)
		}
		return nil
	})
	_ = path
}

// stateAccepted reads Accepted(id) in a view of l.
func stateAccepted(t *testing.T, l *ledger.Ledger, id string) (seq uint64, p entry.Hash, ok bool) {
	t.Helper()
	if err := l.View(t.Context(), func(st ledger.State) error {
		seq, p, ok = st.Accepted(id)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seq, p, ok
}

// TestUpgradeRefusesFormat6: a format 6 file whose partial level-0 tile
// disagrees with its entries is not upgraded (the writable Open fails
// with ErrCorrupt and leaves the file's bytes as they were).
func TestUpgradeRefusesFormat6(t *testing.T) {
	p := format6Fixture(t)
	db, err := bbolt.Open(p, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var key []byte
	db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("tiles")).Cursor()
		if k, _ := c.Seek([]byte{0}); k != nil && k[0] == 0 {
			key = append([]byte(nil), k...)
		}
		return nil
	})
	db.Close()
	if key == nil {
		t.Fatal("the fixture stores no partial level-0 tile: the test proves nothing")
	}
	if err := bolttest.FlipByte(p, "tiles", key, 5); err != nil {
		t.Fatal(err)
	}
	wantUpgradeRefused(t, p)
}

// TestUpgradeRefusesFormat5: a format 5 file whose indexes or tables
// disagree with its entries is not upgraded (the writable Open fails with
// ErrCorrupt and leaves the file's bytes as they were).
func TestUpgradeRefusesFormat5(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tamper func(string) error
	}{
		{"edited-idx_agent", func(p string) error { return bolttest.EditIndex(p, "idx_agent", 10, 11) }},
		{"extra-idx_workflow", func(p string) error {
			return bolttest.InsertKey(p, "idx_workflow", append(make([]byte, 8), bolttest.SeqKey(3)...), []byte{})
		}},
		{"idx_decision-key-with-a-value", func(p string) error {
			return bolttest.InsertKey(p, "idx_decision", append([]byte("accepted"), bolttest.SeqKey(3)...), []byte{1})
		}},
		{"edited-idx_accepted", func(p string) error { return bolttest.EditIndex(p, "idx_accepted", 5, 6) }},
		{"deleted-idx_accepted-row", func(p string) error { // a first acceptance with no row
			k := entry.Sum256([]byte("h-0000"))
			return bolttest.DeleteKey(p, "idx_accepted", k[:])
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := format5Fixture(t)
			if err := tt.tamper(p); err != nil {
				t.Fatal(err)
			}
			wantUpgradeRefused(t, p)
		})
	}
}

// TestScanBlobs: ScanBlobs delivers beside an entry the blob stored under
// its seq — each blob still stored exactly once, beside an entry naming
// it, whatever the dedupe and the redactions of the fixture — and nil for
// every entry of a format 4 file, whose blobs are keyed by hash.
func TestScanBlobs(t *testing.T) {
	path := format4Fixture(t)
	scan := func(l *ledger.Ledger) (delivered map[entry.Hash]int, named map[entry.Hash]bool) {
		delivered, named = map[entry.Hash]int{}, map[entry.Hash]bool{}
		err := l.ScanBlobs(context.Background(), 1, func(seq uint64, raw, blob []byte) error {
			e, err := entry.Decode(raw)
			if err != nil {
				return err
			}
			sum := e.Blob()
			if sum != nil {
				named[*sum] = true
			}
			if blob == nil {
				return nil
			}
			if sum == nil || entry.Sum256(blob) != *sum {
				return fmt.Errorf("entry %d: a blob beside it that it does not name", seq)
			}
			delivered[*sum]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return delivered, named
	}
	ro, err := bolt.Open(path, &bolt.Options{ReadOnly: true, NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := scan(ro); len(d) != 0 {
		t.Errorf("format 4: %d blobs delivered, want none", len(d))
	}
	ro.Close()
	l, err := bolt.Open(path, nil) // upgraded to the current format
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	delivered, named := scan(l)
	stored := 0
	for sum := range named {
		_, err := l.Blob(t.Context(), sum)
		switch {
		case err == nil:
			stored++
			if delivered[sum] != 1 {
				t.Errorf("blob %s delivered %d times, want once", sum, delivered[sum])
			}
		case errors.Is(err, ledger.ErrRedacted) || errors.Is(err, ledger.ErrNotFound):
			if delivered[sum] != 0 {
				t.Errorf("blob %s (%v) delivered %d times", sum, err, delivered[sum])
			}
		default:
			t.Fatal(err)
		}
	}
	if stored < 250 || stored == len(named) {
		t.Errorf("%d of %d blobs stored: the fixture has shared and redacted payloads", stored, len(named))
	}
}
