package policy_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

type decideCase struct {
	name    string
	payload []byte
	edit    func(in *policy.Input) // after the payload's Input was built
	want    []reason.Code          // exact, in order
	blocks  []string
	// substrings every one of which must appear in some reason's message
	msgs []string
	// severities of the reasons, when they matter
	sevs []reason.Severity
}

func TestDecide(t *testing.T) {
	bare := example["domain-05-product"].hash
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	state := func(in *policy.Input) *fakeState { return in.State.(*fakeState) }
	brokenComposition := func(in *policy.Input) {
		r := cloneRegistry(in.Registry)
		a, _ := r.Agent("archetype-product-thinker")
		a.Composition[1].Percent = 30
		in.Registry = r
	}

	cases := []decideCase{
		// Accepted, one per boundary kind.
		{name: "domain to domain in handoff_to", payload: governed(t)},
		{name: "domain to archetype in handoff_to", payload: governed(t,
			"target_agent", agentRef("archetype-product-thinker"))},
		{name: "archetype to its composition domain", payload: governed(t,
			"source_agent", agentRef("archetype-product-thinker"),
			"target_agent", agentRef("domain-03-technical"))},
		{name: "orchestrator to anyone", payload: governed(t,
			"source_agent", agentRef("orchestrator"),
			"target_agent", agentRef("domain-06-security"))},
		{name: "prompt hash with sha256 prefix equals bare", payload: governed(t,
			"source_agent.prompt_hash", "sha256:"+bare)},
		{name: "no state: empty ledger", payload: governed(t),
			edit: func(in *policy.Input) { in.State = nil }},

		// Agents.
		{name: "unknown source", payload: governed(t, "source_agent.agent_id", "domain-99-ghost"),
			want: []reason.Code{reason.UnknownAgent, reason.AttestationMismatch},
			msgs: []string{"source_agent.agent_id: the source agent is not in the registry", "claims true, but the source agent failed UNKNOWN_AGENT"}},
		{name: "unknown target", payload: governed(t, "target_agent.agent_id", "domain-99-ghost"),
			want: []reason.Code{reason.UnknownAgent, reason.AttestationMismatch}},
		{name: "type mismatch", payload: governed(t, "source_agent.agent_type", "archetype"),
			want: []reason.Code{reason.TypeMismatch, reason.AttestationMismatch},
			msgs: []string{`source_agent.agent_type: differs from the registry: source agent "domain-05-product" is a domain`}},
		{name: "version mismatch", payload: governed(t, "target_agent.agent_version", "1.0.1"),
			want: []reason.Code{reason.VersionMismatch, reason.AttestationMismatch},
			msgs: []string{`target_agent.agent_version: differs from the registry: target agent "domain-02-analysis" is at version "1.0.0"`}},
		{name: "stale lock version", payload: governed(t),
			edit: func(in *policy.Input) {
				e := in.Lock.Agents["domain-02-analysis"]
				e.AgentVersion = "0.9.0"
				in.Lock.Agents["domain-02-analysis"] = e
			},
			want: []reason.Code{reason.VersionMismatch, reason.AttestationMismatch},
			msgs: []string{`locked at agent_version "0.9.0"`, "run govledger lock"}},
		{name: "hash mismatch blocks the agent", payload: governed(t, "source_agent.prompt_hash", strings.Repeat("0", 64)),
			want:   []reason.Code{reason.HashMismatch, reason.AttestationMismatch},
			sevs:   []reason.Severity{reason.Critical, reason.Error},
			blocks: []string{"domain-05-product"}},
		{name: "hash mismatch on both sides", payload: governed(t,
			"source_agent.prompt_hash", strings.Repeat("1", 64),
			"target_agent.prompt_hash", "sha256:"+strings.Repeat("2", 64),
			"governance.source_agent_verified", false,
			"governance.target_agent_verified", false),
			// the source's own hash is wrong: the target's mismatch is not
			// attributable to it (see TestAttribution)
			want:   []reason.Code{reason.HashMismatch, reason.HashMismatch},
			sevs:   []reason.Severity{reason.Critical, reason.Error},
			blocks: []string{"domain-05-product"}},
		{name: "agent not in the lock", payload: governed(t),
			edit: func(in *policy.Input) { delete(in.Lock.Agents, "domain-02-analysis") },
			want: []reason.Code{reason.HashMismatch, reason.AttestationMismatch},
			sevs: []reason.Severity{reason.Error, reason.Error},
			msgs: []string{`target agent "domain-02-analysis" is not in the lock`}},
		{name: "nil lock", payload: governed(t, "governance.source_agent_verified", false, "governance.target_agent_verified", false),
			edit: func(in *policy.Input) { in.Lock = nil },
			want: []reason.Code{reason.HashMismatch, reason.HashMismatch}},
		{name: "nil registry", payload: governed(t, "governance.source_agent_verified", false, "governance.target_agent_verified", false),
			edit: func(in *policy.Input) { in.Registry = nil },
			want: []reason.Code{reason.UnknownAgent, reason.UnknownAgent}},
		{name: "blocked source", payload: governed(t),
			edit: func(in *policy.Input) { state(in).blocked = map[string]uint64{"domain-05-product": 7} },
			want: []reason.Code{reason.AgentBlocked, reason.AttestationMismatch},
			msgs: []string{"blocked by entry seq 7", `govledger unblock --reason "..." domain-05-product`, "new lock"}},
		{name: "blocked target", payload: governed(t, "governance.target_agent_verified", false),
			edit: func(in *policy.Input) { state(in).blocked = map[string]uint64{"domain-02-analysis": 9} },
			want: []reason.Code{reason.AgentBlocked}},
		{name: "other agent blocked", payload: governed(t),
			edit: func(in *policy.Input) { state(in).blocked = map[string]uint64{"domain-01-research": 9} }},

		// Composition.
		{name: "archetype source with invalid composition", payload: governed(t,
			"source_agent", agentRef("archetype-product-thinker"),
			"target_agent", agentRef("domain-03-technical")),
			edit: brokenComposition,
			want: []reason.Code{reason.CompositionInvalid, reason.AttestationMismatch},
			msgs: []string{"percents sum to 90, not 100", "governance.composition_valid"}},
		{name: "archetype target with invalid composition", payload: governed(t,
			"target_agent", agentRef("archetype-product-thinker"),
			"governance.composition_valid", false),
			edit: brokenComposition,
			want: []reason.Code{reason.CompositionInvalid}},
		// A registry built in code is not checked by the manifest parser:
		// the decision itself refuses a sum over 100, not only one under.
		{name: "composition summing to 110 (60 + 50), built in code", payload: governed(t,
			"source_agent", agentRef("archetype-product-thinker"),
			"target_agent", agentRef("domain-03-technical")),
			edit: func(in *policy.Input) {
				r := cloneRegistry(in.Registry)
				a, _ := r.Agent("archetype-product-thinker")
				a.Composition = []manifest.Component{{AgentID: a.Composition[0].AgentID, Percent: 60}, {AgentID: a.Composition[1].AgentID, Percent: 50}}
				in.Registry = r
			},
			want: []reason.Code{reason.CompositionInvalid, reason.AttestationMismatch},
			msgs: []string{"percents sum to 110, not 100"}},
		{name: "composition naming a non-domain", payload: governed(t,
			"source_agent", agentRef("archetype-product-thinker"),
			"target_agent", agentRef("domain-05-product"),
			"governance.composition_valid", false),
			edit: func(in *policy.Input) {
				r := cloneRegistry(in.Registry)
				a, _ := r.Agent("archetype-product-thinker")
				a.Composition = []manifest.Component{{AgentID: "domain-05-product", Percent: 50}, {AgentID: "orchestrator", Percent: 50}, {AgentID: "ghost", Percent: 0}}
				in.Registry = r
			},
			want: []reason.Code{reason.CompositionInvalid},
			msgs: []string{`"orchestrator" is a orchestrator, not a domain`, `"ghost" is not in the registry`, `"ghost" has percent 0`}},
		{name: "composition claim false without archetypes", payload: governed(t, "governance.composition_valid", false),
			want: []reason.Code{reason.AttestationMismatch}, sevs: []reason.Severity{reason.Warning}},

		// Boundaries.
		{name: "boundary violation", payload: governed(t,
			"source_agent", agentRef("domain-04-content"),
			"target_agent", agentRef("domain-05-product")),
			want: []reason.Code{reason.BoundaryViolation, reason.AttestationMismatch},
			msgs: []string{`domain "domain-04-content" may not hand off to "domain-05-product"`, `allowed targets: "domain-02-analysis"`}},
		{name: "archetype outside its composition", payload: governed(t,
			"source_agent", agentRef("archetype-product-thinker"),
			"target_agent", agentRef("domain-01-research"),
			"governance.boundaries_respected", false),
			want: []reason.Code{reason.BoundaryViolation},
			msgs: []string{"nor its composition", `allowed targets: "domain-03-technical", "domain-05-product"`}},
		{name: "boundaries claim false but respected", payload: governed(t, "governance.boundaries_respected", false),
			want: []reason.Code{reason.AttestationMismatch}, sevs: []reason.Severity{reason.Warning}},
		{name: "request type outside the target's scope", payload: governed(t,
			"source_agent", agentRef("domain-01-research"),
			"target_agent", agentRef("domain-04-content")),
			want: []reason.Code{reason.InvalidRequestType, reason.AttestationMismatch},
			msgs: []string{`context.request.type: is outside the scope of target agent "domain-04-content", which accepts task`,
				`accept this request type: "domain-02-analysis"`, "governance.boundaries_respected"}},
		{name: "request type inside the target's scope", payload: governed(t,
			"source_agent", agentRef("domain-01-research"),
			"target_agent", agentRef("domain-04-content"),
			"context.request.type", "task")},

		// Replay.
		{name: "replay", payload: governed(t),
			edit: func(in *policy.Input) {
				state(in).accepted = map[string]accepted{handoffID: {seq: 12, payload: in.PayloadSHA256}}
			},
			want: []reason.Code{reason.Replay},
			msgs: []string{"already accepted at seq 12"}},
		{name: "id conflict", payload: governed(t),
			edit: func(in *policy.Input) {
				state(in).accepted = map[string]accepted{handoffID: {seq: 12, payload: entry.Sum256([]byte("other"))}}
			},
			want: []reason.Code{reason.IDConflict},
			msgs: []string{"seq 12", entry.Sum256([]byte("other")).String()}},
		{name: "other id accepted", payload: governed(t),
			edit: func(in *policy.Input) {
				state(in).accepted = map[string]accepted{"6ba7b810-9dad-41d1-80b4-00c04fd430c8": {seq: 12, payload: in.PayloadSHA256}}
			}},

		// Time.
		{name: "exactly 5 minutes ahead", payload: governed(t, "timestamp", ts(5*time.Minute))},
		{name: "more than 5 minutes ahead", payload: governed(t, "timestamp", ts(5*time.Minute+time.Nanosecond)),
			want: []reason.Code{reason.ClockSkew}},
		{name: "offset time zone ahead", payload: governed(t, "timestamp", now.Add(6*time.Minute).In(time.FixedZone("", 3600)).Format(time.RFC3339)),
			want: []reason.Code{reason.ClockSkew}},
		{name: "exactly max age", payload: governed(t, "timestamp", ts(-24*time.Hour))},
		{name: "older than max age", payload: governed(t, "timestamp", ts(-24*time.Hour-time.Nanosecond)),
			want: []reason.Code{reason.Stale}, msgs: []string{"older than --max-age 24h0m0s"}},
		{name: "max age 0 disables", payload: governed(t, "timestamp", "1970-01-01T00:00:00Z"),
			edit: func(in *policy.Input) { in.Inputs.Params.MaxAge = 0 }},
		{name: "zero now skips time checks", payload: governed(t, "timestamp", "1970-01-01T00:00:00Z"),
			edit: func(in *policy.Input) { in.Now = time.Time{} }},
		{name: "far future does not overflow", payload: governed(t, "timestamp", "9999-12-31T23:59:59.999999999Z"),
			want: []reason.Code{reason.ClockSkew}},
		{name: "far past does not overflow", payload: governed(t, "timestamp", "0000-01-01T00:00:00Z"),
			want: []reason.Code{reason.Stale}},

		// Attestation.
		{name: "source claim false but verified", payload: governed(t, "governance.source_agent_verified", false),
			want: []reason.Code{reason.AttestationMismatch}, sevs: []reason.Severity{reason.Warning},
			msgs: []string{"governance.source_agent_verified: claims false"}},
		{name: "all claims false but verified", payload: governed(t,
			"governance.source_agent_verified", false, "governance.target_agent_verified", false,
			"governance.composition_valid", false, "governance.boundaries_respected", false),
			want: []reason.Code{reason.AttestationMismatch, reason.AttestationMismatch, reason.AttestationMismatch, reason.AttestationMismatch}},
		{name: "claim false and refuted", payload: governed(t,
			"source_agent.prompt_hash", strings.Repeat("a", 64), "governance.source_agent_verified", false),
			want: []reason.Code{reason.HashMismatch}, blocks: []string{"domain-05-product"}},

		// Payload and format.
		{name: "payload too large", payload: governed(t),
			edit: func(in *policy.Input) { in.Inputs.Params.MaxPayload = 100 },
			want: []reason.Code{reason.PayloadTooLarge}},
		{name: "payload too large, bytes not kept", payload: nil,
			edit: func(in *policy.Input) { in.Inputs.Params.MaxPayload = 100; in.PayloadSize = 101 },
			want: []reason.Code{reason.PayloadTooLarge}, msgs: []string{"101 bytes, more than the limit of 100"}},
		{name: "payload at the limit", payload: governed(t),
			edit: func(in *policy.Input) { in.Inputs.Params.MaxPayload = in.PayloadSize }},
		{name: "findings of the format come first", payload: governed(t,
			"handoff_id", "not-a-uuid", "source_agent", agentRef("domain-04-content"), "target_agent", agentRef("domain-05-product")),
			want: []reason.Code{reason.InvalidID, reason.BoundaryViolation, reason.AttestationMismatch}},
		{name: "missing prompt hash: claim neither confirmed nor refuted", payload: governed(t, "source_agent.prompt_hash", nil),
			want: []reason.Code{reason.SchemaInvalid}},
		{name: "missing prompt hash and refuted claim", payload: governed(t, "source_agent.prompt_hash", nil, "source_agent.agent_version", "9.9.9"),
			want: []reason.Code{reason.SchemaInvalid, reason.VersionMismatch, reason.AttestationMismatch}},
		{name: "missing prompt hash, claim false", payload: governed(t, "source_agent.prompt_hash", nil, "governance.source_agent_verified", false),
			want: []reason.Code{reason.SchemaInvalid}},
		{name: "not a document", payload: []byte("\x00\x01\x02"),
			want: []reason.Code{reason.Unparseable}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, tc.payload)
			if tc.edit != nil {
				tc.edit(&in)
			}
			d := policy.Decide(in)
			checkDecision(t, d, tc)
			if again := policy.Decide(in); !reflect.DeepEqual(d, again) {
				t.Errorf("Decide is not deterministic:\n%+v\n%+v", d, again)
			}
			checkFill(t, d, in)
		})
	}
}

