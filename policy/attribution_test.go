package policy_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// TestAttribution checks who a HASH_MISMATCH blocks. A source's wrong hash
// for itself blocks the source; a wrong hash quoted for the target blocks
// the target only when the handoff is attributable: the source is
// registered, within its boundaries, not blocked, and quotes its own prompt
// hash as locked. Otherwise the handoff is still rejected (HASH_MISMATCH,
// error) and the message says why nobody was blocked.
func TestAttribution(t *testing.T) {
	wrong := strings.Repeat("b", 64)
	// every case quotes a wrong hash for the target and does not claim the
	// target verified (that claim would add an ATTESTATION_MISMATCH)
	doc := func(edits ...any) []byte {
		return governed(t, append([]any{"target_agent.prompt_hash", wrong, "governance.target_agent_verified", false}, edits...)...)
	}
	blockState := func(ids ...string) func(in *policy.Input) {
		return func(in *policy.Input) {
			st := in.State.(*fakeState)
			st.blocked = map[string]uint64{}
			for i, id := range ids {
				st.blocked[id] = uint64(7 + i)
			}
		}
	}
	const noBlock = "so no block is applied"
	crit, errs := reason.Critical, reason.Error
	cases := []decideCase{
		// Attributable: the target is blocked.
		{name: "attributable: registered, in bounds, own hash as locked", payload: doc(),
			want: []reason.Code{reason.HashMismatch}, sevs: []reason.Severity{crit},
			blocks: []string{"domain-02-analysis"},
			msgs:   []string{`differs from the lock, which pins target agent "domain-02-analysis"`, "the agent is blocked"}},
		{name: "attributable: source hash with sha256 prefix", payload: doc(
			"source_agent.prompt_hash", "sha256:"+example["domain-05-product"].hash),
			want: []reason.Code{reason.HashMismatch}, sevs: []reason.Severity{crit}, blocks: []string{"domain-02-analysis"}},
		{name: "attributable: orchestrator to anyone", payload: doc(
			"source_agent", agentRef("orchestrator"), "target_agent", agentRef("domain-06-security"),
			"target_agent.prompt_hash", wrong),
			want: []reason.Code{reason.HashMismatch}, sevs: []reason.Severity{crit}, blocks: []string{"domain-06-security"}},
		{name: "attributable: archetype to its composition domain", payload: doc(
			"source_agent", agentRef("archetype-product-thinker"), "target_agent", agentRef("domain-03-technical"),
			"target_agent.prompt_hash", wrong),
			want: []reason.Code{reason.HashMismatch}, sevs: []reason.Severity{crit}, blocks: []string{"domain-03-technical"}},
		{name: "attributable: empty ledger", payload: doc(), edit: func(in *policy.Input) { in.State = nil },
			want: []reason.Code{reason.HashMismatch}, sevs: []reason.Severity{crit}, blocks: []string{"domain-02-analysis"}},
		{name: "attributable: another agent is blocked", payload: doc(), edit: blockState("domain-01-research"),
			want: []reason.Code{reason.HashMismatch}, sevs: []reason.Severity{crit}, blocks: []string{"domain-02-analysis"}},
		{name: "attributable: the target is already blocked", payload: doc(), edit: blockState("domain-02-analysis"),
			want: []reason.Code{reason.HashMismatch, reason.AgentBlocked}, sevs: []reason.Severity{crit, errs},
			blocks: []string{"domain-02-analysis"}},

		// Not attributable: rejected, nobody blocked.
		{name: "unregistered source", payload: doc(
			"source_agent.agent_id", "domain-99-ghost", "governance.source_agent_verified", false),
			want: []reason.Code{reason.UnknownAgent, reason.HashMismatch}, sevs: []reason.Severity{errs, errs},
			msgs: []string{`not attributable (the source agent is not in the registry), ` + noBlock}},
		{name: "source id not canonical", payload: doc(
			"source_agent.agent_id", "Domain-05-Product", "governance.source_agent_verified", false),
			want: []reason.Code{reason.SchemaInvalid, reason.HashMismatch}, sevs: []reason.Severity{errs, errs},
			msgs: []string{"not attributable (the document names no source agent), " + noBlock}},
		{name: "out-of-bounds source", payload: doc(
			"source_agent", agentRef("domain-04-content"), "target_agent", agentRef("domain-05-product"),
			"target_agent.prompt_hash", wrong, "governance.boundaries_respected", false),
			want: []reason.Code{reason.HashMismatch, reason.BoundaryViolation}, sevs: []reason.Severity{errs, errs},
			msgs: []string{`not attributable (source agent "domain-04-content" may not hand off to "domain-05-product"), ` + noBlock}},
		{name: "archetype outside its composition", payload: doc(
			"source_agent", agentRef("archetype-product-thinker"), "target_agent", agentRef("domain-01-research"),
			"target_agent.prompt_hash", wrong, "governance.boundaries_respected", false),
			want: []reason.Code{reason.HashMismatch, reason.BoundaryViolation}, sevs: []reason.Severity{errs, errs},
			msgs: []string{`may not hand off to "domain-01-research"), ` + noBlock}},
		{name: "blocked source", payload: doc("governance.source_agent_verified", false), edit: blockState("domain-05-product"),
			want: []reason.Code{reason.AgentBlocked, reason.HashMismatch}, sevs: []reason.Severity{errs, errs},
			msgs: []string{`not attributable (source agent "domain-05-product" is blocked by entry seq 7), ` + noBlock}},
		{name: "source with a wrong own hash blocks only itself", payload: doc(
			"source_agent.prompt_hash", strings.Repeat("a", 64), "governance.source_agent_verified", false),
			want: []reason.Code{reason.HashMismatch, reason.HashMismatch}, sevs: []reason.Severity{crit, errs},
			blocks: []string{"domain-05-product"},
			msgs:   []string{`not attributable (source agent "domain-05-product" quotes a wrong prompt_hash of its own), ` + noBlock}},
		{name: "source not in the lock", payload: doc("governance.source_agent_verified", false),
			edit: func(in *policy.Input) { delete(in.Lock.Agents, "domain-05-product") },
			want: []reason.Code{reason.HashMismatch, reason.HashMismatch}, sevs: []reason.Severity{errs, errs},
			msgs: []string{`not attributable (source agent "domain-05-product" is not in the lock), ` + noBlock}},
		{name: "nil lock", payload: doc("governance.source_agent_verified", false),
			edit: func(in *policy.Input) { in.Lock = nil },
			// nothing locked: both agents are unreviewed, no hash compared
			want: []reason.Code{reason.HashMismatch, reason.HashMismatch}, sevs: []reason.Severity{errs, errs}},
		{name: "source without a prompt hash", payload: doc("source_agent.prompt_hash", nil),
			want: []reason.Code{reason.SchemaInvalid, reason.HashMismatch}, sevs: []reason.Severity{errs, errs},
			msgs: []string{`not attributable (source agent "domain-05-product" quotes no valid prompt_hash of its own), ` + noBlock}},
		{name: "source with a malformed prompt hash", payload: doc("source_agent.prompt_hash", "sha256:XYZ"),
			want: []reason.Code{reason.SchemaInvalid, reason.HashMismatch}, sevs: []reason.Severity{errs, errs},
			msgs: []string{"quotes no valid prompt_hash of its own"}},
		{name: "every reason at once, the source blocks itself", payload: doc(
			"source_agent", agentRef("domain-04-content"), "target_agent", agentRef("domain-05-product"),
			"target_agent.prompt_hash", wrong, "source_agent.prompt_hash", strings.Repeat("c", 64),
			"governance.source_agent_verified", false, "governance.boundaries_respected", false),
			edit: blockState("domain-04-content"),
			want: []reason.Code{reason.HashMismatch, reason.AgentBlocked, reason.HashMismatch, reason.BoundaryViolation},
			sevs: []reason.Severity{crit, errs, errs, errs}, blocks: []string{"domain-04-content"},
			msgs: []string{`not attributable (source agent "domain-04-content" quotes a wrong prompt_hash of its own; ` +
				`source agent "domain-04-content" may not hand off to "domain-05-product"; ` +
				`source agent "domain-04-content" is blocked by entry seq 7), ` + noBlock}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, tc.payload)
			if tc.edit != nil {
				tc.edit(&in)
			}
			d := policy.Decide(in)
			checkDecision(t, d, tc)
			if d.Decision != reason.Rejected {
				t.Errorf("Decision = %s, want rejected: a target hash mismatch always rejects", d.Decision)
			}
			// a critical HASH_MISMATCH is exactly a block
			var critical []string
			for _, r := range d.Reasons {
				if r.Severity == reason.Critical {
					if r.Code != reason.HashMismatch {
						t.Errorf("critical reason %s, want only HASH_MISMATCH critical", r.Code)
					}
					critical = append(critical, strings.SplitN(r.Field, ".", 2)[0])
				}
			}
			if len(critical) != len(d.Blocks) {
				t.Errorf("%d critical reasons (%v) for blocks %v, want one per block", len(critical), critical, d.Blocks)
			}
			if again := policy.Decide(in); !reflect.DeepEqual(d, again) {
				t.Errorf("Decide is not deterministic:\n%+v\n%+v", d, again)
			}
			checkFill(t, d, in)
		})
	}
}

