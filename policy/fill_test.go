package policy_test

import (
	"errors"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

func TestFillErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(in *policy.Input, d *policy.Decision)
		want error
	}{
		{"nil state", func(in *policy.Input, d *policy.Decision) { in.State = nil }, policy.ErrNoPolicy},
		{"nothing in force", func(in *policy.Input, d *policy.Decision) { in.State.(*fakeState).noPolicy = true }, policy.ErrNoPolicy},
		{"other manifest in force", func(in *policy.Input, d *policy.Decision) {
			in.State.(*fakeState).manifest = entry.Sum256([]byte("other manifest"))
		}, policy.ErrPolicyMismatch},
		{"size differs", func(in *policy.Input, d *policy.Decision) { in.PayloadSize++ }, policy.ErrPayloadMismatch},
		{"negative size", func(in *policy.Input, d *policy.Decision) { in.Payload, in.PayloadSize = nil, -1 }, policy.ErrPayloadMismatch},
		{"hash differs", func(in *policy.Input, d *policy.Decision) { in.PayloadSHA256[0] ^= 1 }, policy.ErrPayloadMismatch},
		{"decision edited", func(in *policy.Input, d *policy.Decision) { d.Decision = reason.Rejected }, policy.ErrDecisionMismatch},
		{"bad inputs", func(in *policy.Input, d *policy.Decision) { in.Inputs.Params.MaxAge = -1 }, policy.ErrInputs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, governed(t))
			d := policy.Decide(in)
			if d.Decision != reason.Accepted {
				t.Fatalf("base case %v", d.Reasons)
			}
			tc.edit(&in, d)
			e := &entry.Entry{V: entry.Version, Seq: 1, Time: entry.Time{Time: now}}
			if err := d.Fill(e, in); !errors.Is(err, tc.want) {
				t.Fatalf("Fill = %v, want %v", err, tc.want)
			}
			if e.Kind != "" || e.Reasons != nil {
				t.Errorf("Fill changed the entry on error: %+v", e)
			}
		})
	}
}

// TestFillNulls checks the entry's string fields: null where unknown or not
// valid UTF-8, and all null for a payload that was never parsed.
func TestFillNulls(t *testing.T) {
	in := input(t, []byte("x"))
	d := &policy.Decision{Decision: reason.Accepted, Reasons: nil, Record: &handoff.Record{
		Format: handoff.Skill, HandoffID: "", Source: handoff.AgentRef{ID: "ok"}, Target: handoff.AgentRef{ID: "bad\xff"}, WorkflowID: "w\xc0",
	}}
	e := &entry.Entry{V: entry.Version, Seq: 1, Time: entry.Time{Time: now}}
	if err := d.Fill(e, in); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Canonical(); err != nil {
		t.Fatalf("Canonical = %v", err)
	}
	if e.Format != entry.Str("skill/1") || e.Source != entry.Str("ok") || e.HandoffID != entry.Null() ||
		e.Target != entry.Null() || e.WorkflowID != entry.Null() {
		t.Errorf("fields = %v %v %v %v %v", e.Format, e.HandoffID, e.Source, e.Target, e.WorkflowID)
	}
	if e.Reasons == nil || *e.Reasons == nil || len(*e.Reasons) != 0 {
		t.Errorf("reasons = %v, want an empty list", e.Reasons)
	}

	in = input(t, nil)
	in.PayloadSize = 5 << 20
	in.Inputs.Params.MaxPayload = 1 << 20
	d = policy.Decide(in)
	e = &entry.Entry{V: entry.Version, Seq: 1, Time: entry.Time{Time: now}}
	if err := d.Fill(e, in); err != nil {
		t.Fatal(err)
	}
	if e.Format != entry.Null() || e.Source != entry.Null() || *e.PayloadSize != 5<<20 || e.Decision != reason.Rejected {
		t.Errorf("too large: %+v", e)
	}
	if err := e.Validate(); err != nil {
		t.Error(err)
	}
}
