package verify_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/verify"
)

// TestOutcomeLinks: an outcome must follow an accepted handoff (baseChain:
// seq 3, 6 and 9 accepted, 4 rejected, 5 an unblock; target b, workflow
// null), name its target and workflow, and be its only outcome. Each bad
// link is a finding of kind outcome at the outcome's seq, from a ledger
// source and from its export.
func TestOutcomeLinks(t *testing.T) {
	out := func(decision uint64, agent string, wf entry.NullString) *entry.Entry {
		return &entry.Entry{Kind: entry.KindOutcome, DecisionSeq: decision, Status: entry.StatusSucceeded, Agent: agent, WorkflowID: wf}
	}
	for _, c := range []struct {
		name     string
		outcomes []*entry.Entry
		kinds    string
		got      string // in the first finding's Got
	}{
		{"linked", []*entry.Entry{out(6, "b", entry.Null()), out(9, "b", entry.Null())}, "", ""},
		{"rejected decision", []*entry.Entry{out(4, "b", entry.Null())}, "10:outcome", "a rejected handoff or another kind"},
		{"not a handoff", []*entry.Entry{out(5, "b", entry.Null())}, "10:outcome", ""},
		{"snapshot", []*entry.Entry{out(1, "b", entry.Null())}, "10:outcome", ""},
		{"second outcome", []*entry.Entry{out(6, "b", entry.Null()), out(9, "b", entry.Null()), out(6, "b", entry.Null())}, "12:outcome", "also seq 10"},
		{"other agent", []*entry.Entry{out(6, "a", entry.Null())}, "10:outcome", `agent "a"`},
		{"other workflow", []*entry.Entry{out(6, "b", entry.Str("w"))}, "10:outcome", `workflow_id "w"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := baseChain(t)
			for _, o := range c.outcomes {
				ch.add(o, nil)
			}
			exp := exportOf(t, ch.src)
			for _, src := range []struct {
				name string
				s    verify.Source
			}{{"ledger", ch.src}, {"export", verify.ExportSource(strings.NewReader(string(exp)))}, {"rereading", verify.Rereading(ch.src, ch.src.entry)}} {
				rep, err := verify.Replay(t.Context(), src.s, noReeval)
				if err != nil {
					t.Fatal(err)
				}
				var kinds []string
				for _, f := range rep.Findings {
					kinds = append(kinds, fmt.Sprintf("%d:%s", f.Seq, f.Kind))
				}
				if got := strings.Join(kinds, " "); got != c.kinds {
					t.Errorf("%s: findings %q, want %q\n%v", src.name, got, c.kinds, rep.Findings)
				}
				if c.got != "" && src.name != "export" && (len(rep.Findings) == 0 || !strings.Contains(rep.Findings[0].Got, c.got)) {
					t.Errorf("%s: %v, want Got with %q", src.name, rep.Findings, c.got)
				}
				if c.kinds == "" && rep.Counts[entry.KindOutcome] != len(c.outcomes) {
					t.Errorf("%s: Counts[outcome] = %d, want %d", src.name, rep.Counts[entry.KindOutcome], len(c.outcomes))
				}
			}
		})
	}
}
