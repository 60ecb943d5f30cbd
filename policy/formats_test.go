package policy_test

import (
	"slices"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// skillsRegistry is an in-memory registry loaded from skills (seed 000):
// perspective-swarm hands off to any eligible skill.
func skillsRegistry() (*manifest.Registry, *lockfile.Lock) {
	r := &manifest.Registry{FromSkills: true, Agents: []manifest.Agent{
		{ID: "lit-pm", Type: "domain", Version: "1.0.0", PromptPath: "lit-pm/SKILL.md", AcceptsHandoff: true, HandoffCategories: []string{"research"}},
		{ID: "perspective-swarm", Type: "domain", Version: "2.0.0", PromptPath: "perspective-swarm/SKILL.md"},
		{ID: "statistician", Type: "domain", Version: "1.0.0", PromptPath: "statistician/SKILL.md"},
	}}
	l := &lockfile.Lock{Version: 1, Agents: map[string]lockfile.Entry{}}
	for _, a := range r.Agents {
		l.Agents[a.ID] = lockfile.Entry{AgentVersion: a.Version, PromptPath: a.PromptPath, PromptHash: lockfile.FormatDigest(entry.Sum256([]byte(a.ID)))}
	}
	return r, l
}

func swarmDoc(target string) []byte {
	return []byte(`handoff:
  version: "2.0"
  timestamp: "2026-02-11T00:45:00Z"
  source:
    skill: perspective-swarm
    workflow_id: swarm-001
    session_path: sessions/swarm-001
  target:
    skill: ` + target + `
  context:
    original_prompt: "Should we build feature X?"
    problem_type: decision
`)
}

func TestDecideFormats(t *testing.T) {
	cases := []struct {
		name    string
		payload []byte
		skills  bool
		from    string
		to      string
		want    []reason.Code
	}{
		{name: "swarm to eligible skill", payload: swarmDoc("lit-pm"), skills: true},
		{name: "swarm to ineligible skill", payload: swarmDoc("statistician"), skills: true,
			want: []reason.Code{reason.IneligibleTarget}},
		{name: "swarm to unknown skill", payload: swarmDoc("ghost"), skills: true,
			want: []reason.Code{reason.UnknownAgent}},
		{name: "swarm with a manifest registry", payload: swarmDoc("domain-02-analysis"),
			want: []reason.Code{reason.UnknownAgent}},
		{name: "vbw within boundaries", payload: []byte(`{"type":"scout_findings","domain":"tech-stack","documents":[{"name":"STACK.md","content":"x"}],"confidence":"high","confidence_rationale":"x"}`),
			from: "domain-01-research", to: "domain-02-analysis"},
		{name: "vbw outside boundaries", payload: []byte(`{"type":"scout_findings","domain":"tech-stack","documents":[{"name":"STACK.md","content":"x"}],"confidence":"high","confidence_rationale":"x"}`),
			from: "domain-02-analysis", to: "domain-01-research", want: []reason.Code{reason.BoundaryViolation}},
		{name: "vbw unknown --from", payload: []byte(`{"type":"scout_findings","domain":"tech-stack","documents":[{"name":"STACK.md","content":"x"}],"confidence":"high","confidence_rationale":"x"}`),
			from: "domain-77-x", to: "domain-02-analysis", want: []reason.Code{reason.UnknownAgent}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, tc.payload)
			if tc.skills {
				in.Registry, in.Lock = skillsRegistry()
			}
			in.Inputs.Params.From, in.Inputs.Params.To = tc.from, tc.to
			d := policy.Decide(in)
			if got := reason.Codes(d.Reasons); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Fatalf("codes = %v, want %v\n%+v", got, tc.want, d.Reasons)
			}
			in.Registry.Snapshot = nil
			checkFill(t, d, in)
		})
	}
}
