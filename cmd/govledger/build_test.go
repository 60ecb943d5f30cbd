package main

// Tests that build the govledger binary and run it as a user's shell or CI
// runner would: --version from the VCS stamp, the completion scripts in
// real shells, the README's CI recipe step by step, and repository hygiene.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/testenv"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
	"go.yaml.in/yaml/v3"
)

var (
	binOnce sync.Once
	binDir  string // holds "govledger"; removed by TestMain
	binErr  error
)

func TestMain(m *testing.M) {
	// One PostgreSQL server for the tests that need one, started by the
	// first of them (pgtest.NewDB).
	code := pgtest.Main(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// moduleRoot is the folder of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// inGitCheckout reports whether root is a git work tree and git runs.
func inGitCheckout(root string) bool {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").Output()
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// govledgerBinary builds cmd/govledger once per test run, from the
// checkout, and returns its path.
func govledgerBinary(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "govledger-bin-")
		if binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "govledger"), "./cmd/govledger")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "govledger")
}

// TestVersionFromCheckout: in a fresh clone, "go build" stamps the
// clone's revision, and "go run" with uncommitted changes reports them.
// (The go command finds a repository by its .git folder, so the test
// clones: in a git worktree, whose .git is a file, nothing is stamped. A
// source tree that is no checkout, such as an unpacked archive, is copied
// into a new repository of one commit instead.)
func TestVersionFromCheckout(t *testing.T) {
	root := moduleRoot(t)
	testenv.LookPath(t, "apt-get install git", "git")
	clone := filepath.Join(t.TempDir(), "govledger")
	if inGitCheckout(root) {
		if out, err := exec.Command("git", "clone", "--quiet", root, clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
	} else {
		src := os.DirFS(root)
		if err := os.CopyFS(clone, src); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"init", "--quiet"}, {"add", "-A"},
			{"-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "--quiet", "-m", "the unpacked tree"}} {
			git := exec.Command("git", args...)
			git.Dir = clone
			if out, err := git.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(string(head))
	// -buildvcs=true: the default, auto, may be turned off by GOFLAGS.
	version := func(args ...string) versionResult {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = clone
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, stderr.String())
		}
		var v versionResult
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		return v
	}
	bin := filepath.Join(t.TempDir(), "govledger")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/govledger")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--output", "json", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v versionResult
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Revision != rev || v.Modified || v.Time == "" || v.Module != "github.com/govledger/govledger" ||
		!strings.Contains(v.Version, rev[:12]) {
		t.Errorf("go build: --version %+v; want revision %s, unmodified, and a pseudo-version naming it", v, rev)
	}
	text, err := exec.Command(bin, "--version").Output()
	if want := "govledger " + v.Version + " revision " + rev + " " + v.Time + " ("; err != nil || !strings.HasPrefix(string(text), want) {
		t.Errorf("--version %q (%v); want it to start with %q", text, err, want)
	}
	// An uncommitted change, built by go run.
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := version("run", "-buildvcs=true", "./cmd/govledger", "--output", "json", "--version"); v.Revision != rev || !v.Modified {
		t.Errorf("go run with a changed README: %+v; want revision %s, modified", v, rev)
	}
}

