package bolttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
)

// Bucket names of the ledger file format, for the tamper helpers.
const (
	BucketMeta       = "meta"
	BucketEntries    = "entries"
	BucketBlobs      = "blobs"
	BucketIdxBlob    = "idx_blob"
	BucketTree       = "tree"
	BucketIdxHandoff = "idx_handoff"
	BucketIdxAccept  = "idx_accepted"
	BucketIdxAgent   = "idx_agent"
	BucketIdxWork    = "idx_workflow"
	BucketIdxDecide  = "idx_decision"
	BucketBlocked    = "blocked"
	BucketRedacted   = "redacted"
)

// SeqKey returns the entries-bucket key of seq.
func SeqKey(seq uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, seq)
	return b
}

// CopyFile copies the file at src into t.TempDir() and returns the copy's
// path, so a test can tamper with it and keep the original.
func CopyFile(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir() + "/copy.db"
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// update opens the closed file at path with bbolt and runs fn in one write
// transaction.
func update(path string, fn func(tx *bbolt.Tx) error) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, OpenFile: func(n string, f int, p os.FileMode) (*os.File, error) {
		return os.OpenFile(n, f&^os.O_CREATE, p)
	}})
	if err != nil {
		return err
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func mustBucket(tx *bbolt.Tx, name string) (*bbolt.Bucket, error) {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return nil, fmt.Errorf("bolttest: no bucket %q", name)
	}
	return b, nil
}

// FlipByte XORs 0x01 into byte offset of the value of key in bucket.
func FlipByte(path, bucket string, key []byte, offset int) error {
	return update(path, func(tx *bbolt.Tx) error {
		b, err := mustBucket(tx, bucket)
		if err != nil {
			return err
		}
		v := append([]byte(nil), b.Get(key)...)
		if offset < 0 || offset >= len(v) {
			return fmt.Errorf("bolttest: offset %d outside %d-byte value of %s/%x", offset, len(v), bucket, key)
		}
		v[offset] ^= 0x01
		return b.Put(key, v)
	})
}

// DeleteKey deletes key from bucket.
func DeleteKey(path, bucket string, key []byte) error {
	return update(path, func(tx *bbolt.Tx) error {
		b, err := mustBucket(tx, bucket)
		if err != nil {
			return err
		}
		if b.Get(key) == nil {
			return fmt.Errorf("bolttest: %s/%x not present", bucket, key)
		}
		return b.Delete(key)
	})
}

// InsertKey puts key=value into bucket, creating the bucket if it does not
// exist (which makes an unknown bucket).
func InsertKey(path, bucket string, key, value []byte) error {
	return update(path, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		return b.Put(key, value)
	})
}

// SwapValues exchanges the values of k1 and k2 in bucket.
func SwapValues(path, bucket string, k1, k2 []byte) error {
	return update(path, func(tx *bbolt.Tx) error {
		b, err := mustBucket(tx, bucket)
		if err != nil {
			return err
		}
		v1, v2 := append([]byte(nil), b.Get(k1)...), append([]byte(nil), b.Get(k2)...)
		if err := b.Put(k1, v2); err != nil {
			return err
		}
		return b.Put(k2, v1)
	})
}

// DuplicateEntry stores a copy of entry seq's bytes under the key after the
// last entry, without touching anything else (a replayed record).
func DuplicateEntry(path string, seq uint64) error {
	return update(path, func(tx *bbolt.Tx) error {
		b, err := mustBucket(tx, BucketEntries)
		if err != nil {
			return err
		}
		v := b.Get(SeqKey(seq))
		if v == nil {
			return fmt.Errorf("bolttest: no entry %d", seq)
		}
		k, _ := b.Cursor().Last()
		return b.Put(SeqKey(binary.BigEndian.Uint64(k)+1), append([]byte(nil), v...))
	})
}

