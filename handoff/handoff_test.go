package handoff_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/reason"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    handoff.Format
		wantErr error
	}{
		{"governed", governedSeed, handoff.Governed, nil},
		{"governed case-variant key", `{"HANDOFF_ID": "x"}`, handoff.Governed, nil},
		{"governed broken json", `{"handoff_id": "x", `, handoff.Governed, nil},
		{"vbw", vbwProgress, handoff.VBW, nil},
		{"vbw unknown type", `{"type": "memo"}`, "", handoff.ErrUnknownFormat},
		{"vbw type not a string", `{"type": 1}`, "", handoff.ErrUnknownFormat},
		{"governed and vbw", `{"handoff_id": "x", "type": "qa_result"}`, "", handoff.ErrAmbiguous},
		{"swarm", swarmSeed, handoff.Swarm, nil},
		{"swarm by version only", "handoff:\n  version: \"2.0\"\n", handoff.Swarm, nil},
		{"swarm unparsable yaml", "handoff:\n  source:\n\tskill: x\n", handoff.Swarm, nil},
		{"skill", skillSeed(strings.Repeat("0", 64)), handoff.Skill, nil},
		{"skill unparsable yaml", "handoff:\n  source_skill: a\n  source_skill: b\n", handoff.Skill, nil},
		{"swarm and skill", "handoff:\n  source_skill: a\n  source: {skill: b}\n", "", handoff.ErrAmbiguous},
		{"handoff without source", "handoff:\n  version: \"1.0\"\n", "", handoff.ErrUnknownFormat},
		{"task bare", taskSeedBare, handoff.Task, nil},
		{"task template", taskTemplate, handoff.Task, nil},
		{"task heading only inside a fence", "```\n## Handoff\noutcome: completed\n```\n", "", handoff.ErrUnknownFormat},
		{"plain markdown", "# Notes\n\nnothing here\n", "", handoff.ErrUnknownFormat},
		{"json array", `[1, 2]`, "", handoff.ErrUnknownFormat},
		{"yaml scalar", "hello\n", "", handoff.ErrUnknownFormat},
		{"empty", "", "", handoff.ErrNotText},
		{"white space", "  \n\t", "", handoff.ErrNotText},
		{"bom only", "\xef\xbb\xbf", "", handoff.ErrNotText},
		{"binary", "\x00\x01\x02\x03", "", handoff.ErrNotText},
		{"invalid utf-8 text", "hello \xff world", "", handoff.ErrNotText},
		{"bom then governed", "\xef\xbb\xbf" + governedSeed, handoff.Governed, nil},
		{"a2a message", a2aMessage, handoff.A2A, nil},
		{"a2a request", a2aRequest, handoff.A2A, nil},
		{"a2a by messageId only", `{"messageId": "m"}`, handoff.A2A, nil},
		{"a2a by jsonrpc only", `{"jsonrpc": "2.0"}`, handoff.A2A, nil},
		{"a2a case-variant key", `{"MESSAGEID": "m"}`, handoff.A2A, nil},
		{"a2a broken json", `{"kind": "message", "parts": [`, handoff.A2A, nil},
		{"a2a duplicate kind", `{"kind": "task", "kind": "message"}`, handoff.A2A, nil},
		{"kind other than message", `{"kind": "task", "id": "t-1"}`, "", handoff.ErrUnknownFormat},
		{"a2a and governed", `{"kind": "message", "source_agent": {}}`, "", handoff.ErrAmbiguous},
		{"a2a and vbw", `{"messageId": "m", "type": "qa_result"}`, "", handoff.ErrAmbiguous},
		{"a2a 1.0 message", `{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}`, handoff.A2A, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, matched, err := handoff.Detect([]byte(tt.in))
			if got != tt.want {
				t.Errorf("Detect() = %q, want %q (err %v)", got, tt.want, err)
			}
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("Detect() error = %v, want %v", err, tt.wantErr)
			}
			var de *handoff.DetectError
			if err != nil && !errors.As(err, &de) {
				t.Errorf("error %T is not a *DetectError", err)
			}
			if errors.Is(err, handoff.ErrAmbiguous) && len(matched) < 2 {
				t.Errorf("ambiguous with matched %v", matched)
			}
			if errors.Is(err, handoff.ErrUnknownFormat) && !strings.Contains(err.Error(), "governed/1") {
				t.Errorf("error %q does not name the formats considered", err)
			}
			if err == nil && !slices.Equal(matched, []handoff.Format{tt.want}) {
				t.Errorf("matched = %v", matched)
			}
		})
	}
}

func codesOf(rec *handoff.Record) []reason.Code { return reason.Codes(rec.Findings) }

