package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// TestTokenEditsConcurrent: 100 token create and revoke processes run at
// once on one tokens file; afterwards the file holds exactly what the
// commands reported (every created principal, with the token it printed;
// no revoked one; nothing lost).
func TestTokenEditsConcurrent(t *testing.T) {
	bin := govledgerBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	const n = 50
	f := &server.TokensFile{Version: server.TokensVersion}
	for i := range n {
		_, hash, err := server.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(server.TokenEntry{Name: fmt.Sprintf("old-%d", i), Hash: hash, Scopes: []server.Scope{server.ScopeLedgerRead},
			Created: time.Now().UTC().Truncate(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := server.WriteTokensFile(path, f); err != nil {
		t.Fatal(err)
	}
	type result struct {
		args []string
		out  string
		err  error
	}
	res := make([]result, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		res[2*i].args = []string{"token", "create", "--tokens", path, "--scope", "ledger:read", fmt.Sprintf("new-%d", i)}
		res[2*i+1].args = []string{"token", "revoke", "--tokens", path, fmt.Sprintf("old-%d", i)}
	}
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, res[i].args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			res[i].err = cmd.Run()
			res[i].out = stdout.String()
			if res[i].err != nil {
				res[i].err = fmt.Errorf("%v: %s", res[i].err, stderr.String())
			}
		}()
	}
	wg.Wait()
	tokens := map[string]string{}
	for _, r := range res {
		if r.err != nil {
			t.Fatalf("govledger %s: %v", strings.Join(r.args, " "), r.err)
		}
		if r.args[1] == "create" {
			tokens[r.args[len(r.args)-1]] = strings.TrimSpace(r.out)
		}
	}
	got, err := server.ReadTokensFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got.Tokens {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("new-%d", i))
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("after %d concurrent creates and revokes the file holds %d principals %v, want %v", n, len(names), names, want)
	}
	st := server.NewTokenStore(got, nil)
	for name, tok := range tokens {
		if p, err := st.Bearer(tok); err != nil || p.Name != name {
			t.Errorf("the token create printed for %s: Bearer = %+v, %v", name, p, err)
		}
	}
}

// TestTokenFilePermissions: the token commands and serve refuse a tokens
// file that group or others may read or write, or whose folder they may
// write, naming the file and the fix; a file created by token create is
// 0600, and so is its lock file.
func TestTokenFilePermissions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	if code, _, errOut := runTokenCLI(t, nil, "token", "create", "--tokens", path, "--scope", "operator", "op"); code != exitOK {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	for _, p := range []string{path, path + ".lock"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", p, fi.Mode(), err)
		}
	}
	for _, mode := range []os.FileMode{0o644, 0o660, 0o606, 0o640} {
		os.Chmod(path, mode)
		for _, args := range [][]string{
			{"token", "create", "--tokens", path, "--scope", "operator", "intruder"},
			{"token", "revoke", "--tokens", path, "op"},
			{"token", "list", "--tokens", path},
		} {
			code, _, errOut := runTokenCLI(t, nil, args...)
			if code != exitUsage || !strings.Contains(errOut, "permissions too open") || !strings.Contains(errOut, "chmod 600 "+path) {
				t.Errorf("mode %04o: %s: exit %d, want %d naming the fix:\n%s", mode, args[1], code, exitUsage, errOut)
			}
		}
	}
	os.Chmod(path, 0o600)
	os.Chmod(dir, 0o770)
	code, _, errOut := runTokenCLI(t, nil, "token", "create", "--tokens", path, "--scope", "operator", "intruder")
	os.Chmod(dir, 0o700)
	if code != exitUsage || !strings.Contains(errOut, "writable by group or others") {
		t.Errorf("group-writable folder: exit %d, want %d:\n%s", code, exitUsage, errOut)
	}
	if f, err := server.ReadTokensFile(path); err != nil || len(f.Tokens) != 1 {
		t.Fatalf("after the refusals the file holds %+v, %v; want op alone", f, err)
	}
}

// TestServeRefusesOpenFiles: serve refuses a tokens file or a ledger that
// group or others may read or write, and a ledger folder they may write;
// once fixed it starts, and its .serve sidecar is 0600.
func TestServeRefusesOpenFiles(t *testing.T) {
	e := newServeEnv(t, "registry")
	for _, c := range []struct {
		what  string
		setup func()
		msg   string
	}{
		{"tokens file 0644", func() { os.Chmod(e.tokens, 0o644) }, "tokens.json: permissions too open: mode 0644"},
		{"tokens file 0620", func() { os.Chmod(e.tokens, 0o620) }, "tokens.json: permissions too open: mode 0620"},
		{"ledger 0644", func() { os.WriteFile(e.db, []byte("x"), 0o644); os.Chmod(e.db, 0o644) }, "ledger.db: permissions too open: mode 0644"},
		{"ledger folder 0775", func() { os.Chmod(e.dir, 0o775) }, "writable by group or others"},
	} {
		c.setup()
		out, code := e.cli("serve", "--addr", "127.0.0.1:0", "--tokens", e.tokens)
		os.Chmod(e.tokens, 0o600)
		os.Chmod(e.dir, 0o700)
		os.Remove(e.db)
		if code != exitUsage || !strings.Contains(out, c.msg) || strings.Contains(out, `"listening"`) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", c.what, code, exitUsage, c.msg, out)
		}
	}
	s := e.start()
	fi, err := os.Stat(sidecarPath(e.db))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sidecar %s: mode %v, %v; want 0600", sidecarPath(e.db), fi.Mode(), err)
	}
	if fi, err := os.Stat(e.db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ledger created by serve: mode %v, %v; want 0600", fi.Mode(), err)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
}
