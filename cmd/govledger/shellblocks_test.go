package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/govledger/govledger/internal/testenv"
)

// TestShellBlocksRun runs the shell blocks of the README and the getting
// started guide as a new user would, line by line, in a scratch folder that
// holds a copy of testdata/ (what a clone has), with govledger on PATH and
// "go run ./cmd/govledger" meaning it. A line whose comment says "exit N:"
// must exit N; any other must exit 0. Lines that start a server or the
// test suite are only parsed (TestExamplesParse).
func TestShellBlocksRun(t *testing.T) {
	bash := testenv.LookPath(t, "apt-get install bash", "bash")
	root := moduleRoot(t)
	bin := govledgerBinary(t)
	wantExit := regexp.MustCompile(`#.*\bexit (\d+):`)
	for _, page := range []string{"README.md", "docs/guides/getting-started.md"} {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.CopyFS(filepath.Join(dir, "testdata"), os.DirFS(filepath.Join(root, "testdata"))); err != nil {
			t.Fatal(err)
		}
		// A new user's environment: a home of their own (where shell
		// completion files go; fish keeps a completions folder), no
		// GOVLEDGER_ settings.
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".config", "fish", "completions"), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"HOME=" + home, "GOVLEDGER_AS=newcomer"}
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "PATH" && !strings.HasPrefix(k, "GOVLEDGER_") {
				env = append(env, kv)
			}
		}
		cwd, ran := dir, 0
		inCode := false
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "```"):
				inCode = !inCode && line == "```sh"
				continue
			case !inCode:
				continue
			}
			cmdline := strings.TrimSpace(line)
			if cmdline == "" || strings.HasPrefix(cmdline, "#") || strings.Contains(cmdline, " serve ") ||
				strings.HasPrefix(cmdline, "go test") || strings.HasPrefix(cmdline, "go install") ||
				strings.HasPrefix(cmdline, "export ") || strings.HasPrefix(cmdline, "curl ") {
				continue
			}
			want := 0
			if m := wantExit.FindStringSubmatch(cmdline); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			if rest, ok := strings.CutPrefix(cmdline, "cd "); ok {
				cwd = filepath.Join(cwd, strings.Fields(rest)[0])
				continue
			}
			if strings.HasPrefix(cmdline, "govledger lock") && page == "README.md" {
				cwd = filepath.Join(dir, "testdata", "registry") // "in the folder that holds prompt-manifest.json"
			}
			run := strings.ReplaceAll(cmdline, "go run ./cmd/govledger", "govledger")
			cmd := exec.Command(bash, "--noprofile", "--norc", "-c", run)
			cmd.Dir = cwd
			cmd.Env = append(env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%s: %s: %v", page, cmdline, err)
			}
			if code != want {
				t.Errorf("%s: %s: exit %d, want %d\n%s", page, cmdline, code, want, out)
			}
			ran++
		}
		if ran < 5 {
			t.Errorf("%s: only %d lines ran", page, ran)
		}
	}
}