func TestParseOptions(t *testing.T) {
	md := []byte("just a note from the dev agent\n")
	tests := []struct {
		name   string
		data   []byte
		opts   handoff.Options
		format handoff.Format
		want   []reason.Code
		sev    reason.Severity
	}{
		{"markdown without agents", md, handoff.Options{}, "", []reason.Code{reason.UnknownFormat}, reason.Error},
		{"markdown fallback", md, handoff.Options{From: "domain-03-technical", To: "domain-02-analysis"}, handoff.VBW, []reason.Code{reason.MarkdownFallback}, reason.Warning},
		{"markdown fallback strict", md, handoff.Options{From: "domain-03-technical", To: "domain-02-analysis", Strict: true}, handoff.VBW, []reason.Code{reason.MarkdownFallback}, reason.Error},
		{"markdown forced vbw without agents", md, handoff.Options{Format: handoff.VBW}, handoff.VBW, []reason.Code{reason.AgentsRequired, reason.MarkdownFallback}, reason.Warning},
		{"broken json never falls back", []byte(`{"type": "dev_progress", `), handoff.Options{From: "a", To: "b"}, handoff.VBW, []reason.Code{reason.Unparseable}, reason.Error},
		{"unknown json never falls back", []byte(`{"note": "hi"}`), handoff.Options{From: "a", To: "b"}, "", []reason.Code{reason.UnknownFormat}, reason.Error},
		{"bad --from", []byte(vbwProgress), handoff.Options{From: "Domain\u202e", To: "b"}, handoff.VBW, []reason.Code{reason.SchemaInvalid}, reason.Error},
		{"unknown forced format", []byte(vbwProgress), handoff.Options{Format: "xml/1"}, "", []reason.Code{reason.UnknownFormat}, reason.Error},
		{"forced format mismatch", []byte(vbwProgress), handoff.Options{Format: handoff.Governed}, handoff.Governed, nil, reason.Error},
		{"too large", make([]byte, handoff.MaxDocumentSize+1), handoff.Options{}, "", []reason.Code{reason.PayloadTooLarge}, reason.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := handoff.Parse(tt.data, tt.opts)
			if rec.Format != tt.format {
				t.Errorf("Format = %q, want %q", rec.Format, tt.format)
			}
			got := codesOf(rec)
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("codes = %v, want %v%s", got, tt.want, dump(rec.Findings))
			}
			if len(rec.Findings) == 0 {
				t.Fatalf("no findings")
			}
			if sev := rec.Findings[len(rec.Findings)-1].Severity; tt.want != nil && sev != tt.sev {
				t.Errorf("severity = %s, want %s", sev, tt.sev)
			}
		})
	}
}

// TestNormalizedFields checks what Parse copies into the Record.
func TestNormalizedFields(t *testing.T) {
	rec := handoff.Parse([]byte(governedSeed), handoff.Options{})
	yes := true
	want := handoff.Record{
		Format: handoff.Governed, HandoffID: "550e8400-e29b-41d4-a716-446655440000",
		Source:      handoff.AgentRef{ID: "domain-05-product", Type: "domain", Version: "1.0.0", PromptHash: hashProduct},
		Target:      handoff.AgentRef{ID: "domain-02-analysis", Type: "domain", Version: "1.0.0", PromptHash: hashAnalysis},
		Timestamp:   "2026-02-11T00:45:02Z",
		RequestType: "analysis",
		Attestation: &handoff.Attestation{SourceAgentVerified: &yes, TargetAgentVerified: &yes, CompositionValid: &yes, BoundariesRespected: &yes, AuditTrail: "handoff-log-2026-02-11-001.json"},
	}
	if rec.Format != want.Format || rec.HandoffID != want.HandoffID || rec.Source != want.Source || rec.Target != want.Target ||
		rec.Timestamp != want.Timestamp || rec.RequestType != want.RequestType || *rec.Attestation.CompositionValid != true ||
		rec.Attestation.AuditTrail != want.Attestation.AuditTrail || len(rec.Findings) != 0 {
		t.Errorf("Parse(seed 003) = %+v", rec)
	}
	// Invalid values never reach the record.
	bad := rep(rep(rep(governedSeed, `"550e8400-e29b-41d4-a716-446655440000"`, `"550E8400-E29B-41D4-A716-446655440000"`),
		`"agent_id": "domain-05-product"`, `"agent_id": "domain-05-pr\u043educt"`), hashProduct, strings.ToUpper(hashProduct))
	rec = handoff.Parse([]byte(bad), handoff.Options{})
	if rec.Source.ID != "" || rec.Source.PromptHash != "" {
		t.Errorf("invalid values reached the record: %+v", rec)
	}
	// An upper-case UUID is the same UUID (RFC 4122: case-insensitive on
	// input): recorded in its canonical lower-case form.
	if rec.HandoffID != "550e8400-e29b-41d4-a716-446655440000" {
		t.Errorf("HandoffID = %q, want the canonical lower-case form", rec.HandoffID)
	}
	// Agents of vbw/1 and task/1 come from the options; workflow ids from the documents.
	rec = handoff.Parse([]byte(vbwProgress), handoff.Options{From: "domain-03-technical", To: "domain-02-analysis"})
	if rec.Source.ID != "domain-03-technical" || rec.Target.ID != "domain-02-analysis" || rec.WorkflowID != "03-01" {
		t.Errorf("vbw record = %+v", rec)
	}
	rec = handoff.Parse([]byte(taskTemplate), handoff.Options{From: "orchestrator", To: "domain-03-technical"})
	if rec.WorkflowID != "007" || rec.HandoffID != "" || rec.Format != handoff.Task {
		t.Errorf("task record = %+v", rec)
	}
	rec = handoff.Parse([]byte(sealSwarm(swarmSeed)), handoff.Options{})
	if rec.Source.ID != "perspective-swarm" || rec.Target.ID != "lit-pm" || rec.WorkflowID != "swarm-session-20260204-183000-a1b2c3d4" || rec.SessionPath != swarmSession {
		t.Errorf("swarm record = %+v", rec)
	}
}

