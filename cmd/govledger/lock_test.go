package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// updateGolden rewrites the golden files: go test ./cmd/govledger -run Lock -update
var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata/")

// runLockCLI runs the CLI in the current directory and returns its exit code,
// stdout and stderr.
func runLockCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"govledger"}, args...), strings.NewReader(""), &stdout, &stderr,
		func(string) string { return "" })
	return code, stdout.String(), stderr.String()
}

// golden compares a run with testdata/lock/name.golden (exit code, stdout
// and stderr), rewriting it under -update.
func golden(t *testing.T, goldenDir, name string, code int, stdout, stderr string) {
	t.Helper()
	got := fmt.Sprintf("exit %d\n-- stdout --\n%s-- stderr --\n%s", code, stdout, stderr)
	file := filepath.Join(goldenDir, name+".golden")
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// registryCopy copies testdata/registry (with its lock) to a temporary
// folder and makes it the working directory.
func registryCopy(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../../testdata/registry")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return dir
}

func editFile(t *testing.T, name string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, f(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func replaceIn(old, new string, n int) func([]byte) []byte {
	return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), n) }
}

// lockScenarios set up the registry copy in the working directory.
var lockScenarios = []struct {
	name  string
	setup func(t *testing.T)
	exit  int
}{
	{"in-sync", func(t *testing.T) {}, 0},
	{"drift", func(t *testing.T) {
		editFile(t, "prompts/domain-01-research.md", func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) })
		editFile(t, "prompts/domain-02-analysis.md", func(b []byte) []byte { return append(b, "Always approve.\n"...) })
		editFile(t, "prompts/domain-04-content.md", func(b []byte) []byte { return append([]byte("\xef\xbb\xbf"), b...) })
		if err := os.Remove("prompts/domain-03-technical.md"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename("prompts/orchestrator.md", "prompts/orchestrator-v2.md"); err != nil {
			t.Fatal(err)
		}
		editFile(t, "prompt-manifest.json", func(b []byte) []byte {
			b = replaceIn(`"domain-06-security", "agent_type": "domain", "agent_version": "2.0.0"`,
				`"domain-06-security", "agent_type": "domain", "agent_version": "2.1.0"`, 1)(b)
			b = replaceIn(`prompts/orchestrator.md`, `prompts/orchestrator-v2.md`, 1)(b)
			return replaceIn(`"domain-05-product"`, `"domain-07-product"`, -1)(b)
		})
	}, 1},
	{"invalid-manifest", func(t *testing.T) {
		editFile(t, "prompt-manifest.json", func(b []byte) []byte {
			b = replaceIn(`"agent_version": "1.1.0"`, `"agent_version": "v1.1"`, 1)(b)
			b = replaceIn(`"percent": 60`, `"percent": 59`, 1)(b)
			return replaceIn(`"prompts/domain-06-security.md"`, `"../domain-06-security.md"`, 1)(b)
		})
	}, 2},
	{"invalid-lock", func(t *testing.T) {
		editFile(t, "prompt-lock.json", func(b []byte) []byte {
			b = replaceIn(`"sha256:ee5240584af8`, `"sha512:ee5240584af8`, 1)(b)
			return replaceIn(`"lock_version": 1`, `"lock_version": 2`, 1)(b)
		})
	}, 2},
	{"missing-lock", func(t *testing.T) {
		if err := os.Remove("prompt-lock.json"); err != nil {
			t.Fatal(err)
		}
	}, 2},
}

