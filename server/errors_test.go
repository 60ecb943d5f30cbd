package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/govledger/govledger/server"
)

// TestErrorStatuses sends one request per failure and checks status, code,
// the problem's shape, Retry-After and whether it says something was written.
func TestErrorStatuses(t *testing.T) {
	h := start(t, nil)
	for _, d := range []string{docAB, docBA} {
		if r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: d}); r.status != 201 {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
	}
	if r := h.do(req{method: "POST", path: "/v1/entries/2:redact", as: pOperator, body: `{"reason":"pii"}`, ctype: "application/json"}); r.status != 201 {
		t.Fatalf("redact: %d %s", r.status, r.body)
	}
	big := strings.Repeat("x", 64<<10+1)
	tests := []struct {
		name       string
		r          req
		status     int
		code       string
		written    string // "" on reads
		retryAfter bool
		detail     string // a substring of the detail
	}{
		{"bad seq", req{method: "GET", path: "/v1/entries/01", as: pReader}, 400, server.CodeBadRequest, "", false, "leading zeros"},
		{"seq zero", req{method: "GET", path: "/v1/entries/0", as: pReader}, 400, server.CodeBadRequest, "", false, ""},
		{"unknown parameter", req{method: "GET", path: "/v1/entries?agnet=a", as: pReader}, 400, server.CodeBadRequest, "", false, `"agnet"`},
		{"repeated parameter", req{method: "GET", path: "/v1/entries?agent=agent-a&agent=agent-b", as: pReader}, 400, server.CodeBadRequest, "", false, "2 times"},
		{"bad time", req{method: "GET", path: "/v1/entries?since=yesterday", as: pReader}, 400, server.CodeBadRequest, "", false, "RFC 3339"},
		{"bad decision", req{method: "GET", path: "/v1/entries?decision=maybe", as: pReader}, 422, server.CodeInvalidParameters, "", false, "accepted or rejected"},
		{"unknown kind", req{method: "GET", path: "/v1/entries?kind=bogus", as: pReader}, 422, server.CodeInvalidParameters, "", false, "want one of handoff, snapshot"},
		{"limit too big", req{method: "GET", path: "/v1/entries?limit=5000", as: pReader}, 422, server.CodeInvalidParameters, "", false, ""},
		{"until before since", req{method: "GET", path: "/v1/entries?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", as: pReader}, 422, server.CodeInvalidParameters, "", false, ""},
		{"proof beyond head", req{method: "GET", path: "/v1/entries/1/proof?tree_size=99", as: pReader}, 422, server.CodeInvalidParameters, "", false, "beyond the latest checkpoint"},
		{"consistency reversed", req{method: "GET", path: "/v1/consistency?from=2&to=1", as: pReader}, 422, server.CodeInvalidParameters, "", false, ""},
		{"consistency missing", req{method: "GET", path: "/v1/consistency?from=1", as: pReader}, 400, server.CodeBadRequest, "", false, "required"},
		{"unknown format", req{method: "POST", path: "/v1/handoffs?format=pdf/9", as: pAll, body: docAB}, 400, server.CodeBadRequest, "no", false, "unknown format"},
		{"malformed format", req{method: "POST", path: "/v1/handoffs?format=../x", as: pAll, body: docAB}, 400, server.CodeBadRequest, "no", false, ""},
		{"bad traceparent", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB, headers: map[string]string{"traceparent": "00-zz-00-01"}}, 400, server.CodeBadRequest, "no", false, "traceparent"},
		{"bad idempotency key", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB, headers: map[string]string{"Idempotency-Key": "a b"}}, 400, server.CodeBadRequest, "no", false, "idempotency"},
		{"empty body", req{method: "POST", path: "/v1/handoffs", as: pAll}, 400, server.CodeBadRequest, "no", false, "empty"},
		{"operator body not json", req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: `{"reason":1}`, ctype: "application/json"}, 400, server.CodeBadRequest, "no", false, ""},
		{"operator unknown member", req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: `{"reason":"x","force":true}`, ctype: "application/json"}, 400, server.CodeBadRequest, "no", false, "unknown"},
		{"operator empty reason", req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: `{"reason":"  "}`, ctype: "application/json"}, 422, server.CodeInvalidParameters, "no", false, ""},
		{"no token", req{method: "GET", path: "/v1/entries"}, 401, server.CodeUnauthenticated, "", false, ""},
		{"wrong scope", req{method: "GET", path: "/v1/entries", as: pWriterA}, 403, server.CodeForbiddenScope, "", false, "ledger:read"},
		{"other agent", req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docBA}, 403, server.CodeForbiddenSource, "no", false, ""},
		{"no entry", req{method: "GET", path: "/v1/entries/999", as: pReader}, 404, server.CodeNotFound, "", false, ""},
		{"no workflow", req{method: "GET", path: "/v1/workflows/nope", as: pReader}, 404, server.CodeNotFound, "", false, ""},
		{"no route", req{method: "GET", path: "/v2/entries", as: pReader}, 404, server.CodeNotFound, "", false, "no such route"},
		{"no action", req{method: "POST", path: "/v1/blocks/agent-a:delete", as: pOperator, body: `{"reason":"x"}`, ctype: "application/json"}, 404, server.CodeNotFound, "no", false, ""},
		{"not blocked", req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: `{"reason":"x"}`, ctype: "application/json"}, 404, server.CodeNotFound, "no", false, ""},
		{"wrong method", req{method: "DELETE", path: "/v1/entries/1", as: pAll}, 405, server.CodeMethodNotAllowed, "", false, "Allow"},
		{"redacted payload", req{method: "GET", path: "/v1/entries/2/payload", as: pPayload}, 410, server.CodeRedacted, "", false, ""},
		{"redact twice", req{method: "POST", path: "/v1/entries/2:redact", as: pOperator, body: `{"reason":"x"}`, ctype: "application/json"}, 410, server.CodeRedacted, "no", false, ""},
		{"body too large", req{method: "POST", path: "/v1/handoffs", as: pAll, body: big}, 413, server.CodeBodyTooLarge, "no", false, "limit"},
		{"gzip", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB, headers: map[string]string{"Content-Encoding": "gzip"}}, 415, server.CodeUnsupportedMedia, "no", false, "gzip"},
		{"multipart", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB, ctype: "multipart/form-data; boundary=x"}, 415, server.CodeUnsupportedMedia, "no", false, ""},
		{"batch as json", req{method: "POST", path: "/v1/handoffs:batch", as: pAll, body: docAB, ctype: "application/json"}, 415, server.CodeUnsupportedMedia, "no", false, "x-ndjson"},
		{"operator form", req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: "reason=x", ctype: "application/x-www-form-urlencoded"}, 415, server.CodeUnsupportedMedia, "no", false, ""},
		{"overloaded", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("overloaded")}, 503, server.CodeOverloaded, "no", true, "queue"},
		{"unavailable", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("unavailable")}, 503, server.CodeUnavailable, "no", true, ""},
		{"outcome unknown", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("outcome_unknown_once"), headers: map[string]string{"Idempotency-Key": "k-ou"}}, 503, server.CodeOutcomeUnknown, "unknown", true, "retry with the same Idempotency-Key"},
		{"internal", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("internal")}, 500, server.CodeInternal, "unknown", false, "see the server log"},
		{"panic in submit", req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("panic")}, 500, server.CodeInternal, "unknown", false, ""},
		{"panic in read", req{method: "GET", path: "/v1/entries/13", as: pReader}, 500, server.CodeInternal, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(tt.r)
			if r.status != tt.status {
				t.Fatalf("status %d (%s), want %d", r.status, r.body, tt.status)
			}
			p := h.problem(r)
			if p.Code != tt.code || p.Written != tt.written || !strings.Contains(p.Detail, tt.detail) || p.Instance != strings.SplitN(tt.r.path, "?", 2)[0] {
				t.Errorf("problem %+v, want code %s, written %q, detail with %q", p, tt.code, tt.written, tt.detail)
			}
			ra := r.header.Get("Retry-After")
			if tt.retryAfter != (ra != "") || (ra != "" && strconv.Itoa(p.RetryAfter) != ra) {
				t.Errorf("Retry-After %q (problem %d), want one: %v", ra, p.RetryAfter, tt.retryAfter)
			}
			if strings.Contains(string(r.body), "goroutine") || strings.Contains(string(r.body), "/var/secret") || strings.Contains(string(r.body), ".go:") {
				t.Errorf("answer leaks internals: %s", r.body)
			}
		})
	}
	// The server keeps serving after the panics, and the ambiguous commit
	// resolves by retrying with the same key: one entry, the first seq.
	if r := h.do(req{method: "GET", path: "/livez"}); r.status != 200 {
		t.Fatalf("livez after panics: %d", r.status)
	}
	n := h.fake.count()
	r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("outcome_unknown_once"), headers: map[string]string{"Idempotency-Key": "k-ou"}})
	res := decode[server.SubmitResult](t, r.body)
	if r.status != 201 || !res.Replayed || h.fake.count() != n {
		t.Fatalf("retry after outcome unknown: %d %+v, %d entries (was %d)", r.status, res, h.fake.count(), n)
	}
	if !strings.Contains(h.logs.String(), `"panic":"fake backend panic"`) {
		t.Error("the panic is not in the log")
	}
}

