package interop

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/testenv"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
)

const litewitnessPkg = "filippo.io/torchwood/cmd/litewitness@v0.9.0"

// buildLitewitness installs litewitness v0.9.0 into a temporary folder
// (go install, through the module proxy and the build cache).
func buildLitewitness(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", litewitnessPkg)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		testenv.Missing(t, "litewitness", "go install "+litewitnessPkg, fmt.Errorf("%v\n%s", err, out))
	}
	return filepath.Join(dir, "litewitness")
}

// sshAgent serves an in-process ssh-agent holding priv on a unix socket,
// as litewitness wants its key.
func sshAgent(t *testing.T, priv ed25519.PrivateKey) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); agent.ServeAgent(kr, c) }()
		}
	}()
	return sock
}

// smallLedger makes a bbolt ledger of n unblock entries whose notes carry
// tag, with the fixture's origin.
func smallLedger(t *testing.T, n int, tag string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range n {
		_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, x *entry.Entry) error {
			x.Kind, x.Agent, x.Note = entry.KindUnblock, fmt.Sprintf("agent-%d", i), "reviewed "+tag
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestLitewitness: a real litewitness (torchwood v0.9.0) knowing the
// fixture's origin and log key cosigns govledger's checkpoints through
// serve --witness-policy (the cosigned checkpoint is served at
// /checkpoint and satisfies the policy); a forked ledger (another tail,
// re-signed with the same key) is refused by it, and serve raises the
// alarm (log line, /readyz 503).
func TestLitewitness(t *testing.T) {
	sqlite := testenv.LookPath(t, "apt-get install sqlite3", "sqlite3")
	bin := buildLitewitness(t)
	e := fixture(t)
	dir := t.TempDir()

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	spub, _ := ssh.NewPublicKey(priv.Public())
	sock := sshAgent(t, priv)
	const name = "witness.example/interop"
	cos, _ := checkpoint.NewCosigner(name, priv)

	// The witness's known logs: the fixture's origin at size 0, its key.
	db := filepath.Join(dir, "litewitness.db")
	schema := `PRAGMA foreign_keys = ON;
CREATE TABLE log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
CREATE TABLE key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
CREATE TABLE bastion (origin TEXT NOT NULL, bastion TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
INSERT INTO log VALUES ('` + origin + `', 0, '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
INSERT INTO key VALUES ('` + origin + `', '` + e.vkey + `');
`
	if out, err := exec.Command(sqlite, db, schema).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	wlog := filepath.Join(dir, "litewitness.log")
	lf, _ := os.Create(wlog)
	w := exec.Command(bin, "-name", name, "-db", db, "-ssh-agent", sock, "-listen", addr, "-key", ssh.FingerprintSHA256(spub))
	w.Stdout, w.Stderr = lf, lf
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait(); lf.Close() })
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(wlog)
			t.Fatalf("litewitness did not listen within 30s:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}

	policyText := fmt.Sprintf("log %s\nwitness lw %s http://%s\nquorum lw\n", e.vkey, cos.VerifierKey(), addr)
	policyFile := filepath.Join(dir, "policy")
	os.WriteFile(policyFile, []byte(policyText), 0o644)
	policy, err := checkpoint.ParsePolicy([]byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	get := func(base, path string) (int, []byte) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	good := smallLedger(t, 300, "good")
	base := e.serve(t, good, "--witness-policy", policyFile)
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, b := get(base, "/checkpoint")
		cp, who, err := policy.Open(b, origin)
		if err == nil && len(who) == 1 && cp.Size >= 300 { // serve records its policy snapshots at start
			break
		}
		if time.Now().After(deadline) {
			lb, _ := os.ReadFile(wlog)
			t.Fatalf("no checkpoint cosigned by litewitness within 30s (%v):\n%s\nlitewitness:\n%s", err, b, lb)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A forked ledger of the same origin and key: litewitness, at 300,
	// refuses the checkpoint of 400 whose first 300 entries differ.
	forked := smallLedger(t, 400, "forked")
	fbase := e.serve(t, forked, "--witness-policy", policyFile)
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, b := get(fbase, "/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(string(b), "witness lw") {
			break
		}
		if time.Now().After(deadline) {
			lb, _ := os.ReadFile(wlog)
			t.Fatalf("no witness alarm within 30s: /readyz %d %s\nlitewitness:\n%s", code, b, lb)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, b := get(fbase, "/checkpoint"); func() bool { _, _, err := policy.Open(b, origin); return err == nil }() {
		t.Errorf("the forked checkpoint is served as cosigned:\n%s", b)
	}
}