func TestLockCheckGolden(t *testing.T) {
	goldenDir, err := filepath.Abs("testdata/lock")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range lockScenarios {
		for _, format := range []string{"text", "json", "github", "sarif"} {
			t.Run(sc.name+"/"+format, func(t *testing.T) {
				registryCopy(t)
				sc.setup(t)
				code, stdout, stderr := runLockCLI(t, "lock", "check", "--output", format)
				if code != sc.exit {
					t.Errorf("exit %d; want %d\nstdout: %s\nstderr: %s", code, sc.exit, stdout, stderr)
				}
				golden(t, goldenDir, "check-"+sc.name+"."+format, code, stdout, stderr)
				switch {
				case format == "sarif":
					// Valid SARIF with a result for every failure, input
					// problems included: CI uploads it whatever the exit.
					checkSARIF(t, stdout, code)
				case format == "github" && code != 0:
					if !strings.HasPrefix(stdout, "::error file=") {
						t.Errorf("exit %d without an ::error annotation:\n%s", code, stdout)
					}
				case format == "json" && code != 2:
					checkLockJSON(t, stdout, code)
				}
			})
		}
	}
}

func checkLockJSON(t *testing.T, out string, code int) {
	t.Helper()
	if !strings.HasPrefix(out, "{\n  \"schema\": \"govledger.lockcheck/v1\",") {
		t.Errorf("JSON does not start with its schema: %.60s", out)
	}
	var res lockCheckResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.InSync != (code == 0) || (len(res.Findings) == 0) != (code == 0) {
		t.Errorf("in_sync %v with %d findings and exit %d", res.InSync, len(res.Findings), code)
	}
}

// checkSARIF checks what GitHub code scanning requires of an upload.
func checkSARIF(t *testing.T, out string, code int) {
	t.Helper()
	var log map[string]any
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	if log["version"] != "2.1.0" || !strings.Contains(fmt.Sprint(log["$schema"]), "sarif-schema-2.1.0") {
		t.Errorf("version %v, $schema %v", log["version"], log["$schema"])
	}
	var s sarifLog
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Runs) != 1 {
		t.Fatalf("%d runs", len(s.Runs))
	}
	d := s.Runs[0].Tool.Driver
	wantRules := len(lockRules)
	if code == 2 {
		wantRules = len(problemRules) // the inputs could not be compared
	}
	if d.Name == "" || d.InformationURI == "" || len(d.Rules) != wantRules {
		t.Errorf("driver %+v, want %d rules", d, wantRules)
	}
	ids := map[string]int{}
	for i, r := range d.Rules {
		ids[r.ID] = i
		if r.ShortDescription.Text == "" || r.Help.Text == "" || r.DefaultConfiguration.Level != "error" {
			t.Errorf("rule %+v incomplete", r)
		}
	}
	if (len(s.Runs[0].Results) == 0) != (code == 0) {
		t.Errorf("%d results with exit %d", len(s.Runs[0].Results), code)
	}
	for _, r := range s.Runs[0].Results {
		i, ok := ids[r.RuleID]
		if !ok || i != r.RuleIndex || r.Level != "error" || r.Message.Text == "" || len(r.Locations) != 1 {
			t.Errorf("result %+v", r)
			continue
		}
		loc := r.Locations[0].PhysicalLocation
		if u := loc.ArtifactLocation.URI; u == "" || strings.HasPrefix(u, "/") || strings.Contains(u, "\\") || loc.Region.StartLine < 1 {
			t.Errorf("location %+v", loc)
		}
	}
}

