package policy_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// The example registry (testdata/registry): type, version and prompt SHA-256.
var example = map[string]struct{ typ, version, hash string }{
	"domain-01-research":        {"domain", "1.0.0", "ee5240584af8b2d079ee8b040a37fb0257ed1b44e88de31f0b3a21adfe03f6ee"},
	"domain-02-analysis":        {"domain", "1.0.0", "91a3c63e7eb1dca488acc7c8a2661bd579d21d53f3c099fe76f4614e4dd33846"},
	"domain-03-technical":       {"domain", "1.1.0", "6ffee54ce5660d0f68dca70d36f03a0d5ff0ae67700a3e1b46072fce218e7582"},
	"domain-04-content":         {"domain", "1.0.2", "fef12457ab5bdf4d1f03cfa7db00a59aae78c823317ad9e6545ecafb1c872cb6"},
	"domain-05-product":         {"domain", "1.0.0", "e504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509d"},
	"domain-06-security":        {"domain", "2.0.0", "4568fd4af96308c05842187cf50a4c36c4b75a85d136ceba673662c85a6c954d"},
	"archetype-product-thinker": {"archetype", "1.2.0", "1145d79318c71d416d2bda0e8ca33d44a3cff87f55186b0c8986099877108f89"},
	"archetype-research-lead":   {"archetype", "0.9.0", "a49feba8177257e1fa655a110a62b01901b2c7dbb3d15bc48559a8b1eabb8523"},
	"orchestrator":              {"orchestrator", "2.0.0", "ee7ee5e9314c499e648413ac5d223d6e9025a05e45458b462fa9a09c333955de"},
}

const registryDir = "../testdata/registry"

// exampleRegistry loads testdata/registry/prompt-manifest.json.
func exampleRegistry(t testing.TB) *manifest.Registry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(registryDir, "prompt-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := manifest.Parse("prompt-manifest.json", data, registryDir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exampleLock is the lock of the example registry.
func exampleLock() *lockfile.Lock {
	l := &lockfile.Lock{Version: 1, Agents: map[string]lockfile.Entry{}}
	for _, id := range slices.Sorted(maps.Keys(example)) {
		a := example[id]
		l.Agents[id] = lockfile.Entry{AgentVersion: a.version, PromptPath: "prompts/" + id + ".md", PromptHash: "sha256:" + a.hash}
	}
	return l
}

// cloneRegistry returns an in-memory copy of r that may be edited.
func cloneRegistry(r *manifest.Registry) *manifest.Registry {
	c := &manifest.Registry{Dir: r.Dir, FromSkills: r.FromSkills}
	for _, a := range r.Agents {
		a.HandoffTo = slices.Clone(a.HandoffTo)
		a.RequestTypes = slices.Clone(a.RequestTypes)
		a.Composition = slices.Clone(a.Composition)
		c.Agents = append(c.Agents, a)
	}
	return c
}

// now is the entry time of every test decision.
var now = time.Date(2026, 2, 11, 0, 50, 0, 0, time.UTC)

const handoffID = "550e8400-e29b-41d4-a716-446655440000"

type obj = map[string]any

func agentRef(id string) obj {
	a := example[id]
	return obj{"agent_type": a.typ, "agent_id": id, "agent_version": a.version, "prompt_hash": a.hash}
}

// governed returns a seed-003 document from domain-05-product to
// domain-02-analysis, timestamped one minute before now, with every
// attestation claim true; each edit sets a dotted path to a value (nil
// deletes it).
func governed(t testing.TB, edits ...any) []byte {
	t.Helper()
	d := obj{
		"handoff_id":       handoffID,
		"timestamp":        now.Add(-time.Minute).Format(time.RFC3339),
		"protocol_version": "1.0.0",
		"source_agent":     agentRef("domain-05-product"),
		"target_agent":     agentRef("domain-02-analysis"),
		"context": obj{
			"request": obj{
				"type":            "analysis",
				"description":     "Analyze user research data to validate product hypothesis",
				"input_data":      obj{"hypothesis": "Users want feature X"},
				"constraints":     []any{"Focus on quantitative validation"},
				"expected_output": "Statistical analysis with recommendation",
			},
			"state": obj{
				"conversation_history": []any{},
				"accumulated_context":  obj{"product_context": "Mobile app, B2C, 10k MAU"},
				"decisions_made":       []any{},
			},
		},
		"governance": obj{
			"source_agent_verified": true,
			"target_agent_verified": true,
			"composition_valid":     true,
			"boundaries_respected":  true,
			"audit_trail":           "handoff-log-2026-02-11-001.json",
		},
	}
	if len(edits)%2 != 0 {
		t.Fatal("governed: edits come in path, value pairs")
	}
	for i := 0; i < len(edits); i += 2 {
		path := strings.Split(edits[i].(string), ".")
		m := d
		for _, k := range path[:len(path)-1] {
			m = m[k].(obj)
		}
		if edits[i+1] == nil {
			delete(m, path[len(path)-1])
		} else {
			m[path[len(path)-1]] = edits[i+1]
		}
	}
	b, err := json.Marshal(d, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeState is an in-memory policy.State.
type fakeState struct {
	accepted map[string]accepted
	blocked  map[string]uint64
	manifest entry.Hash
	lock     entry.Hash
	noPolicy bool
}

type accepted struct {
	seq     uint64
	payload entry.Hash
}

func (s *fakeState) Accepted(id string) (uint64, entry.Hash, bool) {
	a, ok := s.accepted[id]
	return a.seq, a.payload, ok
}

func (s *fakeState) Blocked(agent string) (uint64, bool) {
	seq, ok := s.blocked[agent]
	return seq, ok
}

func (s *fakeState) InForce() (entry.Hash, entry.Hash, bool) {
	return s.manifest, s.lock, !s.noPolicy
}

var _ policy.State = (*fakeState)(nil)
var _ policy.State = ledger.State(nil)

// input builds the Input for payload with the example registry and lock and
// a state in which that registry is in force.
func input(t testing.TB, payload []byte) policy.Input {
	reg := exampleRegistry(t)
	return policy.Input{
		Payload:       payload,
		PayloadSize:   int64(len(payload)),
		PayloadSHA256: entry.Sum256(payload),
		Registry:      reg,
		Lock:          exampleLock(),
		Now:           now,
		State:         &fakeState{manifest: entry.Sum256(reg.Snapshot), lock: entry.Sum256([]byte("lock"))},
		Inputs:        policy.Inputs{Params: policy.Params{MaxAge: int64(24 * time.Hour), MaxPayload: 1 << 20}},
	}
}
