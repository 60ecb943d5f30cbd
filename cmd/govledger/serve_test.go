package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/internal/testenv"
	"github.com/govledger/govledger/server"
)

// TestServeEndToEnd runs the real binary on a loopback port and goes
// through the API as its clients would: every format, batches, reads,
// proofs checked with tlog against a signed checkpoint, the export against
// "govledger export", events with resumption, scope refusals, unblock,
// redact and reload (also on SIGHUP), then a graceful stop and verify.
func TestServeEndToEnd(t *testing.T) {
	e := newServeEnv(t, "registry")
	keyFile := filepath.Join(e.dir, "ledger.key")
	if out, code := e.cli("--origin", "example.com/serve-test", "keygen", "--out", strings.TrimSuffix(keyFile, ".key"), "example.com/serve-test"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	s := e.start("--key", keyFile, "--origin", "example.com/serve-test")
	W := func(name string, body []byte, query string, headers ...string) answer {
		return e.do(s, "POST", "/v1/handoffs"+query, name, body, headers...)
	}

	// Every format of the manifest registry (swarm/2 and skill/1: TestServeSkills).
	doc01 := demoDoc(t, "01-product-to-analysis.json")
	a := W("product", doc01, "", "Idempotency-Key: step-1", "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if a.status != 201 || a.header.Get("Location") == "" {
		t.Fatalf("POST governed/1: %d %s", a.status, a.body)
	}
	first := a.json(t)
	if first["decision"] != "accepted" || first["format"] != "governed/1" || first["source"] != "domain-05-product" {
		t.Fatalf("governed/1 answer: %s", a.body)
	}
	seq01 := seqOf(t, a)
	for _, c := range []struct{ doc, query, format string }{
		{"09-qa-result.vbw.json", "?from=domain-03-technical&to=domain-02-analysis", "vbw/1"},
		{"10-task-handoff.md", "?from=orchestrator&to=domain-04-content", "task/1"},
		{"08-garbage.bin", "", ""},
	} {
		a := W("writer", demoDoc(t, c.doc), c.query)
		m := a.json(t)
		if a.status != 201 || m["format"] != c.format && !(c.format == "" && m["format"] == nil) {
			t.Fatalf("POST %s: %d %s", c.doc, a.status, a.body)
		}
	}

	// Idempotency: per principal, same bytes replay, other bytes conflict.
	a = W("product", doc01, "", "Idempotency-Key: step-1")
	if m := a.json(t); a.status != 201 || seqOf(t, a) != seq01 || m["replayed"] != true || m["entry_hash"] != first["entry_hash"] {
		t.Fatalf("retry with the same key: %d %s, want seq %d replayed", a.status, a.body, seq01)
	}
	doc01b := bytes.Replace(doc01, []byte("validate product hypothesis"), []byte("validate product hypothesis, take 2"), 1)
	wantProblem(t, "same key, other bytes", W("product", doc01b, "", "Idempotency-Key: step-1"), 409, server.CodeIdempotencyConflict)
	wantProblem(t, "same key, other from", W("product", doc01, "?from=domain-05-product", "Idempotency-Key: step-1"), 409, server.CodeIdempotencyConflict)
	if a := W("writer", demoDoc(t, "02-thinker-to-technical.json"), "", "Idempotency-Key: step-1"); a.status != 201 || a.json(t)["replayed"] != nil {
		t.Fatalf("another principal's key step-1: %d %s, want a new entry", a.status, a.body)
	}

	// A token for domain-05-product cannot submit research's handoff; nothing is written.
	before := e.head(s)
	p := wantProblem(t, "another source", W("product", demoDoc(t, "04-research-hash-mismatch.json"), ""), 403, server.CodeForbiddenSource)
	if p["written"] != "no" || e.head(s) != before {
		t.Fatalf("forbidden source wrote something: %v, head %d -> %d", p, before, e.head(s))
	}
	wantProblem(t, "no source at all", W("product", []byte("## Status\nno agents named"), ""), 403, server.CodeForbiddenSource)

	// The hash mismatch blocks research; an operator unblocks it.
	a = W("writer", demoDoc(t, "04-research-hash-mismatch.json"), "")
	if m := a.json(t); a.status != 201 || m["decision"] != "rejected" {
		t.Fatalf("hash mismatch: %d %s", a.status, a.body)
	}
	blockSeq := seqOf(t, a)
	a = e.do(s, "GET", "/v1/blocks", "reader", nil)
	var blocks struct {
		Blocks []server.Block `json:"blocks"`
	}
	if err := json.Unmarshal(a.body, &blocks); err != nil || len(blocks.Blocks) != 1 || blocks.Blocks[0].Agent != "domain-01-research" ||
		blocks.Blocks[0].Since != blockSeq || blocks.Blocks[0].Submitter != "writer" || blocks.Blocks[0].Code != "HASH_MISMATCH" {
		t.Fatalf("blocks: %s", a.body)
	}
	if m := W("writer", demoDoc(t, "05-research-blocked.json"), "").json(t); m["decision"] != "rejected" || !strings.Contains(string(mustJSON(t, m["reasons"])), "AGENT_BLOCKED") {
		t.Fatalf("blocked agent: %v", m)
	}
	wantProblem(t, "unblock without operator scope", e.do(s, "POST", "/v1/blocks/domain-01-research:unblock", "writer", []byte(`{"reason":"x"}`), "Content-Type: application/json"), 403, server.CodeForbiddenScope)
	a = e.do(s, "POST", "/v1/blocks/domain-01-research:unblock", "op", []byte(`{"reason":"prompt reviewed"}`), "Content-Type: application/json")
	if a.status != 201 || !strings.Contains(string(a.body), `"kind":"unblock"`) || !strings.Contains(string(a.body), `"submitter":"op"`) {
		t.Fatalf("unblock: %d %s", a.status, a.body)
	}
	wantProblem(t, "unblock of an agent not blocked", e.do(s, "POST", "/v1/blocks/domain-01-research:unblock", "op", []byte(`{"reason":"again"}`), "Content-Type: application/json"), 404, server.CodeNotFound)

	// A batch: NDJSON in, one line per document out; a bad line fails alone.
	env, _ := json.Marshal(map[string]string{"document": string(demoDoc(t, "09-qa-result.vbw.json")), "from": "domain-03-technical", "to": "domain-02-analysis", "idempotency_key": "batch-1"})
	batch := bytes.Join([][]byte{compactJSON(t, demoDoc(t, "02-thinker-to-technical.json")), env, []byte(`{"document": 5}`)}, []byte("\n"))
	a = e.do(s, "POST", "/v1/handoffs:batch", "writer", batch, "Content-Type: application/x-ndjson")
	lines := strings.Split(strings.TrimSpace(string(a.body)), "\n")
	if a.status != 200 || len(lines) != 3 || !strings.Contains(lines[0], `"status":201`) || !strings.Contains(lines[1], `"status":201`) ||
		!strings.Contains(lines[2], `"code":"BAD_REQUEST"`) || !strings.Contains(lines[2], `"written":"no"`) {
		t.Fatalf("batch: %d\n%s", a.status, a.body)
	}
	a = e.do(s, "POST", "/v1/handoffs:batch", "writer", env, "Content-Type: application/x-ndjson")
	if !strings.Contains(string(a.body), `"replayed":true`) {
		t.Fatalf("batch line retried with its key: %s", a.body)
	}

	// Validate writes nothing.
	before = e.head(s)
	a = e.do(s, "POST", "/v1/validate", "product", doc01)
	if m := a.json(t); a.status != 200 || m["seq"] != float64(0) || m["decision"] != "rejected" || e.head(s) != before {
		t.Fatalf("validate of an accepted handoff id (REPLAY): %d %s", a.status, a.body)
	}

	// Reads: entries newest first with a cursor, filters, one entry, its payload, a workflow.
	head := e.head(s)
	var page server.Page
	a = e.do(s, "GET", "/v1/entries?limit=2", "reader", nil)
	if err := json.Unmarshal(a.body, &page); err != nil || len(page.Entries) != 2 || page.Entries[0].Seq != head || page.Next != head-1 {
		t.Fatalf("first page: %s", a.body)
	}
	a = e.do(s, "GET", "/v1/entries?limit=2&before="+itoaU(page.Next), "reader", nil)
	if err := json.Unmarshal(a.body, &page); err != nil || len(page.Entries) != 2 || page.Entries[0].Seq != head-2 {
		t.Fatalf("second page: %s", a.body)
	}
	for q, want := range map[string]int{"code=HASH_MISMATCH": 1, "kind=unblock": 1, "decision=rejected&agent=domain-01-research": 2, "format=task/1": 1, "kind=snapshot": 2} {
		a = e.do(s, "GET", "/v1/entries?"+q, "reader", nil)
		if err := json.Unmarshal(a.body, &page); err != nil || len(page.Entries) != want {
			t.Fatalf("entries?%s: %d entries, want %d\n%s", q, len(page.Entries), want, a.body)
		}
	}
	a = e.do(s, "GET", "/v1/entries/"+itoaU(seq01), "reader", nil)
	var ev server.EntryView
	if err := json.Unmarshal(a.body, &ev); err != nil || ev.Seq != seq01 || !strings.Contains(string(ev.Entry), `"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`) ||
		!strings.Contains(string(ev.Entry), `"submitter":"product"`) || !strings.Contains(string(ev.Entry), `"idempotency_key":"product/step-1"`) {
		t.Fatalf("entry %d: %s", seq01, a.body)
	}
	// The handoff-id filter: the entries of doc01's handoff id, seq01 among them, and no other.
	hid := regexp.MustCompile(`"handoff_id":"([^"]+)"`).FindSubmatch(ev.Entry)
	if hid == nil {
		t.Fatalf("entry %d has no handoff_id: %s", seq01, ev.Entry)
	}
	a = e.do(s, "GET", "/v1/entries?handoff_id="+url.QueryEscape(string(hid[1])), "reader", nil)
	if err := json.Unmarshal(a.body, &page); err != nil || len(page.Entries) == 0 || page.Entries[len(page.Entries)-1].Seq != seq01 {
		t.Fatalf("entries?handoff_id=%s: want seq %d oldest: %s", hid[1], seq01, a.body)
	}
	for _, v := range page.Entries {
		if !bytes.Contains(v.Entry, hid[0]) {
			t.Fatalf("entries?handoff_id=%s returned entry %d of another handoff: %s", hid[1], v.Seq, v.Entry)
		}
	}
	wantProblem(t, "payload without payload:read", e.do(s, "GET", "/v1/entries/"+itoaU(seq01)+"/payload", "reader", nil), 403, server.CodeForbiddenScope)
	if a := e.do(s, "GET", "/v1/entries/"+itoaU(seq01)+"/payload", "auditor", nil); a.status != 200 || !bytes.Equal(a.body, doc01) {
		t.Fatalf("payload: %d, bytes differ from the document", a.status)
	}
	wantProblem(t, "entry beyond the head", e.do(s, "GET", "/v1/entries/999999", "reader", nil), 404, server.CodeNotFound)
	wantProblem(t, "unknown workflow", e.do(s, "GET", "/v1/workflows/no-such-workflow", "reader", nil), 404, server.CodeNotFound)

	// Proofs: inclusion and consistency checked with tlog against the signed checkpoint.
	verifier := readVerifier(t, keyFile)
	a = e.do(s, "GET", "/v1/checkpoint", "reader", nil)
	cp, err := checkpoint.Open(a.body, note.VerifierList(verifier), "example.com/serve-test")
	if err != nil || cp.Size != head {
		t.Fatalf("checkpoint: %v %s", err, a.body)
	}
	// Every proof is against the latest checkpoint; an old tree size
	// adds the consistency proof from it, checked against the reader's
	// own root of that size (here: of the first two entries).
	e1 := decodeView(t, e.do(s, "GET", "/v1/entries/1", "reader", nil).body)
	e2 := decodeView(t, e.do(s, "GET", "/v1/entries/2", "reader", nil).body)
	root2 := tlog.NodeHash(hash1(t, e1.Hash), hash1(t, e2.Hash))
	for _, size := range []uint64{0, 2, seq01 + 1} {
		path := "/v1/entries/" + itoaU(min(seq01, max(size, 1))) + "/proof"
		if size != 0 {
			path += "?tree_size=" + itoaU(size)
		}
		a = e.do(s, "GET", path, "reader", nil)
		var pf server.Proof
		if err := json.Unmarshal(a.body, &pf); err != nil {
			t.Fatalf("proof: %v %s", err, a.body)
		}
		pcp, err := checkpoint.Open([]byte(pf.Checkpoint), note.VerifierList(verifier), "example.com/serve-test")
		if err != nil || pcp.Size != pf.TreeSize || pcp.Size != head || hex.EncodeToString(pcp.Hash[:]) != pf.RootHash {
			t.Fatalf("%s: the proof's checkpoint is not the latest (size %d): %v %+v", path, head, err, pf)
		}
		if err := tlog.CheckRecord(hashes(t, pf.Hashes), int64(pf.TreeSize), pcp.Hash, int64(pf.Seq-1), hash1(t, pf.LeafHash)); err != nil {
			t.Fatalf("inclusion proof of seq %d in %d: %v", pf.Seq, pf.TreeSize, err)
		}
		if size == 2 {
			if pf.Consistency == nil || pf.Consistency.From != 2 || pf.Consistency.To != head {
				t.Fatalf("%s: consistency %+v", path, pf.Consistency)
			}
			if err := tlog.CheckTree(hashes(t, pf.Consistency.Hashes), int64(head), cp.Hash, 2, root2); err != nil {
				t.Fatalf("consistency proof 2 -> %d: %v", head, err)
			}
		}
	}
	var cons struct {
		Hashes []string `json:"hashes"`
	}
	json.Unmarshal(e.do(s, "GET", "/v1/consistency?from=2&to="+itoaU(head), "reader", nil).body, &cons)
	if err := tlog.CheckTree(hashes(t, cons.Hashes), int64(head), cp.Hash, 2, root2); err != nil {
		t.Fatalf("consistency proof 2 -> %d: %v", head, err)
	}
	wantProblem(t, "consistency beyond the head", e.do(s, "GET", "/v1/consistency?from=1&to=999999", "reader", nil), 422, server.CodeInvalidParameters)

	// Events: a new entry is delivered; Last-Event-ID resumes after it.
	events, stop := openEvents(t, e, s, head)
	a = W("writer", demoDoc(t, "03-content-to-security.json"), "")
	newSeq := seqOf(t, a)
	if id, data := events(); id != itoaU(newSeq) || !strings.Contains(data, `"seq":`+itoaU(newSeq)) {
		t.Fatalf("event: id %q data %s, want seq %d", id, data, newSeq)
	}
	stop()
	events, stop = openEvents(t, e, s, newSeq-1)
	if id, _ := events(); id != itoaU(newSeq) {
		t.Fatalf("resumed event id %q, want %d", id, newSeq)
	}
	stop()

	// Export: the same bytes as "govledger export" (checked after the stop).
	wantProblem(t, "export without payload:read", e.do(s, "GET", "/v1/export", "reader", nil), 403, server.CodeForbiddenScope)
	export := e.do(s, "GET", "/v1/export", "auditor", nil)
	if export.status != 200 || bytes.Count(export.body, []byte("\n")) != int(newSeq) {
		t.Fatalf("export: %d, %d lines, want %d", export.status, bytes.Count(export.body, []byte("\n")), newSeq)
	}
	if a := e.do(s, "GET", "/v1/export?after="+itoaU(newSeq-1), "auditor", nil); bytes.Count(a.body, []byte("\n")) != 1 {
		t.Fatalf("export after %d: %s", newSeq-1, a.body)
	}

	// Redact: the payload is gone (410), its hash stays.
	a = e.do(s, "POST", "/v1/entries/"+itoaU(seq01)+":redact", "op", []byte(`{"reason":"erasure request 7"}`), "Content-Type: application/json")
	if a.status != 201 || !strings.Contains(string(a.body), `"kind":"redaction"`) || !strings.Contains(string(a.body), `"submitter":"op"`) {
		t.Fatalf("redact: %d %s", a.status, a.body)
	}
	wantProblem(t, "redacted payload", e.do(s, "GET", "/v1/entries/"+itoaU(seq01)+"/payload", "auditor", nil), 410, server.CodeRedacted)
	wantProblem(t, "redact twice", e.do(s, "POST", "/v1/entries/"+itoaU(seq01)+":redact", "op", []byte(`{"reason":"again"}`), "Content-Type: application/json"), 410, server.CodeRedacted)

	// Reload: nothing changed, nothing recorded; a new lock is a snapshot entry (SIGHUP);
	// a broken tokens file is refused and the old tokens stay.
	a = e.do(s, "POST", "/v1/reload", "op", nil)
	if a.status != 200 || strings.TrimSpace(string(a.body)) != `{"entries":[]}` {
		t.Fatalf("reload of unchanged files: %d %s", a.status, a.body)
	}
	prompt := filepath.Join(e.dir, "registry", "prompts", "domain-06-security.md")
	if err := os.WriteFile(prompt, []byte("# security, reviewed again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := e.cli("lock"); code != 0 {
		t.Fatalf("lock: %d %s", code, out)
	}
	head = e.head(s)
	s.cmd.Process.Signal(sighup)
	waitFor(t, "a lock snapshot after SIGHUP", func() bool { return e.head(s) == head+1 })
	a = e.do(s, "GET", "/v1/entries/"+itoaU(head+1), "reader", nil)
	if !strings.Contains(string(a.body), `"what":"lock"`) || !strings.Contains(string(a.body), `"submitter":"test-operator"`) {
		t.Fatalf("entry after SIGHUP: %s", a.body)
	}
	good, _ := os.ReadFile(e.tokens)
	os.WriteFile(e.tokens, []byte(`{"tokens_version": 1, "tokens": [}`), 0o600)
	wantProblem(t, "reload with a broken tokens file", e.do(s, "POST", "/v1/reload", "op", nil), 422, server.CodeInvalidParameters)
	os.WriteFile(e.tokens, good, 0o600)

	// Authentication and scopes, each a problem.
	wantProblem(t, "no token", e.do(s, "GET", "/v1/entries", "", nil), 401, server.CodeUnauthenticated)
	wantProblem(t, "bad token", e.do(s, "GET", "/v1/entries", "", nil, "Authorization: Bearer glt_nope"), 401, server.CodeUnauthenticated)
	wantProblem(t, "expired token", e.do(s, "GET", "/v1/entries", "expired", nil), 401, server.CodeUnauthenticated)
	wantProblem(t, "reader writes", W("reader", doc01, ""), 403, server.CodeForbiddenScope)
	wantProblem(t, "writer reads", e.do(s, "GET", "/v1/entries", "writer", nil), 403, server.CodeForbiddenScope)
	wantProblem(t, "unknown format", W("writer", doc01, "?format=nope/9"), 400, server.CodeBadRequest)

	// OpenAPI, health, metrics.
	var doc map[string]any
	if err := json.Unmarshal(e.do(s, "GET", "/openapi.json", "", nil).body, &doc); err != nil || !strings.HasPrefix(doc["openapi"].(string), "3.1") {
		t.Fatalf("openapi.json: %v", err)
	}
	if a := e.do(s, "GET", "/ui/login", "", nil); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") ||
		a.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("the viewer under /ui/: %d %v", a.status, a.header)
	}
	if a := e.do(s, "GET", "/readyz", "", nil); a.status != 200 {
		t.Fatalf("readyz: %d %s", a.status, a.body)
	}
	metrics := string(e.do(s, "GET", "/metrics", "", nil).body)
	for _, m := range []string{`govledger_appends_total{decision="accepted"}`, `govledger_append_reasons_total{code="HASH_MISMATCH"} 1`,
		"govledger_commit_batch_entries_count", "govledger_commit_fsync_seconds_bucket", "govledger_commit_queue_depth 0",
		`govledger_http_requests_total{route="POST /v1/handoffs",status="201"}`, "process_resident_memory_bytes"} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics lacks %s", m)
		}
	}

	// Graceful stop, then the CLI: verify passes and export is byte-identical.
	if code := s.stop(); code != 0 {
		b, _ := os.ReadFile(s.log)
		t.Fatalf("SIGTERM: exit %d\n%s", code, b)
	}
	if s.logLine("stopped: requests drained, ledger closed") == nil {
		t.Fatal("no \"stopped\" log line")
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify after serve: exit %d\n%s", code, out)
	}
	cliExport := filepath.Join(e.dir, "cli.jsonl")
	if out, code := e.cli("export", "--out", cliExport); code != 0 {
		t.Fatalf("export: %d %s", code, out)
	}
	want, _ := os.ReadFile(cliExport)
	// The HTTP export was taken before the redaction of seq01's payload:
	// every other line must be byte-identical, and that one differs only
	// by its payload_b64.
	cliLines, httpLines := bytes.Split(want, []byte("\n")), bytes.Split(export.body, []byte("\n"))
	for i := range int(newSeq) {
		switch {
		case uint64(i+1) == seq01:
			if bytes.Contains(cliLines[i], []byte("payload_b64")) || !bytes.Contains(httpLines[i], []byte("payload_b64")) {
				t.Fatalf("export line %d: the redacted payload is in the CLI export, or missing before the redaction", i+1)
			}
		case !bytes.Equal(cliLines[i], httpLines[i]):
			t.Fatalf("export line %d differs:\nHTTP %s\nCLI  %s", i+1, httpLines[i], cliLines[i])
		}
	}
}

