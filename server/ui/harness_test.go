package ui_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ui"
)

// Principals of the test tokens.
const (
	pReader   = "reader"   // ledger:read
	pAuditor  = "auditor"  // ledger:read, payload:read
	pOperator = "operator" // ledger:read, payload:read, operator
	pWriter   = "writer"   // handoff:write for any agent
	pBlind    = "blind"    // handoff:write only: may not view
)

// site is a running server (real HTTP on 127.0.0.1) with the viewer
// mounted, over an in-memory ledger.
type site struct {
	t       testing.TB
	url     string
	ledger  *memLedger
	ui      *ui.UI
	tokens  map[string]string
	store   *server.TokenStore
	seeded  seeded
	metrics *server.Metrics
}

// seeded names the interesting entries of the seed.
type seeded struct {
	hostile   uint64 // the XSS corpus entry
	redacted  uint64 // an entry whose payload was redacted
	blocker   uint64 // the HASH_MISMATCH entry that blocked "coder"
	governed  uint64 // an accepted governed/1 entry with prompt hashes
	workflow  string // a workflow with a chain of handoffs
	hostileWF string // the hostile entry's workflow id
	total     int
}

func newSite(t testing.TB, mod func(*ui.Config)) *site {
	t.Helper()
	led, vkey := newMemLedger(t)
	f := &server.TokensFile{Version: server.TokensVersion}
	tokens := map[string]string{}
	for _, e := range []server.TokenEntry{
		{Name: pReader, Scopes: []server.Scope{server.ScopeLedgerRead}},
		{Name: pAuditor, Scopes: []server.Scope{server.ScopeLedgerRead, server.ScopePayloadRead}},
		{Name: pOperator, Scopes: []server.Scope{server.ScopeLedgerRead, server.ScopePayloadRead, server.ScopeOperator}},
		{Name: pWriter, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}},
		{Name: pBlind, Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}},
	} {
		tok, hash, err := server.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, e.Created = hash, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		if err := f.Add(e); err != nil {
			t.Fatal(err)
		}
		tokens[e.Name] = tok
	}
	s := &site{t: t, ledger: led, tokens: tokens, store: server.NewTokenStore(f, nil)}
	s.seeded = seed(led)
	cfg := ui.Config{Backend: led, Tokens: s.store, VerifierKey: vkey, PageSize: 20,
		LastVerify: func() *ui.VerifyResult {
			return &ui.VerifyResult{Time: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), OK: true, Entries: 40, Detail: "chain, decisions and tree intact"}
		}}
	if mod != nil {
		mod(&cfg)
	}
	var err error
	if s.ui, err = ui.New(cfg); err != nil {
		t.Fatal(err)
	}
	if s.metrics, err = server.NewMetrics(nil); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Backend: led, Tokens: s.store, UI: s.ui, Metrics: s.metrics,
		WriteTimeout: 10 * time.Second, Heartbeat: time.Second, ShutdownTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return 10s after its context ended")
		}
	})
	return s
}

// XSS corpus: each of these, rendered as markup anywhere, would run
// script that sets window.__xss or opens a dialog.
var xssCorpus = []string{
	`<script>window.__xss=1;alert(1)</script>`,
	`"><img src=x onerror="window.__xss=2;alert(2)">`,
	`javascript:window.__xss=3;alert(3)`,
	`<svg xmlns="http://www.w3.org/2000/svg" onload="window.__xss=4;alert(4)"><script>window.__xss=5</script></svg>`,
	`<a href="javascript:window.__xss=6;alert(6)">click</a>`,
	`'><iframe srcdoc="<script>parent.__xss=7</script>"></iframe>`,
	`</textarea></pre></title><script>window.__xss=8</script>`,
	`{{.}}<style>body{display:none}</style><math><mtext><script>window.__xss=9</script>`,
}

func hostile() string { return strings.Join(xssCorpus, " ") }

// govDoc is a governed/1 document (accepted by its format's rules).
func govDoc(id, src, tgt, srcHash, tgtHash, input string) []byte {
	in := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(input)
	return fmt.Appendf(nil, `{
  "handoff_id": %q,
  "timestamp": "2026-11-24T09:00:00Z",
  "protocol_version": "1.0.0",
  "source_agent": {"agent_type": "domain", "agent_id": %q, "agent_version": "1.0.0", "prompt_hash": %q},
  "target_agent": {"agent_type": "domain", "agent_id": %q, "agent_version": "1.2.0", "prompt_hash": %q},
  "context": {
    "request": {"type": "task", "description": "Carry on with the release", "input_data": "%s", "constraints": [], "expected_output": "a report"},
    "state": {"conversation_history": [], "accumulated_context": {}, "decisions_made": []}
  },
  "governance": {"source_agent_verified": true, "target_agent_verified": true, "composition_valid": true, "boundaries_respected": true, "audit_trail": "audit/1"}
}`, id, src, srcHash, tgt, tgtHash, in)
}

func uuidN(n int) string { return fmt.Sprintf("3d2c1b0a-9f8e-4d7c-a6b5-%012x", n) }

func hashN(n int) string { return fmt.Sprintf("%064x", n*0x1111+0xabc) }

