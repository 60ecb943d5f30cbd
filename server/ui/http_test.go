package ui_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint/bundle"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ui"
)

// problem checks that a is a problem answer with status and code.
func problem(t *testing.T, what string, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s: %d %q %s, want %d application/problem+json", what, a.status, a.header.Get("Content-Type"), a.body, status)
	}
	var p server.Problem
	if err := json.Unmarshal([]byte(a.body), &p); err != nil {
		t.Fatalf("%s: problem %s: %v", what, a.body, err)
	}
	if p.Code != code || p.Status != status {
		t.Fatalf("%s: problem %+v, want code %s", what, p, code)
	}
}

func (s *site) pages() []string {
	return []string{"/ui/", "/ui/timeline", "/ui/timeline?decision=rejected", fmt.Sprintf("/ui/entries/%d", s.seeded.hostile),
		fmt.Sprintf("/ui/entries/%d", s.seeded.governed), fmt.Sprintf("/ui/entries/%d", s.seeded.redacted), "/ui/entries/1",
		"/ui/workflows/" + url.PathEscape(s.seeded.workflow), "/ui/workflows/" + url.PathEscape(s.seeded.hostileWF),
		"/ui/agents/coder", "/ui/agents/planner", "/ui/evidence"}
}

func TestLoginLogout(t *testing.T) {
	s := newSite(t, nil)
	c := s.client()
	a := c.get("/ui/timeline?decision=rejected")
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/login?next="+url.QueryEscape("/ui/timeline?decision=rejected") {
		t.Fatalf("GET /ui/timeline without a session: %d to %q, want 303 to the login page", a.status, a.header.Get("Location"))
	}
	problem(t, "POST without a session", c.do("POST", "/ui/agents/coder/unblock", url.Values{"reason": {"x"}}, nil), 401, server.CodeUnauthenticated)
	c.login(pReader)
	var cookie *http.Cookie
	for _, ck := range c.hc.Jar.Cookies(mustURL(t, s.url+"/")) {
		if ck.Name == ui.SessionCookie {
			cookie = ck
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie after login")
	}
	for _, p := range s.pages() {
		if a := c.get(p); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q", p, a.status, a.header.Get("Content-Type"))
		}
	}
	// The session authenticates the API's reads, never its writes.
	if a := c.get("/v1/entries?limit=1"); a.status != 200 {
		t.Errorf("GET /v1/entries with the session cookie: %d %s", a.status, a.body)
	}
	problem(t, "POST /v1/handoffs with only the session cookie", c.do("POST", "/v1/handoffs", url.Values{"x": {"y"}}, nil), 401, server.CodeUnauthenticated)
	problem(t, "logout without CSRF", c.do("POST", "/ui/logout", url.Values{}, nil), 403, server.CodeForbiddenCSRF)
	a = c.do("POST", "/ui/logout", url.Values{"csrf": {c.csrf()}}, nil)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/login" {
		t.Fatalf("logout: %d %q", a.status, a.header.Get("Location"))
	}
	if a := c.get("/ui/"); a.status != http.StatusSeeOther {
		t.Errorf("GET /ui/ after logout: %d, want 303 to login", a.status)
	}
	// The old cookie, replayed, is dead everywhere.
	old := s.client()
	old.hc.Jar.SetCookies(mustURL(t, s.url+"/"), []*http.Cookie{{Name: ui.SessionCookie, Value: cookie.Value, Path: "/"}})
	problem(t, "API read with a logged-out session", old.get("/v1/entries"), 401, server.CodeUnauthenticated)
	if a := old.get("/ui/"); a.status != http.StatusSeeOther {
		t.Errorf("GET /ui/ with a logged-out session: %d, want 303", a.status)
	}
	found := false
	for _, sc := range c.loginAnswer.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, ui.SessionCookie+"=") {
			found = true
			if !strings.Contains(sc, "; HttpOnly") || !strings.Contains(sc, "; SameSite=Strict") || !strings.Contains(sc, "; Path=/;") {
				t.Errorf("session cookie %q: want HttpOnly, SameSite=Strict, Path=/", sc)
			}
		}
	}
	if !found {
		t.Errorf("login set no %s cookie", ui.SessionCookie)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestLoginRefusals(t *testing.T) {
	s := newSite(t, nil)
	loginForm := func(c *client) string {
		a := c.get("/ui/login")
		m := csrfField.FindStringSubmatch(a.body)
		if m == nil {
			t.Fatalf("no csrf on the login form: %s", a.body)
		}
		if sc := a.header.Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
			t.Errorf("login cookie %q: want HttpOnly and SameSite=Strict", sc)
		}
		return m[1]
	}
	for _, tc := range []struct {
		name   string
		form   func(csrf string) url.Values
		status int
		code   string
	}{
		{"unknown token", func(c string) url.Values { return url.Values{"csrf": {c}, "token": {"glt_nope"}} }, 401, server.CodeUnauthenticated},
		{"empty token", func(c string) url.Values { return url.Values{"csrf": {c}, "token": {""}} }, 401, server.CodeUnauthenticated},
		{"no ledger:read", func(c string) url.Values { return url.Values{"csrf": {c}, "token": {s.tokens[pBlind]}} }, 403, server.CodeForbiddenScope},
		{"no csrf", func(c string) url.Values { return url.Values{"token": {s.tokens[pReader]}} }, 403, server.CodeForbiddenCSRF},
		{"wrong csrf", func(c string) url.Values { return url.Values{"csrf": {c + "x"}, "token": {s.tokens[pReader]}} }, 403, server.CodeForbiddenCSRF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.client()
			problem(t, tc.name, c.do("POST", "/ui/login", tc.form(loginForm(c)), nil), tc.status, tc.code)
			if a := c.get("/ui/"); a.status != http.StatusSeeOther {
				t.Errorf("after a refused login GET /ui/: %d, want 303 to login", a.status)
			}
		})
	}
	// The login never redirects off the viewer.
	for next, want := range map[string]string{"//evil.example/": "/ui/", "https://evil.example/": "/ui/", "/ui/agents/coder": "/ui/agents/coder", "/ui//evil": "/ui/"} {
		c := s.client()
		a := c.do("POST", "/ui/login", url.Values{"csrf": {loginForm(c)}, "token": {s.tokens[pReader]}, "next": {next}}, nil)
		if a.status != http.StatusSeeOther || a.header.Get("Location") != want {
			t.Errorf("login with next=%q: %d to %q, want 303 to %q", next, a.status, a.header.Get("Location"), want)
		}
	}
}

