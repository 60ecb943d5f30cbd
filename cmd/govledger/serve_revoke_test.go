package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// sseStream is an open GET /v1/events of a real server.
type sseStream struct {
	events chan string // "event: data" of each event, closed when the stream ends
	cancel context.CancelFunc
}

// openStream opens /v1/events with the given client and credential
// header (none for a cookie jar's session).
func openStream(t *testing.T, hc *http.Client, s *liveServer, headers ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/events", nil)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events: %v %v", err, resp)
	}
	st := &sseStream{events: make(chan string, 64), cancel: cancel}
	go func() {
		defer close(st.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev, data string
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.HasPrefix(line, "event: "):
				ev = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "" && ev != "":
				st.events <- ev + ": " + data
				ev, data = "", ""
			}
		}
	}()
	return st
}

// endsWithin waits for the stream to end within d of now and returns its
// last event.
func (st *sseStream) endsWithin(t *testing.T, what string, d time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var last string
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				return last, time.Since(start)
			}
			last = ev
		case <-timer.C:
			t.Fatalf("%s: the stream is still open %s later", what, d)
		}
	}
}

// TestServeRevokesStreams: against a real "govledger serve", a token
// revoked with "govledger token revoke" (no SIGHUP: the tokens file is
// polled), a token that expires, and a viewer session that logs out, each
// while its event stream is open: every stream ends within 2s, with a
// "revoked" event naming why; a stream whose credential holds stays open.
func TestServeRevokesStreams(t *testing.T) {
	e := newServeEnv(t, "registry")
	// A token that expires in a few seconds.
	f, err := server.ReadTokensFile(e.tokens)
	if err != nil {
		t.Fatal(err)
	}
	tok, hash, err := server.NewToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(4 * time.Second).Truncate(time.Second).Add(time.Second)
	if err := f.Add(server.TokenEntry{Name: "shortlived", Hash: hash, Scopes: []server.Scope{server.ScopeLedgerRead},
		Created: expires.Add(-time.Hour), Expires: expires}); err != nil {
		t.Fatal(err)
	}
	if err := server.WriteTokensFile(e.tokens, f); err != nil {
		t.Fatal(err)
	}
	e.tok["shortlived"] = tok
	s := e.start()
	hc := &http.Client{}
	bearer := func(name string) string { return "Authorization: Bearer " + e.tok[name] }

	honest := openStream(t, hc, s, bearer("auditor"))
	revoked := openStream(t, hc, s, bearer("reader"))
	expiring := openStream(t, hc, s, bearer("shortlived"))

	// Revoked with the CLI, as an operator would: no signal, no reload call.
	if out, code := e.cli("token", "revoke", "--tokens", e.tokens, "reader"); code != 0 {
		t.Fatalf("token revoke: %d %s", code, out)
	}
	last, after := revoked.endsWithin(t, "revoked token", 2*time.Second)
	if !strings.HasPrefix(last, "revoked: ") || !strings.Contains(last, `"code":"UNAUTHENTICATED"`) {
		t.Fatalf("revoked stream's last event %q, want a revoked event", last)
	}
	t.Logf("stream of the revoked token ended %s after 'token revoke' returned", after.Round(time.Millisecond))

	// Expired: the stream ends within 2s of the expiry.
	// (Entries, such as the snapshots serve recorded at start-up, may
	// come meanwhile; the stream must not end.)
	for wait := time.Until(expires); wait > 0; wait = time.Until(expires) {
		select {
		case ev, ok := <-expiring.events:
			if !ok || !strings.HasPrefix(ev, "entry: ") {
				t.Fatalf("the expiring token's stream changed before its expiry: %q %v", ev, ok)
			}
		case <-time.After(wait):
		}
	}
	last, after = expiring.endsWithin(t, "expired token", 2*time.Second)
	if !strings.HasPrefix(last, "revoked: ") || !strings.Contains(last, "expired") {
		t.Fatalf("expired stream's last event %q", last)
	}
	t.Logf("stream of the expired token ended %s after its expiry", after.Round(time.Millisecond))

	// A viewer session's stream (the timeline's live tail) ends at logout.
	jar, _ := cookiejar.New(nil)
	viewer := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	form := func(path, html string, extra url.Values) {
		t.Helper()
		m := csrf.FindStringSubmatch(html)
		if m == nil {
			t.Fatalf("no CSRF field before POST %s in %s", path, html)
		}
		extra.Set("csrf", m[1])
		resp, err := viewer.PostForm(s.url+path, extra)
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	page := func(path string) string {
		t.Helper()
		resp, err := viewer.Get(s.url + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, err, resp)
		}
		defer resp.Body.Close()
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		return b.String()
	}
	form("/ui/login", page("/ui/login"), url.Values{"token": {e.tok["auditor"]}, "next": {"/ui/"}})
	session := openStream(t, viewer, s)
	form("/ui/logout", page("/ui/"), url.Values{})
	last, after = session.endsWithin(t, "viewer logout", 2*time.Second)
	if !strings.HasPrefix(last, "revoked: ") {
		t.Fatalf("logged-out session's stream ended with %q", last)
	}
	t.Logf("stream of the logged-out session ended %s after the logout", after.Round(time.Millisecond))

	// The auditor's own bearer stream holds on and still gets entries.
	if a := e.do(s, "POST", "/v1/handoffs", "product", demoDoc(t, "01-product-to-analysis.json")); a.status != 201 {
		t.Fatalf("submission: %d %s", a.status, a.body)
	}
	select {
	case ev, ok := <-honest.events:
		if !ok || !strings.HasPrefix(ev, "entry: ") {
			t.Fatalf("the stream whose token holds: %q %v", ev, ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream whose token holds got no entry")
	}
	if a := e.do(s, "GET", "/v1/events", "reader", nil); a.status != 401 {
		t.Fatalf("a revoked token opening a stream: %d", a.status)
	}
	if s.logLine("tokens file changed: tokens reloaded") == nil {
		t.Error("no log line for the reloaded tokens file")
	}
}
