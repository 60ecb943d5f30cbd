package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/govledger/govledger/server"
)

// TestSlowClients: a client sending its headers one byte at a time is cut
// off by ReadHeaderTimeout, one sending its body slowly by ReadTimeout,
// while an honest client keeps being served quickly.
func TestSlowClients(t *testing.T) {
	h := start(t, func(c *server.Config) {
		c.ReadHeaderTimeout, c.ReadTimeout = 300*time.Millisecond, 600*time.Millisecond
	})
	type result struct {
		name   string
		after  time.Duration
		answer string
		err    error
	}
	results := make(chan result, 2)
	trickle := func(name, head, body string) {
		conn, err := net.Dial("tcp", h.addr)
		if err != nil {
			results <- result{name: name, err: err}
			return
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, head); err != nil {
			results <- result{name: name, err: err}
			return
		}
		// One byte every 100ms, at most 30 bytes: the server must cut us off first.
		for i := 0; i < 30 && i < len(body); i++ {
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(conn)
		results <- result{name: name, after: time.Since(start), answer: string(b)}
	}
	go trickle("headers", "GET /livez HTTP/1.1\r\n", "Host: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n")
	go trickle("body", "POST /v1/handoffs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+h.tokens[pAll]+
		"\r\nContent-Length: 30\r\n\r\n", strings.Repeat("x", 30))
	// Meanwhile, an honest client.
	for i := 0; i < 10; i++ {
		t0 := time.Now()
		if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
			t.Fatalf("honest client: %d", r.status)
		}
		if d := time.Since(t0); d > time.Second {
			t.Fatalf("honest client waited %s", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		t.Logf("slow %s: cut off after %s; answer %q", r.name, r.after.Round(time.Millisecond), firstLine(r.answer))
		if r.after > 2500*time.Millisecond {
			t.Errorf("slow %s: cut off after %s, want well before the 3s it would take", r.name, r.after)
		}
		// A slow body is answered 408 with nothing written (or the connection is closed).
		if r.name == "body" && r.answer != "" && (!strings.HasPrefix(r.answer, "HTTP/1.1 408") ||
			!strings.Contains(r.answer, `"code":"REQUEST_TIMEOUT"`) || !strings.Contains(r.answer, `"written":"no"`)) {
			t.Errorf("slow body answered %q", r.answer)
		}
		if r.name == "headers" && strings.Contains(r.answer, "200 OK") {
			t.Errorf("slow headers answered %q", r.answer)
		}
	}
	if n := h.fake.count(); n != 0 {
		t.Fatalf("%d entries written by slow clients", n)
	}
}

func TestHeaderLimit(t *testing.T) {
	h := start(t, func(c *server.Config) { c.MaxHeaderBytes = 8 << 10 })
	hr, _ := http.NewRequest("GET", h.url+"/livez", nil)
	hr.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	res, err := h.client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: %d, want 431", res.StatusCode)
	}
	if r := h.do(req{method: "GET", path: "/livez"}); r.status != 200 {
		t.Fatalf("after: %d", r.status)
	}
	if _, err := server.New(server.Config{Backend: h.fake, Tokens: h.store, MaxHeaderBytes: 1 << 20}); err == nil {
		t.Fatal("New accepted MaxHeaderBytes of 1 MiB")
	}
}

func TestMetrics(t *testing.T) {
	h := start(t, func(c *server.Config) { c.QueueDepth = func() int { return 7 } })
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB})
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docUnknown})
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("overloaded")})
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("outcome_unknown_once"), headers: map[string]string{"Idempotency-Key": "m"}})
	h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docBA})
	h.do(req{method: "GET", path: "/v1/entries"})
	h.do(req{method: "GET", path: "/v1/entries", as: pWriterA})
	r := h.do(req{method: "GET", path: "/metrics"})
	if r.status != 200 {
		t.Fatalf("metrics: %d", r.status)
	}
	text := string(r.body)
	for _, want := range []string{
		`govledger_http_requests_total{route="POST /v1/handoffs",status="201"} 2`,
		`govledger_http_requests_total{route="POST /v1/handoffs",status="503"} 2`,
		`govledger_http_requests_total{route="GET /v1/entries",status="401"} 1`,
		`govledger_appends_total{decision="accepted"} 2`, // docAB and the ambiguous commit
		`govledger_appends_total{decision="rejected"} 1`,
		`govledger_append_reasons_total{code="UNKNOWN_AGENT"} 1`,
		`govledger_commit_batch_entries_count 3`,
		`govledger_commit_fsync_seconds_count 3`,
		`govledger_commit_queue_depth 7`,
		`govledger_auth_failures_total{reason="missing"} 1`,
		`govledger_auth_failures_total{reason="scope"} 1`,
		`govledger_auth_failures_total{reason="source"} 1`,
		`govledger_overloaded_total{route="POST /v1/handoffs"} 1`,
		`govledger_storage_errors_total{kind="outcome_unknown"} 1`,
		`govledger_http_request_seconds_bucket{route="POST /v1/handoffs",le="+Inf"} 5`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Every series is named govledger_*.
	for _, m := range regexp.MustCompile(`(?m)^([a-z_]+)[{ ]`).FindAllStringSubmatch(text, -1) {
		if !strings.HasPrefix(m[1], "govledger_") {
			t.Errorf("series %s outside the govledger_ namespace", m[1])
		}
	}
}