// TestServeSkills submits swarm/2 and skill/1 documents to a server on a
// skills registry, with their folder rules checked under --root.
func TestServeSkills(t *testing.T) {
	e := newServeEnv(t, "skills")
	s := e.start()
	now := time.Now().UTC()
	for _, c := range []struct{ doc, format string }{{"11-swarm-to-litpm.yaml", "swarm/2"}, {"12-researcher-to-synthesizer.yaml", "skill/1"}} {
		a := e.do(s, "POST", "/v1/handoffs", "writer", demo.Retime(demoDoc(t, c.doc), now, "wf-skills"))
		if m := a.json(t); a.status != 201 || m["format"] != c.format || m["decision"] != "accepted" {
			t.Fatalf("%s: %d %s", c.doc, a.status, a.body)
		}
	}
	a := e.do(s, "GET", "/v1/workflows/wf-skills", "reader", nil)
	var wf struct {
		WorkflowID string             `json:"workflow_id"`
		Entries    []server.EntryView `json:"entries"`
	}
	if err := json.Unmarshal(a.body, &wf); err != nil || len(wf.Entries) != 2 || wf.Entries[0].Seq >= wf.Entries[1].Seq {
		t.Fatalf("workflow trace: %d %s", a.status, a.body)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}
}

// TestServeExampleClients runs the Python and TypeScript example clients'
// live checks against a real "govledger serve". A missing python3 or node
// skips, or fails when CI is set: the examples are part of what ships.
func TestServeExampleClients(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start()
	for _, c := range []struct{ name, bin, pkg, script string }{
		{"python", "python3", "python3", "examples/python/live_check.py"},
		{"typescript", "node", "nodejs", "examples/typescript/live-check.mjs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := testenv.LookPath(t, "apt-get install "+c.pkg, c.bin)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, filepath.Join(moduleRoot(t), c.script), s.url, e.tok["product"], filepath.Join(e.dir, "handoffs"))
			out, err := cmd.CombinedOutput()
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("%s %s: %v", c.bin, c.script, err)
			}
		})
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}
}

