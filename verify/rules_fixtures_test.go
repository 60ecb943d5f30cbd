package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
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

	// The fixture holds documents that today's rules refuse with a parse
	// cap: they verify only because each is decided by its own rules.
	capped := 0
	for line := range bytes.Lines(must(os.ReadFile(rules1Ledger))) {
		var l struct {
			Entry struct {
				Kind   string          `json:"kind"`
				Inputs json.RawMessage `json:"inputs"`
			} `json:"entry"`
			Payload []byte `json:"payload_b64"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatal(err)
		}
		if l.Entry.Kind != "handoff" || l.Payload == nil {
			continue
		}
		in, err := policy.ParseInputs(l.Entry.Inputs)
		if err != nil {
			t.Fatal(err)
		}
		if in.Rules != 0 {
			t.Fatalf("a rules-1 entry carries rules %d", in.Rules)
		}
		p := in.Params
		rec := handoff.Parse(l.Payload, handoff.Options{Format: p.Format, From: p.From, To: p.To, Rules: policy.CurrentRules})
		for _, f := range rec.Findings {
			if f.Code == reason.ParseLimit {
				capped++
				break
			}
		}
	}
	if capped < 4 {
		t.Errorf("%d fixture documents hit a parse cap under rules %d, want >= 4", capped, policy.CurrentRules)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
