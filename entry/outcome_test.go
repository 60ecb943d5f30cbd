package entry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

// TestValidateOutcome holds Validate to exactly the fields of an outcome
// entry: each case breaks one rule of the kind.
func TestValidateOutcome(t *testing.T) {
	h := entry.Hash{1}
	n := func(v int64) *int64 { return &v }
	good := func() *entry.Entry {
		return &entry.Entry{V: 1, Seq: 9, Time: entry.Time{Time: time.Unix(1, 0).UTC()}, Kind: entry.KindOutcome,
			DecisionSeq: 6, Status: entry.StatusCancelled, Agent: "b", WorkflowID: entry.Str("w")}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("Validate(minimal outcome) = %v, want nil", err)
	}
	full := good()
	full.OutputSHA256, full.DurationMS, full.Submitter, full.IdempotencyKey = &h, n(0), "ci", "k"
	if err := full.Validate(); err != nil {
		t.Fatalf("Validate(full outcome) = %v, want nil", err)
	}
	for _, c := range []struct {
		name string
		edit func(e *entry.Entry)
		want string
	}{
		{"no decision_seq", func(e *entry.Entry) { e.DecisionSeq = 0 }, "needs decision_seq"},
		{"no status", func(e *entry.Entry) { e.Status = "" }, "needs decision_seq"},
		{"no agent", func(e *entry.Entry) { e.Agent = "" }, "needs decision_seq"},
		{"no workflow_id", func(e *entry.Entry) { e.WorkflowID = entry.NullString{} }, "needs decision_seq"},
		{"unknown status", func(e *entry.Entry) { e.Status = "done" }, `status "done"`},
		{"decision is itself", func(e *entry.Entry) { e.DecisionSeq = 9 }, "not an earlier entry"},
		{"decision is later", func(e *entry.Entry) { e.DecisionSeq = 10 }, "not an earlier entry"},
		{"negative duration", func(e *entry.Entry) { e.DurationMS = n(-1) }, "negative duration_ms"},
		{"huge duration", func(e *entry.Entry) { e.DurationMS = n(1 << 53) }, "beyond 2^53-1"},
		{"huge decision_seq", func(e *entry.Entry) { e.DecisionSeq = 1 << 53 }, "decision_seq out of range"},
		{"a handoff field", func(e *entry.Entry) { e.Target = entry.Str("b") }, "fields of another kind"},
		{"a payload", func(e *entry.Entry) { e.PayloadSHA256 = &h }, "fields of another kind"},
		{"a note", func(e *entry.Entry) { e.Note = "x" }, "fields of another kind"},
		{"a snapshot field", func(e *entry.Entry) { e.What = entry.SnapshotLock }, "fields of another kind"},
	} {
		e := good()
		c.edit(e)
		err := e.Validate()
		if !errors.Is(err, entry.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want ErrMalformed with %q", c.name, err, c.want)
		}
	}
	// Outcome fields on other kinds.
	rs := []reason.Reason{}
	handoff := &entry.Entry{V: 1, Seq: 3, Time: entry.Time{Time: time.Unix(1, 0).UTC()}, Kind: entry.KindHandoff,
		Format: entry.Null(), Decision: reason.Accepted, Reasons: &rs, HandoffID: entry.Null(), Source: entry.Null(),
		Target: entry.Null(), WorkflowID: entry.Null(), PayloadSHA256: &h, PayloadSize: n(1), ManifestSHA256: &h, LockSHA256: &h}
	if err := handoff.Validate(); err != nil {
		t.Fatalf("Validate(handoff) = %v", err)
	}
	for _, edit := range []func(e *entry.Entry){
		func(e *entry.Entry) { e.Status = entry.StatusSucceeded },
		func(e *entry.Entry) { e.DecisionSeq = 1 },
		func(e *entry.Entry) { e.OutputSHA256 = &h },
		func(e *entry.Entry) { e.DurationMS = n(1) },
	} {
		e := *handoff
		edit(&e)
		if err := e.Validate(); !errors.Is(err, entry.ErrMalformed) {
			t.Errorf("handoff with an outcome field: Validate = %v, want ErrMalformed", err)
		}
		u := entry.Entry{V: 1, Seq: 3, Time: handoff.Time, Kind: entry.KindUnblock, Agent: "a", Note: "n"}
		edit(&u)
		if err := u.Validate(); !errors.Is(err, entry.ErrMalformed) {
			t.Errorf("unblock with an outcome field: Validate = %v, want ErrMalformed", err)
		}
	}
}
