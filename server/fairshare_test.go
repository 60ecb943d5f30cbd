package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// TestStreamShares: one principal holds its share of the stream slots and
// no more (429 naming its cap); the server-wide cap answers 503 naming
// itself, not the commit queue; another principal is served meanwhile.
func TestStreamShares(t *testing.T) {
	h := start(t, func(c *server.Config) { c.MaxStreams, c.MaxStreamsPerPrincipal = 3, 2 })
	h.events(t, pReader, nil, "")
	h.events(t, pReader, nil, "")
	r := h.do(req{method: "GET", path: "/v1/events", as: pReader})
	p := h.problem(r)
	if r.status != http.StatusTooManyRequests || p.Code != server.CodeRateLimited || r.header.Get("Retry-After") == "" ||
		!strings.Contains(p.Detail, `principal "reader" has 2 event streams and exports open`) {
		t.Fatalf("third stream of one principal: %d %+v, want 429 naming its share", r.status, p)
	}
	// Another principal still gets a stream: the reader did not take them all.
	h.events(t, pExporter, nil, "")
	r = h.do(req{method: "GET", path: "/v1/events", as: pClient})
	p = h.problem(r)
	if r.status != http.StatusServiceUnavailable || p.Code != server.CodeOverloaded || r.header.Get("Retry-After") == "" ||
		!strings.Contains(p.Detail, "the server has 3 event streams and exports open") || strings.Contains(p.Detail, "commit queue") {
		t.Fatalf("stream over the server's cap: %d %+v, want 503 naming the stream cap", r.status, p)
	}
	// Reads are not streams: served.
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
		t.Fatalf("a read while the reader holds its streams: %d %s", r.status, r.body)
	}
	m := string(h.do(req{method: "GET", path: "/metrics"}).body)
	for _, want := range []string{`govledger_limit_hits_total{limit="streams_per_principal"} 1`, `govledger_limit_hits_total{limit="streams"} 1`,
		`govledger_limit_hits_total{limit="writes"} 0`} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestWriteShares: a principal's slow writes hold its share of the write
// slots; another writer is served meanwhile.
func TestWriteShares(t *testing.T) {
	h := start(t, func(c *server.Config) { c.MaxInFlight, c.MaxInFlightPerPrincipal = 8, 1 })
	done := make(chan resp, 1)
	go func() { done <- h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("slow")}) }()
	<-h.fake.slowing // the slow write holds pAll's only slot
	r := h.do(req{method: "POST", path: "/v1/validate", as: pAll, body: docAB})
	p := h.problem(r)
	if r.status != http.StatusTooManyRequests || p.Code != server.CodeRateLimited || !strings.Contains(p.Detail, `principal "all" has 1 writes in flight`) {
		t.Fatalf("second write of one principal: %d %+v", r.status, p)
	}
	if r := h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterAn, body: docAB}); r.status != 201 {
		t.Fatalf("another writer meanwhile: %d %s", r.status, r.body)
	}
	if r := <-done; r.status != 201 {
		t.Fatalf("the slow write: %d %s", r.status, r.body)
	}
}

// rawRequest sends head and then body in pieces (each after its pause)
// on a new connection, and returns the answer and when it came.
func rawRequest(t *testing.T, addr, head string, pieces []string, pauses []time.Duration) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	answer := make(chan string, 1)
	go func() {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(conn)
		answer <- string(b)
	}()
	io.WriteString(conn, head)
	for i, piece := range pieces {
		select {
		case a := <-answer:
			return a, time.Since(start)
		case <-time.After(pauses[i]):
		}
		if _, err := io.WriteString(conn, piece); err != nil {
			break
		}
	}
	return <-answer, time.Since(start)
}

