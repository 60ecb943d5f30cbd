// Package typescript_test runs the govledger npm package's tests
// (clients/typescript/test) against the pinned agent frameworks and a real
// govledger serve: for each of @openai/agents, @langchain/langgraph,
// @google/adk, @anthropic-ai/claude-agent-sdk and @a2a-js/sdk, a scripted
// two-agent workflow whose handoff goes through the adapter.
//
// The frameworks come from GOVLEDGER_JS_FRAMEWORKS, a folder where `npm ci`
// installed test/frameworks/package-lock.json (.ci/run does it, into a
// temporary folder): tests reach the network only on 127.0.0.1.
package typescript_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/internal/testenv"
)

const frameworksHelp = "cp clients/typescript/test/frameworks/package*.json DIR && (cd DIR && npm ci) and set GOVLEDGER_JS_FRAMEWORKS=DIR"

// frameworks is the folder holding the pinned frameworks' node_modules,
// checked to be an install of this checkout's lock.
func frameworks(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GOVLEDGER_JS_FRAMEWORKS")
	if dir == "" {
		testenv.Missing(t, "the pinned agent frameworks (GOVLEDGER_JS_FRAMEWORKS)", frameworksHelp, nil)
	}
	want, err := os.ReadFile(filepath.Join("test", "frameworks", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GOVLEDGER_JS_FRAMEWORKS=%s is not an install of test/frameworks/package-lock.json (%v): %s", dir, err, frameworksHelp)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents", "package.json")); err != nil {
		t.Fatalf("GOVLEDGER_JS_FRAMEWORKS=%s: no node_modules (%v): %s", dir, err, frameworksHelp)
	}
	return dir
}

// packFile is one file of `npm pack --json`.
type packFile struct {
	Path string `json:"path"`
}

// pack runs npm pack into dir and checks the tarball holds the package
// and nothing else: the sources and types of every export, no tests.
func pack(t *testing.T, npm, dir string) string {
	t.Helper()
	cmd := exec.Command(npm, "pack", "--json", "--pack-destination", dir)
	cmd.Env = append(os.Environ(), "npm_config_loglevel=error", "npm_config_fund=false", "npm_config_audit=false")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	var res []struct {
		Filename string     `json:"filename"`
		Files    []packFile `json:"files"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
		t.Fatalf("npm pack --json: %v\n%s", err, out)
	}
	var pkg struct {
		Exports map[string]struct {
			Types   string `json:"types"`
			Default string `json:"default"`
		} `json:"exports"`
	}
	b, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, f := range res[0].Files {
		in[f.Path] = true
		ok := f.Path == "package.json" || f.Path == "README.md" ||
			(strings.HasPrefix(f.Path, "src/") && strings.HasSuffix(f.Path, ".mjs")) ||
			(strings.HasPrefix(f.Path, "types/") && strings.HasSuffix(f.Path, ".d.ts"))
		if !ok {
			t.Errorf("npm pack ships %s: only package.json, README.md, src/*.mjs and types/*.d.ts belong in the tarball", f.Path)
		}
	}
	for name, e := range pkg.Exports {
		for _, p := range []string{e.Types, e.Default} {
			if !in[strings.TrimPrefix(p, "./")] {
				t.Errorf("export %q names %s, which npm pack leaves out", name, p)
			}
		}
	}
	return filepath.Join(dir, res[0].Filename)
}

// untar unpacks an npm tarball (its files under package/) into dir.
func untar(t *testing.T, tgz, dir string) {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(path.Clean(h.Name), "package/")
		if !ok || h.Typeflag != tar.TypeReg || strings.Contains(name, "..") {
			t.Fatalf("npm pack: unexpected tar entry %q", h.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrameworks packs the package as npm would publish it, installs the
// tarball next to the pinned frameworks, type-checks the hand-written
// types, and runs test/*.test.mjs with node --test against a govledger
// built from this checkout.
func TestFrameworks(t *testing.T) {
	node := testenv.LookPath(t, "apt-get install nodejs", "node")
	npm := testenv.LookPath(t, "apt-get install npm", "npm")
	fw := frameworks(t)
	work := t.TempDir()

	bin := filepath.Join(work, "govledger")
	build := exec.Command("go", "build", "-o", bin, "./cmd/govledger")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// run/node_modules: the frameworks (linked) and govledger (unpacked).
	run := filepath.Join(work, "run")
	mods := filepath.Join(run, "node_modules")
	if err := os.MkdirAll(filepath.Join(mods, "govledger"), 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(fw, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "govledger" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(fw, "node_modules", e.Name()), filepath.Join(mods, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	untar(t, pack(t, npm, work), filepath.Join(mods, "govledger"))
	tests, err := os.ReadDir("test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(run, "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range tests {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("test", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, "test", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".test.mjs") {
			files = append(files, filepath.Join("test", e.Name()))
		}
	}
	if len(files) < 5 {
		t.Fatalf("want a test file per framework, found %v", files)
	}

	// tsc on the hand-written types runs while the frameworks' tests do.
	tsc := exec.Command(node, filepath.Join(fw, "node_modules", "typescript", "bin", "tsc"), "-p", filepath.Join("test", "tsconfig.json"))
	tsc.Dir = run
	var tscOut bytes.Buffer
	tsc.Stdout, tsc.Stderr = &tscOut, &tscOut
	if err := tsc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tsc.Wait(); err != nil {
			t.Errorf("tsc (the types in types/*.d.ts against test/types-check.ts): %v\n%s", err, tscOut.Bytes())
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-reporter=tap", "--test-concurrency=8"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = run
	cmd.Env = append(os.Environ(), "GOVLEDGER_BIN="+bin, "OPENAI_AGENTS_DISABLE_TRACING=1", "NO_COLOR=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	summary := tapSummary(out)
	t.Logf("node --test %s: %s in %s", strings.Join(files, " "), summary, time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !strings.Contains(summary, "fail 0") || strings.Contains(summary, "pass 0") {
		t.Fatalf("node --test: %s\n%s", summary, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// tapSummary is the "# tests/pass/fail/skipped" tail of node's TAP output.
func tapSummary(out []byte) string {
	var parts []string
	for _, l := range strings.Split(string(out), "\n") {
		for _, k := range []string{"tests", "pass", "fail", "skipped", "cancelled"} {
			if v, ok := strings.CutPrefix(l, "# "+k+" "); ok {
				parts = append(parts, fmt.Sprintf("%s %s", k, strings.TrimSpace(v)))
			}
		}
	}
	return strings.Join(parts, ", ")
}