func TestRateLimit(t *testing.T) {
	now := testNow
	h := start(t, func(c *server.Config) {
		c.Rate, c.Burst = rate.Every(10*time.Second), 2
		c.Now = func() time.Time { return now } // frozen: no refill during the test
	})
	for i := range 2 {
		if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, r.status, r.body)
		}
	}
	r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader})
	p := h.problem(r)
	if r.status != http.StatusTooManyRequests || p.Code != server.CodeRateLimited || r.header.Get("Retry-After") != "10" {
		t.Fatalf("over the limit: %d %+v Retry-After %q, want 429 with Retry-After 10", r.status, p, r.header.Get("Retry-After"))
	}
	// Limits are per principal: another token is served.
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pExporter}); r.status != 200 {
		t.Fatalf("another principal: %d", r.status)
	}
	// A refused request did not consume a token: after 10s exactly one more passes.
	now = now.Add(10 * time.Second)
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
		t.Fatalf("after the wait: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 429 {
		t.Fatalf("second after the wait: %d, want 429", r.status)
	}
}

func TestInFlightCap(t *testing.T) {
	h := start(t, func(c *server.Config) { c.MaxInFlight = 1 })
	// A slow write holds the only write slot for 300ms; a second write
	// meanwhile is refused. Retried a few times in case the probe, not the
	// slow write, got the slot first on a busy machine.
	for attempt := 0; ; attempt++ {
		done := make(chan resp, 1)
		go func() {
			done <- h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("slow")})
		}()
		time.Sleep(50 * time.Millisecond)
		r := h.do(req{method: "POST", path: "/v1/validate", as: pAll, body: docAB})
		if r.status == http.StatusServiceUnavailable {
			if p := h.problem(r); p.Code != server.CodeOverloaded || r.header.Get("Retry-After") == "" {
				t.Fatalf("cap: %+v", p)
			}
			// Reads and health checks are still served.
			if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
				t.Fatalf("read while the write cap is full: %d", r.status)
			}
			if r := h.do(req{method: "GET", path: "/livez"}); r.status != 200 {
				t.Fatalf("livez while the cap is full: %d", r.status)
			}
			if r := <-done; r.status != 201 {
				t.Fatalf("slow request: %d %s", r.status, r.body)
			}
			return
		}
		<-done
		if attempt == 5 {
			t.Fatalf("the in-flight cap never answered 503 (last probe: %d)", r.status)
		}
	}
}