// TestRequestLog checks the request id (echoed or made) and the JSON log line.
func TestRequestLog(t *testing.T) {
	h := start(t, nil)
	r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader, headers: map[string]string{"X-Request-Id": "trace-42.a:b"}})
	if r.header.Get("X-Request-Id") != "trace-42.a:b" {
		t.Fatalf("X-Request-Id %q, want the client's", r.header.Get("X-Request-Id"))
	}
	r = h.do(req{method: "GET", path: "/v1/blocks", as: pReader, headers: map[string]string{"X-Request-Id": "bad id\u00e9"}})
	if id := r.header.Get("X-Request-Id"); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("made X-Request-Id %q", id)
	}
	h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docBA})
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	var found int
	for sc.Scan() {
		var line map[string]any
		decodeInto(t, sc.Bytes(), &line)
		if line["msg"] != "request" {
			continue
		}
		if line["request_id"] == "trace-42.a:b" && line["principal"] == pReader && line["status"] == float64(200) && line["route"] == "GET /v1/blocks" {
			found++
		}
		if line["status"] == float64(403) && line["principal"] == pWriterA && strings.Contains(line["error"].(string), "agent-b") {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("found %d of 2 expected log lines in:\n%s", found, h.logs.String())
	}
}

func decodeInto(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := jsonUnmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// TestMetricsFromStart: the series operators alert on with increase()
// exist at 0 before their first event, route labels are the documented
// route templates, and each cap that refuses a request is counted under
// its name in govledger_limit_hits_total.
func TestMetricsFromStart(t *testing.T) {
	h := start(t, func(c *server.Config) { c.Rate, c.Burst = rate.Every(time.Hour), 2 })
	text := string(h.do(req{method: "GET", path: "/metrics"}).body)
	want := []string{
		`govledger_storage_errors_total{kind="internal"} 0`,
		`govledger_storage_errors_total{kind="outcome_unknown"} 0`,
		`govledger_storage_errors_total{kind="unavailable"} 0`,
		`govledger_auth_failures_total{reason="invalid"} 0`,
		`govledger_http_panics_total 0`,
		`govledger_overloaded_total{route="POST /v1/handoffs"} 0`,
		`govledger_overloaded_total{route="POST /v1/blocks/{agent}:unblock"} 0`,
		`govledger_rate_limited_total{route="POST /v1/entries/{seq}:redact"} 0`,
		`govledger_rate_limited_total{route="GET /v1/export"} 0`,
	}
	for _, l := range server.KnownLimits {
		want = append(want, `govledger_limit_hits_total{limit="`+l+`"} 0`)
	}
	for _, w := range want {
		if !strings.Contains(text, w+"\n") {
			t.Errorf("metrics at start-up lack %s", w)
		}
	}
	if strings.Contains(text, "{rest}") {
		t.Errorf("a route label is a mux pattern, not a documented route:\n%s", text)
	}
	// Two requests of one principal pass its rate limit of 2, the third is
	// refused and counted; the unblock is labelled by
	// its documented route.
	h.do(req{method: "POST", path: "/v1/blocks/agent-a:unblock", as: pOperator, body: `{"reason":"x"}`, ctype: "application/json"})
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("overloaded")})
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: strings.Repeat("x", 65<<10)})
	if r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB}); r.status != http.StatusTooManyRequests {
		t.Fatalf("third request: %d, want 429", r.status)
	}
	text = string(h.do(req{method: "GET", path: "/metrics"}).body)
	for _, w := range []string{
		`govledger_http_requests_total{route="POST /v1/blocks/{agent}:unblock",status="404"} 1`,
		`govledger_limit_hits_total{limit="commit_queue"} 1`,
		`govledger_limit_hits_total{limit="max_body"} 1`,
		`govledger_limit_hits_total{limit="rate"} 1`,
		`govledger_limit_hits_total{limit="in_flight_writes"} 0`,
		`govledger_rate_limited_total{route="POST /v1/handoffs"} 1`,
	} {
		if !strings.Contains(text, w+"\n") {
			t.Errorf("metrics lack %s", w)
		}
	}
}

// TestOpenMetrics: /metrics answers the OpenMetrics format to a scraper
// that asks for it, the Prometheus text format otherwise.
func TestOpenMetrics(t *testing.T) {
	h := start(t, nil)
	r := h.do(req{method: "GET", path: "/metrics", headers: map[string]string{"Accept": "application/openmetrics-text; version=1.0.0"}})
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(string(r.body), "# EOF\n") {
		t.Errorf("/metrics asked for OpenMetrics: %q, ending %q", ct, string(r.body[max(0, len(r.body)-20):]))
	}
	if ct := h.do(req{method: "GET", path: "/metrics"}).header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics by default: %q, want the Prometheus text format", ct)
	}
}
