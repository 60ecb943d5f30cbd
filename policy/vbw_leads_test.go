package policy_test

import (
	"slices"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// vbwMessages are valid vbw/1 messages of seed 001, one per type.
var vbwMessages = map[string][]byte{
	"scout_findings":  []byte(`{"type":"scout_findings","domain":"tech-stack","documents":[{"name":"STACK.md","content":"x"}],"confidence":"high","confidence_rationale":"x"}`),
	"dev_progress":    []byte(`{"type":"dev_progress","task":"03-01/task-3","plan_id":"03-01","commit":"abc1234","status":"complete"}`),
	"dev_blocker":     []byte(`{"type":"dev_blocker","task":"03-02/task-1","plan_id":"03-02","blocker":"waiting","needs":"03-01 to complete first"}`),
	"qa_result":       []byte(`{"type":"qa_result","tier":"quick","result":"PASS","checks":{"passed":2,"failed":0,"total":2},"body":"## Checks"}`),
	"debugger_report": []byte(`{"type":"debugger_report","hypothesis":"race","evidence_for":["a"],"evidence_against":[],"confidence":"high","recommended_fix":"Add a mutex"}`),
}

// leadsRegistry is a Claude Code subagents folder whose files declare
// every vbw_role: each sender and each lead.
func leadsRegistry(t *testing.T) *manifest.Registry {
	t.Helper()
	var files []manifest.SkillFile
	for _, role := range manifest.VBWRoles {
		files = append(files, manifest.SkillFile{Path: role + ".md",
			Data: []byte("---\nname: " + role + "\ndescription: the " + role + "\nvbw_role: " + role + "\n---\nYou are the " + role + ".\n")})
	}
	reg, err := manifest.ParseSubagents(".claude/agents", files)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestVBWLeads: seed 001 names each message type's receiver. A message
// to another lead is ROLE_MISMATCH; "lead" is any lead.
func TestVBWLeads(t *testing.T) {
	reg := leadsRegistry(t)
	receivers := map[string][]string{ // seed 001, "Receiver:"
		"scout_findings":  {"map-lead"},                // Map Lead
		"dev_progress":    {"execute-lead"},            // Execute Lead
		"dev_blocker":     {"execute-lead"},            // Execute Lead
		"qa_result":       {"execute-lead", "qa-lead"}, // Lead (Execute or QA skill)
		"debugger_report": {"debug-lead"},              // Debug Lead
	}
	senders := map[string]string{"scout_findings": "scout", "dev_progress": "dev", "dev_blocker": "dev", "qa_result": "qa", "debugger_report": "debugger"}
	for typ, msg := range vbwMessages {
		for _, to := range []string{"map-lead", "execute-lead", "qa-lead", "debug-lead", "lead", "dev"} {
			t.Run(typ+"/to-"+to, func(t *testing.T) {
				in := input(t, msg)
				in.Registry, in.Lock = reg, lockOf(reg)
				in.State.(*fakeState).manifest = entry.Sum256(reg.Snapshot)
				in.Inputs.Params.From, in.Inputs.Params.To = senders[typ], to
				d := policy.Decide(in)
				var want []reason.Code
				if to != "lead" && !slices.Contains(receivers[typ], to) {
					want = []reason.Code{reason.RoleMismatch}
				}
				if got := reason.Codes(d.Reasons); !slices.Equal(got, want) {
					t.Fatalf("%s from %s to %s: codes = %v, want %v\n%+v", typ, senders[typ], to, got, want, d.Reasons)
				}
			})
		}
	}
}
