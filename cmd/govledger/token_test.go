package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/server"
)

var tokenTestNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// runTokenCLI runs the CLI with a pinned clock and an environment.
func runTokenCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWithClock(context.Background(), append([]string{"govledger"}, args...), strings.NewReader(""), &out, &errb,
		func(k string) string { return env[k] }, func() time.Time { return tokenTestNow })
	return code, out.String(), errb.String()
}

func TestTokenCreateListRevoke(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	code, out, errOut := runTokenCLI(t, nil, "token", "create", "--tokens", path, "--scope", "handoff:write", "--agents", "agent-a,agent-b", "ci-product")
	if code != exitOK {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	token := strings.TrimSpace(out)
	if !strings.HasPrefix(token, server.TokenPrefix) || strings.Count(out, "\n") != 1 {
		t.Fatalf("create printed %q, want the token alone", out)
	}
	if !strings.Contains(errOut, "not shown again") {
		t.Errorf("stderr %q does not say the token is shown once", errOut)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode %v, %v; want 0600", fi.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte(token)) || !bytes.Contains(data, []byte(server.TokenHash(token))) {
		t.Fatalf("the file holds the token or not its hash:\n%s", data)
	}
	// The token authenticates as the principal, with the agents given.
	st, err := server.OpenTokenStore(path, func() time.Time { return tokenTestNow })
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Bearer(token)
	if err != nil || p.Name != "ci-product" || !p.MaySubmitFor("agent-b") || p.MaySubmitFor("agent-c") || p.Has(server.ScopeLedgerRead) {
		t.Fatalf("Bearer = %+v, %v", p, err)
	}

	// More principals, through GOVLEDGER_TOKENS; JSON output.
	env := map[string]string{"GOVLEDGER_TOKENS": path}
	code, out, errOut = runTokenCLI(t, env, "--output", "json", "token", "create", "--scope", "ledger:read,payload:read", "--expires", "1h", "auditor")
	if code != exitOK || !strings.HasPrefix(out, "{\n  \"schema\": \"govledger.token-create/v1\"") {
		t.Fatalf("create auditor: exit %d %s %s", code, out, errOut)
	}
	var created struct {
		Token   string    `json:"token"`
		Expires time.Time `json:"expires"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || !created.Expires.Equal(tokenTestNow.Add(time.Hour)) {
		t.Fatalf("create JSON %s: %v", out, err)
	}
	code, out, _ = runTokenCLI(t, env, "token", "create", "--scope", "handoff:write", "--agents", "*", "--mtls-subject", "gateway.internal", "gateway")
	if code != exitOK || strings.Contains(out, server.TokenPrefix) || !strings.Contains(out, `"gateway.internal"`) {
		t.Fatalf("create mtls: exit %d %q", code, out)
	}
	if p, err := (func() (*server.Principal, error) {
		st, err := server.OpenTokenStore(path, nil)
		if err != nil {
			return nil, err
		}
		return st.Certificate("gateway.internal")
	})(); err != nil || p.Name != "gateway" || p.Agents != nil {
		t.Fatalf("Certificate = %+v, %v", p, err)
	}

	code, out, _ = runTokenCLI(t, env, "token", "list")
	want := []string{"NAME", "auditor", "ledger:read,payload:read", "token", "2026-11-24T11:00:00Z",
		"ci-product", "agent-a,agent-b", "gateway", "mtls:gateway.internal", "never"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("list lacks %q:\n%s", w, out)
		}
	}
	if code != exitOK || strings.Contains(out, token) || strings.Contains(out, "sha256:") {
		t.Fatalf("list: exit %d, shows a token or hash:\n%s", code, out)
	}
	code, out, _ = runTokenCLI(t, env, "--output", "json", "token", "list")
	var list struct {
		Schema string `json:"schema"`
		Tokens []struct {
			Name   string `json:"name"`
			Bearer bool   `json:"bearer"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != exitOK || list.Schema != "govledger.token-list/v1" || len(list.Tokens) != 3 ||
		list.Tokens[0].Name != "auditor" || !list.Tokens[0].Bearer || list.Tokens[2].Bearer {
		t.Fatalf("list JSON: exit %d %s %v", code, out, err)
	}

	code, out, _ = runTokenCLI(t, env, "token", "revoke", "ci-product")
	if code != exitOK || !strings.Contains(out, "revoked ci-product") {
		t.Fatalf("revoke: exit %d %q", code, out)
	}
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Bearer(token); err == nil {
		t.Fatal("a revoked token still authenticates after reload")
	}
}

func TestTokenErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	if code, _, errOut := runTokenCLI(t, nil, "token", "create", "--tokens", path, "--scope", "operator", "op"); code != exitOK {
		t.Fatalf("seed: %d %s", code, errOut)
	}
	before, _ := os.ReadFile(path)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte("{\"tokens_version\": 1,\n \"tokens\": [],\n \"secret\": true}\n"), 0o600)
	for _, c := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no scope", []string{"token", "create", "--tokens", path, "x"}, "--scope is required"},
		{"unknown scope", []string{"token", "create", "--tokens", path, "--scope", "admin", "x"}, `"admin"`},
		{"write without agents", []string{"token", "create", "--tokens", path, "--scope", "handoff:write", "x"}, "agents"},
		{"agents without write", []string{"token", "create", "--tokens", path, "--scope", "ledger:read", "--agents", "a", "x"}, "only meaningful"},
		{"bad agent", []string{"token", "create", "--tokens", path, "--scope", "handoff:write", "--agents", "Agent_A", "x"}, "agent"},
		{"bad name", []string{"token", "create", "--tokens", path, "--scope", "operator", "Ops Team"}, "name"},
		{"taken name", []string{"token", "create", "--tokens", path, "--scope", "operator", "op"}, "exists"},
		{"no name", []string{"token", "create", "--tokens", path, "--scope", "operator"}, "NAME"},
		{"flag after name", []string{"token", "create", "--tokens", path, "x", "--scope", "operator"}, "after an argument"},
		{"negative expiry", []string{"token", "create", "--tokens", path, "--scope", "operator", "--expires", "-1h", "x"}, "negative"},
		{"revoke unknown", []string{"token", "revoke", "--tokens", path, "nobody"}, `no principal "nobody"`},
		{"list missing file", []string{"token", "list", "--tokens", filepath.Join(dir, "none.json")}, "does not exist"},
		{"broken file", []string{"token", "list", "--tokens", broken}, broken + ":3:2: /secret: unknown field"},
		{"create into broken file", []string{"token", "create", "--tokens", broken, "--scope", "operator", "x"}, broken + ":3:2:"},
		{"bad output", []string{"token", "create", "--tokens", path, "--scope", "operator", "-o", "yaml", "x"}, `"yaml"`},
		{"bad duration", []string{"token", "create", "--tokens", path, "--scope", "operator", "--expires", "soon", "x"}, "soon"},
		{"unknown flag", []string{"token", "create", "--tokens", path, "--scopes", "operator", "x"}, "scopes"},
		{"list with an argument", []string{"token", "list", "--tokens", path, "x"}, "no arguments"},
		{"list flag after argument", []string{"token", "list", "x", "--tokens", path}, "after an argument"},
		{"revoke missing file", []string{"token", "revoke", "--tokens", filepath.Join(dir, "none.json"), "op"}, "does not exist"},
		{"revoke flag after name", []string{"token", "revoke", "op", "--tokens", path}, "after an argument"},
		{"revoke without name", []string{"token", "revoke", "--tokens", path}, "NAME"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runTokenCLI(t, nil, c.args...)
			if code != exitUsage || !strings.Contains(errOut, c.msg) {
				t.Errorf("exit %d, stderr %q; want %d mentioning %q", code, errOut, exitUsage, c.msg)
			}
			// Every error names the command the user typed (issue 25: a
			// flag after the name said only "create:").
			if prefix := "govledger: token " + c.args[1] + ": "; !strings.HasPrefix(errOut, prefix) || strings.Count(errOut, c.args[1]+": ") != 1 {
				t.Errorf("stderr %q does not start with %q (once)", errOut, prefix)
			}
		})
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("a refused command changed the tokens file")
	}
}
