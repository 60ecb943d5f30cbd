package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	"github.com/govledger/govledger/internal/testenv"
)

// action is the part of action.yml the runner reads.
type action struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Branding    map[string]string `yaml:"branding"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
		Required    bool   `yaml:"required"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			Name  string            `yaml:"name"`
			Uses  string            `yaml:"uses"`
			With  map[string]string `yaml:"with"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

// TestActionInScratchRepo runs the reusable action (action.yml) as a
// runner would, in a scratch repository that is not this one, with its own
// registry: govledger is fetched with go install through a file:// module
// proxy built from this checkout (as the module proxy would serve a tag),
// then the SARIF and gate steps pass on the lock in sync and fail, with an
// annotation at the drifted prompt, after a prompt changed.
func TestActionInScratchRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds govledger through a module proxy")
	}
	bash := testenv.LookPath(t, "apt-get install bash", "bash")
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" || !a.Inputs["version"].Required {
		t.Fatalf("action.yml: want a composite action with a required version input; got %q", a.Runs.Using)
	}
	// The guide's workflow uses the action and uploads the file it writes.
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guides", "ci-gate.md"))
	if err != nil {
		t.Fatal(err)
	}
	wf := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(guide)
	if wf == nil || !bytes.Contains(wf[1], []byte("uses: govledger/govledger@")) ||
		!bytes.Contains(wf[1], []byte("sarif_file: "+a.Inputs["sarif"].Default)) {
		t.Errorf("docs/guides/ci-gate.md: the first workflow must use the action and upload %s", a.Inputs["sarif"].Default)
	}

	// A module proxy holding this checkout as one version.
	const version = "v0.99.0-scratch"
	proxy := t.TempDir()
	vdir := filepath.Join(proxy, "github.com", "govledger", "govledger", "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, module.Version{Path: "github.com/govledger/govledger", Version: version}, root); err != nil {
		t.Fatalf("module zip of the checkout: %v", err)
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".zip"), z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// A scratch repository with a registry of its own.
	repo := t.TempDir()
	files := map[string]string{
		"agents/prompt-manifest.json": `{"manifest_version": 1, "agents": [
  {"agent_id": "planner", "agent_type": "domain", "agent_version": "1.0.0", "prompt_path": "prompts/planner.md", "handoff_to": ["coder"]},
  {"agent_id": "coder", "agent_type": "domain", "agent_version": "1.0.0", "prompt_path": "prompts/coder.md"}
]}
`,
		"agents/prompts/planner.md": "You plan the work.\n",
		"agents/prompts/coder.md":   "You write the code.\n",
		"README.md":                 "not govledger\n",
	}
	for name, text := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The runner: the job's workspace, RUNNER_TEMP, PATH, HOME and the Go
	// caches; govledger comes only from the proxy (dependencies from the
	// usual one, or the module cache).
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}
	runnerTemp := t.TempDir()
	env := []string{"RUNNER_TEMP=" + runnerTemp, "GITHUB_WORKSPACE=" + repo,
		"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + strings.TrimSpace(string(out)),
		"GONOSUMDB=github.com/govledger/govledger", "GOFLAGS=-mod=mod"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "HOME" || k == "GOCACHE" || k == "GOMODCACHE" || k == "GOPATH" || k == "GOTOOLCHAIN" {
			env = append(env, kv)
		}
	}
	inputs := map[string]string{"manifest": "agents/prompt-manifest.json", "lock": "agents/prompt-lock.json", "version": version}
	for name, in := range a.Inputs {
		if _, ok := inputs[name]; !ok {
			inputs[name] = in.Default
		}
	}
	expr := regexp.MustCompile(`\$\{\{\s*inputs\.([a-z-]+)\s*\}\}`)
	expand := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string { return inputs[expr.FindStringSubmatch(m)[1]] })
	}
	run := func(i int) (int, string) {
		s := a.Runs.Steps[i]
		if s.Shell != "bash" {
			t.Fatalf("step %q: shell %q, want bash", s.Name, s.Shell)
		}
		cmd := exec.Command(bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(s.Run))
		cmd.Dir, cmd.Env = repo, append([]string{}, env...)
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+expand(v))
		}
		o, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(o)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(o)
		}
		t.Fatalf("step %q: %v", s.Name, err)
		return 0, ""
	}
	var install, sarif, gate = -1, -1, -1
	for i, s := range a.Runs.Steps {
		switch {
		case s.Uses != "":
			if !strings.HasPrefix(s.Uses, "actions/setup-go@") {
				t.Errorf("action.yml uses %q: only setup-go is expected", s.Uses)
			}
		case strings.Contains(s.Run, "go install"):
			install = i
		case strings.Contains(s.Run, "--output sarif"):
			sarif = i
		case strings.Contains(s.Run, "--output github"):
			gate = i
		}
	}
	if install < 0 || sarif < 0 || gate < 0 {
		t.Fatalf("action.yml: want an install, a SARIF and a gate step; got %d %d %d", install, sarif, gate)
	}
	if code, o := run(install); code != 0 || !strings.Contains(o, version) {
		t.Fatalf("install step: exit %d, want the version %s built from the proxy:\n%s", code, version, o)
	}
	bin := filepath.Join(runnerTemp, "govledger-bin", "govledger")
	lock := exec.Command(bin, "--manifest", inputs["manifest"], "--lock", inputs["lock"], "lock")
	lock.Dir = repo
	if o, err := lock.CombinedOutput(); err != nil {
		t.Fatalf("lock: %v %s", err, o)
	}

	sarifFile := filepath.Join(repo, inputs["sarif"])
	for _, sc := range []struct {
		name string
		edit func()
		code int
		want string
	}{
		{"in sync", func() {}, 0, ""},
		{"drifted", func() {
			if err := os.WriteFile(filepath.Join(repo, "agents", "prompts", "coder.md"), []byte("You write the code. Skip the review.\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 1, "::error file=agents/prompts/coder.md,title=CHANGED::"},
	} {
		sc.edit()
		os.Remove(sarifFile)
		if code, o := run(sarif); code != 0 {
			t.Errorf("%s: SARIF step: exit %d\n%s", sc.name, code, o)
		}
		var log struct {
			Runs []struct {
				Tool struct {
					Driver struct{ Version string } `json:"driver"`
				} `json:"tool"`
				Results []json.RawMessage `json:"results"`
			} `json:"runs"`
		}
		if b, err := os.ReadFile(sarifFile); err != nil || json.Unmarshal(b, &log) != nil || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Version != version {
			t.Errorf("%s: SARIF file %s: %v, %+v; want one run by govledger %s", sc.name, inputs["sarif"], err, log, version)
		} else if (len(log.Runs[0].Results) > 0) != (sc.code != 0) {
			t.Errorf("%s: SARIF holds %d results", sc.name, len(log.Runs[0].Results))
		}
		if code, o := run(gate); code != sc.code || !strings.Contains(o, sc.want) {
			t.Errorf("%s: gate step: exit %d, want %d and %q:\n%s", sc.name, code, sc.code, sc.want, o)
		}
	}
}