// TestMinBodyRate: a body dribbled below the minimum rate is cut after the
// grace period (408), while one that pauses but keeps the average rate
// is read whole: each chunk extends the deadline.
func TestMinBodyRate(t *testing.T) {
	h := start(t, func(c *server.Config) {
		c.MinBodyRate, c.BodyRateGrace, c.ReadTimeout = 1000, 300*time.Millisecond, 8*time.Second
	})
	head := func(n int) string {
		return fmt.Sprintf("POST /v1/handoffs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", h.tokens[pAll], n)
	}
	// 1 byte per 100ms: 10 bytes/s against a minimum of 1000.
	var pieces []string
	var pauses []time.Duration
	for range 40 {
		pieces, pauses = append(pieces, "x"), append(pauses, 100*time.Millisecond)
	}
	a, after := rawRequest(t, h.addr, head(40), pieces, pauses)
	if !strings.HasPrefix(a, "HTTP/1.1 408") || !strings.Contains(a, `"code":"REQUEST_TIMEOUT"`) ||
		!strings.Contains(a, "below the minimum of 1000 bytes per second") || !strings.Contains(a, `"written":"no"`) {
		t.Fatalf("dribbled body answered %q", a)
	}
	if after > 2*time.Second {
		t.Fatalf("dribbled body cut after %s, want soon after the 300ms grace", after)
	}
	// 2000 bytes, then a pause of 1.2s (the 2000 bytes earned 2s), then the rest: read whole.
	doc := docAB + strings.Repeat(" ", 3000-len(docAB))
	a, _ = rawRequest(t, h.addr, head(len(doc)), []string{doc[:2000], doc[2000:]}, []time.Duration{0, 1200 * time.Millisecond})
	if !strings.HasPrefix(a, "HTTP/1.1 201") {
		t.Fatalf("a body at the minimum average rate, with a pause: %q", firstLine(a))
	}
	if n := h.fake.count(); n != 1 {
		t.Fatalf("%d entries, want the one whole body", n)
	}
	m := string(h.do(req{method: "GET", path: "/metrics"}).body)
	if !strings.Contains(m, `govledger_limit_hits_total{limit="body_rate"} 1`+"\n") {
		t.Error("metrics lack body_rate 1")
	}
}

// keepAlive is a raw HTTP/1.1 connection reused for several requests.
type keepAlive struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{conn: c, br: bufio.NewReader(c)}
}

// get sends GET path with token and returns the status (0: the
// connection failed).
func (k *keepAlive) get(path, token string) int {
	k.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(k.conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, token); err != nil {
		return 0
	}
	res, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// closedByServer reports whether the server closed c, waiting up to wait.
func closedByServer(c net.Conn, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	ne, ok := err.(net.Error)
	return err != nil && !(ok && ne.Timeout())
}

// TestConnectionCaps: idle connections beyond the cap are closed oldest
// first and anonymous ones before a principal's; new connections still
// get in; with every connection busy a new one is refused with a 503
// problem.
func TestConnectionCaps(t *testing.T) {
	h := start(t, func(c *server.Config) { c.MaxConns, c.MaxIdleConns = 12, 6 })
	// An honest keep-alive connection, authenticated and idle.
	honest := dialKeepAlive(t, h.addr)
	if st := honest.get("/v1/blocks", h.tokens[pReader]); st != 200 {
		t.Fatalf("honest first request: %d", st)
	}
	// 40 anonymous connections that never send a byte.
	var idle []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	closed := 0
	for _, c := range idle {
		if closedByServer(c, 300*time.Millisecond) {
			closed++
		}
	}
	if closed < 40-6 {
		t.Fatalf("%d of 40 idle anonymous connections closed, want at least 34 (idle cap 6)", closed)
	}
	for i, c := range idle[:10] {
		if !closedByServer(c, 10*time.Millisecond) {
			t.Fatalf("idle connection %d (among the oldest) still open", i)
		}
	}
	// The principal's idle connection outlived the anonymous ones.
	if st := honest.get("/v1/blocks", h.tokens[pReader]); st != 200 {
		t.Fatalf("honest keep-alive connection after the flood: %d, want it kept (anonymous ones go first)", st)
	}
	// New clients still get in.
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
		t.Fatalf("a new client after the flood: %d", r.status)
	}
	m := string(h.do(req{method: "GET", path: "/metrics"}).body)
	if strings.Contains(m, `govledger_limit_hits_total{limit="idle_connections"} 0`+"\n") {
		t.Error("idle_connections hits still 0")
	}
}