var (
	scriptTag   = regexp.MustCompile(`(?i)<script\b[^>]*>`)
	ourScript   = regexp.MustCompile(`^<script src="/ui/static/[a-z]+\.js" defer>$`)
	styleAttr   = regexp.MustCompile(`(?i)\sstyle\s*=`)
	handlerAttr = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	rawMarkup   = regexp.MustCompile(`(?i)<(img|iframe|math|style|svg xmlns|a href="javascript)`)
)

// TestPagesInert renders every page as the most privileged viewer and
// checks the HTML: the CSP and framing headers, no inline script, no style
// attribute, no event handler attribute, and no document markup from the
// XSS corpus (which the seed puts in ids, submitter, reasons and payloads).
func TestPagesInert(t *testing.T) {
	s := newSite(t, nil)
	c := s.client()
	c.login(pOperator)
	pages := append(s.pages(), "/ui/timeline?agent=planner", "/ui/evidence?agent=coder")
	for _, p := range pages {
		a := c.get(p)
		if a.status != 200 {
			t.Errorf("GET %s: %d %s", p, a.status, a.body)
			continue
		}
		if got := a.header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy {
			t.Errorf("GET %s: CSP %q", p, got)
		}
		if a.header.Get("X-Frame-Options") != "DENY" || a.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: X-Frame-Options %q, X-Content-Type-Options %q", p, a.header.Get("X-Frame-Options"), a.header.Get("X-Content-Type-Options"))
		}
		for _, tag := range scriptTag.FindAllString(a.body, -1) {
			if !ourScript.MatchString(tag) {
				t.Errorf("GET %s: script tag %q", p, tag)
			}
		}
		for _, re := range []*regexp.Regexp{styleAttr, handlerAttr, rawMarkup} {
			if m := re.FindString(a.body); m != "" {
				t.Errorf("GET %s: %q in the HTML", p, m)
			}
		}
	}
	// The hostile strings are there, as text.
	a := c.get(fmt.Sprintf("/ui/entries/%d", s.seeded.hostile))
	for _, want := range []string{"&lt;script&gt;window.__xss=11&lt;/script&gt;", "&lt;svg onload=&#34;window.__xss=12&#34;&gt;", "javascript:window.__xss=3;alert(3)"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("entry %d: %q not shown as text", s.seeded.hostile, want)
		}
	}
}

