package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/manifest"
)

var sentinels = map[string]error{
	"ErrSyntax": manifest.ErrSyntax, "ErrTooLarge": manifest.ErrTooLarge, "ErrVersion": manifest.ErrVersion,
	"ErrMissing": manifest.ErrMissing, "ErrAgentID": manifest.ErrAgentID, "ErrDuplicate": manifest.ErrDuplicate,
	"ErrAgentType": manifest.ErrAgentType, "ErrAgentVersion": manifest.ErrAgentVersion,
	"ErrComposition": manifest.ErrComposition, "ErrReference": manifest.ErrReference,
	"ErrRequestType": manifest.ErrRequestType, "ErrPromptPath": manifest.ErrPromptPath,
	"ErrPathEscape": manifest.ErrPathEscape, "ErrSkill": manifest.ErrSkill, "ErrSnapshot": manifest.ErrSnapshot,
}

type expectation struct {
	Desc     string `json:"desc"`
	Error    string `json:"error"`
	Contains string `json:"contains"`
}

// readExpect reads dir/expect.json and checks that it names every other
// file of dir, and only those.
func readExpect(t *testing.T, dir string) map[string]expectation {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp map[string]expectation
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Name() != "expect.json" {
			files = append(files, e.Name())
			if _, ok := exp[e.Name()]; !ok {
				t.Errorf("%s has no entry in expect.json", e.Name())
			}
		}
	}
	for name := range exp {
		if !slices.Contains(files, name) {
			t.Errorf("expect.json names %s, which does not exist", name)
		}
	}
	return exp
}

// checkErr checks that err is a non-empty ErrorList matching exp, with
// every error placed at a line.
func checkErr(t *testing.T, err error, exp expectation) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want %s containing %q (%s)", exp.Error, exp.Contains, exp.Desc)
	}
	var list manifest.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
	}
	sentinel, ok := sentinels[exp.Error]
	if !ok {
		t.Fatalf("expect.json: unknown sentinel %q", exp.Error)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error = %v; want %s", err, exp.Error)
	}
	if !strings.Contains(err.Error(), exp.Contains) {
		t.Errorf("error = %v; want it to contain %q", err, exp.Contains)
	}
	for _, e := range list {
		if e.File == "" || e.Err == nil {
			t.Errorf("error %q has no file or cause", e)
		}
	}
}

func TestHostileManifests(t *testing.T) {
	dir := "../testdata/manifests/hostile"
	for name, exp := range readExpect(t, dir) {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			reg, err := manifest.Parse(name, data, "")
			if reg != nil {
				t.Errorf("Parse returned a registry with an error")
			}
			checkErr(t, err, exp)
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Errorf("error %q does not start with the file name", err)
			}
			if _, err := manifest.ParseSnapshot(data); err == nil {
				t.Errorf("ParseSnapshot accepted a hostile manifest")
			}
		})
	}
}

func TestHostileSkills(t *testing.T) {
	dir := "../testdata/manifests/hostile-skills"
	for name, exp := range readExpect(t, dir) {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			_, ok, err := manifest.ParseSkill(name, data)
			if ok {
				t.Errorf("ParseSkill ok with an error")
			}
			checkErr(t, err, exp)
		})
	}
}

func TestLoadExample(t *testing.T) {
	reg, err := manifest.Load("../testdata/registry/prompt-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"domain-01-research": "1.0.0", "domain-02-analysis": "1.0.0", "domain-03-technical": "1.1.0",
		"domain-04-content": "1.0.2", "domain-05-product": "1.0.0", "domain-06-security": "2.0.0",
		"archetype-product-thinker": "1.2.0", "archetype-research-lead": "0.9.0", "orchestrator": "2.0.0",
	}
	if len(reg.Agents) != len(want) {
		t.Fatalf("%d agents, want %d", len(reg.Agents), len(want))
	}
	for id, v := range want {
		a, ok := reg.Agent(id)
		if !ok || a.Version != v {
			t.Errorf("Agent(%q) = %+v, %v; want version %s", id, a, ok, v)
		}
	}
	if reg.Dir != filepath.Join("..", "testdata", "registry") || reg.FromSkills {
		t.Errorf("Dir = %q, FromSkills = %v", reg.Dir, reg.FromSkills)
	}
	raw, _ := os.ReadFile("../testdata/registry/prompt-manifest.json")
	if string(reg.Snapshot) != string(raw) {
		t.Errorf("Snapshot is not the manifest's bytes")
	}
	back, err := manifest.ParseSnapshot(reg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Agents, reg.Agents) {
		t.Errorf("ParseSnapshot(Snapshot).Agents differ")
	}
}

