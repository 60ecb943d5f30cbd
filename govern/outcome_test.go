package govern_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/govern/governtest"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
)

func openLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := bolt.Open(filepath.Join(t.TempDir(), "l.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestRecordWorkflow: governed/1 carries no workflow id, so the request's
// is recorded (the document unchanged); a document that carries one keeps
// it, and a request naming another is refused with nothing written. verify
// accepts both entries.
func TestRecordWorkflow(t *testing.T) {
	cfg := governtest.Config(t)
	l := openLedger(t)
	ctx := context.Background()

	p := governtest.Handoff(t, "11111111-1111-4111-8111-000000000001")
	c := *cfg
	c.WorkflowID = "run-42"
	out, err := govern.Record(ctx, l, &c, "gov", p)
	if err != nil {
		t.Fatal(err)
	}
	e := out.Entry().Entry
	if e.Decision != "accepted" || e.WorkflowID != entry.Str("run-42") || *e.PayloadSHA256 != p.SHA256 {
		t.Errorf("governed/1 with --workflow run-42: workflow_id %v, payload %s; want run-42 and the bytes as sent", e.WorkflowID, e.PayloadSHA256)
	}
	plain := governtest.Record(t, l, cfg, "gov2", governtest.Handoff(t, "11111111-1111-4111-8111-000000000002")).Entry().Entry
	if plain.WorkflowID.Valid {
		t.Errorf("governed/1 without a workflow: workflow_id %v, want null", plain.WorkflowID)
	}

	// A task/1 document names its own workflow.
	vbw := governtest.Document(t, "10-task-handoff.md")
	own := governtest.Record(t, l, cfg, "vbw", vbw).Entry().Entry
	if !own.WorkflowID.Valid {
		t.Fatalf("task/1 fixture has no workflow id: %+v", own)
	}
	c.WorkflowID = own.WorkflowID.S
	if _, err := govern.Record(ctx, l, &c, "vbw same", vbw); err != nil {
		t.Errorf("task/1 with its own workflow id as --workflow: %v", err)
	}
	head := headSeq(t, l)
	c.WorkflowID = "another"
	_, err = govern.Record(ctx, l, &c, "vbw other", vbw)
	var wm *govern.WorkflowMismatchError
	if !errors.As(err, &wm) || !errors.Is(err, govern.ErrWorkflowMismatch) || wm.Document != own.WorkflowID.S {
		t.Errorf("task/1 with --workflow another: %v, want a WorkflowMismatchError", err)
	}
	if headSeq(t, l) != head {
		t.Errorf("a refused workflow wrote entries: head %d -> %d", head, headSeq(t, l))
	}
	mustVerify(t, l)
}

func TestCheckWorkflowID(t *testing.T) {
	for id, ok := range map[string]bool{"run-1": true, "ü/ß 7": true, "": false, "a\nb": false, "\xff": false,
		string(make([]byte, 257)): false} {
		if err := govern.CheckWorkflowID(id); (err == nil) != ok {
			t.Errorf("CheckWorkflowID(%q) = %v, want ok %t", id, err, ok)
		}
	}
}

// TestRecordOutcome: an outcome takes the handoff's target and workflow;
// a rejected or missing decision and a second outcome are refused; the
// same key and fields replay, the same key with other fields conflicts.
func TestRecordOutcome(t *testing.T) {
	cfg := governtest.Config(t)
	cfg.WorkflowID = "run-9"
	l := openLedger(t)
	ctx := context.Background()
	acc := governtest.Record(t, l, cfg, "acc", governtest.Handoff(t, "11111111-1111-4111-8111-000000000003")).Entry().Entry
	rej := governtest.Record(t, l, cfg, "rej", governtest.Document(t, "07-rogue-agent.json")).Entry().Entry
	if rej.Decision != "rejected" {
		t.Fatalf("fixture 07 is %s", rej.Decision)
	}
	dur := int64(1500)
	out := entry.Hash{7}
	req := govern.OutcomeRequest{DecisionSeq: acc.Seq, Status: entry.StatusSucceeded, OutputSHA256: &out, DurationMS: &dur,
		Submitter: "ci", IdempotencyKey: "ci/k1"}
	var asked string
	req.Allow = func(agent string) error { asked = agent; return nil }
	res, err := govern.RecordOutcome(ctx, l, req)
	if err != nil {
		t.Fatal(err)
	}
	e := res.Entry
	if e.Kind != entry.KindOutcome || e.Agent != acc.Target.S || e.WorkflowID != entry.Str("run-9") || asked != acc.Target.S ||
		e.DecisionSeq != acc.Seq || *e.DurationMS != 1500 || *e.OutputSHA256 != out || res.Replayed {
		t.Errorf("outcome %+v (asked %q), want agent %s, workflow run-9", e, asked, acc.Target.S)
	}
	again, err := govern.RecordOutcome(ctx, l, req)
	if err != nil || !again.Replayed || again.Entry.Seq != e.Seq {
		t.Errorf("same key, same outcome: %+v, %v; want the first answer replayed", again, err)
	}
	other := req
	other.Status = entry.StatusFailed
	if _, err := govern.RecordOutcome(ctx, l, other); !errors.Is(err, govern.ErrIdempotencyConflict) {
		t.Errorf("same key, other status: %v, want ErrIdempotencyConflict", err)
	}
	for name, r := range map[string]govern.OutcomeRequest{
		"second outcome": {DecisionSeq: acc.Seq, Status: entry.StatusFailed},
		"other key":      {DecisionSeq: acc.Seq, Status: entry.StatusSucceeded, IdempotencyKey: "ci/k2"},
		"rejected":       {DecisionSeq: rej.Seq, Status: entry.StatusFailed},
		"missing":        {DecisionSeq: 999, Status: entry.StatusFailed},
		"snapshot":       {DecisionSeq: 1, Status: entry.StatusFailed},
	} {
		head := headSeq(t, l)
		if _, err := govern.RecordOutcome(ctx, l, r); !errors.Is(err, ledger.ErrOutcomeRefused) {
			t.Errorf("%s: %v, want ErrOutcomeRefused", name, err)
		}
		if headSeq(t, l) != head {
			t.Errorf("%s: written", name)
		}
	}
	deny := errors.New("no")
	if _, err := govern.RecordOutcome(ctx, l, govern.OutcomeRequest{DecisionSeq: acc.Seq, Status: "succeeded",
		Allow: func(string) error { return deny }}); !errors.Is(err, deny) {
		t.Errorf("Allow refusing: %v", err)
	}
	if _, err := govern.RecordOutcome(ctx, l, govern.OutcomeRequest{DecisionSeq: acc.Seq, Status: "done"}); !errors.Is(err, entry.ErrMalformed) {
		t.Errorf("status done: %v, want ErrMalformed", err)
	}
	mustVerify(t, l)
}

func headSeq(t *testing.T, l *ledger.Ledger) uint64 {
	t.Helper()
	seq, _, err := l.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}