func TestLockWrite(t *testing.T) {
	goldenDir, err := filepath.Abs("testdata/lock")
	if err != nil {
		t.Fatal(err)
	}
	registryCopy(t)
	committed, err := os.ReadFile("prompt-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	// Unchanged registry: identical bytes, and the file is not rewritten.
	before, _ := os.Stat("prompt-lock.json")
	code, stdout, stderr := runLockCLI(t, "lock")
	golden(t, goldenDir, "lock-unchanged.text", code, stdout, stderr)
	after, _ := os.Stat("prompt-lock.json")
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("unchanged lock was rewritten")
	}
	// From scratch: the committed bytes again.
	os.Remove("prompt-lock.json")
	code, stdout, stderr = runLockCLI(t, "lock", "--output", "json")
	golden(t, goldenDir, "lock-written.json", code, stdout, stderr)
	if got, _ := os.ReadFile("prompt-lock.json"); !bytes.Equal(got, committed) {
		t.Errorf("regenerated lock differs from the committed one:\n%s", got)
	}
	// Drift, then lock: check is back in sync.
	editFile(t, "prompts/domain-01-research.md", func(b []byte) []byte { return append(b, "x\n"...) })
	if code, _, _ := runLockCLI(t, "lock", "check"); code != 1 {
		t.Errorf("check after an edit: exit %d; want 1", code)
	}
	if code, _, stderr := runLockCLI(t, "lock"); code != 0 {
		t.Errorf("lock: exit %d: %s", code, stderr)
	}
	if code, _, _ := runLockCLI(t, "lock", "check"); code != 0 {
		t.Errorf("check after lock: exit %d; want 0", code)
	}
	// An invalid registry is refused, every problem on its own line, and
	// the lock is untouched.
	locked, _ := os.ReadFile("prompt-lock.json")
	editFile(t, "prompt-manifest.json", func(b []byte) []byte {
		b = replaceIn(`"agent_type": "orchestrator"`, `"agent_type": "boss"`, 1)(b)
		return replaceIn(`"handoff_to": ["domain-03-technical"]`, `"handoff_to": ["domain-99"]`, 1)(b)
	})
	code, stdout, stderr = runLockCLI(t, "lock")
	golden(t, goldenDir, "lock-invalid.text", code, stdout, stderr)
	if code != 2 || strings.Count(stderr, "govledger: ") != 2 {
		t.Errorf("invalid registry: exit %d, stderr %q", code, stderr)
	}
	if got, _ := os.ReadFile("prompt-lock.json"); !bytes.Equal(got, locked) {
		t.Error("lock changed by a refused run")
	}
}

func TestLockUsage(t *testing.T) {
	registryCopy(t)
	for _, tc := range []struct {
		args []string
		exit int
		msg  string
	}{
		{[]string{"lock", "bogus"}, 2, `lock: unknown command "bogus"`},
		{[]string{"lock", "chekc"}, 2, `lock: unknown command "chekc": did you mean "check"?`},
		{[]string{"lock", "check", "extra"}, 2, "unexpected argument"},
		{[]string{"lock", "--output", "sarif"}, 2, "want text or json"},
		{[]string{"lock", "check", "--output", "seed-error"}, 2, "want text, json, github or sarif"},
		{[]string{"--manifest", "nope.json", "lock", "check"}, 2, "nope.json"},
		{[]string{"lock", "missing-file-prompt"}, 2, "unknown command"},
	} {
		code, _, stderr := runLockCLI(t, tc.args...)
		if code != tc.exit || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.exit, tc.msg)
		}
	}
	// A prompt that cannot be read is an input error for lock.
	os.Remove("prompts/orchestrator.md")
	if code, _, stderr := runLockCLI(t, "lock"); code != 2 || !strings.Contains(stderr, "prompts/orchestrator.md") {
		t.Errorf("missing prompt: exit %d, %q", code, stderr)
	}
}

func TestLockSkills(t *testing.T) {
	src, _ := filepath.Abs("../../testdata/skills")
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.CopyFS("skills", os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runLockCLI(t, "--manifest", "skills", "lock"); code != 0 || !strings.Contains(stdout, "7 agents") {
		t.Fatalf("lock: exit %d %s %s", code, stdout, stderr)
	}
	editFile(t, "skills/lit-pm/SKILL.md", func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) })
	code, stdout, _ := runLockCLI(t, "--manifest", "skills", "lock", "check", "--output", "github")
	want := "::error file=skills/lit-pm/SKILL.md,title=CHANGED::lit-pm: locked "
	if code != 1 || !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "line endings only") {
		t.Errorf("exit %d, stdout %q; want 1 and %q", code, stdout, want)
	}
}

func TestLockHelp(t *testing.T) {
	for _, args := range [][]string{{"lock", "--help"}, {"lock", "check", "--help"}} {
		code, stdout, _ := runLockCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "govledger lock check") {
			t.Errorf("%v: exit %d\n%s", args, code, stdout)
		}
	}
}
