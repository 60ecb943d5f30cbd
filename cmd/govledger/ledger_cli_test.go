package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// pinnedClock is the ledger clock of the golden CLI runs: one second per
// reading from the demo's epoch, so hashes in the golden files are stable.
type pinnedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *pinnedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// cliEnv runs the CLI inside a scratch copy of the example registry.
type cliEnv struct {
	t     *testing.T
	dir   string
	clock *pinnedClock
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	dir := t.TempDir()
	for src, dst := range map[string]string{
		"../../testdata/registry":           "reg",
		"../../examples/demo/data/handoffs": "docs",
	} {
		if err := os.CopyFS(filepath.Join(dir, dst), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(dir, "reg", "prompt-lock.json"))
	return &cliEnv{t: t, dir: dir, clock: &pinnedClock{t: time.Date(2026, 2, 11, 0, 50, 0, 0, time.UTC)}}
}

// run executes govledger with the scratch folder's registry, lock and db.
func (e *cliEnv) run(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	base := []string{"govledger",
		"--manifest", filepath.Join(e.dir, "reg", "prompt-manifest.json"),
		"--lock", filepath.Join(e.dir, "reg", "prompt-lock.json"),
		"--db", filepath.Join(e.dir, "ledger.db"),
		"--origin", "govledger.test/cli",
	}
	var stdout, stderr bytes.Buffer
	code := runWithClock(context.Background(), append(base, args...), strings.NewReader(stdin), &stdout, &stderr,
		func(k string) string {
			if k == "GOVLEDGER_AS" {
				return "ci-operator"
			}
			return ""
		}, e.clock.now)
	clean := func(s string) string { return strings.ReplaceAll(s, e.dir, "$TMP") }
	return code, clean(stdout.String()), clean(stderr.String())
}

func (e *cliEnv) doc(name string) string { return filepath.Join(e.dir, "docs", name) }

// TestLedgerCLIGolden drives the ledger verbs through one realistic session
// and pins stdout, stderr and the exit code of every step, in text and JSON.
func TestLedgerCLIGolden(t *testing.T) {
	e := newCLIEnv(t)
	steps := []struct {
		name  string
		stdin string
		args  []string
		want  int
	}{
		{"lock", "", []string{"lock"}, 0},
		{"validate-accepted", "", []string{"validate", e.doc("01-product-to-analysis.json")}, 0},
		{"validate-rejected-json", "", []string{"--output", "json", "validate", e.doc("03-content-to-security.json")}, 1},
		{"record-mixed", "", []string{"record", e.doc("01-product-to-analysis.json"), e.doc("03-content-to-security.json"),
			e.doc("04-research-hash-mismatch.json"), e.doc("05-research-blocked.json")}, 1},
		{"record-stdin-garbage-json", "\x00\xffnot a handoff", []string{"--output", "json", "record", "-"}, 1},
		{"record-replay", "", []string{"record", e.doc("06-replay-of-01.json")}, 1},
		{"validate-consults-ledger", "", []string{"validate", e.doc("01-product-to-analysis.json"), e.doc("05-research-blocked.json")}, 1},
		{"record-vbw-from-to", "", []string{"record", "--from", "domain-03-technical", "--to", "domain-02-analysis", e.doc("09-qa-result.vbw.json")}, 0},
		{"record-unreadable", "", []string{"record", e.doc("no-such-file.json")}, 2},
		{"unblock-not-blocked", "", []string{"unblock", "--reason", "checked", "domain-05-product"}, 2},
		{"unblock", "", []string{"unblock", "--reason", "prompt diff reviewed in PR 412", "domain-01-research"}, 0},
		{"record-after-unblock", "", []string{"record", e.doc("05-research-blocked.json")}, 0},
		{"log", "", []string{"log"}, 0},
		{"log-rejected-json", "", []string{"log", "--decision", "rejected", "--output", "json"}, 0},
		{"log-code", "", []string{"log", "--code", "HASH_MISMATCH"}, 0},
		{"log-limit", "", []string{"log", "--limit", "3"}, 0},
		{"log-limit-next-page", "", []string{"log", "--limit", "3", "--before", "9"}, 0},
		{"log-reverse-after-json", "", []string{"--output", "json", "log", "--reverse", "--after", "3", "--limit", "2"}, 0},
		{"log-filtered-limit", "", []string{"log", "--kind", "handoff", "--decision", "rejected", "--limit", "2"}, 0},
		{"log-last-page", "", []string{"log", "--limit", "3", "--before", "4"}, 0},
		{"log-before-zero", "", []string{"log", "--before", "0"}, 2},
		{"show-seq", "", []string{"show", "3"}, 0},
		{"show-id-json", "", []string{"--output", "json", "show", "550e8400-e29b-41d4-a716-446655440000"}, 0},
		{"show-missing", "", []string{"show", "999"}, 2},
		{"stats", "", []string{"stats"}, 0},
		{"stats-json", "", []string{"--output", "json", "stats"}, 0},
		{"verify", "", []string{"verify"}, 0},
		{"verify-json", "", []string{"verify", "--output", "json"}, 0},
		{"usage-no-files", "", []string{"record"}, 2},
		{"usage-flag-after-arg", "", []string{"record", e.doc("01-product-to-analysis.json"), "--strict"}, 2},
		{"usage-unknown-command", "", []string{"frobnicate"}, 2},
		{"usage-bad-output", "", []string{"--output", "yaml", "verify"}, 2},
		{"usage-bad-format", "", []string{"validate", "--format", "xml/1", e.doc("01-product-to-analysis.json")}, 2},
		{"record-stream", "{\"document\": \"not a handoff\", \"idempotency_key\": \"k-1\"}\n" +
			"{\"document\": \"not a handoff\", \"idempotency_key\": \"k-1\"}\n{\"document\": \"other\", \"idempotency_key\": \"k-1\"}\n",
			[]string{"record", "-"}, 2},
		{"record-stream-json", "---\nhandoff: {}\n---\nnot: a handoff\n", []string{"--output", "json", "record", "-"}, 1},
	}
	for _, s := range steps {
		code, stdout, stderr := e.run(s.stdin, s.args...)
		if code != s.want {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", s.name, code, s.want, stdout, stderr)
		}
		golden(t, "testdata/ledger", s.name, code, stdout, stderr)
	}
}

// TestVerifyDetectsTamperAndExport checks verify's exit codes on a tampered
// copy, on an export, and on a missing database.
func TestVerifyDetectsTamperAndExport(t *testing.T) {
	e := newCLIEnv(t)
	if code, _, stderr := e.run("", "lock"); code != 0 {
		t.Fatalf("lock: exit %d: %s", code, stderr)
	}
	if code, _, stderr := e.run("", "record", e.doc("01-product-to-analysis.json"), e.doc("02-thinker-to-technical.json")); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	exportPath := filepath.Join(e.dir, "audit.jsonl")
	if code, _, stderr := e.run("", "export", "--out", exportPath); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	if code, out, stderr := e.run("", "verify", "--export", exportPath); code != 0 {
		t.Fatalf("verify --export: exit %d\n%s%s", code, out, stderr)
	}
	// A one-byte change in the export is caught.
	b, err := os.ReadFile(exportPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b, []byte(`"target":"domain-02-analysis"`), []byte(`"target":"domain-02-analysiz"`), 1)
	if bytes.Equal(bad, b) {
		t.Fatal("export does not hold the expected target")
	}
	if err := os.WriteFile(exportPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := e.run("", "verify", "--export", exportPath); code != 1 || !strings.Contains(out, "FAILED") {
		t.Errorf("verify --export of an edited export: exit %d, output:\n%s", code, out)
	}
	// A one-byte change in the database file is caught.
	db := filepath.Join(e.dir, "ledger.db")
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(raw, []byte(`"target":"domain-03-technical"`))
	if i < 0 {
		t.Fatal("ledger file does not hold the expected entry bytes")
	}
	raw[i+len(`"target":"domain-03-technica`)] = 'x'
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := e.run("", "verify")
	if code != 1 || !strings.Contains(out, "first bad entry seq 4") {
		t.Errorf("verify of a tampered ledger: exit %d, want 1 naming seq 4; output:\n%s", code, out)
	}
	// No database at all is unreadable input, not an empty success.
	os.Remove(db)
	if code, _, stderr := e.run("", "verify"); code != 2 {
		t.Errorf("verify without a db: exit %d, want 2; stderr %s", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("verify created a database file")
	}
}

// TestDemoGolden pins the demo's story: its clock and origin are fixed, so
// every run prints the same decisions and hashes.
func TestDemoGolden(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"govledger", "demo"}, strings.NewReader(""), &stdout, &stderr,
		func(string) string { return "" })
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	golden(t, "testdata/ledger", "demo", code, stdout.String(), stderr.String())
	for _, want := range []string{"HASH_MISMATCH", "AGENT_BLOCKED", "BOUNDARY_VIOLATION", "REPLAY", "UNPARSEABLE",
		"governed/1", "swarm/2", "skill/1", "vbw/1", "task/1", "DETECTED, first bad entry seq 3"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// TestVerifyAgainstCheckpoint: a signed checkpoint kept outside the ledger
// catches a rollback to an older copy of the database (invisible to the
// chain alone), and --state refuses to go backwards even when the old
// checkpoint is offered with the old database.
func TestVerifyAgainstCheckpoint(t *testing.T) {
	e := newCLIEnv(t)
	key := filepath.Join(e.dir, "k")
	must := func(want int, args ...string) string {
		t.Helper()
		code, out, stderr := e.run("", args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, stderr)
		}
		return out
	}
	must(0, "lock")
	must(0, "keygen", "--out", key, "govledger.test/cli")
	must(0, "record", e.doc("01-product-to-analysis.json"))
	db := filepath.Join(e.dir, "ledger.db")
	old, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	oldCP := filepath.Join(e.dir, "old-cp.txt")
	must(0, "checkpoint", "--key", key+".key", "--out", oldCP)
	must(0, "record", e.doc("02-thinker-to-technical.json"))
	cp := filepath.Join(e.dir, "cp.txt")
	must(0, "checkpoint", "--key", key+".key", "--out", cp)
	state := filepath.Join(e.dir, "state")
	out := must(0, "verify", "--checkpoint", cp, "--key", key+".pub", "--state", state)
	if !strings.Contains(out, "extends the signed checkpoint of size 4") {
		t.Errorf("verify output does not state the anchor:\n%s", out)
	}

	// Roll the database back: the chain alone still verifies…
	if err := os.WriteFile(db, old, 0o600); err != nil {
		t.Fatal(err)
	}
	must(0, "verify")
	// …but not against the newer checkpoint,
	out = must(1, "verify", "--checkpoint", cp, "--key", key+".pub")
	if !strings.Contains(out, "checkpoint: FAILED") {
		t.Errorf("rollback not reported:\n%s", out)
	}
	// nor with the old checkpoint once the state has seen the newer one.
	out = must(1, "--output", "json", "verify", "--checkpoint", oldCP, "--key", key+".pub", "--state", state)
	if !strings.Contains(out, `"anchor_error"`) {
		t.Errorf("state did not refuse going backwards:\n%s", out)
	}
	// A checkpoint signed by another key is a finding, not bad input.
	must(0, "keygen", "--out", filepath.Join(e.dir, "evil"), "govledger.test/cli")
	must(1, "verify", "--checkpoint", oldCP, "--key", filepath.Join(e.dir, "evil.pub"))
}

// TestFormatCorpusGolden pins "govledger validate" on every document of the
// hand-off corpus, per format, valid and hostile, with the registry that
// names the format's agents: the text output and the exit code (0 for the
// valid folders, 1 for the hostile ones).
func TestFormatCorpusGolden(t *testing.T) {
	dir := t.TempDir()
	skillsLock := filepath.Join(dir, "skills-lock.json")
	var so, se bytes.Buffer
	if code := run(context.Background(), []string{"govledger", "--manifest", "../../testdata/skills", "--lock", skillsLock, "lock"},
		strings.NewReader(""), &so, &se, func(string) string { return "" }); code != 0 {
		t.Fatalf("lock skills: exit %d: %s", code, se.String())
	}
	manifests := map[string][]string{
		"governed": {"../../testdata/registry/prompt-manifest.json", "../../testdata/registry/prompt-lock.json"},
		"vbw":      {"../../testdata/registry/prompt-manifest.json", "../../testdata/registry/prompt-lock.json"},
		"task":     {"../../testdata/registry/prompt-manifest.json", "../../testdata/registry/prompt-lock.json"},
		"swarm":    {"../../testdata/skills", skillsLock},
		"skill":    {"../../testdata/skills", skillsLock},
	}
	for _, format := range []string{"governed", "swarm", "skill", "vbw", "task"} {
		for _, kind := range []string{"valid", "hostile"} {
			folder := filepath.Join("../../testdata/handoffs", format, kind)
			var expect struct {
				Now  string `json:"now"`
				From string `json:"from"`
				To   string `json:"to"`
			}
			b, err := os.ReadFile(filepath.Join(folder, "expect.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &expect, json.RejectUnknownMembers(false)); err != nil {
				t.Fatal(err)
			}
			now, err := time.Parse(time.RFC3339, expect.Now)
			if err != nil {
				t.Fatal(err)
			}
			switch format {
			case "governed":
				now = time.Date(2026, 2, 11, 7, 31, 0, 0, time.UTC) // the governed documents' day (expect-policy.json)
			case "skill":
				now = time.Date(2026, 2, 3, 15, 0, 0, 0, time.UTC) // the skill/1 documents' day
			}
			entries, err := os.ReadDir(folder)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"govledger", "--manifest", manifests[format][0], "--lock", manifests[format][1],
				"validate", "--root", "../../testdata/handoffs"}
			if expect.From != "" {
				args = append(args, "--from", expect.From, "--to", expect.To)
			}
			for _, e := range entries {
				if !e.IsDir() && e.Name() != "expect.json" {
					args = append(args, filepath.Join(folder, e.Name()))
				}
			}
			var stdout, stderr bytes.Buffer
			code := runWithClock(context.Background(), args, strings.NewReader(""), &stdout, &stderr,
				func(string) string { return "" }, func() time.Time { return now })
			want := map[string]int{"valid": 0, "hostile": 1}[kind]
			if code != want {
				t.Errorf("%s/%s: exit %d, want %d\n%s%s", format, kind, code, want, stdout.String(), stderr.String())
			}
			golden(t, "testdata/formats", format+"-"+kind, code, strings.ReplaceAll(stdout.String(), dir, "$TMP"), stderr.String())
			if kind == "hostile" && (format == "swarm" || format == "skill") {
				// The seed's own rejection formats: seed 000's error
				// response YAML, seed 002's stop message.
				stdout.Reset()
				stderr.Reset()
				seedArgs := append([]string{args[0], "--output", "seed-error"}, args[1:]...)
				code := runWithClock(context.Background(), seedArgs, strings.NewReader(""), &stdout, &stderr,
					func(string) string { return "" }, func() time.Time { return now })
				if code != 1 {
					t.Errorf("%s/%s seed-error: exit %d, want 1", format, kind, code)
				}
				golden(t, "testdata/formats", format+"-"+kind+"-seed-error", code, stdout.String(), stderr.String())
			}
		}
	}
}