func TestAllErrorsReported(t *testing.T) {
	data := []byte(`{
  "manifest_version": 1,
  "agents": [
    {"agent_id": "Bad", "agent_type": "domain", "agent_version": "1.0.0", "prompt_path": "a.md"},
    {"agent_id": "b", "agent_type": "robot", "agent_version": "v1", "prompt_path": "../b.md",
     "handoff_to": ["nobody"], "request_types": ["order"]},
    {"agent_id": "c", "agent_type": "archetype", "agent_version": "1.0.0", "prompt_path": "A.md",
     "composition": [{"agent_id": "b", "percent": 99}]}
  ]
}`)
	_, err := manifest.Parse("m.json", data, "")
	var list manifest.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse = %v; want ErrorList", err)
	}
	want := []string{
		"m.json:4:6: /agents/0/agent_id: invalid agent_id",
		"m.json:5:23: /agents/1/agent_type: invalid agent_type",
		"m.json:5:46: /agents/1/agent_version: invalid agent_version",
		"m.json:5:69: /agents/1/prompt_path: invalid prompt_path",
		"m.json:6:21: /agents/1/handoff_to/0: unknown agent reference",
		"m.json:6:50: /agents/1/request_types/0: invalid request type",
		"m.json:7:76: /agents/2/prompt_path: invalid prompt_path: \"A.md\" differs only by case",
		"m.json:8:6: /agents/2/composition: invalid composition: percents sum to 99",
		"m.json:8:23: /agents/2/composition/0/agent_id: invalid composition: \"b\" is a robot agent",
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors:\n%s\nwant %d", len(got), strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q; want prefix %q", i, got[i], want[i])
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"1.2.3", true}, {"0.0.0", true}, {"10.20.30", true}, {"1.0.0-rc.1", true}, {"1.0.0+build.5", true},
		{"1.0.0-alpha+001", true},
		{"v1.2.3", false}, {"V1.2.3", false}, {"1.2", false}, {"1", false}, {"01.2.3", false}, {"1.02.3", false},
		{"1.2.03", false}, {"1.2.3-01", false}, {"1.2.3.4", false}, {"", false}, {" 1.2.3", false}, {"1.2.3 ", false},
		{"1.2.3-", false}, {"1.2.x", false}, {strings.Repeat("1", 70) + ".0.0", false},
	} {
		err := manifest.CheckVersion(tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("CheckVersion(%q) = %v; want ok=%v", tc.v, err, tc.ok)
		}
		if err != nil && !errors.Is(err, manifest.ErrAgentVersion) {
			t.Errorf("CheckVersion(%q) = %v; want ErrAgentVersion", tc.v, err)
		}
	}
}

func TestCheckAgentID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"a", true}, {"0", true}, {"domain-01-research", true}, {"a-", true}, {strings.Repeat("a", 64), true},
		{"", false}, {"-a", false}, {"A", false}, {"a_b", false}, {"a.b", false}, {"a b", false},
		{strings.Repeat("a", 65), false}, {"\u0430", false}, {"ａ", false}, {"a\u200b", false}, {"a\x00", false},
	} {
		err := manifest.CheckAgentID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("CheckAgentID(%q) = %v; want ok=%v", tc.id, err, tc.ok)
		}
	}
}

func TestCheckPromptPath(t *testing.T) {
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"a.md", true}, {"prompts/a.md", true}, {"prompts/sub/a-b_c.md", true}, {".hidden/a.md", true},
		{"", false}, {"/a.md", false}, {"../a.md", false}, {"a/../b.md", false}, {"a/./b.md", false}, {"./a.md", false},
		{"a//b.md", false}, {"a/", false}, {"a\\b.md", false}, {"a\x00b", false}, {"a\nb", false}, {"C:/a.md", false},
		{"c:a.md", false}, {"café.md", false}, {"NUL", false}, {"prompts/aux.md", false}, {"a.", false},
		{"..", false}, {".", false}, {strings.Repeat("a/", 600) + "a", false},
	} {
		err := manifest.CheckPromptPath(tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("CheckPromptPath(%q) = %v; want ok=%v", tc.p, err, tc.ok)
		}
	}
}

