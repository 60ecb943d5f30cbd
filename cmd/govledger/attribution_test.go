package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestAttributionRecorded records, in a real ledger, governed/1 handoffs
// that quote a wrong prompt hash for their target: one whose source is not
// registered blocks nobody (the target keeps receiving handoffs), an
// attributable one blocks the target; the entries' blocks say so and the
// ledger verifies, so re-taking each decision gives the same blocks.
func TestAttributionRecorded(t *testing.T) {
	e := newCLIEnv(t)
	base, err := os.ReadFile(e.doc("01-product-to-analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	const goodTarget = "91a3c63e7eb1dca488acc7c8a2661bd579d21d53f3c099fe76f4614e4dd33846"
	wrong := strings.Repeat("b", 64)
	doc := func(name, id string, edits ...string) string {
		s := strings.Replace(string(base), "550e8400-e29b-41d4-a716-446655440000", id, 1)
		for i := 0; i < len(edits); i += 2 {
			if !strings.Contains(s, edits[i]) {
				t.Fatalf("%s: %q not in the document", name, edits[i])
			}
			s = strings.Replace(s, edits[i], edits[i+1], 1)
		}
		path := filepath.Join(e.dir, name)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if code, _, stderr := e.run("", "lock"); code != 0 {
		t.Fatalf("lock: %s", stderr)
	}
	steps := []struct {
		name   string
		path   string
		exit   int
		want   string   // in the record output
		blocks []string // the entry's blocks
	}{
		{"forged by an unregistered source", doc("forged.json", "6ba7b810-9dad-41d1-80b4-00c04fd430c1",
			`"agent_id": "domain-05-product"`, `"agent_id": "domain-99-ghost"`, goodTarget, wrong),
			1, `not attributable (the source agent is not in the registry), so no block is applied`, nil},
		{"the target still receives handoffs", doc("after-forged.json", "6ba7b810-9dad-41d1-80b4-00c04fd430c2"),
			0, "ACCEPTED", nil},
		{"attributable", doc("attributable.json", "6ba7b810-9dad-41d1-80b4-00c04fd430c3", goodTarget, wrong),
			1, "the agent is blocked", []string{"domain-02-analysis"}},
		{"the target is blocked", doc("after-attributable.json", "6ba7b810-9dad-41d1-80b4-00c04fd430c4"),
			1, "AGENT_BLOCKED", nil},
	}
	for i, s := range steps {
		code, stdout, stderr := e.run("", "record", s.path)
		if code != s.exit || !strings.Contains(stdout, s.want) {
			t.Fatalf("%s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", s.name, code, s.exit, s.want, stdout, stderr)
		}
		// entries 1 and 2 are the manifest and lock snapshots
		code, out, stderr := e.run("", "--output", "json", "show", strconv.Itoa(3+i))
		if code != 0 {
			t.Fatalf("show: exit %d: %s", code, stderr)
		}
		var v struct {
			Entry struct {
				Source string   `json:"source"`
				Blocks []string `json:"blocks"`
			} `json:"entry"`
		}
		if err := json.Unmarshal([]byte(out), &v, json.RejectUnknownMembers(false)); err != nil {
			t.Fatalf("show: %v\n%s", err, out)
		}
		if !slices.Equal(v.Entry.Blocks, s.blocks) || v.Entry.Source == "" {
			t.Errorf("%s: entry source %q blocks %q, want blocks %q\n%s", s.name, v.Entry.Source, v.Entry.Blocks, s.blocks, out)
		}
	}
	if code, stdout, stderr := e.run("", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}
