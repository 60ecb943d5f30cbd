package interop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/server"
)

// bigSize is the fixture ledger's size: past 65,536 entries, so the tree
// has a full level-1 tile and a partial level-2 tile.
const bigSize = 70_000

// origin is the fixture ledger's checkpoint origin.
const origin = "example.com/govledger-interop"

// env is a folder with the demo registry and lock, a tokens file, a
// signer key, the govledger binary, and a bbolt ledger of bigSize entries
// whose roots were taken in-process, by govledger's own tree code.
type env struct {
	dir, bin, db, manifest, lock, tokens, key string
	verifier                                  note.Verifier
	vkey                                      string // the verifier key's text
	reader                                    string // bearer token with ledger:read
	operator                                  string // bearer token with operator
	writer                                    string // bearer token with handoff:write for every agent
	size                                      uint64
	roots                                     map[uint64]tlog.Hash // govledger's TreeHash at a few sizes
}

var (
	envOnce sync.Once
	shared  *env
	envErr  error
)

// fixture builds the shared env once per test binary.
func fixture(t *testing.T) *env {
	t.Helper()
	envOnce.Do(func() { shared, envErr = newEnv() })
	if envErr != nil {
		t.Fatal(envErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func newEnv() (*env, error) {
	dir, err := os.MkdirTemp("", "govledger-interop-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, bin: filepath.Join(dir, "govledger"), db: filepath.Join(dir, "ledger.db"),
		manifest: filepath.Join(dir, "registry", "prompt-manifest.json"), lock: filepath.Join(dir, "registry-lock.json"),
		tokens: filepath.Join(dir, "tokens.json"), key: filepath.Join(dir, "ledger.key"), roots: map[uint64]tlog.Hash{}}
	// Built in the product's module (the folder above), with its go.mod:
	// the binary is the product as shipped.
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/govledger")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	if err := demo.Unpack(dir); err != nil {
		return nil, err
	}
	if _, err := demo.Config(dir, "registry"); err != nil {
		return nil, err
	}
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(e.key, []byte(skey+"\n"), 0o600); err != nil {
		return nil, err
	}
	e.vkey = vkey
	if e.verifier, err = note.NewVerifier(vkey); err != nil {
		return nil, err
	}
	f := &server.TokensFile{Version: server.TokensVersion}
	token, hash, err := server.NewToken(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := f.Add(server.TokenEntry{Name: "reader", Scopes: []server.Scope{server.ScopeLedgerRead}, Hash: hash, Created: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}); err != nil {
		return nil, err
	}
	e.reader = token
	if e.operator, hash, err = server.NewToken(rand.Reader); err != nil {
		return nil, err
	}
	if err := f.Add(server.TokenEntry{Name: "op", Scopes: []server.Scope{server.ScopeOperator}, Hash: hash, Created: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}); err != nil {
		return nil, err
	}
	if e.writer, hash, err = server.NewToken(rand.Reader); err != nil {
		return nil, err
	}
	if err := f.Add(server.TokenEntry{Name: "writer", Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}, Hash: hash, Created: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}); err != nil {
		return nil, err
	}
	if err := server.WriteTokensFile(e.tokens, f); err != nil {
		return nil, err
	}
	if err := e.grow(e.db, bigSize); err != nil {
		return nil, err
	}
	return e, nil
}

// grow appends n unblock entries to the bbolt ledger at path (created
// with the fixture origin if missing) through the ledger library, many at
// once so they share commits, and records its roots.
func (e *env) grow(path string, n int) error {
	l, err := bolt.Open(path, &bolt.Options{Origin: origin, MaxBatch: 2048})
	if err != nil {
		return err
	}
	defer l.Close()
	const workers = 1024
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, x *entry.Entry) error {
					x.Kind, x.Agent, x.Note = entry.KindUnblock, fmt.Sprintf("agent-%05d", i), "prompt re-reviewed"
					return nil
				}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	size, err := l.TreeSize(context.Background())
	if err != nil {
		return err
	}
	if path == e.db {
		e.size = size
	}
	for _, s := range []uint64{1, 255, 256, 1000, 65536, 65537, size} {
		if s <= size {
			h, err := l.TreeHash(context.Background(), s)
			if err != nil {
				return err
			}
			e.roots[s] = h
		}
	}
	return nil
}

// run runs govledger with the env's files and returns its combined
// output and exit code.
func (e *env) run(t *testing.T, db string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(e.bin, append([]string{"--db", db, "--manifest", e.manifest, "--lock", e.lock}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatalf("govledger %v: %v", args, err)
	}
	return string(out), 0
}

// serve starts "govledger serve" on a loopback port with the signer key
// and extra flags, and returns its base URL. The process is killed when
// the test ends.
func (e *env) serve(t *testing.T, db string, extra ...string) string {
	t.Helper()
	u, _ := e.serveStop(t, db, extra...)
	return u
}

// serveStop is serve, also returning a stop: SIGTERM, then wait for the
// process to exit (killed after 30s).
func (e *env) serveStop(t *testing.T, db string, extra ...string) (string, func()) {
	t.Helper()
	logf, err := os.CreateTemp(e.dir, "serve-*.log")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--db", db, "--manifest", e.manifest, "--lock", e.lock, "serve", "--addr", "127.0.0.1:0",
		"--tokens", e.tokens, "--key", e.key, "--max-age", "0", "--ui=false"}, extra...)
	cmd := exec.Command(e.bin, args...)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("govledger serve did not stop within 30s of SIGTERM:\n%s", b)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if u := listening(logf.Name()); u != "" {
			return u, stop
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("govledger serve exited before listening:\n%s", b)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("govledger serve did not log \"listening\" within 30s")
	return "", nil
}

// listening returns the url of serve's "listening" log line, or "".
func listening(log string) string {
	b, err := os.ReadFile(log)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "listening" {
			u, _ := m["url"].(string)
			return u
		}
	}
	return ""
}

// bearer is an http.RoundTripper that sends a bearer token.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// copyFile copies a ledger file (not open by any process).
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