// EditIndex redirects index references from seq to newSeq in bucket: for
// the secondary indexes (idx_handoff, idx_agent, idx_workflow,
// idx_decision) every index record listing seq, which then
// lists newSeq instead (each record's key is prefix || be64(its first
// seq), its value the uvarint differences of the later seqs); for
// idx_accepted every key ending in seq (format 6: sha256(id)[:8] ||
// be64(seq)), or every value starting with it (formats 1-5); for the
// tables blocked and redacted every value starting with seq.
func EditIndex(path, bucket string, seq, newSeq uint64) error {
	old, repl := SeqKey(seq), SeqKey(newSeq)
	return update(path, func(tx *bbolt.Tx) error {
		b, err := mustBucket(tx, bucket)
		if err != nil {
			return err
		}
		type kv struct{ k, v []byte }
		var del, put []kv
		b.ForEach(func(k, v []byte) error {
			switch bucket {
			case BucketIdxAccept, BucketBlocked, BucketRedacted:
				if bucket == BucketIdxAccept && len(v) == 0 { // format 6: sha256(id)[:8] || be64(seq)
					if len(k) == 16 && bytes.HasSuffix(k, old) {
						del = append(del, kv{k: append([]byte(nil), k...)})
						put = append(put, kv{append(append([]byte(nil), k[:8]...), repl...), []byte{}})
					}
					return nil
				}
				if bytes.HasPrefix(v, old) {
					put = append(put, kv{append([]byte(nil), k...), append(append([]byte(nil), repl...), v[8:]...)})
				}
			default:
				if len(k) < 8 {
					return nil
				}
				seqs := postings(binary.BigEndian.Uint64(k[len(k)-8:]), v)
				i := slices.Index(seqs, seq)
				if i < 0 {
					return nil
				}
				seqs = slices.Delete(seqs, i, i+1)
				if !slices.Contains(seqs, newSeq) {
					seqs = append(seqs, newSeq)
				}
				slices.Sort(seqs)
				var val []byte
				for j := 1; j < len(seqs); j++ {
					val = binary.AppendUvarint(val, seqs[j]-seqs[j-1])
				}
				del = append(del, kv{k: append([]byte(nil), k...)})
				put = append(put, kv{append(append([]byte(nil), k[:len(k)-8]...), SeqKey(seqs[0])...), val})
			}
			return nil
		})
		if len(put) == 0 {
			return fmt.Errorf("bolttest: no %s reference to seq %d", bucket, seq)
		}
		for _, x := range del {
			if err := b.Delete(x.k); err != nil {
				return err
			}
		}
		for _, x := range put {
			if err := b.Put(x.k, x.v); err != nil {
				return err
			}
		}
		return nil
	})
}

// postings decodes an index record: first, then the uvarint differences
// in v (read leniently: a test helper's view of a file it made).
func postings(first uint64, v []byte) []uint64 {
	out := []uint64{first}
	for len(v) > 0 {
		d, n := binary.Uvarint(v)
		if n <= 0 {
			break
		}
		first += d
		out = append(out, first)
		v = v[n:]
	}
	return out
}

// RewindMetaHead points meta's head k entries back (at entry head-k, or
// removes it when k == head), leaving the entries in place.
func RewindMetaHead(path string, k uint64) error {
	return update(path, func(tx *bbolt.Tx) error {
		m, err := mustBucket(tx, BucketMeta)
		if err != nil {
			return err
		}
		e, err := mustBucket(tx, BucketEntries)
		if err != nil {
			return err
		}
		h := m.Get([]byte("head"))
		if len(h) != 40 {
			return errors.New("bolttest: no head")
		}
		seq := binary.BigEndian.Uint64(h)
		if k > seq {
			return fmt.Errorf("bolttest: cannot rewind %d entries of %d", k, seq)
		}
		if seq == k {
			return m.Delete([]byte("head"))
		}
		sum := entry.LeafHash(e.Get(SeqKey(seq - k)))
		return m.Put([]byte("head"), append(SeqKey(seq-k), sum[:]...))
	})
}