func checkDecision(t *testing.T, d *policy.Decision, tc decideCase) {
	t.Helper()
	if got := reason.Codes(d.Reasons); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
		t.Fatalf("Decide codes = %v, want %v\nreasons: %+v", got, tc.want, d.Reasons)
	}
	if d.Reasons == nil {
		t.Errorf("Decide Reasons = nil, want non-nil")
	}
	if want := reason.Decide(d.Reasons); d.Decision != want {
		t.Errorf("Decision = %q, want %q", d.Decision, want)
	}
	if len(tc.want) == 0 && d.Decision != reason.Accepted {
		t.Errorf("Decision = %q, want accepted", d.Decision)
	}
	if !slices.Equal(d.Blocks, tc.blocks) {
		t.Errorf("Blocks = %q, want %q", d.Blocks, tc.blocks)
	}
	for i, s := range tc.sevs {
		if d.Reasons[i].Severity != s {
			t.Errorf("reason %d severity = %s, want %s", i, d.Reasons[i].Severity, s)
		}
	}
	for _, m := range tc.msgs {
		if !slices.ContainsFunc(d.Reasons, func(r reason.Reason) bool { return strings.Contains(r.Message, m) }) {
			t.Errorf("no reason message contains %q; reasons: %+v", m, d.Reasons)
		}
	}
	for _, r := range d.Reasons {
		if r.Message == "" || r.Severity == "" || r.Code == "" {
			t.Errorf("incomplete reason %+v", r)
		}
	}
	if (d.Record == nil) != slices.Contains(reason.Codes(d.Reasons), reason.PayloadTooLarge) {
		t.Errorf("Record nil = %v with reasons %v", d.Record == nil, reason.Codes(d.Reasons))
	}
}

