package handoff_test

import (
	"fmt"

	"github.com/govledger/govledger/handoff"
)

func ExampleParse() {
	doc := []byte(`{"type": "qa_result", "tier": "quick", "result": "PASS",
  "checks": {"passed": 3, "failed": 1, "total": 4}, "body": "ok"}`)
	rec := handoff.Parse(doc, handoff.Options{From: "domain-03-technical", To: "domain-02-analysis"})
	fmt.Println(rec.Format, rec.Source.ID, "->", rec.Target.ID)
	for _, r := range rec.Findings {
		fmt.Println(r.Code, r.Severity, r.Message)
	}
	// Output:
	// vbw/1 domain-03-technical -> domain-02-analysis
	// COUNTS_INCONSISTENT error 1:50: result: result PASS with a non-zero checks.failed
}

func ExampleDetect() {
	_, _, err := handoff.Detect([]byte("# Notes\n\nnothing structured here\n"))
	fmt.Println(err)
	// Output:
	// no handoff format matched (considered: governed/1: not a JSON object; vbw/1: not a JSON object; a2a/1: not a JSON object; swarm/2: no top-level YAML "handoff" mapping; skill/1: no top-level YAML "handoff" mapping; task/1: no "## Handoff" heading outside code fences)
}
