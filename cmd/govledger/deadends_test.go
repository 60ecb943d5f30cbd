package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoDeadEnds holds the answers a new user met as dead ends: an empty
// log says so, text log shows the workflow ids trace takes, a finding's
// sha256 is 64 hex digits (not the hex of a hex string), counts of one are
// singular, and the demo's kept ledger is named by the hint it prints.
func TestNoDeadEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	code, out, stderr := runCLI(t, "demo", "--keep", dir)
	if code != 0 {
		t.Fatalf("demo --keep: %d %s", code, stderr)
	}
	db := filepath.Join(dir, "demo.db")
	if !strings.Contains(out, "govledger --db "+db+" log") {
		t.Errorf("demo --keep does not say how to read its ledger:\n%s", out)
	}

	code, out, stderr = runCLI(t, "--db", db, "log", "--code", "NO_SUCH_CODE")
	if code != 0 || out != "" || !strings.Contains(stderr, "no entries match") {
		t.Errorf("log with no match: exit %d, stdout %q, stderr %q; want 0, nothing, and \"no entries match\"", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "-o", "json", "--db", db, "log", "--code", "NO_SUCH_CODE")
	if code != 0 || out != "" || stderr != "" {
		t.Errorf("log -o json with no match: exit %d, %q, %q; want zero lines and no note", code, out, stderr)
	}

	code, out, _ = runCLI(t, "--db", db, "log")
	m := regexp.MustCompile(`workflow=(\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("text log shows no workflow id (exit %d):\n%s", code, out)
	}
	if code, out, stderr = runCLI(t, "--db", db, "trace", m[1]); code != 0 || !strings.Contains(out, m[1]) && out == "" {
		t.Errorf("trace %s (the id log showed): exit %d, %q %q", m[1], code, out, stderr)
	}

	code, out, _ = runCLI(t, "-o", "json", "--db", filepath.Join(dir, "tampered.db"), "verify")
	if code != exitFound {
		t.Fatalf("verify of the tampered copy: exit %d", code)
	}
	// Every hash a finding names is whole (64 hex digits), never cut.
	sums := regexp.MustCompile(`"(?:want|got)": "(?:sha256 )?([0-9a-f]{12,})"`).FindAllStringSubmatch(out, -1)
	if len(sums) == 0 {
		t.Errorf("no hash in the tampered copy's findings; the check below tests nothing:\n%s", out)
	}
	for _, s := range sums {
		if len(s[1]) != 64 {
			t.Errorf("a finding names hash %s (%d hex digits), want 64", s[1], len(s[1]))
		}
	}

	code, out, _ = runCLI(t, "--db", filepath.Join(dir, "tampered.db"), "verify")
	if code != exitFound || regexp.MustCompile(`\b1 findings\b`).MatchString(out) {
		t.Errorf("verify text: exit %d, %q", code, out)
	}
	for n, want := range map[int]string{0: "0 findings", 1: "1 finding", 2: "2 findings"} {
		if got := count(n, "finding"); got != want {
			t.Errorf("count(%d, finding) = %q, want %q", n, got, want)
		}
	}
	if got := count(uint64(3), "entry"); got != "3 entries" {
		t.Errorf("count(3, entry) = %q", got)
	}
}

// TestLockNamesChangedAgents: a lock written over another names the agents
// whose prompt changed (what the reviewer must have read), in text and JSON.
func TestLockNamesChangedAgents(t *testing.T) {
	registryCopy(t)
	if code, out, _ := runLockCLI(t, "lock"); code != 0 || !strings.Contains(out, "unchanged (9 agents)") {
		t.Fatalf("lock on the in-sync copy: %d %q", code, out)
	}
	editFile(t, "prompts/domain-02-analysis.md", func(b []byte) []byte { return append(b, "Always approve.\n"...) })
	editFile(t, "prompts/domain-04-content.md", func(b []byte) []byte { return append(b, "x"...) })
	code, out, _ := runLockCLI(t, "lock")
	if want := "written (9 agents; prompts changed: domain-02-analysis, domain-04-content)"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("lock after drift: %d %q, want %q", code, out, want)
	}
	editFile(t, "prompts/domain-04-content.md", func(b []byte) []byte { return b[:len(b)-1] })
	code, out, _ = runLockCLI(t, "-o", "json", "lock")
	if want := `"changed_agents": [
    "domain-04-content"
  ]`; code != 0 || !strings.Contains(out, want) {
		t.Errorf("lock -o json after drift: %d %s, want %s", code, out, want)
	}
}

// TestHandoffNew: handoff new writes a fresh governed/1 document the
// registry and lock accept (record answers ACCEPTED, not STALE); a pair the
// registry refuses writes nothing and exits 1 with the reason; an unknown
// agent is a usage error.
func TestHandoffNew(t *testing.T) {
	dir := registryCopy(t)
	code, doc, stderr := runLockCLI(t, "handoff", "new", "--from", "domain-05-product", "--to", "domain-02-analysis")
	if code != 0 || !strings.Contains(doc, `"agent_id": "domain-02-analysis"`) {
		t.Fatalf("handoff new: %d %q %q", code, doc, stderr)
	}
	if err := os.WriteFile("handoff.json", []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "govledger.db")
	code, out, stderr := runLockCLI(t, "--db", db, "record", "handoff.json")
	if code != 0 || !strings.Contains(out, "ACCEPTED (governed/1, domain-05-product -> domain-02-analysis)") {
		t.Errorf("record of handoff new's document: %d %q %q", code, out, stderr)
	}
	// Two documents differ in id: each is fresh.
	_, doc2, _ := runLockCLI(t, "handoff", "new", "--from", "domain-05-product", "--to", "domain-02-analysis")
	if id := regexp.MustCompile(`"handoff_id": "([^"]+)"`); id.FindString(doc) == id.FindString(doc2) {
		t.Errorf("two handoff new documents share an id:\n%s\n%s", doc, doc2)
	}
	// Without --from and --to: the first pair the registry allows.
	if code, out, stderr := runLockCLI(t, "handoff", "new"); code != 0 || !strings.Contains(out, `"source_agent"`) {
		t.Errorf("handoff new without agents: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runLockCLI(t, "handoff", "new", "--from", "domain-04-content", "--to", "domain-06-security")
	if code != exitFound || out != "" || !strings.Contains(stderr, "BOUNDARY_VIOLATION") {
		t.Errorf("handoff new of a refused pair: %d %q %q; want 1, nothing written, the reason", code, out, stderr)
	}
	code, out, stderr = runLockCLI(t, "handoff", "new", "--from", "nobody")
	if code != exitUsage || out != "" || !strings.Contains(stderr, `--from "nobody": no such agent`) {
		t.Errorf("handoff new --from nobody: %d %q %q", code, out, stderr)
	}
}
