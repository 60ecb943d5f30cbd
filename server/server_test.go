package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/govledger/govledger/server"
)

func TestSubmit(t *testing.T) {
	h := start(t, nil)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	// Accepted, with a traceparent and the principal as submitter.
	r := h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docAB, headers: map[string]string{"traceparent": tp}})
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	res := decode[server.SubmitResult](t, r.body)
	if res.Seq != 1 || res.Decision != "accepted" || len(res.EntryHash) != 64 || res.Source != "agent-a" || res.Replayed || res.Reasons == nil {
		t.Fatalf("submit = %+v", res)
	}
	if loc := r.header.Get("Location"); loc != "/v1/entries/1" {
		t.Errorf("Location = %q", loc)
	}
	if e := h.fake.entry(1); e["submitter"] != pWriterA || e["traceparent"] != tp {
		t.Errorf("entry 1 = %v: want submitter %s and the traceparent", e, pWriterA)
	}

	// Rejected is recorded too: 201.
	r = h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docUnknown})
	res = decode[server.SubmitResult](t, r.body)
	if r.status != http.StatusCreated || res.Decision != "rejected" || res.Seq != 2 || len(res.Reasons) != 1 || res.Reasons[0].Code != "UNKNOWN_AGENT" {
		t.Fatalf("rejected submit: %d %+v", r.status, res)
	}

	// A token for agent-a cannot submit a handoff from agent-b: 403, nothing written.
	for _, rq := range []req{
		{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docBA},
		{method: "POST", path: "/v1/handoffs?from=agent-b&to=agent-a", as: pWriterA, body: "## markdown from b"},
		{method: "POST", path: "/v1/handoffs", as: pWriterA, body: "# no agents named at all"},
	} {
		r = h.do(rq)
		if p := h.problem(r); r.status != http.StatusForbidden || p.Code != server.CodeForbiddenSource || p.Written != "no" {
			t.Errorf("%s %q as %s: %d %+v, want 403 FORBIDDEN_SOURCE written=no", rq.path, rq.body, rq.as, r.status, p)
		}
	}
	if n := h.fake.count(); n != 2 {
		t.Fatalf("%d entries after refused submissions, want 2", n)
	}
	// Any-agent token may.
	if r = h.do(req{method: "POST", path: "/v1/handoffs?from=agent-b&to=agent-a", as: pWriterAn, body: "## markdown"}); r.status != http.StatusCreated {
		t.Fatalf("writer-any from agent-b: %d %s", r.status, r.body)
	}

	// Idempotency: a retry gets the first answer; other bytes are 409.
	key := map[string]string{"Idempotency-Key": "run-7/step-1"}
	first := h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docAB, headers: key})
	again := h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docAB, headers: key})
	r1, r2 := decode[server.SubmitResult](t, first.body), decode[server.SubmitResult](t, again.body)
	if first.status != 201 || again.status != 201 || r1.Seq != r2.Seq || r1.EntryHash != r2.EntryHash || r1.Replayed || !r2.Replayed {
		t.Fatalf("idempotent retry: %d %+v then %d %+v", first.status, r1, again.status, r2)
	}
	n := h.fake.count()
	r = h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docUnknown, headers: key})
	if p := h.problem(r); r.status != http.StatusConflict || p.Code != server.CodeIdempotencyConflict || p.Written != "no" {
		t.Fatalf("same key, other bytes: %d %+v", r.status, p)
	}
	if h.fake.count() != n {
		t.Fatal("a conflicting retry was written")
	}

	// Validate writes nothing.
	r = h.do(req{method: "POST", path: "/v1/validate", as: pWriterA, body: docUnknown})
	if res = decode[server.SubmitResult](t, r.body); r.status != http.StatusOK || res.Seq != 0 || res.Decision != "rejected" || h.fake.count() != n {
		t.Fatalf("validate: %d %+v, %d entries (want %d)", r.status, res, h.fake.count(), n)
	}
}

// routeSample is a request that reaches each route's handler, and the
// status it gets with every scope.
type routeSample struct {
	path, body, ctype string
	want              int
	// scopes are the scopes the route requires, written here from the
	// README's route table, not read from the server's: a wrong scope on
	// a route must fail TestScopesOnEveryRoute.
	scopes []server.Scope
}