// TestAttributionFormatsWithoutPromptHashes checks the formats other than
// governed/1: none carries a prompt hash for its agents (swarm/2 and skill/1
// carry only a payload or deliverable checksum), so no document of theirs
// can contradict the lock and none blocks anybody, even when both its
// agents are registered and the lock holds hashes the document never saw.
func TestAttributionFormatsWithoutPromptHashes(t *testing.T) {
	resolved := map[handoff.Format]int{}
	for _, doc := range corpus(t) {
		if strings.HasPrefix(doc.path, "governed/") {
			continue
		}
		t.Run(doc.path, func(t *testing.T) {
			in := corpusInput(t, doc)
			if doc.fromTo {
				in.Inputs.Params.From, in.Inputs.Params.To = "src-agent", "dst-agent"
			}
			first := policy.Decide(in)
			rec := first.Record
			if rec == nil || rec.Source.ID == "" || rec.Target.ID == "" || rec.Source.ID == rec.Target.ID {
				return
			}
			if rec.Source.PromptHash != "" || rec.Target.PromptHash != "" {
				t.Fatalf("format %s carries prompt hashes (%q, %q): give it attribution tests", rec.Format, rec.Source.PromptHash, rec.Target.PromptHash)
			}
			// Register both agents, eligible and mutually allowed, and
			// lock them at hashes no document quotes.
			in.Registry = &manifest.Registry{FromSkills: true, Agents: []manifest.Agent{
				{ID: rec.Source.ID, Type: "domain", Version: "1.0.0", PromptPath: "s/SKILL.md", AcceptsHandoff: true},
				{ID: rec.Target.ID, Type: "domain", Version: "1.0.0", PromptPath: "t/SKILL.md", AcceptsHandoff: true},
			}}
			in.Lock = &lockfile.Lock{Version: 1, Agents: map[string]lockfile.Entry{}}
			for _, a := range in.Registry.Agents {
				in.Lock.Agents[a.ID] = lockfile.Entry{AgentVersion: a.Version, PromptPath: a.PromptPath,
					PromptHash: lockfile.FormatDigest(entry.Sum256([]byte("reviewed " + a.ID)))}
			}
			d := policy.Decide(in)
			if len(d.Blocks) > 0 {
				t.Errorf("Blocks = %v, want none", d.Blocks)
			}
			for _, r := range d.Reasons {
				if r.Code == reason.HashMismatch || r.Code == reason.UnknownAgent || r.Severity == reason.Critical {
					t.Errorf("reason %s %s: %s, want none with both agents registered and locked", r.Severity, r.Code, r.Message)
				}
			}
			resolved[rec.Format]++
		})
	}
	for _, f := range handoff.Formats {
		if f != handoff.Governed && resolved[f] == 0 {
			t.Errorf("no %s corpus document names two agents: the check above ran on none", f)
		}
	}
	if !slices.Contains(handoff.Formats, handoff.Governed) {
		t.Errorf("handoff.Formats = %v lacks governed/1", handoff.Formats)
	}
}
