package bolt_test

import (
	"context"
	"slices"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// streamLedger is a closed ledger of more than two level-0 tiles (the
// full ones are not stored; a level-1 tile is): handoffs with unique
// payloads and, every tenth, one shared payload (stored once); an
// idempotency key used twice for the same bytes; a handoff id accepted a second time; a block and its
// unblock; the redaction of a unique payload, and of the shared one, which
// a later handoff stores again.
type streamLedger struct {
	path string
	seq  map[string]uint64 // handoff id (or "unblock") -> seq
	head uint64
}

var sharedPayload = []byte(`{"shared":true}`)

const streamHandoffs = 800

func buildStreamLedger(t *testing.T) streamLedger {
	t.Helper()
	s := streamLedger{path: t.TempDir() + "/stream.db", seq: map[string]uint64{}}
	o := newClockOpts()
	o.IndexBatch = 1 // the indexes reach the head (TestCheckTail tampers with a tail)
	l, err := bolt.Open(s.path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	add := func(h bolttest.Handoff, key string) {
		h.IdempotencyKey = key
		req := h.Build()
		res, err := l.Append(ctx, req)
		if err != nil {
			t.Fatalf("append %s: %v", h.ID, err)
		}
		if _, ok := s.seq[h.ID]; !ok {
			s.seq[h.ID] = res.Last().Entry.Seq
		}
	}
	for i := range streamHandoffs {
		h := handoff(i)
		key := ""
		switch {
		case i%10 == 0:
			h.Payload = sharedPayload
		case i == 101 || i == 102:
			h.Payload, key = []byte(`{"retried":true}`), "k-retry" // used twice for the same bytes
		case i == 201:
			h.ID = "h-0003" // accepted again: not its first acceptance
		case i == 300:
			h.Reasons, h.Blocks = mismatch, []string{"domain-05-product"}
		}
		add(h, key)
		if i == 201 {
			s.seq["h-0003 again"], _, _ = l.Head(ctx)
		}
		if i == 301 {
			s.seq["unblock"] = bolttest.AppendUnblock(t, l, "domain-05-product", "fixed").Entry.Seq
		}
	}
	for _, id := range []string{"h-0051", "h-0010"} {
		res, err := l.Redact(ctx, s.seq[id], "pii")
		if err != nil {
			t.Fatal(err)
		}
		s.seq["redaction"] = res.Last().Entry.Seq
	}
	h := handoff(streamHandoffs)
	h.Payload = sharedPayload // stored again after its redaction
	add(h, "")
	s.head, _, _ = l.Head(ctx)
	return s
}

// TestCheckStreamTampering: on a ledger of several tiles, each change to
// a part Check reads in a stream (tiles filled as the entries are walked,
// blobs walked beside the entries, the first-use tables read row by row)
// gives a finding of its kind; the intact ledger gives none.
func TestCheckStreamTampering(t *testing.T) {
	s := buildStreamLedger(t)
	if s.head < 3<<8 {
		t.Fatalf("head %d: the ledger needs two full level-0 tiles and a partial one", s.head)
	}
	bolttest.MustCheck(t, s.path)
	tile := func(level byte, n uint64) []byte { return append([]byte{level}, bolttest.SeqKey(n)...) }
	shared := entry.Sum256(sharedPayload)
	// akey is the idx_accepted (idx_idempotency) key of s first used by
	// entry seq: sha256(s)[:8] || be64(seq).
	akey := func(s string, seq uint64) []byte {
		h := entry.Sum256([]byte(s))
		return append(h[:8:8], bolttest.SeqKey(seq)...)
	}
	move := func(p, bucket string, from, to []byte) error {
		if err := bolttest.DeleteKey(p, bucket, from); err != nil {
			return err
		}
		return bolttest.InsertKey(p, bucket, to, []byte{})
	}
	tests := []struct {
		name   string
		tamper func(path string) error
		want   string
	}{
		{"stored-full-level-0-tile", func(p string) error { return bolttest.InsertKey(p, "tiles", tile(0, 1), make([]byte, 32<<8)) }, ledger.FindTreeExtra},
		{"edited-level-1-tile", func(p string) error { return bolttest.FlipByte(p, "tiles", tile(1, 0), 40) }, ledger.FindTreeHash},
		{"deleted-level-1-tile", func(p string) error { return bolttest.DeleteKey(p, "tiles", tile(1, 0)) }, ledger.FindTreeHash},
		{"stored-partial-level-0-tile", func(p string) error { // format 7 stores none
			return bolttest.InsertKey(p, "tiles", tile(0, s.head>>8), make([]byte, 32*(s.head&255)))
		}, ledger.FindTreeExtra},
		{"extra-level-2-tile", func(p string) error { return bolttest.InsertKey(p, "tiles", tile(2, 0), make([]byte, 32)) }, ledger.FindTreeExtra},
		{"flipped-entry-under-a-full-tile", func(p string) error {
			return bolttest.FlipByte(p, "entries", bolttest.SeqKey(s.seq["h-0100"]), 60)
		}, ledger.FindTreeHash},
		{"blob-under-an-unblock", func(p string) error {
			return bolttest.InsertKey(p, "blobs", bolttest.SeqKey(s.seq["unblock"]), []byte("x"))
		}, ledger.FindBlobOrphan},
		{"blob-under-a-redaction", func(p string) error {
			return bolttest.InsertKey(p, "blobs", bolttest.SeqKey(s.seq["redaction"]), []byte("x"))
		}, ledger.FindBlobOrphan},
		{"shared-blob-stored-twice", func(p string) error {
			return bolttest.InsertKey(p, "blobs", bolttest.SeqKey(s.seq["h-0020"]), sharedPayload)
		}, ledger.FindBlobOrphan},
		{"edited-shared-blob", func(p string) error { return bolttest.EditBlob(p, shared, []byte("forged")) }, ledger.FindBlobHash},
		{"deleted-idx_blob-of-the-shared-blob", func(p string) error { return bolttest.DeleteKey(p, "idx_blob", shared[:]) }, ledger.FindIndexMissing},
		{"idx_blob-names-a-later-use", func(p string) error {
			return bolttest.InsertKey(p, "idx_blob", shared[:], bolttest.SeqKey(s.seq["h-0520"]))
		}, ledger.FindIndexExtra},
		{"redacted-blob-stored-again", func(p string) error {
			payload := []byte(`{"handoff_id":"h-0051"}`)
			sum := entry.Sum256(payload)
			if err := bolttest.InsertKey(p, "blobs", bolttest.SeqKey(s.seq["h-0051"]), payload); err != nil {
				return err
			}
			return bolttest.InsertKey(p, "idx_blob", sum[:], bolttest.SeqKey(s.seq["h-0051"]))
		}, ledger.FindBlobUnremoved},
		{"idx_accepted-names-a-later-acceptance", func(p string) error {
			return move(p, "idx_accepted", akey("h-0003", s.seq["h-0003"]), akey("h-0003", s.seq["h-0003 again"]))
		}, ledger.FindAccepted},
		{"idx_accepted-also-names-a-later-acceptance", func(p string) error {
			return bolttest.InsertKey(p, "idx_accepted", akey("h-0003", s.seq["h-0003 again"]), []byte{})
		}, ledger.FindAccepted},
		{"idx_accepted-names-an-earlier-entry", func(p string) error {
			return move(p, "idx_accepted", akey("h-0300", s.seq["h-0300"]), akey("h-0300", s.seq["h-0005"]))
		}, ledger.FindAccepted},
		{"idx_accepted-names-another-id", func(p string) error {
			return bolttest.InsertKey(p, "idx_accepted", akey("h-0400", s.seq["h-0003"]), []byte{})
		}, ledger.FindAccepted},
		{"idx_accepted-row-with-a-value", func(p string) error {
			return bolttest.InsertKey(p, "idx_accepted", akey("h-0007", s.seq["h-0007"]), []byte("x"))
		}, ledger.FindAccepted},
		{"deleted-idx_accepted-row", func(p string) error {
			return bolttest.DeleteKey(p, "idx_accepted", akey("h-0007", s.seq["h-0007"]))
		}, ledger.FindAccepted},
		{"deleted-idx_accepted-row-of-an-id-accepted-again", func(p string) error {
			return bolttest.DeleteKey(p, "idx_accepted", akey("h-0003", s.seq["h-0003"]))
		}, ledger.FindAccepted},
		{"extra-idx_accepted-row", func(p string) error {
			return bolttest.InsertKey(p, "idx_accepted", akey("never accepted", 3), []byte{})
		}, ledger.FindAccepted},
		{"idx_idempotency-names-another-entry", func(p string) error {
			return move(p, "idx_idempotency", akey("k-retry", s.seq["h-0101"]), akey("k-retry", s.seq["h-0103"]))
		}, ledger.FindAccepted},
		{"idx_idempotency-names-the-second-use", func(p string) error {
			return move(p, "idx_idempotency", akey("k-retry", s.seq["h-0101"]), akey("k-retry", s.seq["h-0102"]))
		}, ledger.FindAccepted},
		{"deleted-idx_idempotency-row", func(p string) error {
			return bolttest.DeleteKey(p, "idx_idempotency", akey("k-retry", s.seq["h-0101"]))
		}, ledger.FindAccepted},
		{"extra-idx_idempotency-row", func(p string) error {
			return bolttest.InsertKey(p, "idx_idempotency", akey("k-never", s.seq["h-0100"]), []byte{})
		}, ledger.FindAccepted},
	}
	// Where a row is wrong, the walk goes on with the first use the
	// entries imply: each change is reported once, not again at the
	// string's later uses.
	exact := map[string]int{
		"idx_accepted-names-a-later-acceptance":            2, // the first acceptance's row absent, the later one's extra
		"idx_accepted-also-names-a-later-acceptance":       1,
		"deleted-idx_accepted-row-of-an-id-accepted-again": 1,
		"deleted-idx_idempotency-row":                      1,
		"idx_idempotency-names-the-second-use":             2,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tamperFinds(t, s.path, tt.tamper, tt.want)
			t.Logf("findings: %v", fs)
			if n, ok := exact[tt.name]; ok && len(fs) != n {
				t.Errorf("Check() = %v, want %d findings", fs, n)
			}
		})
	}
}