func samples() map[string]routeSample {
	w, rd, pr, op := []server.Scope{server.ScopeHandoffWrite}, []server.Scope{server.ScopeLedgerRead},
		[]server.Scope{server.ScopePayloadRead}, []server.Scope{server.ScopeOperator}
	return map[string]routeSample{
		"POST /v1/handoffs":               {"/v1/handoffs", docAB, "", 201, w},
		"POST /v1/handoffs:batch":         {"/v1/handoffs:batch", docAB + "\n", "application/x-ndjson", 200, w},
		"POST /v1/validate":               {"/v1/validate", docAB, "", 200, w},
		"POST /v1/outcomes":               {"/v1/outcomes", `{"decision_seq":999,"status":"succeeded"}`, "application/json", 422, w},
		"GET /v1/entries":                 {"/v1/entries", "", "", 200, rd},
		"GET /v1/entries/{seq}":           {"/v1/entries/1", "", "", 200, rd},
		"GET /v1/entries/{seq}/payload":   {"/v1/entries/1/payload", "", "", 200, pr},
		"GET /v1/entries/{seq}/proof":     {"/v1/entries/1/proof", "", "", 200, rd},
		"GET /v1/workflows/{id}":          {"/v1/workflows/wf-1", "", "", 200, rd},
		"GET /v1/blocks":                  {"/v1/blocks", "", "", 200, rd},
		"GET /v1/checkpoint":              {"/v1/checkpoint", "", "", 200, rd},
		"GET /v1/consistency":             {"/v1/consistency?from=1&to=1", "", "", 200, rd},
		"GET /v1/export":                  {"/v1/export", "", "", 200, []server.Scope{server.ScopeLedgerRead, server.ScopePayloadRead}},
		"GET /v1/events":                  {"/v1/events", "", "", 0, rd}, // a stream: TestEvents
		"POST /v1/blocks/{agent}:unblock": {"/v1/blocks/agent-c:unblock", `{"reason":"x"}`, "application/json", 404, op},
		"POST /v1/entries/{seq}:redact":   {"/v1/entries/1:redact", `{"reason":"pii"}`, "application/json", 201, op},
		"POST /v1/entries/{seq}/redact":   {"/v1/entries/2/redact", `{"reason":"pii"}`, "application/json", 201, op},
		"POST /v1/reload":                 {"/v1/reload", "", "", 200, op},
		"GET /openapi.json":               {"/openapi.json", "", "", 200, nil},
		"GET /livez":                      {"/livez", "", "", 200, nil},
		"GET /readyz":                     {"/readyz", "", "", 200, nil},
		"GET /metrics":                    {"/metrics", "", "", 200, nil},
	}
}

// TestScopesOnEveryRoute sends, to every route, no token, a bad token, an
// expired token, a token of each single scope, and the all-scopes token,
// and expects what the scopes written in samples allow: a single scope the
// route does not require alone gets 403, one it does is served. The
// scopes the server publishes for a route (Routes, the OpenAPI document)
// must be the same.
func TestScopesOnEveryRoute(t *testing.T) {
	h := start(t, nil)
	if r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB}); r.status != 201 {
		t.Fatalf("seed entry: %d %s", r.status, r.body)
	}
	single := map[server.Scope]string{server.ScopeHandoffWrite: pWriterAn, server.ScopeLedgerRead: pReader,
		server.ScopePayloadRead: pPayload, server.ScopeOperator: pOperator}
	ss := samples()
	for _, rt := range h.srv.Routes() {
		key := rt.Method + " " + rt.Path
		s, ok := ss[key]
		if !ok {
			t.Errorf("route %s has no sample request in this test", key)
			continue
		}
		t.Run(key, func(t *testing.T) {
			if !slices.Equal(rt.Scopes, s.scopes) {
				t.Errorf("the server publishes scopes %v, this test's table says %v", rt.Scopes, s.scopes)
			}
			if len(s.scopes) == 0 {
				if r := h.do(req{method: rt.Method, path: s.path}); r.status != s.want {
					t.Errorf("public route without a token: %d %s, want %d", r.status, r.body, s.want)
				}
				return
			}
			for _, c := range []struct {
				name string
				r    req
			}{
				{"no token", req{}},
				{"unknown token", req{token: "Bearer glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
				{"not bearer", req{token: "Basic dXNlcjpwYXNz"}},
				{"expired", req{as: pExpired}},
			} {
				r := c.r
				r.method, r.path, r.body, r.ctype = rt.Method, s.path, s.body, s.ctype
				res := h.do(r)
				p := h.problem(res)
				if res.status != http.StatusUnauthorized || p.Code != server.CodeUnauthenticated ||
					!strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: %d %+v, want 401 with WWW-Authenticate", c.name, res.status, p)
				}
			}
			served := false // a single-scope token was served
			for _, sc := range server.Scopes {
				who := single[sc]
				if slices.Equal(s.scopes, []server.Scope{sc}) { // the single scope is all the route needs
					if s.want != 0 {
						if res := h.do(req{method: rt.Method, path: s.path, body: s.body, ctype: s.ctype, as: who}); res.status != s.want {
							t.Errorf("as %s (%s, all the route needs): %d %s, want %d", who, sc, res.status, res.body, s.want)
						}
						served = true
					}
					continue
				}
				res := h.do(req{method: rt.Method, path: s.path, body: s.body, ctype: s.ctype, as: who})
				if p := h.problem(res); res.status != http.StatusForbidden || p.Code != server.CodeForbiddenScope {
					t.Errorf("as %s (%s): %d %+v, want 403 FORBIDDEN_SCOPE", who, sc, res.status, p)
				}
			}
			if s.want == 0 || served {
				return
			}
			if res := h.do(req{method: rt.Method, path: s.path, body: s.body, ctype: s.ctype, as: pAll}); res.status != s.want {
				t.Errorf("with every scope: %d %s, want %d", res.status, res.body, s.want)
			}
		})
	}
	for key := range ss {
		found := false
		for _, rt := range h.srv.Routes() {
			found = found || rt.Method+" "+rt.Path == key
		}
		if !found {
			t.Errorf("sample %s names no route", key)
		}
	}
}
