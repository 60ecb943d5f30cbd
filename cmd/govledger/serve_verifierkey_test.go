package main

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeDerivesVerifierKey: a server given only --key (the service
// quick start) gives its viewer the key it signs with, so the in-browser
// proof check has the right key without --verifier-key; --verifier-key
// still pins another.
func TestServeDerivesVerifierKey(t *testing.T) {
	e := newServeEnv(t, "registry")
	base := filepath.Join(e.dir, "ledger")
	if out, code := e.cli("keygen", "--out", base, "example.com/quickstart"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	pub, err := os.ReadFile(base + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(e.dir, "other")
	if out, code := e.cli("keygen", "--out", other, "example.com/other"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	otherPub, err := os.ReadFile(other + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--key alone", []string{"--key", base + ".key"}, strings.TrimSpace(string(pub))},
		{"--verifier-key pins another", []string{"--key", base + ".key", "--verifier-key", other + ".pub"}, strings.TrimSpace(string(otherPub))},
	} {
		s := e.start(tc.args...)
		if i == 0 {
			if a := e.do(s, "POST", "/v1/handoffs", "product", demoDoc(t, "01-product-to-analysis.json")); a.status != http.StatusCreated {
				t.Fatalf("submit: %d %s", a.status, a.body)
			}
		}
		if got := viewerKey(t, s.url, e.tok["reader"]); got != tc.want {
			t.Errorf("%s: the entry page checks proofs with key %q, want %q", tc.name, got, tc.want)
		}
		s.kill()
	}
}

// viewerKey logs in to the viewer at base with token and returns the
// verifier key entry 1's page checks its proof with.
func viewerKey(t *testing.T, base, token string) string {
	t.Helper()
	k := regexp.MustCompile(`data-key="([^"]*)"`).FindStringSubmatch(viewerPage(t, base, token, "/ui/entries/1"))
	if k == nil {
		t.Fatal("entry 1's page has no data-key")
	}
	return html.UnescapeString(k[1])
}

// viewerPage logs in to the viewer at base with token and returns the
// page at path.
func viewerPage(t *testing.T, base, token, path string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) string {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(get("/ui/login"))
	if m == nil {
		t.Fatal("the login page has no CSRF field")
	}
	req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return get(path)
}

// TestServeVerifies: serve verifies the ledger it holds at start-up (and
// every --verify-every), logs the result, shows it on the viewer's
// overview and exports it as metrics; a tampered ledger is reported as
// such, never as passed.
func TestServeVerifies(t *testing.T) {
	e := newServeEnv(t, "registry")
	demoDir := filepath.Join(e.dir, "demo-out")
	if out, code := e.cli("demo", "--keep", demoDir); code != 0 {
		t.Fatalf("demo: %d %s", code, out)
	}
	for _, tc := range []struct {
		db     string
		ok     bool
		metric string
		page   string
	}{
		{"demo.db", true, "govledger_verify_last_ok 1", "passed at "},
		{"tampered.db", false, "govledger_verify_last_ok 0", "FAILED at "},
	} {
		e.db = filepath.Join(demoDir, tc.db)
		s := e.start("--verify-every", "1h")
		var line map[string]any
		for deadline := time.Now().Add(30 * time.Second); line == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if line = s.logLine("verified"); line == nil {
				line = s.logLine("verify found the ledger damaged, or could not finish: run 'govledger verify --server' for the findings")
			}
		}
		if line == nil || line["ok"] != tc.ok {
			t.Fatalf("%s: serve's verification log line = %v, want ok=%v", tc.db, line, tc.ok)
		}
		if a := e.do(s, "GET", "/metrics", "", nil); !strings.Contains(string(a.body), tc.metric+"\n") {
			t.Errorf("%s: /metrics lacks %q", tc.db, tc.metric)
		}
		if page := viewerPage(t, s.url, e.tok["reader"], "/ui/"); !strings.Contains(page, tc.page) {
			t.Errorf("%s: the overview does not say %q", tc.db, tc.page)
		}
		s.kill()
	}
}

// TestServeVerifiesWhileWriting: entries committed while serve verifies
// are not findings: every verification run under a stream of accepted
// submissions passes.
func TestServeVerifiesWhileWriting(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start("--verify-every", "10ms")
	doc := demoDoc(t, "01-product-to-analysis.json")
	for i := range 150 {
		body := bytes.Replace(doc, []byte("550e8400-e29b-41d4-a716-446655440000"), fmt.Appendf(nil, "550e8400-e29b-41d4-a716-%012d", i), 1)
		if a := e.do(s, "POST", "/v1/handoffs", "product", body); a.status != http.StatusCreated {
			t.Fatalf("submit %d: %d %s", i, a.status, a.body)
		}
	}
	b, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	passed := strings.Count(string(b), `"msg":"verified"`)
	if failed := strings.Count(string(b), `"msg":"verify found`); failed > 0 || passed < 3 {
		t.Errorf("verifications while writing: %d passed, %d failed; want at least 3, none failed\n%s", passed, failed, b)
	}
}