func TestScopesOnPages(t *testing.T) {
	s := newSite(t, nil)
	entryPage := fmt.Sprintf("/ui/entries/%d", s.seeded.governed)
	for _, tc := range []struct {
		who          string
		payload      bool
		redactForm   bool
		unblockForm  bool
		bundlePaylod bool
	}{
		{pReader, false, false, false, false},
		{pAuditor, true, false, false, true},
		{pOperator, true, true, true, true},
	} {
		t.Run(tc.who, func(t *testing.T) {
			c := s.client()
			c.login(tc.who)
			a := c.get(entryPage)
			if got := strings.Contains(a.body, `id="payload"`); got != tc.payload {
				t.Errorf("payload shown: %v, want %v", got, tc.payload)
			}
			if !tc.payload && !strings.Contains(a.body, "needs the payload:read scope") {
				t.Errorf("no note saying the payload needs payload:read")
			}
			if !strings.Contains(a.body, hashN(0)) || !strings.Contains(a.body, hashN(1)) {
				t.Errorf("the agents' prompt hashes %s, %s are not on the entry page", hashN(0), hashN(1))
			}
			if got := strings.Contains(a.body, `action="/ui/entries/`); got != tc.redactForm {
				t.Errorf("redact form: %v, want %v", got, tc.redactForm)
			}
			if got := strings.Contains(c.get("/ui/agents/coder").body, "/unblock"); got != tc.unblockForm {
				t.Errorf("unblock form: %v, want %v", got, tc.unblockForm)
			}
			b := c.get(fmt.Sprintf("/ui/evidence/bundle?seq=%d", s.seeded.governed))
			if got := strings.Contains(b.body, `"payload_b64"`); got != tc.bundlePaylod {
				t.Errorf("bundle has the payload: %v, want %v", got, tc.bundlePaylod)
			}
			r := c.get(fmt.Sprintf("/ui/entries/%d", s.seeded.redacted))
			if !strings.Contains(r.body, `<p id="payload-note">redacted</p>`) {
				t.Errorf("redacted entry does not say redacted")
			}
		})
	}
}