// checkFill fills an entry from d and checks it is a valid, canonical
// handoff entry that carries the decision.
func checkFill(t *testing.T, d *policy.Decision, in policy.Input) {
	t.Helper()
	if in.State == nil {
		in.State = &fakeState{manifest: entry.Sum256(in.Registry.Snapshot), lock: entry.Sum256([]byte("lock"))}
	}
	e := &entry.Entry{V: entry.Version, Seq: 1, Time: entry.Time{Time: now}}
	if err := d.Fill(e, in); err != nil {
		t.Fatalf("Fill: %v", err)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("Validate after Fill: %v", err)
	}
	c, err := e.Canonical()
	if err != nil {
		t.Fatalf("Canonical after Fill: %v", err)
	}
	back, err := entry.Decode(c)
	if err != nil {
		t.Fatalf("DecodeEntry(Canonical()) = %v", err)
	}
	if back.Decision != d.Decision || !slices.Equal(*back.Reasons, d.Reasons) || !slices.Equal(back.Blocks, d.Blocks) {
		t.Errorf("entry does not carry the decision: %s", c)
	}
	got, err := policy.ParseInputs(back.Inputs)
	if err != nil {
		t.Fatalf("ParseInputs(entry inputs) = %v", err)
	}
	if !reflect.DeepEqual(got.Params, in.Inputs.Params) {
		t.Errorf("inputs params = %+v, want %+v", got.Params, in.Inputs.Params)
	}
	if r := d.Record; r != nil && r.Source.ID != "" && back.Source.String() != r.Source.ID {
		t.Errorf("entry source = %v, want %q", back.Source, r.Source.ID)
	}
}
