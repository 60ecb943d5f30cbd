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

// subagentFile is a Claude Code subagent file with extra front matter.
func subagentFile(name, extra string) string {
	return "---\nname: " + name + "\ndescription: Reviews code when asked.\ntools: Read, Grep\nmodel: sonnet\n" + extra + "---\nYou are " + name + ".\n"
}

// TestLoadSubagents: a .claude/agents folder is a registry, one agent per
// subagent file, whose prompt is the whole file.
func TestLoadSubagents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".claude", "agents")
	write(t, filepath.Join(dir, "reviewer.md"), subagentFile("reviewer", "vbw_role: map-lead\n"))
	write(t, filepath.Join(dir, "main.md"), subagentFile("main", "agent_type: orchestrator\nversion: \"1.2.0\"\n"))
	write(t, filepath.Join(dir, "scout.md"), subagentFile("scout", "vbw_role: scout\nhandoff:\n  accepts_handoff: false\n  handoff_to: [reviewer]\n"))
	write(t, filepath.Join(dir, "README.md"), "# Our agents\n")
	reg, err := manifest.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reg.FromSubagents || !reg.FromSkills {
		t.Errorf("FromSubagents, FromSkills = %v, %v; want true, true", reg.FromSubagents, reg.FromSkills)
	}
	want := []manifest.Agent{
		{ID: "main", Type: "orchestrator", Version: "1.2.0", PromptPath: "main.md", AcceptsHandoff: true},
		{ID: "reviewer", Type: "domain", Version: manifest.DefaultSkillVersion, PromptPath: "reviewer.md", AcceptsHandoff: true, VBWRole: manifest.RoleMapLead},
		{ID: "scout", Type: "domain", Version: manifest.DefaultSkillVersion, PromptPath: "scout.md", HandoffTo: []string{"reviewer"}, VBWRole: manifest.RoleScout},
	}
	if !reflect.DeepEqual(reg.Agents, want) {
		t.Fatalf("agents = %+v\nwant %+v", reg.Agents, want)
	}
	for _, tc := range []struct {
		src, dst string
		ok       bool
	}{
		{"main", "reviewer", true}, {"main", "scout", true}, // an orchestrator (the policy still refuses: scout accepts no handoff)
		{"scout", "reviewer", true}, {"reviewer", "main", true}, {"reviewer", "scout", false},
	} {
		if got := reg.Allows(tc.src, tc.dst); got != tc.ok {
			t.Errorf("Allows(%s, %s) = %v; want %v", tc.src, tc.dst, got, tc.ok)
		}
	}
	if !strings.Contains(string(reg.Snapshot), `"registry":"claude-agents"`) {
		t.Errorf("snapshot %s does not name its kind", reg.Snapshot)
	}
	back, err := manifest.ParseSnapshot(reg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !back.FromSubagents || !reflect.DeepEqual(back.Agents, reg.Agents) {
		t.Errorf("ParseSnapshot(Snapshot) = %+v", back)
	}
	// A skills snapshot of the same agents is refused: their prompt paths
	// are a subagent folder's.
	skills := strings.Replace(string(reg.Snapshot), `"registry":"claude-agents"`, `"registry":"skills"`, 1)
	if _, err := manifest.ParseSnapshot([]byte(skills)); !errors.Is(err, manifest.ErrSkill) {
		t.Errorf("subagent agents in a skills snapshot: %v; want ErrSkill", err)
	}
	if m := reg.Matrix(); m.Kind != "subagents" {
		t.Errorf("Matrix().Kind = %q", m.Kind)
	}
}

func TestLoadSubagentsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  error
		in    string // in the message
	}{
		{"empty-folder", nil, manifest.ErrNoAgents, "A2A Agent Cards (<agent_id>.json) in the folder, found none"},
		{"only-readme", map[string]string{"README.md": "# agents\n"}, manifest.ErrNoAgents, "subagent files"},
		{"no-description", map[string]string{"a.md": "---\nname: a\n---\nbody\n"}, manifest.ErrMissing, "description"},
		{"no-name", map[string]string{"a.md": "---\ndescription: d\n---\nbody\n"}, manifest.ErrMissing, "name"},
		{"name-not-file-name", map[string]string{"a.md": subagentFile("b", "")}, manifest.ErrSkill, "file name"},
		{"bad-role", map[string]string{"a.md": subagentFile("a", "vbw_role: Map Lead\n")}, manifest.ErrVBWRole, "a.md:6:11"},
		{"unknown-handoff-key", map[string]string{"a.md": subagentFile("a", "handoff:\n  accepts_handoff: true\n  color: red\n")}, manifest.ErrSkill, "color"},
		{"handoff-block-needs-accepts", map[string]string{"a.md": subagentFile("a", "handoff:\n  handoff_to: []\n")}, manifest.ErrSkill, "accepts_handoff"},
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

// TestSkillRole: a SKILL.md declares its vbw_role at the top of its front
// matter, as a manifest does in its agent.
func TestSkillRole(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "qa", "SKILL.md"), string(skill("qa", ""))[:4]+"vbw_role: qa-lead\n"+string(skill("qa", ""))[4:])
	reg, err := manifest.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := reg.Agent("qa"); a.VBWRole != manifest.RoleQALead || !reg.DeclaresVBWRoles() {
		t.Errorf("qa = %+v; want vbw_role qa-lead", a)
	}
	write(t, filepath.Join(dir, "qa", "SKILL.md"), string(skill("qa", ""))[:4]+"vbw_role: boss\n"+string(skill("qa", ""))[4:])
	if _, err := manifest.Load(dir); !errors.Is(err, manifest.ErrVBWRole) {
		t.Errorf("vbw_role boss: %v; want ErrVBWRole", err)
	}
	if err := os.Remove(filepath.Join(dir, "qa", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
}

// TestLoadSubagentsSymlink: a subagent file that is a symbolic link is
// refused (its prompt could live anywhere).
func TestLoadSubagentsSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "a.md"), subagentFile("a", ""))
	write(t, filepath.Join(outside, "b.md"), subagentFile("b", ""))
	symlink(t, filepath.Join(outside, "b.md"), filepath.Join(dir, "b.md"))
	if _, err := manifest.Load(dir); !errors.Is(err, manifest.ErrPathEscape) || !strings.Contains(err.Error(), "b.md") {
		t.Fatalf("Load = %v; want ErrPathEscape naming b.md", err)
	}
}