// openEvents opens GET /v1/events after seq and returns a function reading
// the next entry event (id and data) within 10s, and a stop function.
func openEvents(t *testing.T, e *serveEnv, s *liveServer, after uint64) (func() (string, string), func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.tok["reader"])
	req.Header.Set("Last-Event-ID", itoaU(after))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events: %v %v", err, resp)
	}
	type ev struct{ id, data string }
	ch := make(chan ev, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var cur ev
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			case line == "" && cur.id != "":
				ch <- cur
				cur = ev{}
			}
		}
	}()
	next := func() (string, string) {
		select {
		case x, ok := <-ch:
			if !ok {
				t.Fatal("event stream ended")
			}
			return x.id, x.data
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return "", ""
	}
	return next, func() { cancel(); resp.Body.Close() }
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func readVerifier(t *testing.T, keyFile string) note.Verifier {
	t.Helper()
	b, err := os.ReadFile(strings.TrimSuffix(keyFile, ".key") + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hash1(t *testing.T, s string) tlog.Hash {
	t.Helper()
	var h tlog.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		t.Fatalf("hash %q: %v", s, err)
	}
	copy(h[:], b)
	return h
}

func hashes(t *testing.T, ss []string) []tlog.Hash {
	t.Helper()
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		out[i] = hash1(t, s)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compactJSON puts a JSON document on one line (an NDJSON line).
func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, v)
}

// TestServeRefusesToStart: a missing tokens file or an invalid manifest is
// exit 2, a ledger another server holds is exit 3, and nothing listens.
func TestServeRefusesToStart(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start()
	for _, c := range []struct {
		what string
		args []string
		code int
		msg  string
	}{
		{"no tokens file", []string{"--tokens", filepath.Join(e.dir, "missing.json")}, 2, "does not exist: run 'govledger token create' first"},
		{"invalid manifest", []string{"--manifest", filepath.Join(e.dir, "registry-lock.json")}, 2, "manifest"},
		{"ledger held by the running server", nil, 3, "is held by govledger serve (pid "},
		{"--tls-key without --tls-cert", []string{"--tls-key", "x.key"}, 2, "--tls-cert and --tls-key go together"},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--tokens", e.tokens}, c.args...)
		out, code := e.cli(args...)
		if code != c.code || !strings.Contains(out, c.msg) || strings.Contains(out, `"listening"`) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", c.what, code, c.code, c.msg, out)
		}
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
}

func decodeView(t *testing.T, body []byte) server.EntryView {
	t.Helper()
	var v server.EntryView
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("entry: %v %s", err, body)
	}
	return v
}