// BlobKey returns the blobs-bucket key of blob sum: the seq idx_blob maps
// it to (or sum itself in a file before format 5, without idx_blob).
func BlobKey(path string, sum entry.Hash) (key []byte, err error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		key = append([]byte(nil), sum[:]...)
		if idx := tx.Bucket([]byte(BucketIdxBlob)); idx != nil {
			key = append([]byte(nil), idx.Get(sum[:])...)
		}
		if b := tx.Bucket([]byte(BucketBlobs)); b == nil || len(key) == 0 || b.Get(key) == nil {
			return fmt.Errorf("bolttest: no blob %s", sum)
		}
		return nil
	})
	return key, err
}

// EditBlob replaces the stored bytes of blob sum with data (keeping the key).
func EditBlob(path string, sum entry.Hash, data []byte) error {
	key, err := BlobKey(path, sum)
	if err != nil {
		return err
	}
	return update(path, func(tx *bbolt.Tx) error {
		b, err := mustBucket(tx, BucketBlobs)
		if err != nil {
			return err
		}
		return b.Put(key, append([]byte(nil), data...))
	})
}

// TruncateTail removes the last k entries and rebuilds everything derived
// from the rest (tree, indexes, tables, meta), so the file is structurally
// sound and its chain verifies: only an outside anchor (a checkpoint of the
// old size) can tell. The file keeps its origin.
func TruncateTail(path string, k uint64) error {
	return rewrite(path, func(seq, head uint64) bool { return seq+k <= head }, 0, nil)
}

// RewriteSuffix applies edit to entry from and rebuilds the ledger from it
// on, recomputing every later prev and hash, the tree and meta: a rewritten
// history that Check and a chain walk accept; only an outside anchor can
// tell. edit must keep the entry valid; it may not change v, seq, prev or
// time, and the entry may not be a snapshot.
func RewriteSuffix(path string, from uint64, edit func(e *entry.Entry)) error {
	return rewrite(path, func(uint64, uint64) bool { return true }, from, edit)
}

// rewrite replays the entries of path that keep(seq, head) into a new
// ledger with the same origin and times, then renames it over path.
func rewrite(path string, keep func(seq, head uint64) bool, editSeq uint64, edit func(*entry.Entry)) error {
	ctx := context.Background()
	src, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	head, _, err := src.Head(ctx)
	if err != nil {
		return err
	}
	tmp := path + ".rewrite"
	os.Remove(tmp)
	var now time.Time
	dst, err := bolt.Open(tmp, &bolt.Options{Origin: src.Origin(), Now: func() time.Time { return now }})
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	defer dst.Close()
	for seq := uint64(1); seq <= head && keep(seq, head); seq++ {
		e, _, err := src.Get(ctx, seq)
		if err != nil {
			return err
		}
		if seq == editSeq && edit != nil {
			edit(e)
		}
		now = e.Time.Time
		var req ledger.Request
		if e.Kind == entry.KindSnapshot {
			data, err := src.Blob(ctx, *e.ContentSHA256)
			if err != nil {
				return fmt.Errorf("bolttest: snapshot %d: %w", seq, err)
			}
			req.Snapshots = []ledger.Snapshot{{What: e.What, Bytes: data}}
		} else {
			if e.Kind == entry.KindHandoff {
				if data, err := src.Blob(ctx, *e.PayloadSHA256); err == nil && entry.Sum256(data) == *e.PayloadSHA256 {
					req.Payload = data
				}
			}
			orig := *e
			req.Build = func(_ ledger.State, n *entry.Entry) error {
				s, p, t := n.Seq, n.Prev, n.Time
				*n = orig
				n.Seq, n.Prev, n.Time = s, p, t
				return nil
			}
		}
		res, err := dst.Append(ctx, &req)
		if err != nil {
			return fmt.Errorf("bolttest: replay %d: %w", seq, err)
		}
		if a := res.Last(); a == nil || a.Entry.Seq != seq {
			return fmt.Errorf("bolttest: replay %d: wrote %v", seq, res.Entries)
		}
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if err := src.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
