package ledgerbackend_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/client"
)

// contract is a real server over a real ledger on loopback, with tokens
// for the demo's source (domain-05-product) and target
// (domain-02-analysis), and a reader.
type contract struct {
	t      *testing.T
	url    string
	tokens map[string]string
	l      *ledger.Ledger
}

func startContract(t *testing.T) *contract {
	t.Helper()
	b, l := newBackend(t, 0)
	f := &server.TokensFile{Version: server.TokensVersion}
	c := &contract{t: t, tokens: map[string]string{}, l: l}
	for _, e := range []server.TokenEntry{
		{Name: "source", Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"domain-05-product", "domain-03-technical"}},
		{Name: "target", Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"domain-02-analysis"}},
		{Name: "reader", Scopes: []server.Scope{server.ScopeLedgerRead}},
		{Name: "any", Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}},
	} {
		tok, hash, err := server.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, e.Created = hash, time.Now().Add(-time.Hour)
		if err := f.Add(e); err != nil {
			t.Fatal(err)
		}
		c.tokens[e.Name] = tok
	}
	srv, err := server.New(server.Config{Backend: b, Tokens: server.NewTokenStore(f, nil),
		MaxBody: 64 << 10, MaxBatchBody: 1 << 20, MaxBatchItems: 50, ShutdownTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

// do sends a request as principal as and returns the status and the
// decoded JSON body.
func (c *contract) do(method, path, as, ctype, body string, headers ...string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.tokens[as])
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/x-ndjson") {
		raw, _, _ = bytes.Cut(raw, []byte("\n"))
	}
	if len(raw) > 0 && json.Unmarshal(raw, &m) != nil {
		c.t.Fatalf("%s %s: %d %s: not JSON", method, path, res.StatusCode, raw)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") && m["written"] != "no" && m["written"] != nil {
		c.t.Errorf("%s %s: problem says written %v", method, path, m["written"])
	}
	return res.StatusCode, m
}

