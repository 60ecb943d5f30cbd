package server_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/server"
)

func TestBatch(t *testing.T) {
	h := start(t, nil)
	env := func(doc, extra string) string {
		b, _ := json.Marshal(doc)
		return `{"document":` + string(b) + extra + `}`
	}
	body := strings.Join([]string{
		docAB, // 1: raw line, accepted
		"",    // 2: blank, skipped
		env("## from a", `,"from":"agent-a","to":"agent-b","idempotency_key":"b-1"`), // 3: envelope
		`{"document":7}`, // 4: malformed envelope
		docBA,            // 5: another source: 403 from the backend
		env("## from b", `,"from":"agent-b","to":"agent-a"`), // 6: refused before the backend
		"\xff\xfe",                    // 7: invalid UTF-8
		docUnknown,                    // 8: rejected, recorded
		env("x", `,"from":"Agent A"`), // 9: malformed agent id
	}, "\n") + "\n"
	r := h.do(req{method: "POST", path: "/v1/handoffs:batch", as: pWriterA, body: body, ctype: "application/x-ndjson"})
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("batch: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	type line struct {
		Line     int    `json:"line"`
		Status   int    `json:"status"`
		Seq      uint64 `json:"seq"`
		Decision string `json:"decision"`
		Code     string `json:"code"`
		Written  string `json:"written"`
		Detail   string `json:"detail"`
	}
	var got []line
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		got = append(got, decode[line](t, sc.Bytes()))
	}
	want := []line{
		{Line: 1, Status: 201, Seq: 1, Decision: "accepted"},
		{Line: 3, Status: 201, Seq: 2, Decision: "accepted"},
		{Line: 4, Status: 400, Code: server.CodeBadRequest, Written: "no"},
		{Line: 5, Status: 403, Code: server.CodeForbiddenSource, Written: "no"},
		{Line: 6, Status: 403, Code: server.CodeForbiddenSource, Written: "no"},
		{Line: 7, Status: 400, Code: server.CodeBadRequest, Written: "no"},
		{Line: 8, Status: 201, Seq: 3, Decision: "rejected"},
		{Line: 9, Status: 400, Code: server.CodeBadRequest, Written: "no"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d answer lines, want %d:\n%s", len(got), len(want), r.body)
	}
	for i := range want {
		g := got[i]
		g.Detail = ""
		if g != want[i] {
			t.Errorf("answer line %d = %+v, want %+v", i+1, got[i], want[i])
		}
		if got[i].Code != "" && !strings.Contains(got[i].Detail, fmt.Sprintf("line %d", want[i].Line)) {
			t.Errorf("answer line %d: detail %q names no input line", i+1, got[i].Detail)
		}
	}
	if g := h.fake.groups; len(g) != 1 || g[0] != 3 {
		t.Errorf("commit groups %v, want one group of 3", g)
	}
	// The envelope's idempotency key works across batches.
	r = h.do(req{method: "POST", path: "/v1/handoffs:batch", as: pWriterA, ctype: "application/x-ndjson",
		body: env("## from a", `,"from":"agent-a","to":"agent-b","idempotency_key":"b-1"`)})
	if l := decode[server.SubmitResult](t, r.body); r.status != 200 || l.Seq != 2 || !l.Replayed {
		t.Fatalf("batch retry: %d %s", r.status, r.body)
	}
	// Whole-batch refusals.
	for _, c := range []struct {
		name, body string
		headers    map[string]string
		status     int
	}{
		{"empty", "\n\n", nil, 400},
		{"too many", strings.Repeat(docAB+"\n", 51), nil, 413},
		{"too big", strings.Repeat("x", 1<<20+1), nil, 413},
		{"idempotency header", docAB, map[string]string{"Idempotency-Key": "k"}, 400},
	} {
		n := h.fake.count()
		r := h.do(req{method: "POST", path: "/v1/handoffs:batch", as: pWriterA, ctype: "application/x-ndjson", body: c.body, headers: c.headers})
		if p := h.problem(r); r.status != c.status || p.Written != "no" || h.fake.count() != n {
			t.Errorf("%s: %d %+v, %d entries written", c.name, r.status, p, h.fake.count()-n)
		}
	}
}