// TestNilEnv: without an Env, file-system rules are skipped but lexical
// path rules still apply.
func TestNilEnv(t *testing.T) {
	doc := rep(skillSeed(strings.Repeat("0", 64)), skillDeliverable, "no/such/file.md")
	if rec := handoff.Parse([]byte(doc), handoff.Options{}); len(rec.Findings) != 0 {
		t.Errorf("nil Env: %s", dump(rec.Findings))
	}
	doc = rep(doc, "no/such/file.md", "../outside.md")
	if rec := handoff.Parse([]byte(doc), handoff.Options{}); !slices.Equal(codesOf(rec), []reason.Code{reason.PathEscape}) {
		t.Errorf("nil Env, ../ path: %s", dump(rec.Findings))
	}
	// Zero Now: no expiry.
	old := rep(swarmSeed, "2026-02-04T20:30:00Z", "2000-01-01T00:00:00Z")
	if rec := handoff.Parse([]byte(sealSwarm(old)), handoff.Options{}); len(rec.Findings) != 0 {
		t.Errorf("zero Now: %s", dump(rec.Findings))
	}
	if rec := handoff.Parse([]byte(sealSwarm(old)), handoff.Options{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); !slices.Equal(codesOf(rec), []reason.Code{reason.Expired}) {
		t.Errorf("old payload: %s", dump(rec.Findings))
	}
}

// TestHugeInputs covers huge inputs with generated documents.
func TestHugeInputs(t *testing.T) {
	big := strings.Repeat("a", 10<<20)
	tests := []struct {
		name string
		doc  string
		want reason.Code
	}{
		{"json depth 1e6", `{"handoff_id": ` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}`, reason.Unparseable},
		{"yaml depth 1e5", "handoff:\n  source: {skill: x}\n  d: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n", reason.Unparseable},
		{"10 MB agent id", rep(governedSeed, `"domain-05-product"`, `"`+big+`"`), reason.SchemaInvalid},
		{"100k keys", rep(governedSeed, `"hypothesis": "Users want feature X",`, manyKeys(100_000)), ""},
		{"1M element array", rep(governedSeed, `"hypothesis": "Users want feature X",`, `"a": [`+strings.Repeat("0,", 999_999)+`0],`), ""},
		{"a2a json depth 1e6", `{"kind": "message", "parts": ` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}`, reason.Unparseable},
		{"a2a 10 MB source", rep(a2aMessage, `"source": "planner"`, `"source": "`+big+`"`), reason.SchemaInvalid},
		{"a2a 10 MB message id", rep(rep(a2aMessage, `"9229e770-767c-417b-a0b0-f0741243c589"`, `"`+big+`"`), `"source": "planner"`, `"source": "`+big+`"`), reason.InvalidID},
		{"a2a 100k metadata keys", rep(a2aMessage, `"govledger": {`, manyKeys(100_000)+`"govledger": {`), ""},
		{"a2a 100k parts", rep(a2aMessage, `"parts": [`, `"parts": [`+strings.Repeat(`{"kind": "text", "text": "x"},`, 100_000)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && len(tt.doc) > 1<<20 {
				t.Skip("large input skipped in -short mode")
			}
			rec := handoff.Parse([]byte(tt.doc), handoff.Options{})
			if tt.want == "" {
				if len(rec.Findings) != 0 {
					t.Errorf("findings: %s", dump(rec.Findings)[:200])
				}
				return
			}
			if !slices.Contains(codesOf(rec), tt.want) {
				t.Errorf("codes = %v, want %s", codesOf(rec), tt.want)
			}
			for _, r := range rec.Findings {
				if len(r.Message) > 1000 {
					t.Errorf("message of %d bytes", len(r.Message))
				}
			}
			if rec.Source.ID != "" {
				t.Errorf("oversized id reached the record")
			}
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", 0))
		b.WriteString(itoa(i))
		b.WriteString(`": 1,`)
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestSeedError(t *testing.T) {
	rec := handoff.Parse([]byte(rep(swarmSeed, "    original_prompt: \"Should we expand into the European market?\"\n", "")), handoff.Options{})
	out, err := handoff.SeedError(rec, rec.Findings)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"code: INVALID_PAYLOAD", "missing_fields:", "- handoff.context.original_prompt", "recoverable: true",
		"payload_preserved: " + swarmSession + "handoff-payload.yaml"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("SeedError output lacks %q:\n%s", want, out)
		}
	}
	policy := append(rec.Findings[:0:0], reason.Reason{Code: reason.IneligibleTarget, Severity: reason.Error, Field: "handoff.target.skill", Message: "not eligible"})
	out, _ = handoff.SeedError(&handoff.Record{Target: handoff.AgentRef{ID: "lit-pm"}}, policy)
	if !strings.Contains(string(out), "code: TARGET_NOT_FOUND") || !strings.Contains(string(out), "target_skill: lit-pm") {
		t.Errorf("target not found:\n%s", out)
	}
	crit := []reason.Reason{{Code: reason.HashMismatch, Severity: reason.Critical, Message: "m"}}
	out, _ = handoff.SeedError(&handoff.Record{}, crit)
	if !strings.Contains(string(out), "code: VALIDATION_FAILED") || !strings.Contains(string(out), "recoverable: false") {
		t.Errorf("validation failed:\n%s", out)
	}
	if _, err := handoff.SeedError(&handoff.Record{}, []reason.Reason{{Code: reason.HandoffLoop, Severity: reason.Warning}}); !errors.Is(err, handoff.ErrNotRejected) {
		t.Errorf("warnings only: err = %v", err)
	}
}

func TestStopMessage(t *testing.T) {
	rec := handoff.Parse([]byte(rep(skillSeed(strings.Repeat("0", 64)), `completed_skills: ["researcher"]`, `completed_skills: []`)), handoff.Options{})
	got := handoff.StopMessage(rec, rec.Findings)
	want := "Handoff validation failed: SCHEMA_INVALID 17:21: context.completed_skills: must list at least one skill\n" +
		"Source skill: researcher\nTarget skill: synthesizer\n\nOptions:\n(A) Regenerate handoff from source skill\n" +
		"(B) Manually fix handoff document\n(C) Abort workflow (preserve completed outputs)\n"
	if got != want {
		t.Errorf("StopMessage =\n%s\nwant\n%s", got, want)
	}
	if got := handoff.StopMessage(rec, nil); got != "" {
		t.Errorf("no reasons: %q", got)
	}
}

// TestRootEnv uses real symbolic links in a temporary tree.
func TestRootEnv(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	mk := func(p, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	mk("docs/a.md", "hello\n")
	mk("session/perspective-one.md", "1")
	mk("session/perspective-two.md", "2")
	link(filepath.Join(outside, "secret.txt"), "abs-escape.md")
	link("../"+filepath.Base(outside)+"/secret.txt", "rel-escape.md")
	link(outside, "dir-escape")
	link("docs/a.md", "inside.md")
	link("../../etc/nothing-here", "docs/dangling-escape.md")
	link("missing.md", "docs/dangling-inside.md")
	link("docs", "docs-link")
	env, err := handoff.NewRootEnv(root)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	const helloHash = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	tests := []struct {
		op, path string
		want     handoff.Observation
	}{
		{"file", "docs/a.md", handoff.Observation{Exists: true, Size: 6, SHA256: helloHash}},
		{"file", "./docs/../docs/a.md", handoff.Observation{Exists: true, Size: 6, SHA256: helloHash}},
		{"file", filepath.Join(root, "docs/a.md"), handoff.Observation{Exists: true, Size: 6, SHA256: helloHash}},
		{"file", "inside.md", handoff.Observation{Exists: true, Size: 6, SHA256: helloHash}},
		{"file", "docs-link/a.md", handoff.Observation{Exists: true, Size: 6, SHA256: helloHash}},
		{"file", "abs-escape.md", handoff.Observation{Escapes: true}},
		{"file", "rel-escape.md", handoff.Observation{Escapes: true}},
		{"file", "dir-escape/secret.txt", handoff.Observation{Escapes: true}},
		{"dir", "dir-escape", handoff.Observation{Escapes: true}},
		{"file", "docs/dangling-escape.md", handoff.Observation{Escapes: true}},
		{"file", "docs/dangling-inside.md", handoff.Observation{}},
		{"file", "../x", handoff.Observation{Escapes: true}},
		{"file", "/etc/passwd", handoff.Observation{Escapes: true}},
		{"file", "nope.md", handoff.Observation{}},
		{"file", "docs", handoff.Observation{Exists: true, IsDir: true}},
		{"dir", "session/", handoff.Observation{Exists: true, IsDir: true, Names: []string{"perspective-one.md", "perspective-two.md"}}},
		{"dir", "docs/a.md", handoff.Observation{Exists: true, Err: "not a directory"}},
		{"stat", "docs/a.md", handoff.Observation{Err: "unknown operation"}},
	}
	for _, tt := range tests {
		got := env.Observe(tt.op, tt.path)
		tt.want.Op, tt.want.Path = tt.op, tt.path
		if !observationEqual(got, tt.want) {
			t.Errorf("Observe(%s, %s) = %+v, want %+v", tt.op, tt.path, got, tt.want)
		}
	}
	if got := len(env.Observations()); got != len(tests) {
		t.Errorf("Observations() has %d entries, want %d", got, len(tests))
	}

	// Through Parse: a task/1 path that escapes through a link.
	task := "## Handoff\n\noutcome: completed\nfiles_modified:\n  - path: abs-escape.md\n    lines: all\n    change_type: modify\n    description: x\n"
	rec := handoff.Parse([]byte(task), handoff.Options{From: "a", To: "b", Env: env})
	if !slices.Equal(codesOf(rec), []reason.Code{reason.PathEscape}) {
		t.Errorf("task through escaping link: %s", dump(rec.Findings))
	}
	// A skill/1 deliverable behind an escaping link.
	doc := rep(skillSeed(strings.Repeat("0", 64)), skillDeliverable, "rel-escape.md")
	rec = handoff.Parse([]byte(doc), handoff.Options{Env: env})
	if !slices.Equal(codesOf(rec), []reason.Code{reason.PathEscape}) {
		t.Errorf("skill through escaping link: %s", dump(rec.Findings))
	}
	if _, err := handoff.NewRootEnv(filepath.Join(root, "docs/a.md")); !errors.Is(err, handoff.ErrRoot) {
		t.Errorf("NewRootEnv(file) err = %v", err)
	}
}

func observationEqual(a, b handoff.Observation) bool {
	return a.Op == b.Op && a.Path == b.Path && a.Escapes == b.Escapes && a.Exists == b.Exists && a.IsDir == b.IsDir &&
		a.Size == b.Size && a.SHA256 == b.SHA256 && slices.Equal(a.Names, b.Names) && a.Err == b.Err
}

func TestFIFODoesNotBlock(t *testing.T) {
	root := t.TempDir()
	if err := mkfifo(filepath.Join(root, "pipe")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	env, err := handoff.NewRootEnv(root)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if o := env.Observe("file", "pipe"); o.Err != "not a regular file" {
		t.Errorf("Observe(fifo) = %+v", o)
	}
}

func TestReplayEnv(t *testing.T) {
	obs := []handoff.Observation{
		{Op: "file", Path: "a", Exists: true, SHA256: "1"},
		{Op: "file", Path: "a", Exists: true, SHA256: "2"},
		{Op: "dir", Path: "s", Exists: true, IsDir: true, Names: []string{"x"}},
	}
	env := handoff.NewReplayEnv(obs)
	for i, want := range []string{"1", "2", "2"} {
		if got := env.Observe("file", "a"); got.SHA256 != want {
			t.Errorf("ask %d: SHA256 = %q, want %q", i, got.SHA256, want)
		}
	}
	if got := env.Observe("dir", "a"); got.Err != "not recorded" || got.Op != "dir" || got.Path != "a" {
		t.Errorf("unrecorded = %+v", got)
	}
	got := env.Observe("dir", "s")
	got.Names[0] = "mutated"
	if again := env.Observe("dir", "s"); again.Names[0] != "x" {
		t.Errorf("ReplayEnv shares Names with its caller")
	}
}
