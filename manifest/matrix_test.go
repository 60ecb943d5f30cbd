package manifest_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/govledger/govledger/manifest"
)

// matrixRows renders a matrix as one line per source:
// "target:ground+ground target:ground", or "-" for no target.
func matrixRows(m *manifest.Matrix) map[string]string {
	rows := map[string]string{}
	for _, s := range m.Sources {
		var ts []string
		for _, t := range s.Targets {
			gs := make([]string, len(t.Grounds))
			for i, g := range t.Grounds {
				gs[i] = string(g)
			}
			ts = append(ts, t.ID+":"+strings.Join(gs, "+"))
		}
		if len(ts) == 0 {
			ts = []string{"-"}
		}
		rows[s.ID] = strings.Join(ts, " ")
	}
	return rows
}

func TestMatrix(t *testing.T) {
	all := func(ground string, ids ...string) string {
		var b []string
		for _, id := range ids {
			b = append(b, id+":"+ground)
		}
		return strings.Join(b, " ")
	}
	example := []string{"archetype-product-thinker", "archetype-research-lead", "domain-01-research", "domain-02-analysis",
		"domain-03-technical", "domain-04-content", "domain-05-product", "domain-06-security", "orchestrator"}
	skills := []string{"fact-checker", "lit-pm", "perspective-swarm", "researcher", "statistician", "synthesizer", "systems-architect"}
	cases := []struct {
		name    string
		path    string
		kind    string
		allowed int
		rows    map[string]string
	}{
		{name: "manifest", path: "../testdata/registry/prompt-manifest.json", kind: "manifest", allowed: 23,
			rows: map[string]string{
				"archetype-product-thinker": "domain-03-technical:composition domain-05-product:composition",
				"archetype-research-lead":   "domain-01-research:composition domain-02-analysis:composition domain-04-content:handoff_to",
				"domain-01-research":        "domain-02-analysis:handoff_to domain-04-content:handoff_to",
				"domain-02-analysis":        "archetype-research-lead:handoff_to domain-05-product:handoff_to",
				"domain-03-technical":       "domain-02-analysis:handoff_to",
				"domain-04-content":         "domain-02-analysis:handoff_to",
				"domain-05-product":         "archetype-product-thinker:handoff_to domain-02-analysis:handoff_to",
				"domain-06-security":        "domain-03-technical:handoff_to",
				"orchestrator":              all("orchestrator", example...),
			}},
		{name: "skills folder", path: "../testdata/skills", kind: "skills", allowed: 44,
			rows: map[string]string{
				// lit-pm's handoff_to narrows it to two skills
				"fact-checker":      all("eligible_skill", skills...),
				"lit-pm":            "fact-checker:handoff_to researcher:handoff_to",
				"perspective-swarm": all("orchestrator+eligible_skill", skills...),
				"researcher":        all("eligible_skill", skills...),
				"statistician":      all("eligible_skill", skills...),
				"synthesizer":       all("eligible_skill", skills...),
				"systems-architect": all("eligible_skill", skills...),
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := manifest.Load(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			m := reg.Matrix()
			if m.Kind != tc.kind || m.Agents != len(tc.rows) || m.Allowed != tc.allowed {
				t.Errorf("Matrix() kind %q, %d agents, %d allowed; want %q, %d, %d", m.Kind, m.Agents, m.Allowed, tc.kind, len(tc.rows), tc.allowed)
			}
			got := matrixRows(m)
			for id, want := range tc.rows {
				if got[id] != want {
					t.Errorf("source %s:\n got  %s\n want %s", id, got[id], want)
				}
			}
			for id := range got {
				if _, ok := tc.rows[id]; !ok {
					t.Errorf("unexpected source %s: %s", id, got[id])
				}
			}
			checkMatrixAgrees(t, reg, m)
			// The ledger decides from the registry's snapshot: its matrix
			// must be the same.
			back, err := manifest.ParseSnapshot(reg.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if bm := back.Matrix(); !reflect.DeepEqual(bm, m) {
				t.Errorf("matrix of the snapshot differs:\n%+v\n%+v", bm, m)
			}
		})
	}
}

// checkMatrixAgrees checks m against Allows and Grounds for every pair of
// agents, and a few unknown ones.
func checkMatrixAgrees(t *testing.T, reg *manifest.Registry, m *manifest.Matrix) {
	t.Helper()
	listed := map[[2]string][]manifest.Ground{}
	prev := ""
	for _, s := range m.Sources {
		if s.ID <= prev {
			t.Errorf("sources not sorted: %s after %s", s.ID, prev)
		}
		prev = s.ID
		a, ok := reg.Agent(s.ID)
		if !ok || a.Type != s.Type {
			t.Errorf("source %s (%s) is not a registered agent of that type", s.ID, s.Type)
		}
		tprev := ""
		for _, d := range s.Targets {
			if d.ID <= tprev {
				t.Errorf("targets of %s not sorted: %s after %s", s.ID, d.ID, tprev)
			}
			tprev = d.ID
			listed[[2]string{s.ID, d.ID}] = d.Grounds
		}
	}
	ids := []string{"", "ghost", "Orchestrator"}
	for _, a := range reg.Agents {
		ids = append(ids, a.ID)
	}
	n := 0
	for _, src := range ids {
		for _, dst := range ids {
			gs, inMatrix := listed[[2]string{src, dst}]
			if allows := reg.Allows(src, dst); allows != inMatrix {
				t.Errorf("Allows(%q, %q) = %v, but the matrix lists it: %v", src, dst, allows, inMatrix)
			}
			if got := reg.Grounds(src, dst); !reflect.DeepEqual(got, gs) {
				t.Errorf("Grounds(%q, %q) = %v, matrix says %v", src, dst, got, gs)
			}
			if inMatrix {
				n++
			}
		}
	}
	if n != m.Allowed {
		t.Errorf("Allowed = %d, but %d pairs are allowed", m.Allowed, n)
	}
}

// TestMatrixGrounds builds small registries that exercise each ground and
// their combinations.
func TestMatrixGrounds(t *testing.T) {
	agent := func(id, typ string, handoffTo ...string) manifest.Agent {
		return manifest.Agent{ID: id, Type: typ, Version: "1.0.0", PromptPath: id + ".md", HandoffTo: handoffTo}
	}
	arch := agent("arch", manifest.TypeArchetype, "d1")
	arch.Composition = []manifest.Component{{AgentID: "d1", Percent: 50}, {AgentID: "d2", Percent: 50}}
	skill := func(a manifest.Agent, accepts bool) manifest.Agent {
		a.AcceptsHandoff, a.HandoffCategories = accepts, []string{"research"}
		return a
	}
	cases := []struct {
		name string
		reg  *manifest.Registry
		rows map[string]string
	}{
		{name: "manifest: every ground but eligible_skill",
			reg: &manifest.Registry{Agents: []manifest.Agent{
				agent("d1", manifest.TypeDomain, "d2"), agent("d2", manifest.TypeDomain), arch,
				agent("orch", manifest.TypeOrchestrator, "d1")}},
			rows: map[string]string{
				"arch": "d1:handoff_to+composition d2:composition",
				"d1":   "d2:handoff_to",
				"d2":   "-",
				"orch": "arch:orchestrator d1:handoff_to+orchestrator d2:orchestrator orch:orchestrator",
			}},
		{name: "accepts_handoff outside a skills registry grants nothing",
			reg: &manifest.Registry{Agents: []manifest.Agent{
				skill(agent("a", manifest.TypeDomain), true), skill(agent("b", manifest.TypeDomain), true)}},
			rows: map[string]string{"a": "-", "b": "-"}},
		{name: "skills: handoff_to narrows, non-accepting targets are not eligible",
			reg: &manifest.Registry{FromSkills: true, Agents: []manifest.Agent{
				skill(agent("a", manifest.TypeDomain), true), skill(agent("b", manifest.TypeDomain, "c"), true),
				skill(agent("c", manifest.TypeDomain), false)}},
			rows: map[string]string{
				"a": "a:eligible_skill b:eligible_skill",
				"b": "c:handoff_to",
				"c": "a:eligible_skill b:eligible_skill",
			}},
		{name: "empty registry", reg: &manifest.Registry{}, rows: map[string]string{}},
		{name: "nil registry", reg: nil, rows: map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.reg.Matrix()
			if m.Sources == nil {
				t.Errorf("Sources = nil, want non-nil")
			}
			got := matrixRows(m)
			if !reflect.DeepEqual(got, tc.rows) {
				t.Errorf("Matrix rows:\n got  %v\n want %v", got, tc.rows)
			}
			if tc.reg != nil {
				checkMatrixAgrees(t, tc.reg, m)
			}
		})
	}
}

func ExampleRegistry_Matrix() {
	reg, err := manifest.Parse("prompt-manifest.json", []byte(`{
  "manifest_version": 1,
  "agents": [
    {"agent_id": "writer", "agent_type": "domain", "agent_version": "1.0.0", "prompt_path": "writer.md",
     "handoff_to": ["editor"]},
    {"agent_id": "editor", "agent_type": "domain", "agent_version": "1.0.0", "prompt_path": "editor.md"},
    {"agent_id": "lead", "agent_type": "orchestrator", "agent_version": "1.0.0", "prompt_path": "lead.md"}
  ]
}`), ".")
	if err != nil {
		fmt.Println(err)
		return
	}
	m := reg.Matrix()
	for _, s := range m.Sources {
		fmt.Printf("%s (%s):", s.ID, s.Type)
		for _, t := range s.Targets {
			fmt.Printf(" %s %v", t.ID, t.Grounds)
		}
		fmt.Println()
	}
	fmt.Printf("%d of %d pairs allowed\n", m.Allowed, m.Agents*m.Agents)
	// Output:
	// editor (domain):
	// lead (orchestrator): editor [orchestrator] lead [orchestrator] writer [orchestrator]
	// writer (domain): editor [handoff_to]
	// 4 of 9 pairs allowed
}