func TestReads(t *testing.T) {
	h := start(t, nil)
	docs := []string{docAB, docBA, docUnknown, `{"source_agent":"agent-a","target_agent":"agent-b","workflow_id":"wf-2"}`, "## plain"}
	for _, d := range docs {
		r := h.do(req{method: "POST", path: "/v1/handoffs?from=agent-c&to=agent-a", as: pAll, body: d})
		if r.status != 201 {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
	}
	// Paging, newest first, with a cursor.
	var seqs []uint64
	next := ""
	for i := 0; i < 10; i++ {
		r := h.do(req{method: "GET", path: "/v1/entries?limit=2" + next, as: pReader})
		page := decode[server.Page](t, r.body)
		if r.status != 200 || len(page.Entries) == 0 {
			t.Fatalf("page %d: %d %s", i, r.status, r.body)
		}
		for _, e := range page.Entries {
			seqs = append(seqs, e.Seq)
		}
		if page.Next == 0 {
			break
		}
		next = fmt.Sprintf("&before=%d", page.Next)
	}
	if fmt.Sprint(seqs) != "[5 4 3 2 1]" {
		t.Fatalf("paged seqs %v, want [5 4 3 2 1]", seqs)
	}
	for _, c := range []struct {
		query string
		want  string
	}{
		{"decision=rejected", "[3]"},
		{"agent=agent-b", "[4 2 1]"},
		{"code=UNKNOWN_AGENT", "[3]"},
		{"workflow=wf-1", "[2 1]"},
		{"format=vbw/1", "[5]"},
		{"kind=handoff&limit=1", "[5]"},
		{"since=2026-11-24T10:00:03Z&until=2026-11-24T10:00:05Z", "[4 3]"},
	} {
		page := decode[server.Page](t, h.do(req{method: "GET", path: "/v1/entries?" + c.query, as: pReader}).body)
		var got []uint64
		for _, e := range page.Entries {
			got = append(got, e.Seq)
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("entries?%s = %v, want %s", c.query, got, c.want)
		}
	}
	// One entry: its canonical bytes pass through unchanged.
	r := h.do(req{method: "GET", path: "/v1/entries/1", as: pReader})
	v := decode[server.EntryView](t, r.body)
	h.fake.mu.Lock()
	want := h.fake.entries[0].view
	h.fake.mu.Unlock()
	if r.status != 200 || v.Seq != 1 || v.Hash != want.Hash || !bytes.Contains(r.body, want.Entry) {
		t.Fatalf("entry 1: %d %s", r.status, r.body)
	}
	// Payload: the exact bytes, never rendered.
	r = h.do(req{method: "GET", path: "/v1/entries/5/payload", as: pPayload})
	if r.status != 200 || string(r.body) != "## plain" || r.header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment") || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("payload: %d %q %v", r.status, r.body, r.header)
	}
	// Proof, workflow, blocks, checkpoint, consistency.
	// An old size is answered against the latest checkpoint (5), with the
	// consistency proof from the old size; none without tree_size.
	if pf := decode[server.Proof](t, h.do(req{method: "GET", path: "/v1/entries/2/proof?tree_size=4", as: pReader}).body); pf.Seq != 2 || pf.TreeSize != 5 || pf.Hashes == nil ||
		!strings.Contains(pf.Checkpoint, "\n5\n") || pf.Consistency == nil || pf.Consistency.From != 4 || pf.Consistency.To != 5 || pf.Consistency.Hashes == nil {
		t.Errorf("proof at tree_size=4 = %+v %+v", pf, pf.Consistency)
	}
	if pf := decode[server.Proof](t, h.do(req{method: "GET", path: "/v1/entries/2/proof", as: pReader}).body); pf.TreeSize != 5 || pf.Consistency != nil {
		t.Errorf("proof = %+v", pf)
	}
	type wf struct {
		WorkflowID string             `json:"workflow_id"`
		Entries    []server.EntryView `json:"entries"`
	}
	if w := decode[wf](t, h.do(req{method: "GET", path: "/v1/workflows/wf-1", as: pReader}).body); w.WorkflowID != "wf-1" || len(w.Entries) != 2 || w.Entries[0].Seq != 1 {
		t.Errorf("workflow = %+v", w)
	}
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 || string(r.body) != "{\"blocks\":[]}\n" {
		t.Errorf("blocks = %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "GET", path: "/v1/checkpoint", as: pReader}); r.status != 200 || !strings.HasPrefix(string(r.body), "example.com/ledger\n5\n") ||
		r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("checkpoint = %d %q", r.status, r.body)
	}
	if r := h.do(req{method: "GET", path: "/v1/consistency?from=2&to=5", as: pReader}); r.status != 200 || string(r.body) != "{\"from\":2,\"to\":5,\"hashes\":[]}\n" {
		t.Errorf("consistency = %d %s", r.status, r.body)
	}
	// Export: JSON Lines after a seq, each line's payload the stored bytes.
	r = h.do(req{method: "GET", path: "/v1/export?after=3", as: pExporter})
	lines := strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n")
	if r.status != 200 || r.header.Get("Content-Type") != "application/jsonl" || len(lines) != 2 {
		t.Fatalf("export: %d %q", r.status, r.body)
	}
	var last struct {
		Entry   jsontext.Value `json:"entry"`
		Hash    string         `json:"hash"`
		Payload string         `json:"payload_b64"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &last); err != nil {
		t.Fatal(err)
	}
	if p, _ := base64.StdEncoding.DecodeString(last.Payload); string(p) != "## plain" {
		t.Errorf("export's last payload %q", p)
	}
	if r := h.do(req{method: "GET", path: "/v1/export", as: pReader}); r.status != http.StatusForbidden {
		t.Errorf("export without payload:read: %d, want 403", r.status)
	}
}

func TestOperator(t *testing.T) {
	h := start(t, nil)
	r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("bad_hash")})
	if res := decode[server.SubmitResult](t, r.body); r.status != 201 || res.Decision != "rejected" {
		t.Fatalf("bad hash: %d %s", r.status, r.body)
	}
	type blocks struct {
		Blocks []server.Block `json:"blocks"`
	}
	if b := decode[blocks](t, h.do(req{method: "GET", path: "/v1/blocks", as: pReader}).body); len(b.Blocks) != 1 || b.Blocks[0].Agent != "agent-a" || b.Blocks[0].Since != 1 {
		t.Fatalf("blocks = %+v", b)
	}
	r = h.do(req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: `{"reason":"prompt re-reviewed"}`, ctype: "application/json; charset=utf-8"})
	v := decode[server.EntryView](t, r.body)
	if r.status != 201 || v.Seq != 2 || r.header.Get("Location") != "/v1/entries/2" {
		t.Fatalf("unblock: %d %s", r.status, r.body)
	}
	if e := h.fake.entry(2); e["submitter"] != pOperator || e["reason"] != "prompt re-reviewed" || e["agent"] != "agent-a" {
		t.Errorf("unblock entry = %v", e)
	}
	if b := decode[blocks](t, h.do(req{method: "GET", path: "/v1/blocks", as: pReader}).body); len(b.Blocks) != 0 {
		t.Fatalf("blocks after unblock = %+v", b)
	}
	r = h.do(req{method: "POST", path: "/v1/entries/1:redact", as: pOperator, body: `{"reason":"contains a secret"}`, ctype: "application/json"})
	if v := decode[server.EntryView](t, r.body); r.status != 201 || v.Seq != 3 {
		t.Fatalf("redact: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "GET", path: "/v1/entries/1/payload", as: pPayload}); r.status != http.StatusGone {
		t.Fatalf("payload after redact: %d", r.status)
	}
	for _, body := range []string{"", "{}"} {
		r = h.do(req{method: "POST", path: "/v1/reload", as: pOperator, body: body, ctype: "application/json"})
		type reload struct {
			Entries []server.EntryView `json:"entries"`
		}
		if rl := decode[reload](t, r.body); r.status != 200 || len(rl.Entries) != 1 {
			t.Fatalf("reload with %q: %d %s", body, r.status, r.body)
		}
	}
	// A body that is not JSON is the other operator routes' 415, not 400.
	if r := h.do(req{method: "POST", path: "/v1/reload", as: pOperator, body: "reload please", ctype: "text/plain"}); r.status != 415 {
		t.Errorf("reload with a text/plain body: %d %s, want 415", r.status, r.body)
	}
	if r := h.do(req{method: "POST", path: "/v1/reload", as: pOperator, body: `{"force":true}`, ctype: "application/json"}); r.status != 400 {
		t.Fatalf("reload with a parameter: %d", r.status)
	}
}

// TestProofCheckpointServed: a proof is against the checkpoint readers
// are served: the cosigned one (TilesConfig.Checkpoint) when it covers the
// entry and the size asked for, else the backend's of its head; never
// one of the size asked for.
func TestProofCheckpointServed(t *testing.T) {
	cosigned := "example.com/ledger\n3\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) +
		"\n\n— example.com/ledger AAAAAAAAAAAA\n— witness.example BBBBBBBBBBBB\n"
	h := startTiles(t, server.TilesConfig{Checkpoint: func() []byte { return []byte(cosigned) }})
	for range 5 {
		if r := h.do(req{method: "POST", path: "/v1/handoffs?from=agent-c&to=agent-a", as: pAll, body: docAB}); r.status != 201 {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
	}
	for _, c := range []struct {
		path     string
		size     uint64
		cosigned bool
		consFrom uint64
	}{
		{"/v1/entries/2/proof", 3, true, 0},
		{"/v1/entries/2/proof?tree_size=2", 3, true, 2},
		{"/v1/entries/3/proof?tree_size=3", 3, true, 3},
		{"/v1/entries/5/proof", 5, false, 0},             // past the cosigned checkpoint
		{"/v1/entries/2/proof?tree_size=4", 5, false, 4}, // a size past it too
	} {
		r := h.do(req{method: "GET", path: c.path, as: pReader})
		pf := decode[server.Proof](t, r.body)
		if r.status != 200 || pf.TreeSize != c.size || strings.Contains(pf.Checkpoint, "witness.example") != c.cosigned ||
			!strings.HasPrefix(pf.Checkpoint, fmt.Sprintf("example.com/ledger\n%d\n", c.size)) {
			t.Errorf("%s: %d, tree size %d, checkpoint %q; want size %d, cosigned %v", c.path, r.status, pf.TreeSize, pf.Checkpoint, c.size, c.cosigned)
		}
		if (pf.Consistency != nil) != (c.consFrom != 0) || pf.Consistency != nil && (pf.Consistency.From != c.consFrom || pf.Consistency.To != c.size) {
			t.Errorf("%s: consistency %+v, want from %d to %d", c.path, pf.Consistency, c.consFrom, c.size)
		}
	}
	if r := h.do(req{method: "GET", path: "/v1/entries/9/proof", as: pReader}); r.status != 404 {
		t.Errorf("proof of an entry past the head: %d %s, want 404", r.status, r.body)
	}
}
