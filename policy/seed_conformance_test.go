package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// TestSeedGovernance holds the seed rules that need the registry, the lock
// or the ledger's state, one case per rule, each quoting its seed. (The
// format rules are handoff's TestSeed000Swarm ... TestSeed004Task.)
func TestSeedGovernance(t *testing.T) {
	skills := seedSkills(t)
	withSkills := func(in *policy.Input) {
		in.Registry, in.Lock = skills, lockOf(skills)
		in.State.(*fakeState).manifest = entry.Sum256(skills.Snapshot)
	}
	roles := func(in *policy.Input) {
		r := cloneRegistry(in.Registry)
		for id, role := range map[string]string{"domain-01-research": manifest.RoleScout, "domain-03-technical": manifest.RoleDev, "domain-02-analysis": manifest.RoleLead} {
			a, _ := r.Agent(id)
			a.VBWRole = role
		}
		in.Registry = r
	}
	from := func(src, dst string) func(*policy.Input) {
		return func(in *policy.Input) { in.Inputs.Params.From, in.Inputs.Params.To = src, dst }
	}
	both := func(fs ...func(*policy.Input)) func(*policy.Input) {
		return func(in *policy.Input) {
			for _, f := range fs {
				f(in)
			}
		}
	}
	withCategory := func(target, cat string) []byte {
		return []byte(strings.Replace(string(swarmDoc(target)), "    skill: "+target+"\n", "    skill: "+target+"\n    category: "+cat+"\n", 1))
	}
	scout := []byte(`{"type":"scout_findings","domain":"tech-stack","documents":[{"name":"STACK.md","content":"x"}],"confidence":"high","confidence_rationale":"x"}`)
	progress := []byte(`{"type":"dev_progress","task":"03-01/task-3","plan_id":"03-01","commit":"abc1234","status":"complete"}`)
	skillDoc := func(target string) []byte {
		return []byte(`handoff:
  version: "1.0"
  source_skill: lit-pm
  target_skill: ` + target + `
  timestamp: "2026-02-11T00:45:00Z"
  workflow_id: "workflow-abc123"
deliverable:
  type: document
  location: "docs/review.md"
  format: markdown
  summary: "Literature review covering eight key papers on the question, with gaps"
  checksum: "sha256:` + strings.Repeat("ab", 32) + `"
context:
  original_goal: "Review the literature"
  completed_skills: ["lit-pm"]
quality:
  completion_status: complete
  confidence: high
`)
	}
	prerelease := func(in *policy.Input) {
		r := cloneRegistry(in.Registry)
		a, _ := r.Agent("domain-05-product")
		a.Version = "1.1.0-rc.1"
		in.Registry = r
		in.Lock.Agents["domain-05-product"] = lockfile.Entry{AgentVersion: "1.1.0-rc.1", PromptPath: a.PromptPath, PromptHash: in.Lock.Agents["domain-05-product"].PromptHash}
	}

	cases := []struct {
		name, seed string
		payload    []byte
		edit       func(*policy.Input)
		want       []reason.Code
		blocks     []string
	}{
		// Seed 000.
		{"000/eligible-target", "accepts_handoff: true # REQUIRED: Must be true", swarmDoc("lit-pm"), withSkills, nil, nil},
		{"000/ineligible-target", "For a skill to appear as a handoff option, its SKILL.md must include handoff: frontmatter: accepts_handoff: true", swarmDoc("notes-keeper"), withSkills,
			[]reason.Code{reason.IneligibleTarget}, nil},
		{"000/ineligible-sender-may-send", "accepts_handoff: true # REQUIRED: Must be true (only for handoffs to the skill)", skillDoc("synthesizer"),
			func(in *policy.Input) {
				withSkills(in)
				in.Payload = []byte(strings.Replace(string(in.Payload), "source_skill: lit-pm", "source_skill: notes-keeper", 1))
			}, nil, nil},
		{"000/ineligible-target-any-format", "accepts_handoff: true # REQUIRED: Must be true", skillDoc("notes-keeper"), withSkills,
			[]reason.Code{reason.IneligibleTarget}, nil},
		{"000/target-exists", "Verify target skill still exists", swarmDoc("ghost-skill"), withSkills, []reason.Code{reason.UnknownAgent}, nil},
		{"000/requires-present", "requires: # Fields this skill needs in payload", swarmDoc("lit-pm"), withSkills, nil, nil},
		{"000/requires-missing", "requires: # Fields this skill needs in payload", []byte(strings.Replace(string(swarmDoc("researcher")), "    original_prompt: \"Should we build feature X?\"\n", "", 1)), withSkills,
			// original_prompt is also required by the format itself.
			[]reason.Code{reason.SchemaInvalid, reason.RequiresMissing}, nil},
		{"000/requires-optional-field", "requires: # Fields this skill needs in payload", swarmDoc("synthesizer"), withSkills,
			[]reason.Code{reason.RequiresMissing}, nil},
		{"000/category-of-target", "category: string # Primary category of selected skill", withCategory("lit-pm", "research"), withSkills, nil, nil},
		{"000/category-not-of-target", "category: string # Primary category of selected skill", withCategory("lit-pm", "analysis"), withSkills,
			[]reason.Code{reason.CategoryMismatch}, nil},
		{"000/category-exact-string", "Additional free-form categories are allowed and will be matched using exact string comparison.", withCategory("lit-pm", "Research"), withSkills,
			[]reason.Code{reason.CategoryMismatch}, nil},
		{"000/category-free-form", "Additional free-form categories are allowed and will be matched using exact string comparison.",
			[]byte(strings.Replace(string(withCategory("synthesizer", "meta-analysis")), "    problem_type: decision\n", "    problem_type: decision\n    synthesis_summary: \"Build it.\"\n", 1)), withSkills, nil, nil},
		// Seed 001.
		{"001/roles-not-declared", "**Sender:** Scout | **Receiver:** Map Lead (a registry without vbw_role does not check roles)", scout, from("domain-01-research", "domain-02-analysis"), nil, nil},
		{"001/scout-to-lead", "**Sender:** Scout | **Receiver:** Map Lead", scout, both(roles, from("domain-01-research", "domain-02-analysis")), nil, nil},
		{"001/dev-is-not-scout", "**Sender:** Scout | **Receiver:** Map Lead", scout, both(roles, from("domain-03-technical", "domain-02-analysis")),
			[]reason.Code{reason.RoleMismatch}, nil},
		{"001/receiver-is-a-lead", "**Sender:** Dev | **Receiver:** Execute Lead", progress, both(roles, from("domain-03-technical", "domain-01-research")),
			// domain-03-technical may not hand off to domain-01-research either.
			[]reason.Code{reason.BoundaryViolation, reason.RoleMismatch}, nil},
		// Seed 003.
		{"003/agents-exist", "Source and target agent IDs must exist in `prompt-manifest.json`", governed(t, "target_agent.agent_id", "domain-99-ghost"), nil,
			[]reason.Code{reason.UnknownAgent, reason.AttestationMismatch}, nil},
		{"003/hash-matches-lock", "Prompt hashes must match entries in `prompt-lock.json`", governed(t, "source_agent.prompt_hash", strings.Repeat("0", 64)), nil,
			[]reason.Code{reason.HashMismatch, reason.AttestationMismatch}, []string{"domain-05-product"}},
		{"003/hash-verification-mandatory", "Hash verification is mandatory - no exceptions", governed(t), func(in *policy.Input) { delete(in.Lock.Agents, "domain-02-analysis") },
			[]reason.Code{reason.HashMismatch, reason.AttestationMismatch}, nil},
		{"003/blocked-until-reconciled", "Block until hashes are reconciled", governed(t), func(in *policy.Input) { in.State.(*fakeState).blocked = map[string]uint64{"domain-05-product": 3} },
			[]reason.Code{reason.AgentBlocked, reason.AttestationMismatch}, nil},
		{"003/version-matches-registry", "\"agent_version\": \"semver string\"", governed(t, "source_agent.agent_version", "1.0.1"), nil,
			[]reason.Code{reason.VersionMismatch, reason.AttestationMismatch}, nil},
		{"003/prerelease-agrees-with-manifest", "Agent versions must be valid semver", governed(t, "source_agent.agent_version", "1.1.0-rc.1"), prerelease, nil, nil},
		{"003/type-matches-registry", "\"agent_type\": \"domain | archetype | orchestrator\"", governed(t, "source_agent.agent_type", "archetype"), nil,
			[]reason.Code{reason.TypeMismatch, reason.AttestationMismatch}, nil},
		{"003/boundaries", "Source agent must be handing off within allowed collaboration boundaries", governed(t,
			"source_agent", agentRef("domain-04-content"), "target_agent", agentRef("domain-05-product")), nil,
			[]reason.Code{reason.BoundaryViolation, reason.AttestationMismatch}, nil},
		{"003/target-within-scope", "Target agent must be within scope of request", governed(t,
			"source_agent", agentRef("domain-01-research"), "target_agent", agentRef("domain-04-content")), nil,
			[]reason.Code{reason.InvalidRequestType, reason.AttestationMismatch}, nil},
		{"003/attestation-is-checked", "Include governance attestation", governed(t, "governance.composition_valid", false), nil,
			[]reason.Code{reason.AttestationMismatch}, nil},
		{"003/replay", "Timestamps must be authentic - prevent replay attacks", governed(t), func(in *policy.Input) {
			in.State.(*fakeState).accepted = map[string]accepted{handoffID: {seq: 4, payload: in.PayloadSHA256}}
		}, []reason.Code{reason.Replay}, nil},
		{"003/replay-upper-case-id", "\"handoff_id\": \"string (UUID v4)\" (one UUID in either case is one handoff)", governed(t, "handoff_id", strings.ToUpper(handoffID)), func(in *policy.Input) {
			in.State.(*fakeState).accepted = map[string]accepted{handoffID: {seq: 4, payload: entry.Sum256([]byte("first"))}}
		}, []reason.Code{reason.IDConflict}, nil},
		{"003/clock-skew", "Timestamps must be authentic", governed(t, "timestamp", now.Add(10*60e9).Format("2006-01-02T15:04:05Z07:00")), nil,
			[]reason.Code{reason.ClockSkew}, nil},
		{"003/big-number-still-attributed", "Record timestamp and handoff ID", []byte(strings.Replace(string(governed(t)), `"hypothesis":"Users want feature X"`, `"hypothesis":9007199254740993`, 1)), nil,
			[]reason.Code{reason.Unparseable}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, tc.payload)
			if tc.edit != nil {
				tc.edit(&in)
			}
			in.PayloadSize, in.PayloadSHA256 = int64(len(in.Payload)), entry.Sum256(in.Payload)
			d := policy.Decide(in)
			got := slices.Compact(reason.Codes(d.Reasons))
			if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Fatalf("codes = %v, want %v (seed: %q)\n%+v", got, tc.want, tc.seed, d.Reasons)
			}
			if !slices.Equal(d.Blocks, tc.blocks) {
				t.Errorf("blocks = %v, want %v", d.Blocks, tc.blocks)
			}
			checkFill(t, d, in)
			if strings.HasSuffix(tc.name, "big-number-still-attributed") &&
				(d.Record.Source.ID != "domain-05-product" || d.Record.Target.ID != "domain-02-analysis" || d.Record.HandoffID != handoffID) {
				t.Errorf("a document refused for a big number must keep its agents and id: %+v", d.Record)
			}
		})
	}
}

