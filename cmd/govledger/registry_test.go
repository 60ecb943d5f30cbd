package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/manifest"
)

// skillsCopy copies testdata/skills to skills/ in a temporary working
// directory.
func skillsCopy(t *testing.T) {
	t.Helper()
	src, err := filepath.Abs("../../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.CopyFS("skills", os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryGolden pins the text and JSON matrix of the example manifest
// and skills folder, and the usage and input errors, with their exit codes.
func TestRegistryGolden(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T)
		args  []string
		exit  int
	}{
		{"manifest-text", registryCopyNoReturn, []string{"registry"}, 0},
		{"manifest-json", registryCopyNoReturn, []string{"registry", "--output", "json"}, 0},
		{"skills-text", skillsCopy, []string{"--manifest", "skills", "registry"}, 0},
		{"skills-json", skillsCopy, []string{"--output", "json", "--manifest", "skills", "registry"}, 0},
		{"invalid-manifest", func(t *testing.T) {
			registryCopy(t)
			editFile(t, "prompt-manifest.json", replaceIn(`"handoff_to": ["domain-03-technical"]`, `"handoff_to": ["domain-99-ghost"]`, 1))
		}, []string{"registry"}, 2},
		{"missing-manifest", func(t *testing.T) { t.Chdir(t.TempDir()) }, []string{"registry"}, 2},
		{"usage-argument", registryCopyNoReturn, []string{"registry", "orchestrator"}, 2},
		{"usage-output", registryCopyNoReturn, []string{"registry", "--output", "sarif"}, 2},
	}
	goldenDir, err := filepath.Abs("testdata/registry")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			code, stdout, stderr := runLockCLI(t, tc.args...)
			if code != tc.exit {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.exit, stdout, stderr)
			}
			if tc.exit != 0 && stderr == "" {
				t.Errorf("exit %d without a message on stderr", code)
			}
			golden(t, goldenDir, tc.name, code, stdout, stderr)
		})
	}
}

func registryCopyNoReturn(t *testing.T) { registryCopy(t) }

// TestRegistryOutputs checks that text and JSON render the library's matrix:
// JSON decodes back to exactly manifest.Registry.Matrix, with the schema
// first; every allowed pair appears in the text table, and only those.
func TestRegistryOutputs(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(t *testing.T)
		manifest string
	}{
		{"manifest", registryCopyNoReturn, "prompt-manifest.json"},
		{"skills", skillsCopy, "skills"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			reg, err := manifest.Load(tc.manifest)
			if err != nil {
				t.Fatal(err)
			}
			want := reg.Matrix()

			code, out, stderr := runLockCLI(t, "--manifest", tc.manifest, "--output", "json", "registry")
			if code != 0 {
				t.Fatalf("json: exit %d: %s", code, stderr)
			}
			if !strings.HasPrefix(out, "{\n  \"schema\": \"govledger.registry/v1\",\n") {
				t.Errorf("JSON does not start with the schema field:\n%.200s", out)
			}
			var got registryResult
			if err := json.Unmarshal([]byte(out), &got, json.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("decoding the JSON output: %v", err)
			}
			if got.Manifest != tc.manifest || !reflect.DeepEqual(got.Matrix, *want) {
				t.Errorf("JSON output is not the library's matrix:\n got  %+v\n want %+v", got.Matrix, *want)
			}

			code, text, stderr := runLockCLI(t, "--manifest", tc.manifest, "registry")
			if code != 0 {
				t.Fatalf("text: exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			if len(lines) < 3 || !strings.HasPrefix(lines[2], "SOURCE") {
				t.Fatalf("no table header in:\n%s", text)
			}
			// Read the table back: the source column is blank on
			// continuation lines.
			pairs := map[[2]string]string{}
			src := ""
			for _, l := range lines[3:] {
				f := strings.Fields(l)
				if !strings.HasPrefix(l, " ") {
					src, f = f[0], f[2:]
				}
				if f[0] == "(none)" {
					continue
				}
				pairs[[2]string{src, f[0]}] = f[1]
			}
			n := 0
			for _, s := range want.Sources {
				for _, d := range s.Targets {
					n++
					why, ok := pairs[[2]string{s.ID, d.ID}]
					if !ok || !strings.HasPrefix(why, string(d.Grounds[0])) {
						t.Errorf("text table lacks %s -> %s (%v); got %q", s.ID, d.ID, d.Grounds, why)
					}
				}
			}
			if len(pairs) != n || n != want.Allowed {
				t.Errorf("text table lists %d pairs, matrix %d (Allowed %d)", len(pairs), n, want.Allowed)
			}
		})
	}
}

func TestRegistryHelp(t *testing.T) {
	code, stdout, _ := runLockCLI(t, "registry", "--help")
	for _, want := range []string{"Examples:", "govledger registry --output json", "deny by default", "eligible_skill"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("registry --help: exit %d, no %q in\n%s", code, want, stdout)
		}
	}
	code, stdout, _ = runLockCLI(t, "--help")
	if code != 0 || !strings.Contains(stdout, "registry") {
		t.Errorf("--help does not list the registry command: exit %d\n%s", code, stdout)
	}
}
