package main

import (
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
	k := regexp.MustCompile(`data-key="([^"]*)"`).FindStringSubmatch(get("/ui/entries/1"))
	if k == nil {
		t.Fatal("entry 1's page has no data-key")
	}
	return html.UnescapeString(k[1])
}