// seedSkills is a skills registry read from SKILL.md files (seed 000's
// metadata): lit-pm (research, requires original_prompt and problem_type),
// researcher (requires original_prompt), synthesizer (free-form category
// meta-analysis, requires an optional field), perspective-swarm, and
// notes-keeper, which does not accept handoffs.
func seedSkills(t *testing.T) *manifest.Registry {
	t.Helper()
	skill := func(name, block string) manifest.SkillFile {
		return manifest.SkillFile{Path: name + "/SKILL.md", Data: []byte("---\nname: " + name + "\nhandoff:\n" + block + "---\n\n# " + name + "\n")}
	}
	reg, err := manifest.ParseSkills("skills", []manifest.SkillFile{
		skill("lit-pm", "  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: Literature review\n  requires:\n    - context.original_prompt\n    - context.problem_type\n"),
		skill("researcher", "  accepts_handoff: true\n  handoff_categories: [research, analysis]\n  handoff_description: Deep investigation\n  requires: [context.original_prompt]\n"),
		skill("synthesizer", "  accepts_handoff: true\n  handoff_categories: [meta-analysis]\n  handoff_description: Synthesis\n  requires: [context.synthesis_summary]\n"),
		skill("perspective-swarm", "  accepts_handoff: true\n  handoff_categories: [creative]\n  handoff_description: Perspectives\n"),
		skill("notes-keeper", "  accepts_handoff: false\n"),
	})
	if err != nil {
		t.Fatalf("a skills folder with accepts_handoff: false must load: %v", err)
	}
	return reg
}

func lockOf(r *manifest.Registry) *lockfile.Lock {
	l := &lockfile.Lock{Version: 1, Agents: map[string]lockfile.Entry{}}
	for _, a := range r.Agents {
		l.Agents[a.ID] = lockfile.Entry{AgentVersion: a.Version, PromptPath: a.PromptPath, PromptHash: lockfile.FormatDigest(entry.Sum256([]byte(a.ID)))}
	}
	return l
}