func (c *contract) head() uint64 {
	c.t.Helper()
	seq, _, err := c.l.Head(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return seq
}

// governed returns the demo's accepted governed/1 handoff with handoff_id id.
func governed(t *testing.T, n int) string {
	t.Helper()
	b, err := demo.Document("01-product-to-analysis.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), "550e8400-e29b-41d4-a716-446655440000", fmt.Sprintf("550e8400-e29b-41d4-a716-%012d", n), 1)
}

// TestWorkflowContract: the workflow id a request names reaches governed/1
// (which carries none) through Govledger-Workflow, a batch line's
// "workflow" or the traceparent's trace-id; a header contradicting the
// document's own is 422 with nothing written.
func TestWorkflowContract(t *testing.T) {
	c := startContract(t)
	st, m := c.do("POST", "/v1/handoffs", "source", "", governed(t, 1), "Govledger-Workflow", "run-1")
	if st != 201 || m["workflow_id"] != "run-1" || m["decision"] != "accepted" {
		t.Errorf("governed/1 with Govledger-Workflow: %d %v", st, m)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	st, m = c.do("POST", "/v1/handoffs", "source", "", governed(t, 2), "traceparent", tp)
	if st != 201 || m["workflow_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("governed/1 with a traceparent only: %d %v, want the trace-id", st, m)
	}
	st, m = c.do("POST", "/v1/handoffs", "source", "", governed(t, 3), "traceparent", tp, "Govledger-Workflow", "run-3")
	if st != 201 || m["workflow_id"] != "run-3" {
		t.Errorf("header and traceparent: %d %v, want the header's", st, m)
	}
	st, m = c.do("POST", "/v1/handoffs", "source", "", governed(t, 4))
	if st != 201 || m["workflow_id"] != nil {
		t.Errorf("no workflow: %d %v, want none", st, m)
	}
	line, _ := json.Marshal(map[string]string{"document": governed(t, 5), "workflow": "run-5"})
	st, m = c.do("POST", "/v1/handoffs:batch", "source", "application/x-ndjson", string(line)+"\n", "Govledger-Workflow", "run-default")
	if st != 200 || m["workflow_id"] != "run-5" {
		t.Errorf("batch line with workflow: %d %v", st, m)
	}
	line, _ = json.Marshal(map[string]string{"document": governed(t, 6)})
	st, m = c.do("POST", "/v1/handoffs:batch", "source", "application/x-ndjson", string(line)+"\n", "Govledger-Workflow", "run-default")
	if st != 200 || m["workflow_id"] != "run-default" {
		t.Errorf("batch line without workflow: %d %v, want the header's", st, m)
	}

	// task/1 names its own workflow ("014").
	task, err := demo.Document("10-task-handoff.md")
	if err != nil {
		t.Fatal(err)
	}
	q := "/v1/handoffs?from=domain-03-technical&to=domain-02-analysis"
	head := c.head()
	st, m = c.do("POST", q, "source", "", string(task), "Govledger-Workflow", "other")
	if st != 422 || !strings.Contains(fmt.Sprint(m["detail"]), "014") {
		t.Errorf("task/1 (workflow 014) with Govledger-Workflow other: %d %v, want 422", st, m)
	}
	st, _ = c.do("POST", "/v1/validate?from=domain-03-technical&to=domain-02-analysis", "source", "", string(task), "Govledger-Workflow", "other")
	if st != 422 {
		t.Errorf("validate with a contradicting header: %d, want 422", st)
	}
	line, _ = json.Marshal(map[string]string{"document": string(task), "workflow": "other", "from": "domain-03-technical", "to": "domain-02-analysis"})
	if st, m = c.do("POST", "/v1/handoffs:batch", "source", "application/x-ndjson", string(line)+"\n"); m["status"] != float64(422) {
		t.Errorf("batch line contradicting its document: %d %v, want a 422 line", st, m)
	}
	if h := c.head(); h != head {
		t.Errorf("refused workflows wrote entries: head %d -> %d", head, h)
	}
	st, m = c.do("POST", q, "source", "", string(task), "Govledger-Workflow", "014")
	if st != 201 || m["workflow_id"] != "014" {
		t.Errorf("task/1 with its own workflow as header: %d %v", st, m)
	}
	for _, bad := range []string{"a\u0085b", strings.Repeat("w", 257), "\xff"} {
		if st, _ := c.do("POST", "/v1/handoffs", "source", "", governed(t, 9), "Govledger-Workflow", bad); st != 400 {
			t.Errorf("Govledger-Workflow %q: %d, want 400", bad, st)
		}
	}
}

// TestOutcomeContract: POST /v1/outcomes as the contract states it.
func TestOutcomeContract(t *testing.T) {
	c := startContract(t)
	st, m := c.do("POST", "/v1/handoffs", "source", "", governed(t, 1), "Govledger-Workflow", "run-1")
	if st != 201 || m["decision"] != "accepted" {
		t.Fatalf("handoff: %d %v", st, m)
	}
	dec := uint64(m["seq"].(float64))
	rogue, err := demo.Document("07-rogue-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	_, m = c.do("POST", "/v1/handoffs", "any", "", string(rogue))
	if m["decision"] != "rejected" {
		t.Fatalf("fixture 07: %v", m)
	}
	rejected := uint64(m["seq"].(float64))

	body := fmt.Sprintf(`{"decision_seq":%d,"status":"succeeded","output_sha256":"%s","duration_ms":1234}`, dec, strings.Repeat("ab", 32))
	head := c.head()
	if st, m = c.do("POST", "/v1/outcomes", "source", "application/json", body); st != 403 {
		t.Errorf("outcome by the source's token: %d %v, want 403 (handoff:write of the target)", st, m)
	}
	st, m = c.do("POST", "/v1/outcomes", "target", "application/json", body, "Idempotency-Key", "k1")
	want := map[string]any{"seq": float64(head + 1), "kind": "outcome", "decision_seq": float64(dec), "workflow_id": "run-1",
		"agent": "domain-02-analysis", "status": "succeeded"}
	if st != 201 || fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("outcome: %d %v, want 201 %v", st, m, want)
	}
	if st, m2 := c.do("POST", "/v1/outcomes", "target", "application/json", body, "Idempotency-Key", "k1"); st != 200 || fmt.Sprint(m2) != fmt.Sprint(want) {
		t.Errorf("the same key and body again: %d %v, want 200 and the first answer", st, m2)
	}
	other := strings.Replace(body, "succeeded", "failed", 1)
	if st, m = c.do("POST", "/v1/outcomes", "target", "application/json", other, "Idempotency-Key", "k1"); st != 409 {
		t.Errorf("the same key, another body: %d %v, want 409", st, m)
	}
	for name, b := range map[string]string{
		"second outcome":    other,
		"rejected decision": fmt.Sprintf(`{"decision_seq":%d,"status":"failed"}`, rejected),
		"missing decision":  `{"decision_seq":999,"status":"failed"}`,
		"snapshot":          `{"decision_seq":1,"status":"failed"}`,
		"bad status":        fmt.Sprintf(`{"decision_seq":%d,"status":"done"}`, dec),
		"negative duration": fmt.Sprintf(`{"decision_seq":%d,"status":"failed","duration_ms":-1}`, dec),
		"bad digest":        fmt.Sprintf(`{"decision_seq":%d,"status":"failed","output_sha256":"AB"}`, dec),
		"no decision_seq":   `{"status":"failed"}`,
	} {
		h := c.head()
		if st, m = c.do("POST", "/v1/outcomes", "target", "application/json", b); st != 422 {
			t.Errorf("%s: %d %v, want 422", name, st, m)
		}
		if c.head() != h {
			t.Errorf("%s: written", name)
		}
	}
	if st, _ = c.do("POST", "/v1/outcomes", "target", "application/json", `{"decision_seq":2,"status":"failed","x":1}`); st != 400 {
		t.Errorf("unknown member: %d, want 400", st)
	}
	if st, _ = c.do("POST", "/v1/outcomes", "target", "text/plain", body); st != 415 {
		t.Errorf("text/plain: %d, want 415", st)
	}

	// The workflow lists the decision and its outcome in seq order.
	st, m = c.do("GET", "/v1/workflows/run-1", "reader", "", "")
	es, _ := m["entries"].([]any)
	if st != 200 || len(es) != 2 {
		t.Fatalf("GET /v1/workflows/run-1: %d %v, want the decision and its outcome", st, m)
	}
	first, second := es[0].(map[string]any)["entry"].(map[string]any), es[1].(map[string]any)["entry"].(map[string]any)
	if first["kind"] != "handoff" || second["kind"] != "outcome" || second["decision_seq"] != float64(dec) || second["status"] != "succeeded" {
		t.Errorf("workflow entries: %v then %v", first, second)
	}
}

// TestOutcomeContractRace: eight outcomes of one decision sent at once:
// one is recorded (201), the others are refused (422).
func TestOutcomeContractRace(t *testing.T) {
	c := startContract(t)
	_, m := c.do("POST", "/v1/handoffs", "source", "", governed(t, 1))
	dec := uint64(m["seq"].(float64))
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := map[int]int{}
	for i := range 8 {
		wg.Go(func() {
			st, _ := c.do("POST", "/v1/outcomes", "target", "application/json", fmt.Sprintf(`{"decision_seq":%d,"status":"succeeded","duration_ms":%d}`, dec, i))
			mu.Lock()
			count[st]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if count[201] != 1 || count[422] != 7 {
		t.Errorf("statuses %v, want one 201 and seven 422", count)
	}
	if h := c.head(); h != dec+1 {
		t.Errorf("head %d, want %d: one outcome", h, dec+1)
	}
}

// TestClientOutcome: the Go client's Submit with Workflow and Outcome,
// against the real server.
func TestClientOutcome(t *testing.T) {
	c := startContract(t)
	ctx := context.Background()
	src, _ := client.New(c.url, c.tokens["source"], nil)
	tgt, _ := client.New(c.url, c.tokens["target"], nil)
	res, err := src.Submit(ctx, []byte(governed(t, 1)), client.SubmitOptions{Workflow: "run-c"})
	if err != nil || res.WorkflowID != "run-c" {
		t.Fatalf("Submit with Workflow: %+v %v", res, err)
	}
	dur := int64(5)
	o := server.OutcomeRequest{DecisionSeq: res.Seq, Status: "failed", DurationMS: &dur}
	out, err := tgt.Outcome(ctx, o, client.OutcomeOptions{IdempotencyKey: "k"})
	if err != nil || out.Replayed || out.Agent != "domain-02-analysis" || out.WorkflowID == nil || *out.WorkflowID != "run-c" || out.Status != "failed" {
		t.Fatalf("Outcome: %+v %v", out, err)
	}
	again, err := tgt.Outcome(ctx, o, client.OutcomeOptions{IdempotencyKey: "k"})
	if err != nil || !again.Replayed || again.Seq != out.Seq {
		t.Errorf("Outcome again: %+v %v, want the first answer replayed", again, err)
	}
	var pe *client.ProblemError
	if _, err := tgt.Outcome(ctx, o, client.OutcomeOptions{}); !errors.As(err, &pe) || pe.Status() != 422 {
		t.Errorf("a second outcome: %v, want a 422 problem", err)
	}
}