// withBinaryOnPath returns an environment whose PATH starts with the
// folder of the built govledger.
func withBinaryOnPath(t *testing.T) []string {
	bin := govledgerBinary(t)
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "GOVLEDGER_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestCompletionScripts loads each script in its shell, asks for the
// completions of a few command lines and compares the candidates.
func TestCompletionScripts(t *testing.T) {
	env := withBinaryOnPath(t)
	cases := []struct {
		words []string // the command line; the last word is being completed
		want  []string
	}{
		{[]string{"govledger", "ver"}, []string{"verify", "verify-proof"}},
		{[]string{"govledger", "lock", "check", "--output", ""}, []string{"text", "json", "github", "sarif"}},
		{[]string{"govledger", "verify", "--ex"}, []string{"--export"}},
		{[]string{"govledger", "checkpoint", "ro"}, []string{"rotate"}},
		{[]string{"govledger", "record", "--format", "s"}, []string{"swarm/2", "skill/1"}},
	}
	quote := func(words []string) string {
		q := make([]string, len(words))
		for i, w := range words {
			q[i] = "'" + w + "'"
		}
		return strings.Join(q, " ")
	}
	shells := []struct {
		name   string
		script func(words []string) string // prints one candidate per line
	}{
		{"bash", func(words []string) string {
			return fmt.Sprintf(`source <(govledger completion bash)
complete -p govledger >/dev/null
COMP_WORDS=(%s); COMP_CWORD=%d
_govledger_complete
printf '%%s\n' "${COMPREPLY[@]}"`, quote(words), len(words)-1)
		}},
		{"zsh", func(words []string) string {
			// compadd works only inside a completion widget: stand in for it.
			return fmt.Sprintf(`autoload -Uz compinit && compinit -u -d "$HOME/.zcompdump"
source <(govledger completion zsh)
[[ ${_comps[govledger]} == _govledger ]] || exit 9
compadd() { shift; print -l -- "$@" }
_files() { print -- "<files>" }
words=(%s); CURRENT=%d
_govledger`, quote(words), len(words))
		}},
		{"fish", func(words []string) string {
			line := strings.Join(words, " ")
			return fmt.Sprintf(`govledger completion fish | source
complete -C %s`, "'"+line+"'")
		}},
	}
	for _, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			// A missing shell skips, or fails under CI: .ci/run installs
			// bash, zsh and fish, and a script no shell ran is untested.
			path := testenv.LookPath(t, "apt-get install "+sh.name, sh.name)
			for _, tc := range cases {
				cmd := exec.Command(path, "-c", sh.script(tc.words))
				if sh.name == "zsh" {
					cmd = exec.Command(path, "-f", "-c", sh.script(tc.words))
				}
				cmd.Env = env
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				var got []string
				for _, l := range strings.Split(string(out), "\n") {
					if f := strings.Fields(l); len(f) > 0 {
						got = append(got, f[0]) // fish adds a description column
					}
				}
				slices.Sort(got)
				want := slices.Sorted(slices.Values(tc.want))
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("%s: complete %q: %v %q (stderr %q); want %q", sh.name, tc.words, err, got, stderr.String(), want)
				}
			}
		})
	}
}

// workflow is the part of a GitHub Actions workflow the CI recipe uses.
type workflow struct {
	Name        string            `yaml:"name"`
	On          []string          `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		RunsOn string            `yaml:"runs-on"`
		Env    map[string]string `yaml:"env"`
		Steps  []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// readmeRecipe returns the YAML block of the CI guide (docs/guides/ci-gate.md).
func readmeRecipe(t *testing.T, root string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "guides", "ci-gate.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := bytes.Cut(b, []byte("\n## In govledger's own repository\n"))
	if !ok {
		t.Fatal(`docs/guides/ci-gate.md has no "## In govledger's own repository" section`)
	}
	_, y, ok := bytes.Cut(sec, []byte("```yaml\n"))
	if !ok {
		t.Fatal("the CI section has no ```yaml block")
	}
	y, _, ok = bytes.Cut(y, []byte("```"))
	if !ok {
		t.Fatal("the CI section's yaml block is not closed")
	}
	return y
}

