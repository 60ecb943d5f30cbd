package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// tailLedger records, into a new ledger at path with IndexBatch ib, 60
// handoffs: every seventh reusing one payload, every eleventh accepted
// again under an earlier id, every fifth with an idempotency key (reused
// for the same bytes by the next fifth), then the redaction of handoff 40
// (whose payload is its own) and handoff 40's payload stored again. It
// returns the driver, open.
func tailLedger(t *testing.T, path string, ib int) (*bolt.Driver, *ledger.Ledger) {
	t.Helper()
	o := newClockOpts()
	o.IndexBatch = ib
	d, err := bolt.OpenDriver(path, o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, &ledger.Options{Now: o.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range 60 {
		h := handoff(i)
		key := ""
		switch {
		case i%7 == 0:
			h.Payload = []byte(`{"shared":7}`)
		case i%11 == 0:
			h.ID = fmt.Sprintf("h-%04d", i-3)
		}
		if i%5 == 0 {
			key = fmt.Sprintf("k-%d", i/10)
			h.Payload = []byte(`{"key":"` + key + `"}`)
		}
		tailAppend(t, l, h, key)
	}
	if _, err := l.Redact(t.Context(), 41, "pii"); err != nil {
		t.Fatal(err)
	}
	again := handoff(100)
	again.Payload = []byte(`{"handoff_id":"h-0040"}`)
	tailAppend(t, l, again, "")
	return d, l
}

func tailAppend(t *testing.T, l *ledger.Ledger, h bolttest.Handoff, key string) {
	t.Helper()
	h.IdempotencyKey = key
	if _, err := l.Append(t.Context(), h.Build()); err != nil {
		t.Fatalf("append %s: %v", h.ID, err)
	}
}

// tailAnswers returns, encoded, what a view of d answers for every handoff
// id, idempotency key and payload of tailLedger: Accepted, Idempotent,
// Blob (bytes or error kind) and BlobSeq.
func tailAnswers(t *testing.T, d *bolt.Driver) string {
	t.Helper()
	v, err := d.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	return viewAnswers(t, v)
}

func viewAnswers(t *testing.T, v ledger.View) string {
	t.Helper()
	var out strings.Builder
	sums := map[entry.Hash]bool{entry.Sum256(bolttest.ManifestBytes): true, entry.Sum256(bolttest.LockBytes): true}
	for i := range 101 {
		id := fmt.Sprintf("h-%04d", i)
		a, ok, err := v.Accepted(id)
		fmt.Fprintf(&out, "accepted %s %v %+v %v\n", id, ok, a, err)
		b, ok, err := v.Idempotent(fmt.Sprintf("k-%d", i))
		fmt.Fprintf(&out, "idempotent k-%d %v %+v %v\n", i, ok, b, err)
		sums[entry.Sum256([]byte(`{"handoff_id":"`+id+`"}`))] = true
		sums[entry.Sum256([]byte(`{"key":"`+fmt.Sprintf("k-%d", i)+`"}`))] = true
	}
	sums[entry.Sum256([]byte(`{"shared":7}`))] = true
	for sum := range sums {
		data, err := v.Blob(sum)
		switch {
		case err == nil:
		case errors.Is(err, ledger.ErrRedacted):
			data = []byte("redacted")
		case errors.Is(err, ledger.ErrNotFound):
			data = []byte("not found")
		default:
			t.Fatalf("Blob(%s) = %v", sum, err)
		}
		seq, ok, err := v.(ledger.BlobScanner).BlobSeq(sum)
		if err != nil {
			t.Fatalf("BlobSeq(%s) = %v", sum, err)
		}
		fmt.Fprintf(&out, "blob %s %q seq %d %v\n", sum, data, seq, ok)
	}
	lines := strings.Split(out.String(), "\n")
	// Map order: sort the blob lines.
	blobLines := lines[:0:0]
	var rest []string
	for _, l := range lines {
		if strings.HasPrefix(l, "blob ") {
			blobLines = append(blobLines, l)
		} else {
			rest = append(rest, l)
		}
	}
	sortStrings(blobLines)
	return strings.Join(append(rest, blobLines...), "\n")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestTail: the decision indexes trail the head from format 7 on, and
// every lookup completes them with the tail. A ledger whose indexes reach
// the head after every commit (IndexBatch 1) and the same ledger with all
// 64 entries beyond meta "indexed" (IndexBatch 1000) answer Accepted,
// Idempotent, Blob and BlobSeq alike: live (the tail the commits built),
// reopened read-only (the tail read from the file), and reopened writable
// and appended to until a flush writes the indexes; Check finds nothing in
// either, and the duplicate, reused-key and re-stored-payload cases of the
// tail are decided as with the indexes (the chains are byte-identical).
func TestTail(t *testing.T) {
	dir := t.TempDir()
	full, fl := tailLedger(t, filepath.Join(dir, "full.db"), 1)
	tl, tll := tailLedger(t, filepath.Join(dir, "tail.db"), 1000)
	want := tailAnswers(t, full)
	for _, w := range []string{"accepted h-0008 true {Seq:", "idempotent k-2 true", `"redacted"`, `"{\"handoff_id\":\"h-0040\"}"`, `"{\"shared\":7}" seq`} {
		if !strings.Contains(want, w) {
			t.Fatalf("the answers lack %q: the test proves less than it says\n%s", w, want)
		}
	}
	if got := tailAnswers(t, tl); got != want {
		t.Errorf("live tail: answers differ from the indexes':\n%s\nwant\n%s", got, want)
	}
	s1, h1, err1 := fl.Head(t.Context())
	s2, h2, err2 := tll.Head(t.Context())
	if err1 != nil || err2 != nil || s1 != 64 || s1 != s2 || h1 != h2 {
		t.Errorf("the chains differ: head %d %s (%v) with the indexes, %d %s (%v) with the tail", s1, h1, err1, s2, h2, err2)
	}
	tailPath := tll.Path()
	if err := tll.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.MustCheck(t, tailPath)
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.MustCheck(t, fl.Path())
	ro, err := bolt.OpenDriver(tailPath, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := tailAnswers(t, ro); got != want {
		t.Errorf("tail read from the file: answers differ from the indexes':\n%s\nwant\n%s", got, want)
	}
	ro.Close()
	o := newClockOpts()
	o.IndexBatch = 64
	rw, err := bolt.OpenDriver(tailPath, o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(rw, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := tailAnswers(t, rw); got != want {
		t.Errorf("reopened writable: answers differ from the indexes':\n%s\nwant\n%s", got, want)
	}
	tailAppend(t, l, handoff(101), "") // seq 65: 65 unindexed, the flush
	if got := tailAnswers(t, rw); got != want {
		t.Errorf("after the flush: answers differ from the indexes':\n%s\nwant\n%s", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.MustCheck(t, tailPath)
}

// TestTailViewAcrossRedaction: a view opened before a redaction erases a
// blob stored beyond meta "indexed" still reads it (its snapshot holds
// the bytes); one opened after reads ErrRedacted, and, once a later entry
// stores the same bytes again, reads them.
func TestTailViewAcrossRedaction(t *testing.T) {
	o := newClockOpts()
	o.IndexBatch = 1000
	d, err := bolt.OpenDriver(filepath.Join(t.TempDir(), "l.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, &ledger.Options{Now: o.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 5 {
		tailAppend(t, l, handoff(i), "")
	}
	payload := []byte(`{"handoff_id":"h-0003"}`)
	sum := entry.Sum256(payload)
	before, err := d.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if _, err := l.Redact(context.Background(), 6, "pii"); err != nil { // entry 6 is handoff 3
		t.Fatal(err)
	}
	after, err := d.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	again := handoff(9)
	again.Payload = payload
	tailAppend(t, l, again, "")
	last, err := d.View(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer last.Close()
	for _, c := range []struct {
		name string
		v    ledger.View
		want string
	}{{"before the redaction", before, string(payload)}, {"after it", after, "redacted"}, {"after the bytes are stored again", last, string(payload)}} {
		data, err := c.v.Blob(sum)
		got := string(data)
		if errors.Is(err, ledger.ErrRedacted) {
			got = "redacted"
		} else if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("Blob in a view opened %s = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCheckTail: Check holds the entries beyond meta "indexed" to the
// absence of their decision index keys, and their blobs to being stored
// once; the intact ledger gives no finding.
func TestCheckTail(t *testing.T) {
	_, l := tailLedger(t, filepath.Join(t.TempDir(), "tail.db"), 1000)
	src := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.MustCheck(t, src)
	akey := func(s string, seq uint64) []byte {
		h := entry.Sum256([]byte(s))
		return append(h[:8:8], bolttest.SeqKey(seq)...)
	}
	own := entry.Sum256([]byte(`{"handoff_id":"h-0001"}`)) // handoff 1, entry 4
	tests := []struct {
		name   string
		tamper func(path string) error
		want   string
	}{
		{"idx_accepted-row-of-a-tail-entry", func(p string) error {
			return bolttest.InsertKey(p, "idx_accepted", akey("h-0001", 4), []byte{})
		}, ledger.FindAccepted},
		{"idx_idempotency-row-of-a-tail-entry", func(p string) error {
			return bolttest.InsertKey(p, "idx_idempotency", akey("k-0", 3), []byte{})
		}, ledger.FindAccepted},
		{"idx_blob-key-of-a-tail-blob", func(p string) error {
			return bolttest.InsertKey(p, "idx_blob", own[:], bolttest.SeqKey(4))
		}, ledger.FindIndexExtra},
		{"tail-blob-stored-twice", func(p string) error { // handoffs 7 (entry 10) and 14 (entry 17) name it
			return bolttest.InsertKey(p, "blobs", bolttest.SeqKey(17), []byte(`{"shared":7}`))
		}, ledger.FindBlobOrphan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tamperFinds(t, src, tt.tamper, tt.want) })
	}
}
