package main

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/testenv"
)

// TestPythonPackage installs clients/python into a fresh venv with pip
// and no network (--no-index, and a proxy on a closed port should pip try
// anyway), then runs its Python tests: the offline ones, and gate()
// against a real "govledger serve" on loopback (tests/test_live.py).
// The source folder must be left as it was (the build backend writes
// only into pip's folders). Skipped tests are allowed only where the
// server lacks a route (POST /v1/outcomes before it exists).
func TestPythonPackage(t *testing.T) {
	python := testenv.LookPath(t, "apt-get install python3 python3-venv", "python3")
	root := moduleRoot(t)
	src := filepath.Join(root, "clients", "python")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.CommandContext(ctx, python, "-m", "venv", venv).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "ensurepip") {
			testenv.Missing(t, "python3-venv", "apt-get install python3-venv", err)
		}
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")

	before := treeFiles(t, src)
	// The documented command (docs/guides/python.md), offline.
	pip := exec.CommandContext(ctx, vpy, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check", src)
	pip.Dir = t.TempDir()
	pip.Env = offlineEnv()
	start := time.Now()
	out, err := pip.CombinedOutput()
	if err != nil {
		t.Fatalf("pip install --no-index %s: %v\n%s", src, err, out)
	}
	t.Logf("pip install --no-index: %v", time.Since(start).Round(time.Millisecond))
	if after := treeFiles(t, src); !slices.Equal(before, after) {
		t.Errorf("pip install changed the source folder:\nbefore %q\nafter  %q", before, after)
	}
	where, err := exec.CommandContext(ctx, vpy, "-B", "-c", "import govledger; print(govledger.__file__)").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(where), venv+string(filepath.Separator)) {
		t.Fatalf("govledger imported from %q (%v), want the venv %s", where, err, venv)
	}

	e := newServeEnv(t, "registry")
	s := e.start()
	tokens, _ := json.Marshal(map[string]string{"product": e.tok["product"], "writer": e.tok["writer"]})
	tests := filepath.Join(src, "tests")
	run := exec.CommandContext(ctx, vpy, "-B", "-m", "unittest", "discover", "-v", "-s", tests, "-t", tests)
	run.Dir = t.TempDir()
	run.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "GOVLEDGER_TEST_URL="+s.url,
		"GOVLEDGER_TEST_TOKENS="+string(tokens), "GOVLEDGER_TEST_REGISTRY="+e.manifest)
	out, err = run.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python -m unittest: %v", err)
	}
	// Every live test ran, and skipped only what the server cannot do yet.
	spec, err := os.ReadFile(filepath.Join(root, "server", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	allowSkip := map[string]bool{"test_03_outcome": !strings.Contains(string(spec), `"/v1/outcomes"`)}
	results := regexp.MustCompile(`(?m)^(test_\w+) \(test_live\.LiveGateTest[^)]*\) \.\.\. (.*)$`).FindAllStringSubmatch(string(out), -1)
	if len(results) < 9 {
		t.Fatalf("%d live tests reported, want 9 or more", len(results))
	}
	for _, r := range results {
		if r[2] != "ok" && !(strings.HasPrefix(r[2], "skipped") && allowSkip[r[1]]) {
			t.Errorf("%s: %s", r[1], r[2])
		}
	}
	if !regexp.MustCompile(`(?m)^Ran \d+ tests`).Match(out) || !strings.Contains(string(out), "\nOK") {
		t.Errorf("unittest did not end OK")
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}
}

// offlineEnv is the environment for pip with no way out: no index, no
// configuration file, every proxy a closed loopback port.
func offlineEnv() []string {
	env := []string{"PIP_CONFIG_FILE=" + os.DevNull, "PIP_NO_INDEX=1", "PIP_NO_INPUT=1", "PYTHONDONTWRITEBYTECODE=1"}
	for _, p := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		env = append(env, p+"=http://127.0.0.1:9")
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PIP_") || strings.Contains(strings.ToLower(k), "proxy") || k == "PYTHONPATH" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// treeFiles lists the files under dir (slash paths, sorted), skipping
// Python's bytecode caches.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}
