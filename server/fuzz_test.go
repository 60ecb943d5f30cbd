package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/server"
)

// FuzzHandler sends arbitrary requests through the whole handler (routing,
// authentication, parsing, the fake backend without its fault switches):
// nothing panics out, nothing is a 500, every answer has a request id, and
// every error is a well-formed problem.
func FuzzHandler(f *testing.F) {
	for _, s := range []struct {
		method, path, header, value string
		who                         byte
		body                        string
	}{
		{"POST", "/v1/handoffs?from=agent-a&to=agent-b", "Idempotency-Key", "k", 0, docAB},
		{"POST", "/v1/handoffs:batch", "Content-Type", "application/x-ndjson", 0, docAB + "\n{\"document\":\"x\",\"from\":\"agent-a\"}\n\xff\n"},
		{"GET", "/v1/entries?since=2026-01-01T00:00:00Z&limit=3&before=2", "", "", 1, ""},
		{"GET", "/v1/entries/1/proof?tree_size=1", "", "", 1, ""},
		{"POST", "/v1/blocks/agent-a:unblock", "Content-Type", "application/json", 2, `{"reason":"x"}`},
		{"POST", "/v1/entries/1:redact", "Content-Type", "application/json", 2, `{"reason":"x"}`},
		{"GET", "/v1/events?after=99", "Last-Event-ID", "1", 1, ""},
		{"POST", "/v1/validate?format=vbw/1", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0, "x"},
		{"DELETE", "/v1//entries/%2e%2e/1", "Authorization", "Bearer", 3, ""},
	} {
		f.Add(s.method, s.path, s.header, s.value, s.who, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path, header, value string, who byte, body []byte) {
		fake := newFake(nil)
		fake.noFaults = true
		ft, tokens := fuzzTokens(t)
		srv, err := server.New(server.Config{Backend: fake, Tokens: ft, Now: func() time.Time { return testNow },
			MaxBody: 4096, MaxBatchBody: 16384, MaxBatchItems: 8, WriteTimeout: time.Second, Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		// One entry to read, redact and prove.
		fake.Submit(t.Context(), server.SubmitRequest{Body: []byte(docAB), Submitter: "seed"})
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		r, err := http.NewRequest(method, "http://x"+path, bytes.NewReader(body))
		if err != nil {
			return // not a request net/http would parse
		}
		if strings.HasPrefix(r.URL.Path, "/v1/events") {
			return // a stream runs until the client leaves; TestEvents covers it
		}
		if header != "" && validHeader(header, value) {
			r.Header.Set(header, value)
		}
		if tok := tokens[int(who)%len(tokens)]; tok != "" && r.Header.Get("Authorization") == "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, r)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		if w.Header().Get("X-Request-Id") == "" {
			t.Fatal("no X-Request-Id")
		}
		if w.Code >= 400 && method != "HEAD" {
			var p server.Problem
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%s %s: %d with Content-Type %q", method, path, w.Code, ct)
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != w.Code || p.Code == "" {
				t.Fatalf("%s %s: problem %s: %v", method, path, w.Body, err)
			}
		}
	})
}

func fuzzTokens(t *testing.T) (*server.TokenStore, []string) {
	f, toks := testTokens(t)
	return server.NewTokenStore(f, func() time.Time { return testNow }), []string{toks[pWriterA], toks[pReader], toks[pAll], ""}
}

func validHeader(name, value string) bool {
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