// seed fills the ledger: snapshots, a release workflow of handoffs
// between four agents (some rejected), a block, the XSS corpus, a
// redaction.
func seed(m *memLedger) seeded {
	var s seeded
	size := int64(120)
	sum := entry.Sum256([]byte("manifest"))
	m.add(&entry.Entry{Kind: entry.KindSnapshot, What: entry.SnapshotManifest, ContentSHA256: &sum, Size: &size, Submitter: "ops"}, nil)
	m.add(&entry.Entry{Kind: entry.KindSnapshot, What: entry.SnapshotLock, ContentSHA256: &sum, Size: &size, Submitter: "ops"}, nil)
	agents := []string{"planner", "coder", "reviewer", "deployer"}
	s.workflow = "wf-release-7"
	for i := range 30 {
		src, tgt := agents[i%4], agents[(i+1)%4]
		var rs []reason.Reason
		format := "governed/1"
		switch {
		case i%7 == 3:
			rs = []reason.Reason{{Code: reason.BoundaryViolation, Severity: reason.Error, Field: "target_agent.agent_id", Message: "the registry does not allow this handoff"}}
		case i%5 == 4:
			rs = []reason.Reason{{Code: reason.Stale, Severity: reason.Error, Field: "timestamp", Message: "document older than the maximum age"}}
		}
		if i%3 == 2 {
			format = "vbw/1"
		}
		wf := s.workflow
		if i >= 20 {
			wf = "wf-nightly"
		}
		e := handoffEntry(format, uuidN(i), src, tgt, wf, "ci-bot", rs)
		doc := govDoc(uuidN(i), src, tgt, hashN(i%4+i/12*10), hashN((i+1)%4), "step "+fmt.Sprint(i))
		v := m.add(e, doc)
		if i == 4 {
			s.governed = v.Seq
		}
	}
	blk := handoffEntry("governed/1", uuidN(100), "coder", "reviewer", s.workflow, "ci-bot",
		[]reason.Reason{{Code: reason.HashMismatch, Severity: reason.Critical, Field: "source_agent.prompt_hash", Message: "prompt hash differs from the lock"}})
	blk.Blocks = []string{"coder"}
	s.blocker = m.add(blk, govDoc(uuidN(100), "coder", "reviewer", hashN(999), hashN(2), "drifted")).Seq
	s.hostileWF = `wf-"><img src=x onerror="window.__xss=10">`
	h := handoffEntry("governed/1", `<script>window.__xss=11</script>`, "planner", "reviewer", s.hostileWF,
		`<svg onload="window.__xss=12">`, []reason.Reason{{Code: reason.SchemaInvalid, Severity: reason.Error, Field: `<b onmouseover="window.__xss=13">`,
			Message: `see <a href="javascript:window.__xss=14">javascript:window.__xss=14</a>`}})
	s.hostile = m.add(h, govDoc(uuidN(101), "planner", "reviewer", hashN(1), hashN(2), hostile())).Seq
	red := m.add(handoffEntry("governed/1", uuidN(102), "planner", "coder", s.workflow, "ci-bot", nil), govDoc(uuidN(102), "planner", "coder", hashN(1), hashN(2), "secret customer data"))
	if _, err := m.Redact(context.Background(), red.Seq, "personal data", "dpo"); err != nil {
		panic(err)
	}
	s.redacted = red.Seq
	for i := range 6 {
		m.add(handoffEntry("task/1", uuidN(200+i), "reviewer", "deployer", "wf-nightly", "ci-bot", nil), []byte("## Handoff\n\n"+hostile()))
	}
	m.mu.Lock()
	s.total = len(m.entries)
	m.mu.Unlock()
	return s
}

// client is an HTTP client with its own cookie jar that does not follow
// redirects.
type client struct {
	t           testing.TB
	s           *site
	hc          *http.Client
	loginAnswer answer
}

func (s *site) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: s.t, s: s, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (c *client) do(method, path string, form url.Values, hdr map[string]string) answer {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.s.url+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

func (c *client) get(path string) answer { return c.do("GET", path, nil, nil) }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in as principal through the form, as a browser does.
func (c *client) login(principal string) {
	c.t.Helper()
	a := c.get("/ui/login")
	m := csrfField.FindStringSubmatch(a.body)
	if a.status != 200 || m == nil {
		c.t.Fatalf("GET /ui/login: %d, no csrf field in %s", a.status, a.body)
	}
	a = c.do("POST", "/ui/login", url.Values{"csrf": {m[1]}, "token": {c.s.tokens[principal]}, "next": {"/ui/"}}, nil)
	c.loginAnswer = a
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/" {
		c.t.Fatalf("POST /ui/login as %s: %d %s, want 303 to /ui/", principal, a.status, a.body)
	}
}

// csrf returns the CSRF token of a page of the logged-in session.
func (c *client) csrf() string {
	c.t.Helper()
	a := c.get("/ui/")
	m := csrfField.FindStringSubmatch(a.body)
	if m == nil {
		c.t.Fatalf("no csrf field on /ui/ (%d)", a.status)
	}
	return m[1]
}

// submit posts a handoff through the API as the writer.
func (s *site) submit(doc []byte) uint64 {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url+"/v1/handoffs", strings.NewReader(string(doc)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.tokens[pWriter])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		s.t.Fatalf("POST /v1/handoffs: %d %s", res.StatusCode, b)
	}
	var seq uint64
	if _, err := fmt.Sscanf(string(b), `{"seq":%d`, &seq); err != nil {
		s.t.Fatalf("POST /v1/handoffs answered %s: %v", b, err)
	}
	return seq
}
