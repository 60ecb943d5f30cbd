package handoff_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/handoff"
)

// TestSourceHint: wherever the cheap read names a source, Parse attributes
// the document to that source (every document of the corpus, and the
// demo's), so refusing on the hint never refuses a document Parse would
// let through.
func TestSourceHint(t *testing.T) {
	files, _ := filepath.Glob("../testdata/handoffs/*/*/*")
	if len(files) < 50 {
		t.Fatalf("%d corpus files", len(files))
	}
	named := 0
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.IsDir() {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []handoff.Options{{}, {From: "orchestrator", To: "domain-04-content"}} {
			opts.Rules = handoff.CurrentRules
			hint, ok := handoff.SourceHint(data, opts)
			rec := handoff.Parse(data, opts)
			if !ok || rec.Source.ID == "" {
				continue
			}
			named++
			if hint != rec.Source.ID {
				t.Errorf("%s: SourceHint = %q, Parse's source %q", f, hint, rec.Source.ID)
			}
		}
	}
	for _, c := range []struct {
		doc, want string
		ok        bool
	}{
		{`{"handoff_id":"x","source_agent":{"agent_type":"domain","agent_id":"domain-05-product"}}`, "domain-05-product", true},
		{`{"context":{"source_agent":{"agent_id":"a"}},"source_agent":{"agent_id":"b"}}`, "b", true},
		{"handoff:\n  version: \"1.0\"\n  source_skill: researcher\n", "researcher", true},
		{"handoff:\n  source:\n    skill: perspective-swarm\n    session_path: s/\n  target:\n    skill: lit-pm\n", "perspective-swarm", true},
		{"handoff:\n  source_skill: a\n  source_skill: b\n", "", false},
		{"handoff: {source_skill: a}\n", "", false},
		{"[1,2]", "", false},
	} {
		if got, ok := handoff.SourceHint([]byte(c.doc), handoff.Options{}); got != c.want || ok != c.ok {
			t.Errorf("SourceHint(%q) = %q, %v; want %q, %v", c.doc, got, ok, c.want, c.ok)
		}
	}
	t.Logf("%d documents named a source both ways", named)
	if named < 20 {
		t.Errorf("only %d corpus documents named a source", named)
	}
}
