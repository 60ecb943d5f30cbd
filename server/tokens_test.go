package server_test

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

func TestTokensFileRoundTrip(t *testing.T) {
	f, tokens := testTokens(t)
	path := filepath.Join(t.TempDir(), "govledger-tokens.json")
	if err := server.WriteTokensFile(path, f); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	for _, tok := range tokens {
		if strings.Contains(string(data), tok) || strings.Contains(string(data), strings.TrimPrefix(tok, server.TokenPrefix)) {
			t.Fatal("the tokens file holds a token, not only its hash")
		}
	}
	back, err := server.ReadTokensFile(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Marshal()
	if string(again) != string(data) {
		t.Fatalf("rewrite changed the file:\n%s\n---\n%s", data, again)
	}
	// Authentication with the file's entries.
	st, err := server.OpenTokenStore(path, func() time.Time { return testNow })
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Bearer(tokens[pWriterA])
	if err != nil || p.Name != pWriterA || !p.Has(server.ScopeHandoffWrite) || p.Has(server.ScopeLedgerRead) ||
		!p.MaySubmitFor("agent-a") || p.MaySubmitFor("agent-b") {
		t.Fatalf("Bearer(writer-a) = %+v, %v", p, err)
	}
	if p, err := st.Bearer(tokens[pAll]); err != nil || p.Agents != nil || !p.MaySubmitFor("anyone") {
		t.Fatalf("Bearer(all) = %+v, %v; want any agent", p, err)
	}
	if p, err := st.Bearer(tokens[pReader]); err != nil || p.MaySubmitFor("agent-a") {
		t.Fatalf("Bearer(reader) = %+v, %v; must not submit", p, err)
	}
	for _, bad := range []string{"", "glt_", tokens[pAll] + "x", strings.TrimPrefix(tokens[pAll], server.TokenPrefix), strings.ToUpper(tokens[pAll])} {
		if _, err := st.Bearer(bad); !errors.Is(err, server.ErrUnauthenticated) {
			t.Errorf("Bearer(%q) = %v, want ErrUnauthenticated", bad, err)
		}
	}
	if _, err := st.Bearer(tokens[pExpired]); !errors.Is(err, server.ErrExpired) {
		t.Errorf("expired token: %v, want ErrExpired", err)
	}
	if p, err := st.Certificate("gateway.test"); err != nil || p.Name != pGateway {
		t.Errorf("Certificate(gateway.test) = %+v, %v", p, err)
	}
	if _, err := st.Certificate("someone.else"); !errors.Is(err, server.ErrUnauthenticated) {
		t.Errorf("unknown subject: %v", err)
	}
	// Revoking in the file and reloading takes effect; a broken file keeps the old set.
	back.Remove(pWriterA)
	if err := server.WriteTokensFile(path, back); err != nil {
		t.Fatal(err)
	}
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Bearer(tokens[pWriterA]); !errors.Is(err, server.ErrUnauthenticated) {
		t.Fatalf("revoked token still authenticates: %v", err)
	}
	os.WriteFile(path, []byte("{"), 0o600)
	if err := st.Reload(); err == nil {
		t.Fatal("Reload of a broken file succeeded")
	}
	if _, err := st.Bearer(tokens[pReader]); err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
	if _, err := server.ReadTokensFile(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestParseTokensFileErrors(t *testing.T) {
	const h = `"hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000"`
	const c = `"created":"2026-11-24T10:00:00Z"`
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error, each with its position
	}{
		{"not json", "{", []string{"tokens.json:1:2:"}},
		{"unknown member", `{"tokens_version":1,"tokens":[],"extra":1}`, []string{"tokens.json:1:33: /extra: unknown field"}},
		{"duplicate member", `{"tokens_version":1,"tokens_version":1,"tokens":[]}`, []string{"tokens.json:1:21:", "duplicate"}},
		{"wrong type", `{"tokens_version":"1","tokens":[]}`, []string{"tokens.json:1:19: /tokens_version:"}},
		{"version", `{"tokens_version":2,"tokens":[]}`, []string{"tokens.json:1:2: /tokens_version: tokens_version 2: want 1"}},
		{"missing tokens", `{"tokens_version":1}`, []string{"/tokens: missing"}},
		{"entry rules", "{\"tokens_version\":1,\"tokens\":[\n" +
			`{"name":"Bad Name",` + h + `,"scopes":["handoff:write","root"],` + c + "},\n" +
			`{"name":"w","scopes":["handoff:write"],` + c + "},\n" +
			`{"name":"r",` + h + `,"scopes":["ledger:read"],"agents":["a"],` + c + `,"expires":"2020-01-01T00:00:00Z"}` + "\n]}",
			[]string{
				`tokens.json:2:2: /tokens/0/name: name "Bad Name"`,
				`tokens.json:2:127: /tokens/0/scopes/1: unknown scope "root"`,
				`/tokens/0/agents: required with handoff:write`,
				`tokens.json:3:2: /tokens/1/name: neither hash nor mtls_subject`,
				`tokens.json:4:13: /tokens/2/hash: hash also at /tokens/0`,
				`tokens.json:4:119: /tokens/2/agents: only meaningful with handoff:write`,
				`tokens.json:4:167: /tokens/2/expires: not after created`,
			}},
		{"agents", `{"tokens_version":1,"tokens":[{"name":"w",` + h + `,"scopes":["handoff:write"],"agents":["*","Agent-A"],` + c + `}]}`,
			[]string{`/tokens/0/agents/0: "*" must be the only agent`, `/tokens/0/agents/1:`}},
		{"bad hash", `{"tokens_version":1,"tokens":[{"name":"w","hash":"md5:abc","scopes":["operator"],` + c + `}]}`,
			[]string{`/tokens/0/hash: want "sha256:"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := server.ParseTokensFile("tokens.json", []byte(tt.in))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, server.ErrTokensFile) {
				t.Errorf("error %v does not wrap ErrTokensFile", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, hash, err := server.NewToken(rand.Reader)
		if err != nil || !strings.HasPrefix(tok, server.TokenPrefix) || len(tok) != len(server.TokenPrefix)+43 || hash != server.TokenHash(tok) || seen[tok] {
			t.Fatalf("NewToken = %q, %q, %v", tok, hash, err)
		}
		seen[tok] = true
	}
	if _, _, err := server.NewToken(strings.NewReader("short")); err == nil {
		t.Fatal("NewToken from a short reader succeeded")
	}
}

// TestReloadTokens: POST /v1/reload re-reads the tokens file (a revoked
// token stops working); an invalid file is 422, changes nothing and
// appends nothing.
func TestReloadTokens(t *testing.T) {
	f, tokens := testTokens(t)
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := server.WriteTokensFile(path, f); err != nil {
		t.Fatal(err)
	}
	st, err := server.OpenTokenStore(path, func() time.Time { return testNow })
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *server.Config) { c.Tokens = st })
	h.tokens = tokens
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 200 {
		t.Fatalf("reader before: %d", r.status)
	}
	f.Remove(pReader)
	if err := server.WriteTokensFile(path, f); err != nil {
		t.Fatal(err)
	}
	if r := h.do(req{method: "POST", path: "/v1/reload", as: pOperator}); r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pReader}); r.status != 401 {
		t.Fatalf("revoked reader after reload: %d, want 401", r.status)
	}
	n := h.fake.count()
	os.WriteFile(path, []byte(`{"tokens_version":1,"tokens":[],"oops":1}`), 0o600)
	r := h.do(req{method: "POST", path: "/v1/reload", as: pOperator})
	if p := h.problem(r); r.status != 422 || p.Written != "no" || !strings.Contains(p.Detail, "previous tokens stay in force") || !strings.Contains(p.Detail, "/oops") {
		t.Fatalf("reload of a broken file: %d %+v", r.status, p)
	}
	if h.fake.count() != n {
		t.Fatal("a failed reload appended entries")
	}
	if r := h.do(req{method: "GET", path: "/v1/blocks", as: pExporter}); r.status != 200 {
		t.Fatalf("old tokens after a failed reload: %d", r.status)
	}
}
