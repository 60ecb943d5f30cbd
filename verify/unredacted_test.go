package verify_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/verify"
)

// TestUnredacted: a redacted payload whose bytes a later entry stores
// again stays erased, and verify passes; when the store's record of the
// redaction is edited so that the redacted entry reads the later entry's
// bytes, verify names the redacted entry (kind unredacted).
func TestUnredacted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: "test.example/verify"})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"handoff_id":"x","secret":"s3cr3t"}`)
	red := bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "x", Source: "a", Target: "b", Payload: data}).Entry.Seq
	res, err := l.Redact(context.Background(), red, "erasure")
	if err != nil {
		t.Fatal(err)
	}
	rseq := res.Last().Entry.Seq
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "y", Source: "a", Target: "b", Payload: data})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	opts := verify.Options{SkipReevaluate: true}
	rep, err := verifyFile(t, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify of a resubmitted redacted payload: %+v", rep.Findings)
	}
	// The record of the redaction now says an earlier seq: the redacted
	// entry's payload reads the later entry's bytes.
	bad := bolttest.CopyFile(t, path)
	if err := bolttest.EditIndex(bad, bolttest.BucketRedacted, rseq, 1); err != nil {
		t.Fatal(err)
	}
	rep, err = verifyFile(t, bad, opts)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Kind == verify.KindUnredacted && f.Seq == red {
			found = true
		}
	}
	if !found {
		t.Errorf("verify of a payload readable again after its redaction: findings %+v, want %s at seq %d", rep.Findings, verify.KindUnredacted, red)
	}
}
