package bolt_test

import (
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

var writeFormat6 = flag.String("write-format6", "", "with the format 6 driver: write testdata/format6.db.gz's file (gzipped) to this path")

// TestWriteFormat6Fixture wrote testdata/format6.db.gz when the driver's
// FormatVersion was 6 (run it with -write-format6 PATH at that commit): the
// format 5 fixture opened writable with IndexBatch 16 (upgraded to format
// 6), then 45 more handoffs, so that its last 13 entries are beyond meta
// "indexed": among them first acceptances, a handoff id accepted again,
// first uses and a reuse of idempotency keys, a payload stored once and
// named again, and a payload equal to one stored before the tail.
func TestWriteFormat6Fixture(t *testing.T) {
	if *writeFormat6 == "" {
		t.Skip("a generator, not a test: it wrote testdata/format6.db.gz with the format 6 driver; run it with -write-format6 PATH at that commit")
	}
	if bolt.FormatVersion != 6 {
		t.Fatalf("FormatVersion is %d: the fixture must be written by the format 6 driver", bolt.FormatVersion)
	}
	l, err := bolt.Open(format5Fixture(t), &bolt.Options{IndexBatch: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 45 {
		h := bolttest.Handoff{ID: fmt.Sprintf("tail-%02d", i), Source: "agent-1", Target: "agent-2", Workflow: "wf-tail", NoSnapshots: true}
		key := ""
		switch {
		case i%5 == 0:
			h.Payload = []byte(`{"tail":"shared"}`)
		case i == 41:
			h.ID = "tail-33" // accepted again
		case i == 42:
			h.ID = "h-0000" // accepted before the tail
		case i == 43:
			h.Payload = []byte(`{"handoff_id":"h-0007"}`) // stored before the tail
		}
		if i%3 == 0 {
			key = fmt.Sprintf("tail-idem-%d", i%9) // first uses, then reuses for other bytes would be refused: same bytes
			h.Payload = []byte(`{"tail":"idem ` + key + `"}`)
		}
		h.IdempotencyKey = key
		req := h.Build()
		if _, err := l.Append(t.Context(), req); err != nil {
			t.Fatalf("handoff %d: %v", i, err)
		}
	}
	path := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.MustCheck(t, path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(*writeFormat6)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
