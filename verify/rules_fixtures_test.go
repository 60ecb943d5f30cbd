package verify_test

import (
	"context"
	"os"
	"testing"

	"github.com/govledger/govledger/verify"
)

// rules1Ledger is a ledger recorded by the release before decisions
// carried a rules version (testdata/ledgers/rules1/gen.sh), with hostile
// documents that later rules refuse with a parse cap.
const rules1Ledger = "../testdata/ledgers/rules1/ledger.jsonl"

// TestRules1Fixtures verifies a ledger written by an earlier release, kept
// as a fixture: every decision in it must be taken again identically by
// today's code under the rules it was recorded with.
func TestRules1Fixtures(t *testing.T) {
	f, err := os.Open(rules1Ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := verify.Replay(context.Background(), verify.ExportSource(f), verify.Options{})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if rep.Entries < 29 {
		t.Fatalf("%d entries replayed, want >= 29", rep.Entries)
	}
	for _, fd := range rep.Findings {
		if fd.Warning() {
			t.Logf("warning: %v", fd)
			continue
		}
		t.Errorf("finding: %v", fd)
	}
	if rep.FirstBad != 0 {
		t.Errorf("FirstBad = %d, want 0", rep.FirstBad)
	}
}
