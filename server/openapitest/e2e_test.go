package openapitest_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ledgerbackend"
)

// e2e is a real server over a real ledger: a bbolt file, the ledger
// backend deciding with the demo registry, checkpoints signed, bearer
// tokens and mutual TLS on loopback.
type e2e struct {
	t       *testing.T
	base    string
	bearer  *http.Client // TLS without a client certificate
	gateway *http.Client // TLS with the gateway's client certificate (mtls)
	tokens  map[string]string
	v       *apiValidators
	srv     *server.Server
	dir     string           // the demo's files: registry, lock, root
	seen    map[string][]int // "METHOD /path/template" -> statuses answered
}

func startE2E(t *testing.T) *e2e {
	t.Helper()
	dir := t.TempDir()
	if err := demo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Config(dir, "registry"); err != nil {
		t.Fatal(err)
	}
	// The demo's documents are dated just before demo.Epoch.
	clock := func() time.Time { return demo.Epoch }
	l, err := bolt.Open(filepath.Join(dir, "ledger.db"), &bolt.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, l.Origin())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A key_rotation entry (seq 1), so every kind is served.
	if _, err := govern.RotateKey(ctx, l, "", vkey, "first checkpoint key", "operator"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := server.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := demo.Config(dir, "registry")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ledgerbackend.New(l, ledgerbackend.Options{Root: filepath.Join(dir, "root"), Signer: signer, Metrics: m,
		Params: cfg.Params, Now: clock,
		Load: ledgerbackend.LoadFiles(filepath.Join(dir, "registry", "prompt-manifest.json"), filepath.Join(dir, "registry-lock.json"))})
	if err != nil {
		t.Fatal(err)
	}
	f, tokens := testTokens(t)
	store := server.NewTokenStore(f, func() time.Time { return testNow })
	srv, err := server.New(server.Config{Backend: b, Tokens: store, Metrics: m, Now: func() time.Time { return testNow },
		MaxBody: 64 << 10, MaxBatchBody: 1 << 20, MaxBatchItems: 50,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		ShutdownTimeout: 5 * time.Second, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}

	ca := newCA(t, "govledger test CA")
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	tlsClock := func() time.Time { return testNow }
	srvCert := ca.issue(t, "127.0.0.1", testNow.Add(-time.Hour), testNow.Add(time.Hour), true)
	gwCert := ca.issue(t, "gateway.test", testNow.Add(-time.Hour), testNow.Add(time.Hour), false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(sctx, ln, server.TLSConfig(srvCert, pool, tlsClock)) }()
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Time: tlsClock, Certificates: certs}}}
	}
	e := &e2e{t: t, base: "https://" + ln.Addr().String(), bearer: client(), gateway: client(gwCert),
		tokens: tokens, v: newAPIValidators(t), srv: srv, dir: dir, seen: map[string][]int{}}
	t.Cleanup(func() {
		e.bearer.CloseIdleConnections()
		e.gateway.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return 10s after its context ended")
		}
	})
	// The validators' security check: a token grants the scopes of its
	// tokens file entry, unless it has expired.
	byToken := map[string]server.TokenEntry{}
	for _, te := range f.Tokens {
		if tok, ok := tokens[te.Name]; ok && (te.Expires.IsZero() || te.Expires.After(testNow)) {
			byToken["Bearer "+tok] = te
		}
	}
	e.v.grants = func(authorization string, scopes []string) bool {
		te, ok := byToken[authorization]
		if !ok {
			return false
		}
		for _, s := range scopes {
			if !slices.Contains(te.Scopes, server.Scope(s)) {
				return false
			}
		}
		return true
	}
	return e
}

// call is one request of the end-to-end test.
type call struct {
	name    string
	method  string
	path    string
	as      string // principal whose bearer token is sent; "gateway" sends its client certificate
	ctype   string
	header  map[string]string
	body    string
	status  int  // the status the server must answer
	invalid bool // the request breaks the document, and both libraries must say so
	// kinBlind says why kin-openapi cannot see that an invalid request
	// breaks the document (libopenapi-validator must still say so).
	kinBlind string
	// stream reads a long answer until it holds this many events, then
	// closes it.
	stream int
}

