package policy_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// FuzzDecide runs arbitrary bytes through Decide with the example registry
// and lock: it must never panic, must be deterministic, and its decision
// must fill a valid, canonical ledger entry whose inputs parse back.
func FuzzDecide(f *testing.F) {
	f.Add(governed(f), uint8(0), false, false)
	f.Add(governed(f, "source_agent.prompt_hash", strings.Repeat("0", 64)), uint8(0), false, false)
	f.Add(governed(f, "source_agent", agentRef("archetype-product-thinker"), "target_agent", agentRef("domain-01-research")), uint8(1), true, false)
	f.Add(governed(f, "timestamp", "2099-01-01T00:00:00Z", "handoff_id", "x"), uint8(0), false, false)
	f.Add(governed(f, "source_agent.agent_id", "Domain-05-Product"), uint8(0), false, false)
	f.Add(governed(f, "target_agent.prompt_hash", strings.Repeat("b", 64)), uint8(0), false, false)
	f.Add(governed(f, "source_agent.agent_id", "domain-99-ghost", "target_agent.prompt_hash", strings.Repeat("b", 64)), uint8(0), false, false)
	f.Add([]byte(`{"type":"scout_findings","domain":"tech-stack","documents":[],"confidence":"high","confidence_rationale":"x"}`), uint8(4), false, true)
	f.Add([]byte("handoff:\n  version: \"2.0\"\n  timestamp: \"2026-02-11T00:45:02Z\"\n  source:\n    skill: perspective-swarm\n  target:\n    skill: domain-02-analysis\n"), uint8(0), false, false)
	f.Add([]byte("handoff:\n  source_skill: domain-01-research\n  target_skill: domain-02-analysis\n  timestamp: \"2026-02-11T00:45:02Z\"\n  workflow_id: workflow-abc123\n"), uint8(0), false, false)
	f.Add([]byte("# Task\n\n## Handoff\n\n```yaml\nfiles_modified: []\n```\n"), uint8(5), true, true)
	f.Add([]byte("plain markdown"), uint8(0), false, true)
	f.Add([]byte{0xff, 0xfe, 0}, uint8(0), false, false)
	for _, c := range corpus(f) {
		f.Add(c.data, uint8(0), false, c.fromTo)
	}

	reg := exampleRegistry(f)
	formats := append([]handoff.Format{""}, handoff.Formats...)
	f.Fuzz(func(t *testing.T, data []byte, format uint8, strict, fromTo bool) {
		p := policy.Params{Format: formats[int(format)%len(formats)], Strict: strict, MaxAge: int64(24 * time.Hour), MaxPayload: 1 << 16}
		if fromTo {
			p.From, p.To = "domain-01-research", "domain-02-analysis"
		}
		in := policy.Input{
			Payload: data, PayloadSize: int64(len(data)), PayloadSHA256: entry.Sum256(data),
			Registry: reg, Lock: exampleLock(), Now: now,
			State: &fakeState{
				manifest: entry.Sum256(reg.Snapshot), lock: entry.Sum256([]byte("lock")),
				accepted: map[string]accepted{handoffID: {seq: 3, payload: entry.Sum256(nil)}},
				blocked:  map[string]uint64{"domain-03-technical": 4},
			},
			Inputs: policy.Inputs{Params: p},
		}
		d := policy.Decide(in)
		if again := policy.Decide(in); !reflect.DeepEqual(d, again) {
			t.Fatalf("Decide is not deterministic:\n%+v\n%+v", d, again)
		}
		e := &entry.Entry{V: entry.Version, Seq: 1, Time: entry.Time{Time: now}}
		if err := d.Fill(e, in); err != nil {
			t.Fatalf("Fill: %v", err)
		}
		c, err := e.Canonical()
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		back, err := entry.Decode(c)
		if err != nil {
			t.Fatalf("DecodeEntry: %v", err)
		}
		if _, err := policy.ParseInputs(back.Inputs); err != nil {
			t.Fatalf("ParseInputs: %v", err)
		}
		checkBlocks(t, d, in)
	})
}

// checkBlocks checks who a decision blocks: one critical HASH_MISMATCH per
// blocked agent, nothing else critical, and a target blocked only by an
// attributable handoff (registered, allowed, unblocked source whose own
// prompt hash matches the lock).
func checkBlocks(t *testing.T, d *policy.Decision, in policy.Input) {
	t.Helper()
	critical := 0
	for _, r := range d.Reasons {
		if r.Severity == reason.Critical {
			critical++
			if r.Code != reason.HashMismatch {
				t.Fatalf("critical %s: only HASH_MISMATCH is critical", r.Code)
			}
		}
	}
	if critical != len(d.Blocks) {
		t.Fatalf("%d critical reasons, blocks %v", critical, d.Blocks)
	}
	rec := d.Record
	if rec == nil || !slices.Contains(d.Blocks, rec.Target.ID) || rec.Target.ID == rec.Source.ID {
		return
	}
	src := rec.Source
	le, locked := in.Lock.Lookup(src.ID)
	_, blocked := in.State.Blocked(src.ID)
	if !in.Registry.Allows(src.ID, rec.Target.ID) || blocked || !locked || src.PromptHash == "" ||
		strings.TrimPrefix(src.PromptHash, "sha256:") != strings.TrimPrefix(le.PromptHash, "sha256:") {
		t.Fatalf("target %q blocked by a handoff that is not attributable to source %+v", rec.Target.ID, src)
	}
}
