package bolt_test

import (
	"context"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// feed is a ledger.CheckFeed that answers for every entry, with what
// prepare makes of the bytes, and counts the questions.
type feed struct {
	asked   int
	prepare func(seq uint64, raw []byte) *ledger.Prepared
}

func (f *feed) Prepared(_ context.Context, seq uint64, raw []byte) *ledger.Prepared {
	f.asked++
	return f.prepare(seq, raw)
}

// TestCheckFed: the check of a read-only file takes each entry's hash and
// decoded form from a replay's feed (ledger.CheckFeed) instead of making
// them again, and the blob's hash with them; a writable file's check
// ignores the feed (a writer could change the file under it).
func TestCheckFed(t *testing.T) {
	path, head := sample(t)
	honest := func(seq uint64, raw []byte) *ledger.Prepared {
		e, err := entry.Decode(raw)
		return &ledger.Prepared{Seq: seq, Raw: raw, Hash: entry.LeafHash(raw), Entry: e, Err: err}
	}
	runAt := func(t *testing.T, path string, readOnly bool, f *feed) []ledger.Finding {
		t.Helper()
		l, err := bolt.Open(path, &bolt.Options{ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		fs, err := l.Check(ledger.WithCheckFeed(t.Context(), f))
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	run := func(t *testing.T, readOnly bool, f *feed) []ledger.Finding {
		t.Helper()
		return runAt(t, path, readOnly, f)
	}
	t.Run("read-only", func(t *testing.T) {
		f := &feed{prepare: honest}
		if fs := run(t, true, f); len(fs) != 0 || f.asked != int(head) {
			t.Errorf("Check = %v, feed asked %d times; want no finding, %d", fs, f.asked, head)
		}
	})
	t.Run("read-only, the feed's hash taken", func(t *testing.T) {
		// A feed that hashes seq 3 wrongly: the check holds the stored
		// tree and seq 4's prev to that hash, so it must report them.
		f := &feed{prepare: func(seq uint64, raw []byte) *ledger.Prepared {
			p := honest(seq, raw)
			if seq == 3 {
				p.Hash[0] ^= 1
			}
			return p
		}}
		if fs := run(t, true, f); len(fs) == 0 {
			t.Error("Check took no hash from the feed: no finding from a wrong one")
		}
	})
	t.Run("read-only, the feed's blob hash taken", func(t *testing.T) {
		// The first handoff's stored payload is changed. A feed saying
		// those very bytes hash to the sum the handoff names silences the check's
		// finding (it took the hash); a feed handing other bytes (the
		// original ones) does not (the check compares the bytes and
		// hashes the stored ones itself).
		p := bolttest.CopyFile(t, path)
		l, err := bolt.Open(p, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var at uint64 // the first handoff
		var e *entry.Entry
		for seq := uint64(1); e == nil || e.Kind != entry.KindHandoff; seq++ {
			if e, _, err = l.Get(t.Context(), seq); err != nil {
				t.Fatal(err)
			}
			at = seq
		}
		orig, err := l.EntryBlob(t.Context(), at, *e.PayloadSHA256)
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		changed := append([]byte("x"), orig...)
		if err := bolttest.EditBlob(p, *e.PayloadSHA256, changed); err != nil {
			t.Fatal(err)
		}
		withBlob := func(b []byte) *feed {
			return &feed{prepare: func(seq uint64, raw []byte) *ledger.Prepared {
				q := honest(seq, raw)
				if seq == at {
					q.Blob = b
				}
				return q
			}}
		}
		fs := runAt(t, p, true, withBlob(changed))
		if len(fs) != 0 {
			t.Errorf("Check = %v with a feed vouching for the stored bytes: it hashed them itself", fs)
		}
		fs = runAt(t, p, true, withBlob(orig))
		found := false
		for _, f := range fs {
			found = found || f.Seq == at && f.Kind == ledger.FindBlobHash
		}
		if !found {
			t.Errorf("Check = %v with a feed handing other bytes, want %s at %d", fs, ledger.FindBlobHash, at)
		}
	})
	t.Run("writable", func(t *testing.T) {
		f := &feed{prepare: func(uint64, []byte) *ledger.Prepared { return nil }}
		if fs := run(t, false, f); len(fs) != 0 || f.asked != 0 {
			t.Errorf("Check = %v, feed asked %d times; want no finding, none", fs, f.asked)
		}
	})
}
