package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govledger/govledger/server"
)

// Principals of the test tokens file.
const (
	pWriterA  = "writer-a"   // handoff:write for agent-a
	pWriterAn = "writer-any" // handoff:write for any agent
	pReader   = "reader"     // ledger:read
	pPayload  = "payload"    // payload:read
	pExporter = "exporter"   // ledger:read + payload:read
	pOperator = "operator"   // operator
	pAll      = "all"        // every scope, any agent
	pExpired  = "expired"    // every scope, expired
	pGateway  = "gateway"    // mTLS only: handoff:write for agent-a, ledger:read
	pClient   = "client"     // handoff:write for agent-a, ledger:read: the example clients
)

// harness is a running server (real HTTP on 127.0.0.1) on a fake backend.
type harness struct {
	t       testing.TB
	url     string
	addr    string
	fake    *fakeBackend
	srv     *server.Server
	tokens  map[string]string // principal -> token
	store   *server.TokenStore
	logs    *lockedBuffer
	metrics *server.Metrics
	stop    func() error // ends Serve and returns its error
	client  *http.Client
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var testNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func testTokens(t testing.TB) (*server.TokensFile, map[string]string) {
	t.Helper()
	f := &server.TokensFile{Version: server.TokensVersion}
	tokens := map[string]string{}
	all := server.Scopes
	for _, e := range []server.TokenEntry{
		{Name: pWriterA, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"agent-a"}},
		{Name: pWriterAn, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}},
		{Name: pReader, Scopes: []server.Scope{server.ScopeLedgerRead}},
		{Name: pPayload, Scopes: []server.Scope{server.ScopePayloadRead}},
		{Name: pExporter, Scopes: []server.Scope{server.ScopeLedgerRead, server.ScopePayloadRead}},
		{Name: pOperator, Scopes: []server.Scope{server.ScopeOperator}},
		{Name: pAll, Scopes: all, Agents: []string{"*"}},
		{Name: pExpired, Scopes: all, Agents: []string{"*"}, Expires: testNow.Add(-time.Hour)},
		{Name: pClient, Scopes: []server.Scope{server.ScopeHandoffWrite, server.ScopeLedgerRead}, Agents: []string{"agent-a"}},
	} {
		tok, hash, err := server.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, e.Created = hash, testNow.Add(-48*time.Hour)
		if err := f.Add(e); err != nil {
			t.Fatalf("Add(%s): %v", e.Name, err)
		}
		tokens[e.Name] = tok
	}
	if err := f.Add(server.TokenEntry{Name: pGateway, MTLSSubject: "gateway.test", Created: testNow.Add(-time.Hour),
		Scopes: []server.Scope{server.ScopeHandoffWrite, server.ScopeLedgerRead}, Agents: []string{"agent-a"}}); err != nil {
		t.Fatal(err)
	}
	return f, tokens
}

// start runs a server; mod may change its Config. It stops by itself at
// the end of the test.
func start(t testing.TB, mod func(*server.Config)) *harness {
	t.Helper()
	return startWith(t, mod, nil)
}

func startWith(t testing.TB, mod func(*server.Config), serve func(ctx context.Context, s *server.Server, ln net.Listener) error) *harness {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := server.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f, tokens := testTokens(t)
	h := &harness{t: t, fake: newFake(m), tokens: tokens, logs: &lockedBuffer{}, metrics: m,
		store: server.NewTokenStore(f, func() time.Time { return testNow })}
	cfg := server.Config{
		Backend: h.fake, Tokens: h.store, Metrics: m,
		Logger:  slog.New(slog.NewJSONHandler(h.logs, nil)),
		Now:     func() time.Time { return testNow },
		MaxBody: 64 << 10, MaxBatchBody: 1 << 20, MaxBatchItems: 50,
		ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		ShutdownTimeout: 3 * time.Second, Heartbeat: time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	h.srv, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.url = "http://" + h.addr
	if serve == nil {
		serve = func(ctx context.Context, s *server.Server, ln net.Listener) error { return s.Serve(ctx, ln) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, h.srv, ln) }()
	var once sync.Once
	var serveErr error
	h.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(10 * time.Second):
				serveErr = errors.New("Serve did not return 10s after its context ended")
			}
		})
		return serveErr
	}
	h.client = &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(func() {
		h.client.CloseIdleConnections()
		if err := h.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

// req describes one request.
type req struct {
	method  string
	path    string
	as      string // principal whose token is sent ("" for none)
	token   string // a literal token instead
	body    string
	ctype   string
	headers map[string]string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (h *harness) do(r req) resp {
	h.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, h.url+r.path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	switch {
	case r.token != "":
		hr.Header.Set("Authorization", r.token)
	case r.as != "":
		tok, ok := h.tokens[r.as]
		if !ok {
			h.t.Fatalf("no token for %q", r.as)
		}
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	res, err := h.client.Do(hr)
	if err != nil {
		h.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatalf("%s %s: reading the answer: %v", r.method, r.path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// problem decodes a problem answer, checking its shape.
func (h *harness) problem(r resp) server.Problem {
	h.t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		h.t.Fatalf("Content-Type %q, want application/problem+json; body %s", ct, r.body)
	}
	var p server.Problem
	if err := json.Unmarshal(r.body, &p, json.RejectUnknownMembers(true)); err != nil {
		h.t.Fatalf("problem %s: %v", r.body, err)
	}
	if p.Status != r.status || p.Code == "" || p.Title == "" || !strings.HasPrefix(p.Type, "urn:govledger:problem:") {
		h.t.Fatalf("problem %+v does not fit status %d", p, r.status)
	}
	if p.RequestID == "" || p.RequestID != r.header.Get("X-Request-Id") {
		h.t.Fatalf("problem request_id %q, X-Request-Id %q", p.RequestID, r.header.Get("X-Request-Id"))
	}
	return p
}

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// Documents of the fake's stand-in format.
const (
	docAB      = `{"source_agent":"agent-a","target_agent":"agent-b","handoff_id":"h-1","workflow_id":"wf-1"}`
	docBA      = `{"source_agent":"agent-b","target_agent":"agent-a","handoff_id":"h-2","workflow_id":"wf-1"}`
	docUnknown = `{"source_agent":"agent-a","target_agent":"nobody","handoff_id":"h-3"}`
)

func docFault(fault string) string {
	return `{"source_agent":"agent-a","target_agent":"agent-b","x_fault":"` + fault + `"}`
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
