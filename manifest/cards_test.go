package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/govledger/govledger/manifest"
)

// cardsDir is the example Agent Cards folder (A2A 0.3.0 cards).
var cardsDir = filepath.Join("..", "testdata", "a2a-cards")

// TestLoadAgentCards: a folder of A2A Agent Cards is a registry; each card
// stands in its agent's entry and is the agent's prompt file.
func TestLoadAgentCards(t *testing.T) {
	reg, err := manifest.Load(cardsDir)
	if err != nil {
		t.Fatal(err)
	}
	want := []manifest.Agent{
		{ID: "planner", Type: manifest.TypeDomain, Version: "1.2.0", PromptPath: "planner.json", AcceptsHandoff: true},
		// "2026.02" is no semantic version: the default stands in.
		{ID: "router", Type: manifest.TypeDomain, Version: manifest.DefaultSkillVersion, PromptPath: "router.json", AcceptsHandoff: true},
	}
	if !reflect.DeepEqual(reg.Agents, want) {
		t.Fatalf("agents = %+v\nwant %+v", reg.Agents, want)
	}
	if !reg.FromSkills || !reg.FromAgentCards || reg.FromSubagents || reg.Dir != cardsDir {
		t.Errorf("registry = %+v", reg)
	}
	if !reg.Allows("planner", "router") || !reg.Allows("router", "planner") || reg.Allows("planner", "nobody") {
		t.Errorf("any card agent may hand off to any other, and to no unknown agent")
	}
	if m := reg.Matrix(); m.Kind != "a2a-cards" {
		t.Errorf("Matrix().Kind = %q", m.Kind)
	}
	back, err := manifest.ParseSnapshot(reg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !back.FromAgentCards || !reflect.DeepEqual(back.Agents, reg.Agents) {
		t.Errorf("ParseSnapshot(Snapshot) = %+v", back)
	}
	// The same agents in a skills or subagents snapshot are refused: their
	// prompt paths are a card folder's.
	for _, kind := range []string{"skills", "claude-agents"} {
		s := strings.Replace(string(reg.Snapshot), `"registry":"a2a-cards"`, `"registry":"`+kind+`"`, 1)
		if _, err := manifest.ParseSnapshot([]byte(s)); !errors.Is(err, manifest.ErrSkill) {
			t.Errorf("card agents in a %s snapshot: %v; want ErrSkill", kind, err)
		}
	}
}

func TestLoadAgentCardsErrors(t *testing.T) {
	card, err := os.ReadFile(filepath.Join(cardsDir, "planner.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := string(card)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  error
		in    string // in the message
	}{
		{"file-name-not-agent-id", map[string]string{"Planner.json": c}, manifest.ErrAgentCard, "Planner.json"},
		{"missing-skills", map[string]string{"a.json": strings.Replace(c, `"skills"`, `"skillz"`, 1)}, manifest.ErrAgentCard, "/skills"},
		{"missing-url", map[string]string{"a.json": strings.Replace(c, `"url": "https://planner.example.com/a2a/v1",`, ``, 1)}, manifest.ErrAgentCard, "required member url"},
		{"name-not-string", map[string]string{"a.json": strings.Replace(c, `"name": "Route Planner"`, `"name": ["Route Planner"]`, 1)}, manifest.ErrAgentCard, "a.json:3:3"},
		{"capabilities-not-object", map[string]string{"a.json": strings.Replace(c, `"capabilities": {"streaming": false, "pushNotifications": false}`, `"capabilities": []`, 1)}, manifest.ErrAgentCard, "capabilities must be an object"},
		{"not-an-object", map[string]string{"a.json": `["card"]`}, manifest.ErrAgentCard, "not a JSON object"},
		{"duplicate-member", map[string]string{"a.json": strings.Replace(c, `"version": "1.2.0",`, `"version": "1.2.0", "version": "1.3.0",`, 1)}, manifest.ErrSyntax, "a.json"},
		{"trailing-data", map[string]string{"a.json": c + "{}"}, manifest.ErrSyntax, "a.json"},
		{"invalid-utf8", map[string]string{"a.json": strings.Replace(c, "Route", "Ro\xffute", 1)}, manifest.ErrSyntax, "a.json"},
		{"huge-number", map[string]string{"a.json": strings.Replace(c, `"streaming": false`, `"streaming": 9007199254740993`, 1)}, manifest.ErrSyntax, "a.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				write(t, filepath.Join(dir, name), data)
			}
			_, err := manifest.Load(dir)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.in) {
				t.Fatalf("Load = %v; want %v naming %q", err, tc.want, tc.in)
			}
		})
	}
}

// TestLoadAgentCardsFolderKind: *.md files make a folder a subagents
// folder, never a cards folder; a folder of other files is no registry.
func TestLoadAgentCardsFolderKind(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "notes.txt"), "x")
	if _, err := manifest.Load(dir); !errors.Is(err, manifest.ErrNoAgents) {
		t.Errorf("folder without cards: %v; want ErrNoAgents", err)
	}
	write(t, filepath.Join(dir, "a.json"), `{}`)
	write(t, filepath.Join(dir, "README.md"), "# agents\n")
	if _, err := manifest.Load(dir); !errors.Is(err, manifest.ErrNoAgents) || !strings.Contains(err.Error(), "subagent files") {
		t.Errorf("folder with *.md and *.json: %v; want the subagents folder's ErrNoAgents", err)
	}
}