// treeTamper damages the tree bucket of a format 3 file; want is the
// finding Check gives for it.
type treeTamper struct {
	name   string
	tamper func(path string) error
	want   string
}

// format3TreeTampers: a tree hash edited, one deleted, one past the head.
var format3TreeTampers = []treeTamper{
	{"edited", func(p string) error { return bolttest.InsertKey(p, "tree", bolttest.SeqKey(17), make([]byte, 32)) }, ledger.FindTreeHash},
	{"deleted", func(p string) error { return bolttest.DeleteKey(p, "tree", bolttest.SeqKey(3)) }, ledger.FindTreeHash},
	{"extra", func(p string) error { return bolttest.InsertKey(p, "tree", bolttest.SeqKey(5000), make([]byte, 32)) }, ledger.FindTreeExtra},
}

// TestCheckFormat3Tree: Check compares a format 3 file's tree bucket, one
// stored hash per key, with the hashes recomputed from the entries.
func TestCheckFormat3Tree(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	for i := range 40 {
		bolttest.AppendHandoff(t, l, handoff(i))
	}
	intact := treeTamper{"intact", func(string) error { return nil }, ""}
	for _, tt := range append([]treeTamper{intact}, format3TreeTampers...) {
		t.Run(tt.name, func(t *testing.T) {
			p := bolttest.CopyFile(t, l.Path())
			toFormat3(t, p)
			if err := tt.tamper(p); err != nil {
				t.Fatal(err)
			}
			fs, err := check(t, p)
			if err != nil {
				t.Fatalf("Check() error %v", err)
			}
			var kinds []string
			for _, f := range fs {
				kinds = append(kinds, f.Kind)
			}
			if want := []string{tt.want}; tt.want == "" && len(kinds) != 0 || tt.want != "" && !slices.Equal(slices.Compact(kinds), want) {
				t.Errorf("Check() = %v, want only %q findings", fs, tt.want)
			}
		})
	}
}
