package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger/bolt"
)

// TestRecordWorkflowTrace: record --workflow puts a governed/1 handoff
// (which carries no workflow id) in a workflow, unchanged; a workflow that
// contradicts a document's own is refused (exit 2, nothing appended); trace
// shows the handoff and its outcome side by side, log and show list the
// outcome, and verify accepts it all.
func TestRecordWorkflowTrace(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	doc1, doc2 := e.handoffDoc(1), e.handoffDoc(2)
	if code, out, stderr := e.run("", "record", "--workflow", "run-7", doc1, doc2); code != 0 || !strings.Contains(out, "ACCEPTED") {
		t.Fatalf("record --workflow: exit %d\n%s%s", code, out, stderr)
	}
	es := e.entries()
	if len(es) != 4 || es[2].WorkflowID != entry.Str("run-7") || es[3].WorkflowID != entry.Str("run-7") {
		t.Fatalf("entries: %d, workflow ids %v %v; want both handoffs in run-7", len(es), es[2].WorkflowID, es[3].WorkflowID)
	}
	task := e.doc("10-task-handoff.md") // its own workflow is 014
	code, out, _ := e.run("", "record", "--from", "domain-03-technical", "--to", "domain-02-analysis", "--workflow", "run-7", task)
	if code != exitUsage || !strings.Contains(out, "014") || len(e.entries()) != 4 {
		t.Errorf("task/1 (workflow 014) with --workflow run-7: exit %d, %d entries\n%s; want 2, refused, nothing appended", code, len(e.entries()), out)
	}
	if code, _, stderr := e.run("", "record", "--workflow", "a\x01b", doc1); code != exitUsage || !strings.Contains(stderr, "control character") {
		t.Errorf("--workflow with a control character: exit %d %s", code, stderr)
	}

	// A stream line names its workflow.
	doc3, err := os.ReadFile(e.handoffDoc(3))
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]string{"document": string(doc3), "workflow": "run-8"})
	if code, out, stderr := e.run(string(line)+"\n", "record", "-"); code != 0 {
		t.Fatalf("record - with a workflow line: exit %d\n%s%s", code, out, stderr)
	}
	if es := e.entries(); es[len(es)-1].WorkflowID != entry.Str("run-8") {
		t.Errorf("stream line with workflow run-8: entry workflow_id %v", es[len(es)-1].WorkflowID)
	}
	// The target finished the first handoff.
	l, err := bolt.Open(filepath.Join(e.dir, "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dur := int64(1500)
	if _, err := govern.RecordOutcome(context.Background(), l, govern.OutcomeRequest{DecisionSeq: 3, Status: entry.StatusSucceeded,
		DurationMS: &dur, Submitter: "target"}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	code, out, _ = e.run("", "trace", "run-7")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "2 handoffs, 1 outcome") ||
		!strings.Contains(lines[1], "=> succeeded (seq 6, 1500 ms)") || strings.Contains(lines[2], "=>") {
		t.Errorf("trace run-7: exit %d\n%s\nwant the first handoff with its outcome beside it, the second without", code, out)
	}
	code, out, _ = e.run("", "--output", "json", "trace", "run-7")
	var tr traceResult
	if err := json.Unmarshal([]byte(out), &tr); code != 0 || err != nil || len(tr.Steps) != 3 || tr.Steps[0].Outcome == nil ||
		*tr.Steps[0].Outcome != (outcomeView{Seq: 6, Status: "succeeded", DurationMS: tr.Steps[0].Outcome.DurationMS}) ||
		*tr.Steps[0].Outcome.DurationMS != 1500 || tr.Steps[1].Outcome != nil || tr.Steps[2].Kind != "outcome" || tr.Steps[2].DecisionSeq != 3 {
		t.Errorf("trace -o json: exit %d, %v\n%s", code, err, out)
	}
	code, out, _ = e.run("", "log", "--kind", "outcome")
	if code != 0 || !strings.Contains(out, "succeeded outcome") || !strings.Contains(out, "finished seq 3, 1500 ms") {
		t.Errorf("log --kind outcome: exit %d\n%s", code, out)
	}
	code, out, _ = e.run("", "show", "6")
	if code != 0 || !strings.Contains(out, `"kind":"outcome"`) || !strings.Contains(out, `"decision_seq":3`) {
		t.Errorf("show 6: exit %d\n%s", code, out)
	}
	if code, out, _ := e.run("", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
}
