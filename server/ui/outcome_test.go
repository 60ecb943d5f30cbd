package ui_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
)

// TestWorkflowPageOutcome: the workflow page lists an outcome among the
// workflow's entries ("outcome of entry N: AGENT STATUS after D ms") and
// the chain's edge of the handoff it follows says how the target finished.
func TestWorkflowPageOutcome(t *testing.T) {
	s := newSite(t, nil)
	// The first accepted handoff of the seeded workflow.
	var dec *entry.Entry
	for i := range s.ledger.entries {
		e := s.ledger.decoded(i)
		if e.Kind == entry.KindHandoff && e.Decision == "accepted" && e.WorkflowID.String() == s.seeded.workflow {
			dec = e
			break
		}
	}
	if dec == nil {
		t.Fatal("seed: no accepted handoff in the workflow")
	}
	dur := int64(4200)
	v := s.ledger.add(&entry.Entry{Kind: entry.KindOutcome, DecisionSeq: dec.Seq, Status: entry.StatusFailed, Agent: dec.Target.S,
		WorkflowID: dec.WorkflowID, DurationMS: &dur}, nil)
	var got struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(v.Entry, &got); err != nil || got.Kind != "outcome" {
		t.Fatalf("seeded outcome: %s %v", v.Entry, err)
	}
	c := s.client()
	c.login(pReader)
	a := c.get("/ui/workflows/" + url.PathEscape(s.seeded.workflow))
	if a.status != 200 {
		t.Fatalf("workflow page: %d", a.status)
	}
	want := "outcome of entry " + itoa(dec.Seq) + ": " + dec.Target.S + " failed after 4200 ms"
	if !strings.Contains(a.body, want) {
		t.Errorf("workflow page does not list the outcome %q", want)
	}
	if !strings.Contains(a.body, "entry "+itoa(dec.Seq)+": "+dec.Source.S+" -&gt; "+dec.Target.S+", accepted; the target finished: failed") {
		t.Errorf("the chain's edge of entry %d does not say how the target finished", dec.Seq)
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
