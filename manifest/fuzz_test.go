package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/manifest"
)

func addSeeds(f *testing.F, globs ...string) {
	for _, g := range globs {
		files, _ := filepath.Glob(g)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
}

// checkList checks the error contract: nil, or a non-empty ErrorList of
// placed errors.
func checkList(t *testing.T, err error) {
	var list manifest.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
	}
	for _, e := range list {
		if e == nil || e.Err == nil {
			t.Fatalf("nil error in list")
		}
		_ = e.Error()
	}
}

// FuzzParseManifest: Parse never panics; what it accepts re-marshals to a
// manifest that parses to the same agents, and reads back from its snapshot.
func FuzzParseManifest(f *testing.F) {
	addSeeds(f, "../testdata/registry/prompt-manifest.json", "../testdata/manifests/hostile/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := manifest.Parse("f.json", data, "")
		if err != nil {
			checkList(t, err)
			return
		}
		type doc struct {
			ManifestVersion int              `json:"manifest_version"`
			Agents          []manifest.Agent `json:"agents"`
		}
		agents := reg.Agents
		if agents == nil {
			agents = []manifest.Agent{}
		}
		out, err := strictjson.Canonical(doc{1, agents})
		if err != nil {
			t.Fatal(err)
		}
		again, err := manifest.Parse("again.json", out, "")
		if err != nil {
			t.Fatalf("re-marshaled manifest refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again.Agents, reg.Agents) {
			t.Fatalf("round trip changed the agents:\n%+v\n%+v", reg.Agents, again.Agents)
		}
		snap, err := manifest.ParseSnapshot(reg.Snapshot)
		if err != nil || !reflect.DeepEqual(snap.Agents, reg.Agents) {
			t.Fatalf("ParseSnapshot(Snapshot) = %v", err)
		}
	})
}

// FuzzParseSkill: ParseSkill never panics; an accepted skill, placed in its
// own folder, builds a registry whose snapshot reads back to it.
func FuzzParseSkill(f *testing.F) {
	addSeeds(f, "../testdata/skills/*/SKILL.md", "../testdata/manifests/hostile-skills/*.md")
	f.Fuzz(func(t *testing.T, data []byte) {
		a, ok, err := manifest.ParseSkill("x/SKILL.md", data)
		if err != nil {
			checkList(t, err)
			if ok {
				t.Fatal("ok with an error")
			}
			return
		}
		if !ok {
			return
		}
		if a.AcceptsHandoff && (len(a.HandoffCategories) == 0 || strings.TrimSpace(a.HandoffDescription) == "") {
			t.Fatalf("accepted a handoff option without a category or description: %+v", a)
		}
		reg, err := manifest.ParseSkills("", []manifest.SkillFile{{Path: a.ID + "/SKILL.md", Data: data}})
		if err != nil {
			checkList(t, err) // cross-agent rules (references) may fail on their own
			return
		}
		back, err := manifest.ParseSnapshot(reg.Snapshot)
		if err != nil {
			t.Fatalf("ParseSnapshot: %v\n%s", err, reg.Snapshot)
		}
		if !reflect.DeepEqual(back.Agents, reg.Agents) {
			t.Fatalf("snapshot round trip changed the agents:\n%+v\n%+v", reg.Agents, back.Agents)
		}
	})
}

// FuzzParseSubagent: a Claude Code subagent file never crashes the parser,
// every failure is an ErrorList, and an accepted agent's snapshot reads
// back to the same agents.
func FuzzParseSubagent(f *testing.F) {
	addSeeds(f, "../testdata/skills/*/SKILL.md", "../testdata/manifests/hostile-skills/*.md")
	f.Add([]byte("---\nname: a\ndescription: d\ntools: Read\nvbw_role: map-lead\n---\nYou are a.\n"))
	f.Add([]byte("---\nname: a\ndescription: d\nhandoff:\n  accepts_handoff: false\n  handoff_to: [a]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := manifest.ParseSubagents("", []manifest.SkillFile{{Path: "a.md", Data: data}})
		if err != nil {
			checkList(t, err)
			return
		}
		if len(reg.Agents) != 1 || reg.Agents[0].ID != "a" || reg.Agents[0].PromptPath != "a.md" {
			t.Fatalf("agents = %+v", reg.Agents)
		}
		back, err := manifest.ParseSnapshot(reg.Snapshot)
		if err != nil {
			t.Fatalf("ParseSnapshot: %v\n%s", err, reg.Snapshot)
		}
		if !back.FromSubagents || !reflect.DeepEqual(back.Agents, reg.Agents) {
			t.Fatalf("snapshot round trip changed the agents:\n%+v\n%+v", reg.Agents, back.Agents)
		}
	})
}

// FuzzParseAgentCard: any bytes as an A2A Agent Card file never panic; a
// card that loads is one domain agent that accepts handoffs, and its
// registry's snapshot reads back to the same agents.
func FuzzParseAgentCard(f *testing.F) {
	addSeeds(f, "../testdata/a2a-cards/*.json", "../testdata/registry/prompt-manifest.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := manifest.ParseAgentCards("", []manifest.SkillFile{{Path: "a.json", Data: data}})
		if err != nil {
			checkList(t, err)
			return
		}
		if len(reg.Agents) != 1 || reg.Agents[0].ID != "a" || reg.Agents[0].PromptPath != "a.json" || !reg.Agents[0].AcceptsHandoff ||
			manifest.CheckVersion(reg.Agents[0].Version) != nil {
			t.Fatalf("card agent = %+v", reg.Agents)
		}
		back, err := manifest.ParseSnapshot(reg.Snapshot)
		if err != nil {
			t.Fatalf("ParseSnapshot: %v\n%s", err, reg.Snapshot)
		}
		if !back.FromAgentCards || !reflect.DeepEqual(back.Agents, reg.Agents) {
			t.Fatalf("snapshot round trip: %+v, want %+v", back.Agents, reg.Agents)
		}
	})
}