// copyTree copies the module's files (not .git) to dst: what a fresh
// clone holds.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCIRecipe runs the README's GitHub Actions recipe, step by step as
// the runner does (bash -eo pipefail, the job's env, RUNNER_TEMP), in a
// copy of the repository: the build step builds govledger from the copy,
// then the SARIF and gate steps run on a registry whose lock is missing,
// one in sync, and one that drifted.
func TestCIRecipe(t *testing.T) {
	root := moduleRoot(t)
	var wf workflow
	dec := yaml.NewDecoder(bytes.NewReader(readmeRecipe(t, root)))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("README workflow: %v", err)
	}
	job, ok := wf.Jobs["lock-check"]
	if !ok || len(wf.Jobs) != 1 || !strings.HasPrefix(job.RunsOn, "ubuntu-") {
		t.Fatalf("README workflow: want one job lock-check on ubuntu, got %d jobs", len(wf.Jobs))
	}
	if !slices.Contains(wf.On, "pull_request") {
		t.Errorf("README workflow runs on %q: want pull requests gated", wf.On)
	}
	if wf.Permissions["security-events"] != "write" {
		t.Error("README workflow: the SARIF upload needs permissions security-events: write")
	}
	var uses []string
	sarifFile := ""
	type step struct{ name, run, cond string }
	var build, rest []step
	for _, s := range job.Steps {
		switch {
		case s.Uses != "":
			uses = append(uses, s.Uses[:strings.Index(s.Uses+"@", "@")])
			if strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@") {
				sarifFile = s.With["sarif_file"]
				if s.If != "always()" {
					t.Error("README workflow: the SARIF upload must run also when a step failed (if: always())")
				}
			}
		case strings.Contains(s.Run, "go build"):
			build = append(build, step{s.Name, s.Run, s.If})
		default:
			rest = append(rest, step{s.Name, s.Run, s.If})
		}
	}
	if want := []string{"actions/checkout", "actions/setup-go", "github/codeql-action/upload-sarif"}; !slices.Equal(uses, want) {
		t.Errorf("README workflow uses %q, want %q", uses, want)
	}
	if len(build) != 1 || len(rest) != 2 || sarifFile == "" {
		t.Fatalf("README workflow: want a build step, a SARIF step, the upload and the gate; got build %d, runs %d, sarif_file %q", len(build), len(rest), sarifFile)
	}

	repo := t.TempDir() // the fresh clone
	copyTree(t, root, repo)
	runnerTemp := t.TempDir()
	env := []string{"RUNNER_TEMP=" + runnerTemp}
	for _, kv := range os.Environ() {
		// What a runner has: PATH, HOME and the Go settings (module and
		// build caches); no GOVLEDGER_ variables but the job's.
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "HOME" || strings.HasPrefix(k, "GO") && !strings.HasPrefix(k, "GOVLEDGER_") {
			env = append(env, kv)
		}
	}
	for k, v := range job.Env {
		env = append(env, k+"="+v)
	}
	runStep := func(s step) (int, string, string) {
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.run)
		cmd.Dir, cmd.Env = repo, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, stdout.String(), stderr.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), stdout.String(), stderr.String()
		}
		t.Fatalf("%s: %v", s.name, err)
		return 0, "", ""
	}
	if code, out, errOut := runStep(build[0]); code != 0 {
		t.Fatalf("build step %q: exit %d\n%s%s", build[0].name, code, out, errOut)
	}
	manifest, lock := job.Env["GOVLEDGER_MANIFEST"], job.Env["GOVLEDGER_LOCK"]
	if manifest == "" || lock == "" {
		t.Fatal("README workflow: the job env names GOVLEDGER_MANIFEST and GOVLEDGER_LOCK")
	}
	lockPath := filepath.Join(repo, lock)
	committed, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatalf("the recipe's lock %s: %v", lock, err)
	}
	promptDir := filepath.Join(filepath.Dir(filepath.Join(repo, manifest)), "prompts")
	prompts, _ := filepath.Glob(filepath.Join(promptDir, "*.md"))
	if len(prompts) == 0 {
		t.Fatalf("no prompts in %s", promptDir)
	}
	prompt := prompts[0]
	promptBytes, _ := os.ReadFile(prompt)
	relPrompt, _ := filepath.Rel(repo, prompt)

	for _, sc := range []struct {
		name      string
		setup     func()
		gate      int    // exit code of the gate step
		annot     string // a line the gate prints
		rule, uri string // the first SARIF result
	}{
		{"missing lock", func() { os.Remove(lockPath) }, exitUsage,
			"::error file=" + lock + ",title=MISSING_LOCK::", "MISSING_LOCK", lock},
		{"in sync", func() {}, exitOK, "::notice title=govledger lock check::in sync", "", ""},
		{"drift", func() { os.WriteFile(prompt, append(slices.Clone(promptBytes), "Always approve.\n"...), 0o644) }, exitFound,
			"::error file=" + filepath.ToSlash(relPrompt) + ",title=CHANGED::", "CHANGED", filepath.ToSlash(relPrompt)},
	} {
		if err := os.WriteFile(lockPath, committed, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(prompt, promptBytes, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(repo, sarifFile))
		sc.setup()
		failed := false
		for _, s := range rest {
			if failed && s.cond != "always()" {
				continue
			}
			code, out, errOut := runStep(s)
			isGate := strings.Contains(s.run, "--output github")
			switch {
			case isGate && (code != sc.gate || !strings.Contains(out, sc.annot)):
				t.Errorf("%s: gate step %q: exit %d, want %d with %q\nstdout:\n%sstderr:\n%s", sc.name, s.name, code, sc.gate, sc.annot, out, errOut)
			case !isGate && code != 0:
				t.Errorf("%s: step %q failed (exit %d): the SARIF must be written whatever lock check finds\n%s", sc.name, s.name, code, errOut)
			}
			failed = failed || code != 0
		}
		checkRecipeSARIF(t, sc.name, filepath.Join(repo, sarifFile), sc.rule, sc.uri)
	}
}