// writeRegistry writes a manifest with the given prompt paths (one domain
// agent each, named a0, a1, ...) in a fresh folder and returns its path.
func writeRegistry(t *testing.T, paths ...string) string {
	t.Helper()
	dir := t.TempDir()
	var agents []string
	for i, p := range paths {
		agents = append(agents, `{"agent_id":"a`+string(rune('0'+i))+`","agent_type":"domain","agent_version":"1.0.0","prompt_path":"`+p+`"}`)
	}
	m := filepath.Join(dir, "reg", "prompt-manifest.json")
	if err := os.MkdirAll(filepath.Join(dir, "reg", "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m, []byte(`{"manifest_version":1,"agents":[`+strings.Join(agents, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoadFileSystem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, reg string) // reg is the registry folder
		want  error
	}{
		{"plain file", func(t *testing.T, reg string) { write(t, filepath.Join(reg, "prompts/p.md"), "x") }, nil},
		{"missing file is for lock check", func(t *testing.T, reg string) {}, nil},
		{"symlink inside", func(t *testing.T, reg string) {
			write(t, filepath.Join(reg, "prompts/real.md"), "x")
			symlink(t, "real.md", filepath.Join(reg, "prompts/p.md"))
		}, nil},
		{"symlink escape absolute", func(t *testing.T, reg string) {
			symlink(t, "/etc/passwd", filepath.Join(reg, "prompts/p.md"))
		}, manifest.ErrPathEscape},
		{"symlink escape relative", func(t *testing.T, reg string) {
			write(t, filepath.Join(reg, "../outside.md"), "secret")
			symlink(t, "../../outside.md", filepath.Join(reg, "prompts/p.md"))
		}, manifest.ErrPathEscape},
		{"symlinked folder escape", func(t *testing.T, reg string) {
			os.RemoveAll(filepath.Join(reg, "prompts"))
			os.MkdirAll(filepath.Join(reg, "../elsewhere"), 0o755)
			write(t, filepath.Join(reg, "../elsewhere/p.md"), "x")
			symlink(t, "../elsewhere", filepath.Join(reg, "prompts"))
		}, manifest.ErrPathEscape},
		{"directory", func(t *testing.T, reg string) {
			os.MkdirAll(filepath.Join(reg, "prompts/p.md"), 0o755)
		}, manifest.ErrPathEscape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := writeRegistry(t, "prompts/p.md")
			tc.setup(t, filepath.Dir(m))
			reg, err := manifest.Load(m)
			if tc.want == nil {
				if err != nil || len(reg.Agents) != 1 {
					t.Fatalf("Load = %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v; want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), "prompt-manifest.json:1:") {
				t.Errorf("error %q is not placed at the manifest line", err)
			}
		})
	}
}

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func TestLoadSkills(t *testing.T) {
	reg, err := manifest.Load("../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	if !reg.FromSkills {
		t.Error("FromSkills = false")
	}
	var ids []string
	for _, a := range reg.Agents {
		ids = append(ids, a.ID)
	}
	if want := []string{"fact-checker", "lit-pm", "perspective-swarm", "researcher", "statistician", "synthesizer", "systems-architect"}; !slices.Equal(ids, want) {
		t.Fatalf("agents = %v; want %v (brainstorm-notes has no handoff block)", ids, want)
	}
	lit, _ := reg.Agent("lit-pm")
	want := manifest.Agent{
		ID: "lit-pm", Type: "domain", Version: "1.3.0", PromptPath: "lit-pm/SKILL.md",
		HandoffTo: []string{"researcher", "fact-checker"}, AcceptsHandoff: true,
		HandoffCategories: []string{"research"}, HandoffDescription: "Structured literature review of the open questions",
		HandoffTrigger: "{payload_path}", ProtocolVersion: "2.0", HealthCheck: "lit-pm --health",
		Requires:         []string{"context.original_prompt", "context.problem_type"},
		OptionalConsumes: []string{"insights.uncertainties", "research_seeds.open_questions"},
	}
	if !reflect.DeepEqual(*lit, want) {
		t.Errorf("lit-pm = %+v\nwant %+v", *lit, want)
	}
	if fc, _ := reg.Agent("fact-checker"); fc.Version != manifest.DefaultSkillVersion {
		t.Errorf("fact-checker version = %q; want the default", fc.Version)
	}
	if ps, _ := reg.Agent("perspective-swarm"); ps.Type != manifest.TypeOrchestrator {
		t.Errorf("perspective-swarm type = %q", ps.Type)
	}
	for _, tc := range []struct {
		src, dst string
		ok       bool
	}{
		{"lit-pm", "researcher", true}, {"lit-pm", "statistician", false}, // narrowed by handoff_to
		{"researcher", "statistician", true}, {"perspective-swarm", "lit-pm", true}, {"researcher", "brainstorm-notes", false},
	} {
		if got := reg.Allows(tc.src, tc.dst); got != tc.ok {
			t.Errorf("Allows(%s, %s) = %v; want %v", tc.src, tc.dst, got, tc.ok)
		}
	}
	// The snapshot is canonical JSON and reads back to the same agents.
	canon, err := strictjson.CanonicalizeBytes(reg.Snapshot)
	if err != nil || string(canon) != string(reg.Snapshot) {
		t.Errorf("snapshot is not canonical: %v", err)
	}
	back, err := manifest.ParseSnapshot(reg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !back.FromSkills || !reflect.DeepEqual(back.Agents, reg.Agents) {
		t.Errorf("ParseSnapshot(Snapshot) = %+v", back)
	}
	// A re-indented snapshot is refused: one registry, one snapshot.
	if _, err := manifest.ParseSnapshot(append([]byte(" "), reg.Snapshot...)); !errors.Is(err, manifest.ErrSnapshot) {
		t.Errorf("non-canonical snapshot: %v; want ErrSnapshot", err)
	}
}

const okSkill = "---\nname: %s\nhandoff:\n  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: d\n%s---\nbody\n"

func skill(name, extra string) []byte {
	return []byte(strings.Replace(strings.Replace(okSkill, "%s", name, 1), "%s", extra, 1))
}

func TestParseSkills(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []manifest.SkillFile
		want  error
		msg   string
	}{
		{"ok", []manifest.SkillFile{{"a/SKILL.md", skill("a", "")}, {"b/SKILL.md", skill("b", "  handoff_to: [a]\n")}}, nil, ""},
		{"name is not the folder", []manifest.SkillFile{{"a/SKILL.md", skill("b", "")}}, manifest.ErrSkill, "folder name"},
		{"handoff_to unknown", []manifest.SkillFile{{"a/SKILL.md", skill("a", "  handoff_to: [zz]\n")}}, manifest.ErrReference, "a/SKILL.md:7:"},
		{"handoff_to a non-agent", []manifest.SkillFile{{"a/SKILL.md", skill("a", "  handoff_to: [b]\n")}, {"b/SKILL.md", []byte("---\nname: b\n---\n")}}, manifest.ErrReference, ""},
		{"archetype composition", []manifest.SkillFile{
			{"a/SKILL.md", skill("a", "")}, {"b/SKILL.md", skill("b", "")},
			{"c/SKILL.md", []byte("---\nname: c\nagent_type: archetype\nhandoff:\n  accepts_handoff: true\n  handoff_categories: [x]\n  handoff_description: d\n  composition:\n    - {agent_id: a, percent: 70}\n    - {agent_id: b, percent: 20}\n---\n")},
		}, manifest.ErrComposition, "c/SKILL.md:8:3: handoff/composition: invalid composition: percents sum to 90"},
		{"nested path", []manifest.SkillFile{{"a/b/SKILL.md", skill("b", "")}}, manifest.ErrSkill, ""},
		{"every file's errors", []manifest.SkillFile{{"a/SKILL.md", skill("a", "  x: 1\n")}, {"b/SKILL.md", skill("b", "  y: 1\n")}}, manifest.ErrSkill, "b/SKILL.md:7:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := manifest.ParseSkills("", tc.files)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := manifest.ParseSnapshot(reg.Snapshot); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("ParseSkills = %v; want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestLoadSkillsSymlink(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills/a/SKILL.md"), string(skill("a", "")))
	write(t, filepath.Join(dir, "outside/b/SKILL.md"), string(skill("b", "")))
	symlink(t, "../outside/b", filepath.Join(dir, "skills/b"))
	if _, err := manifest.Load(filepath.Join(dir, "skills")); !errors.Is(err, manifest.ErrPathEscape) {
		t.Errorf("symlinked skill folder: %v; want ErrPathEscape", err)
	}
	os.Remove(filepath.Join(dir, "skills/b"))
	write(t, filepath.Join(dir, "skills/c/real.md"), string(skill("c", "")))
	symlink(t, "real.md", filepath.Join(dir, "skills/c/SKILL.md"))
	if _, err := manifest.Load(filepath.Join(dir, "skills")); !errors.Is(err, manifest.ErrPathEscape) {
		t.Errorf("symlinked SKILL.md: %v; want ErrPathEscape", err)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    manifest.Error
		want string
	}{
		{manifest.Error{File: "m.json", Line: 3, Col: 7, Field: "/agents/0/agent_id", Err: manifest.ErrAgentID}, "m.json:3:7: /agents/0/agent_id: invalid agent_id"},
		{manifest.Error{File: "m.json", Line: 3, Err: manifest.ErrSyntax}, "m.json:3: syntax"},
		{manifest.Error{File: "m.json", Err: manifest.ErrTooLarge}, "m.json: file too large"},
		{manifest.Error{Err: manifest.ErrTooLarge}, "file too large"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q; want %q", got, tc.want)
		}
	}
}

func TestTooLarge(t *testing.T) {
	data := make([]byte, manifest.MaxFileSize+1)
	if _, err := manifest.Parse("big.json", data, ""); !errors.Is(err, manifest.ErrTooLarge) {
		t.Errorf("Parse(big) = %v", err)
	}
}