// TestConnectionsAllBusy: with every connection busy (streams), a new one
// is answered 503 naming the connection cap, and served again once one
// ends.
func TestConnectionsAllBusy(t *testing.T) {
	h := start(t, func(c *server.Config) { c.MaxConns, c.MaxIdleConns = 2, 2 })
	h.client.CloseIdleConnections()
	a := h.events(t, pReader, nil, "")
	h.events(t, pExporter, nil, "")
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 503") || !strings.Contains(string(b), "2 connections open, all busy") ||
		!strings.Contains(string(b), "Retry-After: 1") {
		t.Fatalf("a connection over the cap: %q", b)
	}
	a.close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		k := dialKeepAlive(t, h.addr)
		if st := k.get("/v1/blocks", h.tokens[pReader]); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection admitted 5s after a stream ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeTokens writes f to path (as "govledger token" does).
func writeTokens(t *testing.T, path string, f *server.TokensFile) {
	t.Helper()
	if err := server.WriteTokensFile(path, f); err != nil {
		t.Fatal(err)
	}
}

// TestStreamAuthority: an event stream and an export end within 2s of the
// reload that revokes their token (the tokens file is polled), and a
// stream of a token that expires ends within 2s of its expiry.
func TestStreamAuthority(t *testing.T) {
	f, tokens := testTokens(t)
	path := filepath.Join(t.TempDir(), "tokens.json")
	writeTokens(t, path, f)
	var clock atomic.Int64
	clock.Store(testNow.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	// The exporter expires an hour after testNow.
	for i := range f.Tokens {
		if f.Tokens[i].Name == pExporter {
			f.Tokens[i].Expires = testNow.Add(time.Hour)
		}
	}
	writeTokens(t, path, f)
	store, err := server.OpenTokenStore(path, now)
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *server.Config) {
		c.Tokens, c.TokensFile, c.TokensPoll = store, path, 50*time.Millisecond
	})
	h.tokens = tokens
	h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docAB})

	reader := h.events(t, pReader, nil, "")
	exporter := h.events(t, pExporter, nil, "")
	client := h.events(t, pClient, nil, "")
	for _, c := range []*sseClient{reader, exporter, client} {
		if _, ok := c.next(2 * time.Second); !ok {
			t.Fatal("no first event")
		}
	}
	ended := func(c *sseClient, what string) time.Duration {
		t.Helper()
		start := time.Now()
		timeout := time.NewTimer(2 * time.Second) // one deadline: heartbeats must not extend it
		defer timeout.Stop()
		var last sseEvent
		for {
			select {
			case ev, ok := <-c.events:
				if !ok {
					if last.event != "revoked" || !strings.Contains(last.data, `"code":"UNAUTHENTICATED"`) {
						t.Fatalf("%s: stream ended with %+v, want a revoked event", what, last)
					}
					return time.Since(start)
				}
				if ev.event != "comment" {
					last = ev
				}
			case <-timeout.C:
				t.Fatalf("%s: stream still open 2s later", what)
			}
		}
	}
	// Revoke the reader by rewriting the file: no SIGHUP, no reload call.
	f.Remove(pReader)
	writeTokens(t, path, f)
	t.Logf("revoked stream ended after %s", ended(reader, "revoked token").Round(time.Millisecond))
	// The exporter's token expires.
	clock.Store(testNow.Add(time.Hour).UnixNano())
	t.Logf("expired stream ended after %s", ended(exporter, "expired token").Round(time.Millisecond))
	// The client's stream is untouched.
	if r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docBA}); r.status != 201 {
		t.Fatal(r.status)
	}
	if ev, ok := client.next(2 * time.Second); !ok || ev.event != "entry" {
		t.Fatalf("a stream whose token holds: %+v %v", ev, ok)
	}
	// A revoked token cannot open a new stream.
	if r := h.do(req{method: "GET", path: "/v1/events", as: pReader}); r.status != 401 {
		t.Fatalf("revoked token: %d", r.status)
	}
	// An invalid tokens file keeps the tokens in force.
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // several polls; nothing to wait for but their absence of effect
	if ev, ok := client.next(300 * time.Millisecond); ok && ev.event == "revoked" {
		t.Fatal("an invalid tokens file ended a stream")
	}
	if !strings.Contains(h.logs.String(), "tokens file changed but is invalid") {
		t.Error("no log line for the invalid tokens file")
	}
}