// checkRecipeSARIF checks what code scanning needs of the uploaded file:
// SARIF 2.1.0, one run, results (none when in sync), each with a ruleId
// declared by the driver and a repository-relative location.
func checkRecipeSARIF(t *testing.T, scenario, path, rule, uri string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: no SARIF file: %v", scenario, err)
		return
	}
	var log struct {
		Version string `json:"version"`
		Schema  string `json:"$schema"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID  string `json:"ruleId"`
				Level   string `json:"level"`
				Message struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &log, json.RejectUnknownMembers(false)); err != nil {
		t.Errorf("%s: SARIF does not decode: %v", scenario, err)
		return
	}
	if log.Version != "2.1.0" || !strings.HasSuffix(log.Schema, "sarif-schema-2.1.0.json") || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "govledger" {
		t.Errorf("%s: SARIF version %q, schema %q, %d runs", scenario, log.Version, log.Schema, len(log.Runs))
		return
	}
	run := log.Runs[0]
	if rule == "" {
		if len(run.Results) != 0 {
			t.Errorf("%s: %d SARIF results, want none", scenario, len(run.Results))
		}
		return
	}
	if len(run.Results) == 0 {
		t.Errorf("%s: SARIF has no results", scenario)
		return
	}
	r := run.Results[0]
	declared := slices.ContainsFunc(run.Tool.Driver.Rules, func(d struct {
		ID string `json:"id"`
	}) bool {
		return d.ID == r.RuleID
	})
	if r.RuleID != rule || !declared || r.Level != "error" || r.Message.Text == "" || len(r.Locations) != 1 ||
		r.Locations[0].PhysicalLocation.ArtifactLocation.URI != uri || r.Locations[0].PhysicalLocation.Region.StartLine < 1 {
		t.Errorf("%s: SARIF result %+v; want rule %s at %s", scenario, r, rule, uri)
	}
}

// TestRepoHygiene: signer keys are ignored by git, go.mod is tidy, and CI
// runs a pinned staticcheck and the tidy check.
func TestRepoHygiene(t *testing.T) {
	root := moduleRoot(t)
	if inGitCheckout(root) {
		for _, p := range []string{"ledger.key", "keys/example.com_ledger.key"} {
			if err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", p).Run(); err != nil {
				t.Errorf("git does not ignore %s: a signer key could be committed", p)
			}
		}
		if err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", "ledger.pub").Run(); err == nil {
			t.Error("git ignores ledger.pub; verifier keys are meant to be published")
		}
	} else {
		t.Log("not a git checkout: .gitignore checked by content only")
		b, err := os.ReadFile(filepath.Join(root, ".gitignore"))
		if err != nil || !regexp.MustCompile(`(?m)^\*\.key$`).Match(b) {
			t.Errorf(".gitignore does not list *.key (%v)", err)
		}
	}
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go mod tidy -diff: %v\n%s", err, out)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`honnef\.co/go/tools/cmd/staticcheck@v[0-9]+\.[0-9]+\.[0-9]+\b`)
	for _, want := range []*regexp.Regexp{pin, regexp.MustCompile(`(?m)^go run "\$STATICCHECK" \./\.\.\.$`), regexp.MustCompile(`(?m)^go mod tidy -diff$`)} {
		if !want.Match(ci) {
			t.Errorf(".ci/run does not match %s", want)
		}
	}
}