// do sends c, checks the status and validates the request and the answer
// with both libraries. It returns the exchange.
func (e *e2e) do(c call) *exchange {
	e.t.Helper()
	ex := &exchange{method: c.method, url: e.base + c.path, header: http.Header{}, body: []byte(c.body)}
	if c.method == "" {
		ex.method = "GET"
	}
	client := e.bearer
	switch c.as {
	case "":
	case pGateway:
		client, ex.tls = e.gateway, true
	default:
		tok, ok := e.tokens[c.as]
		if !ok {
			e.t.Fatalf("%s: no token for %q", c.name, c.as)
		}
		ex.header.Set("Authorization", "Bearer "+tok)
	}
	if c.ctype != "" {
		ex.header.Set("Content-Type", c.ctype)
	}
	for k, v := range c.header {
		ex.header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r := ex.request().WithContext(ctx)
	res, err := client.Do(r)
	if err != nil {
		e.t.Fatalf("%s: %s %s: %v", c.name, ex.method, c.path, err)
	}
	ex.status, ex.resHeader = res.StatusCode, res.Header
	if c.stream > 0 {
		ex.resBody = readEvents(e.t, res.Body, c.stream)
		cancel()
	} else if ex.resBody, err = io.ReadAll(res.Body); err != nil {
		e.t.Fatalf("%s: reading the answer: %v", c.name, err)
	}
	res.Body.Close()
	if ex.status != c.status {
		e.t.Errorf("%s: %s %s answered %d, want %d: %s", c.name, ex.method, c.path, ex.status, c.status, truncate(ex.resBody))
	}
	if ex.status >= 400 && ex.resHeader.Get("Content-Type") != "application/problem+json" {
		e.t.Errorf("%s: %d answered as %q, want application/problem+json", c.name, ex.status, ex.resHeader.Get("Content-Type"))
	}
	e.validate(c, ex)
	return ex
}

func (e *e2e) validate(c call, ex *exchange) {
	e.t.Helper()
	v := e.v.check(ex)
	switch {
	case !c.invalid:
		if v.kinRequest != "" {
			e.t.Errorf("%s: kin-openapi refuses the request %s %s:\n%s", c.name, ex.method, c.path, v.kinRequest)
		}
		if v.libRequest != "" {
			e.t.Errorf("%s: libopenapi-validator refuses the request %s %s:\n%s", c.name, ex.method, c.path, v.libRequest)
		}
	default:
		if v.libRequest == "" {
			e.t.Errorf("%s: libopenapi-validator accepts the request %s %s, which breaks the document", c.name, ex.method, c.path)
		}
		if v.kinRequest == "" && c.kinBlind == "" {
			e.t.Errorf("%s: kin-openapi accepts the request %s %s, which breaks the document", c.name, ex.method, c.path)
		}
	}
	if v.kinResponse != "" {
		e.t.Errorf("%s: kin-openapi refuses the answer %d %s to %s %s:\n%s", c.name, ex.status, truncate(ex.resBody), ex.method, c.path, v.kinResponse)
	}
	if v.libResponse != "" {
		e.t.Errorf("%s: libopenapi-validator refuses the answer %d %s to %s %s:\n%s", c.name, ex.status, truncate(ex.resBody), ex.method, c.path, v.libResponse)
	}
	if route, _, err := e.v.kinRouter.FindRoute(ex.request()); err == nil {
		key := route.Method + " " + route.Path
		e.seen[key] = append(e.seen[key], ex.status)
	}
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// readEvents reads an event stream until it holds n events (blocks that
// end with a blank line, comments aside), or fails the test.
func readEvents(t *testing.T, body io.Reader, n int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 32<<10)
	for {
		events, err := decodeEvents(strings.NewReader(string(got)))
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		if len(events.([]any)) >= n {
			return got
		}
		k, err := body.Read(buf)
		got = append(got, buf[:k]...)
		if err != nil {
			t.Fatalf("event stream ended after %d of %d events: %v\n%s", len(events.([]any)), n, err, got)
		}
	}
}

// TestOpenAPIEndToEnd drives a real server through every route of
// openapi.json with real requests, answered and refused, and validates
// each request and answer against the document with kin-openapi and
// libopenapi-validator (strict): an answer either finds wrong, or a
// request whose validity they misjudge, fails the test.
func TestOpenAPIEndToEnd(t *testing.T) {
	e := startE2E(t)
	doc := func(name string) string {
		b, err := demo.Document(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	seqOf := func(ex *exchange) uint64 {
		var r struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(ex.resBody, &r); err != nil || r.Seq == 0 {
			t.Fatalf("no seq in %s: %v", ex.resBody, err)
		}
		return r.Seq
	}

	// Public routes.
	e.do(call{name: "livez", path: "/livez", status: 200})
	e.do(call{name: "readyz", path: "/readyz", status: 200})
	e.do(call{name: "openapi", path: "/openapi.json", status: 200})
	e.do(call{name: "metrics", path: "/metrics", status: 200})
	e.do(call{name: "metrics as OpenMetrics", path: "/metrics", header: map[string]string{"Accept": "application/openmetrics-text; version=1.0.0"}, status: 200})
	e.do(call{name: "livez with a query", path: "/livez?x=1", status: 200, invalid: true, kinBlind: "undeclared query parameters"})

	// Decide without recording.
	e.do(call{name: "validate", method: "POST", path: "/v1/validate", as: pWriterAn, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 200})
	e.do(call{name: "validate with a key", method: "POST", path: "/v1/validate", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "k"}, body: doc("01-product-to-analysis.json"), status: 400, invalid: true, kinBlind: "undeclared headers"})
	e.do(call{name: "validate unauthenticated", method: "POST", path: "/v1/validate", ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 401, invalid: true})

	// Record, in every format and media type.
	first := e.do(call{name: "governed/1 JSON", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "run-1/step-1", "traceparent": traceparent}, body: doc("01-product-to-analysis.json"), status: 201})
	firstSeq := seqOf(first)
	e.do(call{name: "retry", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "run-1/step-1", "traceparent": traceparent}, body: doc("01-product-to-analysis.json"), status: 201})
	e.do(call{name: "key reused", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "run-1/step-1"}, body: doc("02-thinker-to-technical.json"), status: 409})
	e.do(call{name: "hash mismatch", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json", body: doc("04-research-hash-mismatch.json"), status: 201})
	e.do(call{name: "vbw/1 JSON", method: "POST", path: "/v1/handoffs?from=domain-03-technical&to=domain-02-analysis", as: pWriterAn,
		ctype: "application/json", body: doc("09-qa-result.vbw.json"), status: 201})
	e.do(call{name: "task/1 markdown", method: "POST", path: "/v1/handoffs?from=orchestrator&to=domain-04-content", as: pWriterAn,
		ctype: "text/markdown; charset=utf-8", body: doc("10-task-handoff.md"), status: 201})
	swarm := e.do(call{name: "swarm/2 YAML", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/yaml", body: doc("11-swarm-to-litpm.yaml"), status: 201})
	e.do(call{name: "skill/1 YAML", method: "POST", path: "/v1/handoffs?format=skill/1", as: pWriterAn, ctype: "application/yaml", body: doc("12-researcher-to-synthesizer.yaml"), status: 201})
	garbage := e.do(call{name: "bytes", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/octet-stream", body: doc("08-garbage.bin"), status: 201})
	e.do(call{name: "curl --data-binary", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/x-www-form-urlencoded", body: doc("02-thinker-to-technical.json"), status: 201})
	e.do(call{name: "over mutual TLS", method: "POST", path: "/v1/handoffs?from=agent-a&to=domain-02-analysis", as: pGateway, ctype: "text/markdown", body: "## Status\nstep 1", status: 201})
	e.do(call{name: "no credential", method: "POST", path: "/v1/handoffs", ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 401, invalid: true})
	e.do(call{name: "expired token", method: "POST", path: "/v1/handoffs", as: pExpired, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 401, invalid: true})
	e.do(call{name: "reader writes", method: "POST", path: "/v1/handoffs", as: pReader, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 403, invalid: true})
	e.do(call{name: "another agent's handoff", method: "POST", path: "/v1/handoffs", as: pWriterA, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 403})
	e.do(call{name: "empty body", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json", status: 400, invalid: true})
	e.do(call{name: "malformed traceparent", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"traceparent": "00-xyz"}, body: doc("01-product-to-analysis.json"), status: 400, invalid: true})
	e.do(call{name: "future traceparent version", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"traceparent": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ffff"}, body: doc("01-product-to-analysis.json"), status: 400, invalid: true})
	e.do(call{name: "key with a space", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "a b"}, body: doc("01-product-to-analysis.json"), status: 400, invalid: true})
	e.do(call{name: "malformed format", method: "POST", path: "/v1/handoffs?format=Governed", as: pWriterAn, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 400, invalid: true})
	e.do(call{name: "malformed agent", method: "POST", path: "/v1/handoffs?from=Bad_Agent", as: pWriterAn, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 400, invalid: true})
	e.do(call{name: "unknown parameter", method: "POST", path: "/v1/handoffs?dry=1", as: pWriterAn, ctype: "application/json", body: doc("01-product-to-analysis.json"), status: 400, invalid: true, kinBlind: "undeclared query parameters"})
	big := `{"source_agent":"agent-a","padding":"` + strings.Repeat("x", 64<<10) + `"}`
	e.do(call{name: "body over the limit", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json", body: big, status: 413})
	e.do(call{name: "compressed body", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Content-Encoding": "gzip"}, body: doc("01-product-to-analysis.json"), status: 415, invalid: true, kinBlind: "undeclared headers"})
	e.do(call{name: "multipart", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "multipart/form-data; boundary=x", body: "--x--\r\n", status: 415, invalid: true})

	// Batches.
	env := func(d, from, to, key string) string {
		b, _ := json.Marshal(map[string]string{"document": d, "from": from, "to": to, "idempotency_key": key})
		return string(b)
	}
	oneLine := func(d string) string {
		var v any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	e.do(call{name: "batch", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson", status: 200,
		body: env(doc("09-qa-result.vbw.json"), "domain-03-technical", "domain-02-analysis", "batch-1/1") + "\n\n" +
			oneLine(doc("03-content-to-security.json")) + "\n" + `{"document":"## Status\nstep 2","from":"domain-03-technical","to":"domain-02-analysis"}` + "\n"})
	e.do(call{name: "batch, a line refused", method: "POST", path: "/v1/handoffs:batch", as: pWriterA, ctype: "application/jsonl", status: 200,
		body: env("## Status\nstep 3", "agent-a", "domain-02-analysis", "") + "\n" + env("## Status\nstep 4", "domain-03-technical", "domain-02-analysis", "") + "\n"})
	e.do(call{name: "batch of too many documents", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson", status: 413,
		body: strings.Repeat(env("## Status\nstep", "domain-03-technical", "domain-02-analysis", "")+"\n", 51)})
	e.do(call{name: "batch, a document over the limit", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson", status: 200,
		body: env(strings.Repeat("y", 64<<10+1), "domain-03-technical", "domain-02-analysis", "") + "\n"})
	e.do(call{name: "batch as text", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "text/plain", body: oneLine(doc("01-product-to-analysis.json")), status: 415, invalid: true})
	e.do(call{name: "empty batch", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson", status: 400, invalid: true})
	e.do(call{name: "batch envelope of the wrong type", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson",
		body: `{"document":5}` + "\n", status: 200, invalid: true})
	e.do(call{name: "batch with a key header", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson",
		header: map[string]string{"Idempotency-Key": "k"}, body: oneLine(doc("01-product-to-analysis.json")), status: 400, invalid: true, kinBlind: "undeclared headers"})

	// Workflows: the header names the workflow of a document that carries none.
	e.do(call{name: "workflow header", method: "POST", path: "/v1/handoffs", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Govledger-Workflow": "run-7"}, body: doc("02-thinker-to-technical.json"), status: 201})
	e.do(call{name: "batch, a line's workflow", method: "POST", path: "/v1/handoffs:batch", as: pWriterAn, ctype: "application/x-ndjson", status: 200,
		body: `{"document":"## Status\nstep 5","from":"domain-03-technical","to":"domain-02-analysis","workflow":"run-7"}` + "\n"})

	// Outcomes of an accepted handoff.
	outcome := fmt.Sprintf(`{"decision_seq":%d,"status":"succeeded","output_sha256":"%064x","duration_ms":1500}`, firstSeq, 9)
	e.do(call{name: "outcome", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "run-1/step-1/outcome"}, body: outcome, status: 201})
	e.do(call{name: "outcome retried", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "run-1/step-1/outcome"}, body: outcome, status: 200})
	e.do(call{name: "outcome key reused", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		header: map[string]string{"Idempotency-Key": "run-1/step-1/outcome"}, body: fmt.Sprintf(`{"decision_seq":%d,"status":"failed"}`, firstSeq), status: 409})
	e.do(call{name: "a second outcome", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		body: fmt.Sprintf(`{"decision_seq":%d,"status":"failed"}`, firstSeq), status: 422})
	e.do(call{name: "outcome of no decision", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		body: `{"decision_seq":999999,"status":"failed"}`, status: 422})
	e.do(call{name: "outcome, unknown status", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		body: fmt.Sprintf(`{"decision_seq":%d,"status":"done"}`, firstSeq), status: 422, invalid: true})
	e.do(call{name: "outcome, unknown member", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "application/json",
		body: fmt.Sprintf(`{"decision_seq":%d,"status":"failed","x":1}`, firstSeq), status: 400, invalid: true})
	e.do(call{name: "outcome as text", method: "POST", path: "/v1/outcomes", as: pWriterAn, ctype: "text/plain",
		body: outcome, status: 415, invalid: true})
	e.do(call{name: "outcome unauthenticated", method: "POST", path: "/v1/outcomes", ctype: "application/json",
		body: outcome, status: 401, invalid: true})

	// Reads.
	page := e.do(call{name: "entries", path: "/v1/entries", as: pReader, status: 200})
	var all struct {
		Entries []struct {
			Seq uint64 `json:"seq"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(page.resBody, &all); err != nil || len(all.Entries) < 10 {
		t.Fatalf("entries: %v, %d entries", err, len(all.Entries))
	}
	head := all.Entries[0].Seq
	for _, q := range []string{"kind=handoff", "kind=snapshot", "kind=key_rotation", "decision=rejected&limit=2", "before=5&limit=1",
		"agent=domain-02-analysis", "code=HASH_MISMATCH", "format=governed/1", "workflow=wf-none", "handoff_id=550e8400-e29b-41d4-a716-446655440000",
		"since=2026-01-01T00:00:00Z&until=2027-01-01T00:00:00.5Z"} {
		e.do(call{name: "entries ?" + q, path: "/v1/entries?" + q, as: pReader, status: 200})
	}
	for _, c := range []struct {
		q       string
		status  int
		invalid bool
	}{
		{"limit=0", 422, true}, {"limit=abc", 400, true}, {"limit=1001", 422, true}, {"decision=maybe", 422, true},
		{"kind=bogus", 422, true}, {"since=yesterday", 400, true}, {"before=0", 400, true}, {"code=lower", 400, true},
		{"agent=Bad_Agent", 400, true}, {"since=2026-02-02T00:00:00Z&until=2026-01-01T00:00:00Z", 422, false},
	} {
		e.do(call{name: "entries ?" + c.q, path: "/v1/entries?" + c.q, as: pReader, status: c.status, invalid: c.invalid})
	}
	e.do(call{name: "entries ?x", path: "/v1/entries?x=1", as: pReader, status: 400, invalid: true, kinBlind: "undeclared query parameters"})
	e.do(call{name: "entries over mutual TLS", path: "/v1/entries?limit=3", as: pGateway, status: 200})
	e.do(call{name: "entries without ledger:read", path: "/v1/entries", as: pPayload, status: 403, invalid: true})
	for seq := uint64(1); seq <= head; seq++ {
		e.do(call{name: fmt.Sprintf("entry %d", seq), path: fmt.Sprintf("/v1/entries/%d", seq), as: pReader, status: 200})
	}
	e.do(call{name: "entry 0", path: "/v1/entries/0", as: pReader, status: 400, invalid: true})
	e.do(call{name: "entry x", path: "/v1/entries/x", as: pReader, status: 400, invalid: true})
	e.do(call{name: "entry beyond the head", path: fmt.Sprintf("/v1/entries/%d", head+100), as: pReader, status: 404})

	e.do(call{name: "payload", path: fmt.Sprintf("/v1/entries/%d/payload", firstSeq), as: pPayload, status: 200})
	e.do(call{name: "snapshot content", path: "/v1/entries/2/payload", as: pPayload, status: 200})
	e.do(call{name: "no payload", path: "/v1/entries/1/payload", as: pPayload, status: 404})
	e.do(call{name: "payload without its scope", path: "/v1/entries/2/payload", as: pReader, status: 403, invalid: true})

	e.do(call{name: "proof", path: fmt.Sprintf("/v1/entries/%d/proof", firstSeq), as: pReader, status: 200})
	e.do(call{name: "proof at a size", path: fmt.Sprintf("/v1/entries/%d/proof?tree_size=%d", firstSeq, firstSeq), as: pReader, status: 200})
	e.do(call{name: "proof below its seq", path: fmt.Sprintf("/v1/entries/%d/proof?tree_size=1", firstSeq), as: pReader, status: 422})
	e.do(call{name: "proof at size 0", path: "/v1/entries/1/proof?tree_size=0", as: pReader, status: 400, invalid: true})
	e.do(call{name: "proof beyond the head", path: fmt.Sprintf("/v1/entries/%d/proof", head+100), as: pReader, status: 404})

	var firstAnswer struct {
		WorkflowID string `json:"workflow_id"`
	}
	if err := json.Unmarshal(swarm.resBody, &firstAnswer); err != nil || firstAnswer.WorkflowID == "" {
		t.Fatalf("the swarm/2 handoff has no workflow id: %s", swarm.resBody)
	}
	e.do(call{name: "workflow", path: "/v1/workflows/" + firstAnswer.WorkflowID, as: pReader, status: 200})
	e.do(call{name: "workflow page", path: "/v1/workflows/" + firstAnswer.WorkflowID + "?limit=1&after=0", as: pReader, status: 200})
	e.do(call{name: "unknown workflow", path: "/v1/workflows/nothing-here", as: pReader, status: 404})
	e.do(call{name: "workflow limit 0", path: "/v1/workflows/x?limit=0", as: pReader, status: 422, invalid: true})

	blocks := e.do(call{name: "blocks", path: "/v1/blocks", as: pReader, status: 200})
	var bl struct {
		Blocks []struct {
			Agent string `json:"agent"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(blocks.resBody, &bl); err != nil || len(bl.Blocks) == 0 {
		t.Fatalf("no block after a hash mismatch: %s", blocks.resBody)
	}
	e.do(call{name: "blocks without ledger:read", path: "/v1/blocks", as: pPayload, status: 403, invalid: true})
	e.do(call{name: "checkpoint", path: "/v1/checkpoint", as: pReader, status: 200})
	e.do(call{name: "checkpoint ?x", path: "/v1/checkpoint?x=1", as: pReader, status: 400, invalid: true, kinBlind: "undeclared query parameters"})
	e.do(call{name: "consistency", path: fmt.Sprintf("/v1/consistency?from=2&to=%d", head), as: pReader, status: 200})
	e.do(call{name: "consistency backwards", path: "/v1/consistency?from=3&to=2", as: pReader, status: 422})
	e.do(call{name: "consistency without to", path: "/v1/consistency?from=3", as: pReader, status: 400, invalid: true})
	e.do(call{name: "consistency from 0", path: "/v1/consistency?from=0&to=2", as: pReader, status: 400, invalid: true})

	// Operators.
	blocked := bl.Blocks[0].Agent
	reason := `{"reason":"prompt reviewed"}`
	e.do(call{name: "unblock", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pOperator, ctype: "application/json", body: reason, status: 201})
	e.do(call{name: "unblock again", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pOperator, ctype: "application/json", body: reason, status: 404})
	e.do(call{name: "unblock as text", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pOperator, ctype: "text/plain", body: "why", status: 415, invalid: true})
	e.do(call{name: "unblock without a reason", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pOperator, ctype: "application/json", body: `{}`, status: 422, invalid: true})
	e.do(call{name: "unblock, blank reason", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pOperator, ctype: "application/json", body: `{"reason":"  "}`, status: 422, invalid: true})
	e.do(call{name: "unblock, extra member", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pOperator, ctype: "application/json", body: `{"reason":"x","by":"me"}`, status: 400, invalid: true})
	e.do(call{name: "unblock a malformed agent", method: "POST", path: "/v1/blocks/Bad_Agent:unblock", as: pOperator, ctype: "application/json", body: reason, status: 400, invalid: true})
	e.do(call{name: "unblock as a reader", method: "POST", path: "/v1/blocks/" + blocked + ":unblock", as: pReader, ctype: "application/json", body: reason, status: 403, invalid: true})

	e.do(call{name: "redact", method: "POST", path: fmt.Sprintf("/v1/entries/%d:redact", firstSeq), as: pOperator, ctype: "application/json", body: reason, status: 201})
	e.do(call{name: "redact again", method: "POST", path: fmt.Sprintf("/v1/entries/%d:redact", firstSeq), as: pOperator, ctype: "application/json", body: reason, status: 410})
	e.do(call{name: "redacted payload", path: fmt.Sprintf("/v1/entries/%d/payload", firstSeq), as: pPayload, status: 410})
	e.do(call{name: "redact (alias)", method: "POST", path: fmt.Sprintf("/v1/entries/%d/redact", seqOf(garbage)), as: pOperator, ctype: "application/json", body: reason, status: 201})
	e.do(call{name: "redact an entry without payload", method: "POST", path: "/v1/entries/1/redact", as: pOperator, ctype: "application/json", body: reason, status: 404})
	e.do(call{name: "redact seq 0", method: "POST", path: "/v1/entries/0:redact", as: pOperator, ctype: "application/json", body: reason, status: 400, invalid: true})

	e.do(call{name: "reload", method: "POST", path: "/v1/reload", as: pOperator, status: 200})
	e.do(call{name: "reload {}", method: "POST", path: "/v1/reload", as: pOperator, ctype: "application/json", body: "{}", status: 200})
	// A new registry and lock: reload records their snapshots.
	manifestPath := filepath.Join(e.dir, "registry", "prompt-manifest.json")
	m, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifestPath, append(m, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Config(e.dir, "registry"); err != nil {
		t.Fatal(err)
	}
	reload := e.do(call{name: "reload new files", method: "POST", path: "/v1/reload", as: pOperator, ctype: "application/json", body: "{}", status: 200})
	if !strings.Contains(string(reload.resBody), `"kind":"snapshot"`) {
		t.Errorf("reload of a new manifest and lock recorded no snapshot: %s", reload.resBody)
	}
	e.do(call{name: "reload []", method: "POST", path: "/v1/reload", as: pOperator, ctype: "application/json", body: "[]", status: 400, invalid: true})
	e.do(call{name: "reload as text", method: "POST", path: "/v1/reload", as: pOperator, ctype: "text/plain", body: "x", status: 415, invalid: true})

	// Streams, after every kind of entry is in.
	page = e.do(call{name: "entries at the end", path: "/v1/entries?limit=1", as: pReader, status: 200})
	if err := json.Unmarshal(page.resBody, &all); err != nil || len(all.Entries) != 1 {
		t.Fatalf("entries: %v %s", err, page.resBody)
	}
	head = all.Entries[0].Seq
	e.do(call{name: "export", path: "/v1/export", as: pExporter, status: 200})
	e.do(call{name: "export after", path: fmt.Sprintf("/v1/export?after=%d", head-2), as: pExporter, status: 200})
	e.do(call{name: "export ?after=x", path: "/v1/export?after=x", as: pExporter, status: 400, invalid: true})
	e.do(call{name: "export without payload:read", path: "/v1/export", as: pReader, status: 403, invalid: true})
	events := e.do(call{name: "events", path: "/v1/events", as: pReader, status: 200, stream: int(head) + 1})
	e.do(call{name: "events resumed", path: "/v1/events", as: pReader, header: map[string]string{"Last-Event-ID": fmt.Sprint(head - 1)}, status: 200, stream: 2})
	e.do(call{name: "events, two cursors", path: "/v1/events?after=1", as: pReader, header: map[string]string{"Last-Event-ID": "2"}, status: 400})
	e.do(call{name: "events ?after=x", path: "/v1/events?after=x", as: pReader, status: 400, invalid: true})

	// An event's data is an EntryView, as JSON text: both libraries check
	// it against the schema the document names for it.
	evs, err := decodeEvents(strings.NewReader(string(events.resBody)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs.([]any) {
		m := ev.(map[string]any)
		if m["event"] != "entry" {
			continue
		}
		n++
		kinErr, libErr := e.v.checkValue("EntryView", []byte(m["data"].(string)))
		if kinErr != "" || libErr != "" {
			t.Errorf("event %v: data breaks EntryView: kin-openapi %s; libopenapi-validator %s", m["id"], kinErr, libErr)
		}
	}
	if n != int(head) {
		t.Errorf("%d entry events, want %d", n, head)
	}

	// Every route was answered, with a success and with a problem.
	for _, rt := range e.srv.Routes() {
		key := rt.Method + " " + rt.Path
		ok, failed := false, false
		for _, s := range e.seen[key] {
			ok = ok || s < 300
			failed = failed || s >= 400
		}
		public := len(rt.Scopes) == 0
		if !ok || (!failed && !public) {
			t.Errorf("route %s: statuses %v, want a success and a problem", key, e.seen[key])
		}
	}
}