// TestOperatorCSRF posts the operator forms without, with a wrong and
// with a foreign CSRF token or origin: each is refused and nothing is
// appended; the right token, reason and confirmation append one entry.
func TestOperatorCSRF(t *testing.T) {
	s := newSite(t, nil)
	c := s.client()
	c.login(pOperator)
	tok := c.csrf()
	other := s.client()
	other.login(pOperator)
	otherTok := other.csrf()
	// wrongTok differs from tok in its last character, whatever that is.
	last := "A"
	if strings.HasSuffix(tok, last) {
		last = "B"
	}
	wrongTok := tok[:len(tok)-1] + last
	unblock, redact := "/ui/agents/coder/unblock", fmt.Sprintf("/ui/entries/%d/redact", s.seeded.governed)
	count := func() int {
		s.ledger.mu.Lock()
		defer s.ledger.mu.Unlock()
		return len(s.ledger.entries)
	}
	before := count()
	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		hdr    map[string]string
		status int
		code   string
	}{
		{"unblock without token", unblock, url.Values{"reason": {"fixed"}, "confirm": {"coder"}}, nil, 403, server.CodeForbiddenCSRF},
		{"unblock with a wrong token", unblock, url.Values{"csrf": {wrongTok}, "reason": {"fixed"}, "confirm": {"coder"}}, nil, 403, server.CodeForbiddenCSRF},
		{"unblock with another session's token", unblock, url.Values{"csrf": {otherTok}, "reason": {"fixed"}, "confirm": {"coder"}}, nil, 403, server.CodeForbiddenCSRF},
		{"unblock from another origin", unblock, url.Values{"csrf": {tok}, "reason": {"fixed"}, "confirm": {"coder"}}, map[string]string{"Origin": "http://evil.example"}, 403, server.CodeForbiddenCSRF},
		{"unblock from another site", unblock, url.Values{"csrf": {tok}, "reason": {"fixed"}, "confirm": {"coder"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, server.CodeForbiddenCSRF},
		{"unblock without reason", unblock, url.Values{"csrf": {tok}, "reason": {"  "}, "confirm": {"coder"}}, nil, 422, server.CodeInvalidParameters},
		{"unblock without confirmation", unblock, url.Values{"csrf": {tok}, "reason": {"fixed"}, "confirm": {"coders"}}, nil, 422, server.CodeInvalidParameters},
		{"redact without token", redact, url.Values{"reason": {"gdpr"}, "confirm": {strconv.FormatUint(s.seeded.governed, 10)}}, nil, 403, server.CodeForbiddenCSRF},
		{"redact without confirmation", redact, url.Values{"csrf": {tok}, "reason": {"gdpr"}, "confirm": {"1"}}, nil, 422, server.CodeInvalidParameters},
		{"unblock an agent not blocked", "/ui/agents/planner/unblock", url.Values{"csrf": {tok}, "reason": {"x"}, "confirm": {"planner"}}, nil, 404, server.CodeNotFound},
	} {
		problem(t, tc.name, c.do("POST", tc.path, tc.form, tc.hdr), tc.status, tc.code)
	}
	if n := count(); n != before {
		t.Fatalf("refused posts appended %d entries", n-before)
	}
	// A reader holding a valid CSRF token still lacks the scope.
	rd := s.client()
	rd.login(pReader)
	problem(t, "unblock as a reader", rd.do("POST", unblock, url.Values{"csrf": {rd.csrf()}, "reason": {"x"}, "confirm": {"coder"}}, nil), 403, server.CodeForbiddenScope)
	a := c.do("POST", unblock, url.Values{"csrf": {tok}, "reason": {"prompt re-reviewed"}, "confirm": {"coder"}}, map[string]string{"Origin": s.url, "Sec-Fetch-Site": "same-origin"})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != fmt.Sprintf("/ui/entries/%d", before+1) {
		t.Fatalf("unblock: %d to %q %s", a.status, a.header.Get("Location"), a.body)
	}
	a = c.do("POST", redact, url.Values{"csrf": {tok}, "reason": {"gdpr"}, "confirm": {strconv.FormatUint(s.seeded.governed, 10)}}, nil)
	if a.status != http.StatusSeeOther || count() != before+2 {
		t.Fatalf("redact: %d %s; %d entries, want %d", a.status, a.body, count(), before+2)
	}
	if e := c.get(fmt.Sprintf("/ui/entries/%d", before+1)); !strings.Contains(e.body, "prompt re-reviewed") || !strings.Contains(e.body, ">operator<") {
		t.Errorf("the unblock entry does not show its note and operator")
	}
}

func TestEvidence(t *testing.T) {
	s := newSite(t, func(c *ui.Config) { c.MaxSlice = 25 })
	c := s.client()
	c.login(pAuditor)
	a := c.get(fmt.Sprintf("/ui/evidence/bundle?seq=%d", s.seeded.governed))
	if a.status != 200 || !strings.Contains(a.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("bundle: %d %q", a.status, a.header.Get("Content-Disposition"))
	}
	v, err := note.NewVerifier(s.ui.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	res, err := bundle.Verify([]byte(a.body), note.VerifierList(v))
	if err != nil {
		t.Fatalf("the downloaded bundle does not verify: %v\n%s", err, a.body)
	}
	if res.Seq != s.seeded.governed {
		t.Errorf("bundle of entry %d, want %d", res.Seq, s.seeded.governed)
	}
	// A slice: the filter's entries, oldest first, each line an export line.
	a = c.get("/ui/evidence/slice?agent=coder&decision=rejected")
	if a.status != 200 || a.header.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("slice: %d %q %s", a.status, a.header.Get("Content-Type"), a.body)
	}
	var seqs []uint64
	sc := bufio.NewScanner(strings.NewReader(a.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Entry struct {
				Seq      uint64 `json:"seq"`
				Decision string `json:"decision"`
				Source   string `json:"source"`
				Target   string `json:"target"`
			} `json:"entry"`
			Hash       string `json:"hash"`
			PayloadB64 string `json:"payload_b64"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("slice line %s: %v", sc.Bytes(), err)
		}
		if line.Entry.Decision != "rejected" || line.Entry.Source != "coder" && line.Entry.Target != "coder" || line.PayloadB64 == "" || len(line.Hash) != 64 {
			t.Errorf("slice line %s does not match the filter", sc.Bytes())
		}
		seqs = append(seqs, line.Entry.Seq)
	}
	if len(seqs) < 2 || !slices.IsSorted(seqs) {
		t.Errorf("slice seqs %v: want several, ascending", seqs)
	}
	// Streamed, not buffered whole: no Content-Length.
	if cl := a.header.Get("Content-Length"); cl != "" || len(a.body) < 4096 {
		t.Errorf("slice of %d bytes answered with Content-Length %q: want it streamed (and the fixture over 4 KiB)", len(a.body), cl)
	}
	problem(t, "slice over MaxSlice", c.get("/ui/evidence/slice"), 422, server.CodeInvalidParameters)
	problem(t, "bundle without seq", c.get("/ui/evidence/bundle"), 400, server.CodeBadRequest)
	problem(t, "bundle beyond the head", c.get("/ui/evidence/bundle?seq=9999"), 404, server.CodeNotFound)
	rd := s.client()
	rd.login(pReader)
	if a := rd.get("/ui/evidence/slice?agent=coder&decision=rejected"); strings.Contains(a.body, "payload_b64") || a.status != 200 {
		t.Errorf("a reader's slice: %d, carries payloads: %v", a.status, strings.Contains(a.body, "payload_b64"))
	}
}

var rowSeq = regexp.MustCompile(`<tr data-seq="(\d+)">`)

func pageSeqs(body string) []uint64 {
	var out []uint64
	for _, m := range rowSeq.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

var olderLink = regexp.MustCompile(`<a href="([^"]+)" rel="next" id="older">`)

func TestTimelineFiltersAndPaging(t *testing.T) {
	s := newSite(t, nil)
	c := s.client()
	c.login(pReader)
	// Paging through everything visits every entry once, newest first.
	var all []uint64
	next := "/ui/timeline"
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages")
		}
		a := c.get(next)
		all = append(all, pageSeqs(a.body)...)
		next = ""
		if m := olderLink.FindStringSubmatch(a.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(all) != s.seeded.total || !slices.IsSortedFunc(all, func(a, b uint64) int { return int(b) - int(a) }) {
		t.Fatalf("paging visited %d entries (%v), want %d newest first", len(all), all, s.seeded.total)
	}
	for _, tc := range []struct {
		query string
		ok    func(r map[string]any) bool
	}{
		{"decision=rejected", func(r map[string]any) bool { return r["decision"] == "rejected" }},
		{"agent=deployer", func(r map[string]any) bool { return r["source"] == "deployer" || r["target"] == "deployer" }},
		{"format=vbw%2F1", func(r map[string]any) bool { return r["format"] == "vbw/1" }},
		{"code=STALE", func(r map[string]any) bool { return strings.Contains(fmt.Sprint(r["reasons"]), "STALE") }},
		{"workflow=wf-nightly&decision=accepted", func(r map[string]any) bool { return r["workflow_id"] == "wf-nightly" && r["decision"] == "accepted" }},
		{"kind=snapshot", func(r map[string]any) bool { return r["kind"] == "snapshot" }},
		{"since=2026-11-24T09:05&until=2026-11-24T09:08:00Z", func(r map[string]any) bool {
			return r["time"].(string) >= "2026-11-24T09:05:00Z" && r["time"].(string) < "2026-11-24T09:08:00Z"
		}},
	} {
		a := c.get("/ui/timeline?" + tc.query)
		seqs := pageSeqs(a.body)
		if a.status != 200 || len(seqs) == 0 {
			t.Errorf("timeline?%s: %d, %d rows", tc.query, a.status, len(seqs))
			continue
		}
		// Every row matches, and every matching entry (of the newest page) is there.
		want := 0
		for seq := s.seeded.total; seq >= 1 && want < 20; seq-- {
			if tc.ok(s.ledger.entryMap(uint64(seq))) {
				want++
				if !slices.Contains(seqs, uint64(seq)) {
					t.Errorf("timeline?%s: entry %d matches but is not shown", tc.query, seq)
				}
			}
		}
		for _, seq := range seqs {
			if !tc.ok(s.ledger.entryMap(seq)) {
				t.Errorf("timeline?%s: entry %d shown but does not match", tc.query, seq)
			}
		}
		if len(seqs) != want {
			t.Errorf("timeline?%s: %d rows, want %d", tc.query, len(seqs), want)
		}
	}
	for _, q := range []string{"decision=maybe", "agent=%3Cscript%3E", "format=html", "code=lower", "since=yesterday",
		"since=2026-11-25T00:00&until=2026-11-24T00:00", "before=0", "before=01", "page=2", "kind=x", "agent=a&agent=b"} {
		problem(t, "timeline?"+q, c.get("/ui/timeline?"+q), 400, server.CodeBadRequest)
	}
	problem(t, "no such page", c.get("/ui/nope"), 404, server.CodeNotFound)
	problem(t, "entry beyond the head", c.get("/ui/entries/9999"), 404, server.CodeNotFound)
	problem(t, "entry 0", c.get("/ui/entries/0"), 400, server.CodeBadRequest)
	problem(t, "unknown workflow", c.get("/ui/workflows/none"), 404, server.CodeNotFound)
	problem(t, "bad agent", c.get("/ui/agents/BAD%20ID"), 400, server.CodeBadRequest)
	problem(t, "unknown static file", c.get("/ui/static/nope.js"), 404, server.CodeNotFound)
	problem(t, "PUT on a page", c.do("PUT", "/ui/timeline", url.Values{}, nil), 404, server.CodeNotFound)
}

// entryMap decodes entry seq as a generic object.
func (m *memLedger) entryMap(seq uint64) map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out map[string]any
	if err := json.Unmarshal(m.entries[seq-1], &out); err != nil {
		panic(err)
	}
	return out
}

func TestOverviewCounts(t *testing.T) {
	s := newSite(t, nil)
	c := s.client()
	c.login(pReader)
	a := c.get("/ui/")
	accepted, rejected := 0, 0
	for seq := 1; seq <= s.seeded.total; seq++ {
		switch s.ledger.entryMap(uint64(seq))["decision"] {
		case "accepted":
			accepted++
		case "rejected":
			rejected++
		}
	}
	for _, want := range []string{
		fmt.Sprintf(`id="count-entries">%d<`, s.seeded.total),
		fmt.Sprintf(`id="count-accepted">%d<`, accepted),
		fmt.Sprintf(`id="count-rejected">%d<`, rejected),
		`id="count-blocked">1<`,
		`<rect class="accepted"`, `<rect class="rejected"`,
		"ledger.example/test", "chain, decisions and tree intact",
		`<a href="/ui/timeline?code=BOUNDARY_VIOLATION">BOUNDARY_VIOLATION</a>`,
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	// Counts follow new entries (the incremental update).
	s.submit(govDoc(uuidN(500), "planner", "coder", hashN(1), hashN(2), "one more"))
	if b := c.get("/ui/").body; !strings.Contains(b, fmt.Sprintf(`id="count-entries">%d<`, s.seeded.total+1)) {
		t.Errorf("overview after one more entry does not count %d", s.seeded.total+1)
	}
}
