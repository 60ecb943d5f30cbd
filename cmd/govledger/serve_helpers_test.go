package main

// Helpers of the tests that run "govledger serve" as a real process on a
// loopback port (serve_test.go, serve_crash_test.go, serve_abuse_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
)

// serveEnv is a folder with the demo registry, its lock, a tokens file
// and a ledger path, and the binary to serve them.
type serveEnv struct {
	t        *testing.T
	bin      string
	dir      string
	db       string
	manifest string
	lock     string
	tokens   string
	tok      map[string]string // principal name -> bearer token
}

// principals of every serve test: name, scopes, agents.
var servePrincipals = []server.TokenEntry{
	{Name: "product", Scopes: []server.Scope{server.ScopeHandoffWrite, server.ScopeLedgerRead}, Agents: []string{"domain-05-product"}},
	{Name: "writer", Scopes: []server.Scope{server.ScopeHandoffWrite}, Agents: []string{"*"}},
	{Name: "reader", Scopes: []server.Scope{server.ScopeLedgerRead}},
	{Name: "auditor", Scopes: []server.Scope{server.ScopeLedgerRead, server.ScopePayloadRead}},
	{Name: "op", Scopes: []server.Scope{server.ScopeOperator, server.ScopeLedgerRead}},
	{Name: "flood", Scopes: []server.Scope{server.ScopeLedgerRead}},
	{Name: "expired", Scopes: []server.Scope{server.ScopeLedgerRead}},
	{Name: "gateway", MTLSSubject: "gateway.internal", Scopes: []server.Scope{server.ScopeHandoffWrite, server.ScopeLedgerRead}, Agents: []string{"*"}},
}

// newServeEnv unpacks the demo data and locks registry ("registry" or
// "skills").
func newServeEnv(t *testing.T, registry string) *serveEnv {
	t.Helper()
	return newServeEnvIn(t, t.TempDir(), registry)
}

// newServeEnvIn is newServeEnv in an existing empty folder (the power-cut
// trials' mount).
func newServeEnvIn(t *testing.T, dir, registry string) *serveEnv {
	t.Helper()
	if err := demo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Config(dir, registry); err != nil {
		t.Fatal(err)
	}
	e := &serveEnv{t: t, bin: govledgerBinary(t), dir: dir, db: filepath.Join(dir, "ledger.db"),
		manifest: filepath.Join(dir, registry), lock: filepath.Join(dir, registry+"-lock.json"),
		tokens: filepath.Join(dir, "tokens.json"), tok: map[string]string{}}
	if registry == "registry" {
		e.manifest = filepath.Join(e.manifest, "prompt-manifest.json")
	}
	f := &server.TokensFile{Version: server.TokensVersion}
	created := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
	for _, p := range servePrincipals {
		token, hash, err := server.NewToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p.Hash, p.Created = hash, created
		if p.Name == "expired" {
			p.Expires = created.Add(time.Hour)
		}
		if err := f.Add(p); err != nil {
			t.Fatal(err)
		}
		e.tok[p.Name] = token
	}
	if err := server.WriteTokensFile(e.tokens, f); err != nil {
		t.Fatal(err)
	}
	return e
}

// cli runs a govledger command on the env's files and returns its
// output and exit code.
func (e *serveEnv) cli(args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"--db", e.db, "--manifest", e.manifest, "--lock", e.lock}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("govledger %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// liveServer is one running "govledger serve" process.
type liveServer struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	log  string // stderr file
	done chan struct{}
	err  error // Wait's error, after done
}

// start runs "govledger serve" on 127.0.0.1:0 with extra flags and
// waits for its "listening" log line.
func (e *serveEnv) start(extra ...string) *liveServer {
	e.t.Helper()
	logf, err := os.CreateTemp(e.dir, "serve-*.log")
	if err != nil {
		e.t.Fatal(err)
	}
	args := append([]string{"--db", e.db, "--manifest", e.manifest, "--lock", e.lock, "serve",
		"--addr", "127.0.0.1:0", "--tokens", e.tokens, "--root", filepath.Join(e.dir, "root"), "--max-age", "0"}, extra...)
	cmd := exec.Command(e.bin, args...)
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), "GOVLEDGER_AS=test-operator")
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	s := &liveServer{t: e.t, cmd: cmd, log: logf.Name(), done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); logf.Close(); close(s.done) }()
	e.t.Cleanup(func() { s.kill() })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if line := s.logLine("listening"); line != nil {
			s.url, _ = line["url"].(string)
			return s
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.log)
			e.t.Fatalf("govledger serve exited before listening: %v\n%s", s.err, b)
		case <-time.After(10 * time.Millisecond):
		}
	}
	e.t.Fatalf("govledger serve did not log \"listening\" within 15s")
	return nil
}

// logLine returns the last JSON log line whose msg is msg, or nil.
func (s *liveServer) logLine(msg string) map[string]any {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return nil
	}
	var found map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			found = m
		}
	}
	return found
}

// kill sends SIGKILL and waits for the process.
func (s *liveServer) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.done
}

// stop sends SIGTERM and returns the exit code.
func (s *liveServer) stop() int {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(40 * time.Second):
		s.kill()
		s.t.Fatal("govledger serve did not stop within 40s of SIGTERM")
	}
	return s.cmd.ProcessState.ExitCode()
}

// answer is an HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a map.
func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v\n%s", a.status, err, a.body)
	}
	return m
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

// do sends a request as principal (its token; "" for none) with headers
// given as "Name: value" strings.
func (e *serveEnv) do(s *liveServer, method, path, principal string, body []byte, headers ...string) answer {
	e.t.Helper()
	a, err := e.try(s, method, path, principal, body, headers...)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

func (e *serveEnv) try(s *liveServer, method, path, principal string, body []byte, headers ...string) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if principal != "" {
		req.Header.Set("Authorization", "Bearer "+e.tok[principal])
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// wantProblem checks that a is a problem+json answer with status and code.
func wantProblem(t *testing.T, what string, a answer, status int, code string) map[string]any {
	t.Helper()
	if a.status != status || !strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("%s: %d %s, want %d problem+json %s\n%s", what, a.status, a.header.Get("Content-Type"), status, code, a.body)
	}
	p := a.json(t)
	if p["code"] != code || p["status"] != float64(status) || p["type"] == "" || p["title"] == "" || p["request_id"] == "" {
		t.Fatalf("%s: problem %v, want code %s status %d with type, title and request_id", what, p, code, status)
	}
	return p
}

// doc returns an embedded demo document.
func demoDoc(t *testing.T, name string) []byte {
	t.Helper()
	b, err := demo.Document(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// head returns the newest seq as reader sees it.
func (e *serveEnv) head(s *liveServer) uint64 {
	e.t.Helper()
	a := e.do(s, "GET", "/v1/entries?limit=1", "reader", nil)
	var p server.Page
	if a.status != 200 || json.Unmarshal(a.body, &p) != nil {
		e.t.Fatalf("GET /v1/entries: %d %s", a.status, a.body)
	}
	if len(p.Entries) == 0 {
		return 0
	}
	return p.Entries[0].Seq
}

func seqOf(t *testing.T, a answer) uint64 {
	t.Helper()
	m := a.json(t)
	seq, ok := m["seq"].(float64)
	if !ok {
		t.Fatalf("answer has no seq: %s", a.body)
	}
	return uint64(seq)
}

func itoaU(n uint64) string { return fmt.Sprint(n) }

var sighup = syscall.SIGHUP

// ack is the answer a client got for an Idempotency-Key: the seq and entry
// hash of a 201.
type ack struct {
	seq  uint64
	hash string
}

// checkAcknowledged reads every entry of l and fails the test unless seqs
// are gapless, every idempotency key is in at most one entry, every key of
// acked (submitted by principal) is in exactly the entry its 201 named,
// with that hash, and no key of refused is in any. It returns the head.
func checkAcknowledged(t *testing.T, l *ledger.Ledger, principal string, acked map[string]ack, refused map[string]bool) uint64 {
	t.Helper()
	byKey := map[string][]uint64{}
	hashes := map[uint64]string{}
	var last uint64
	err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		if seq != last+1 {
			return fmt.Errorf("seq %d follows %d", seq, last)
		}
		last = seq
		en, err := entry.Decode(raw)
		if err != nil {
			return err
		}
		hashes[seq] = entry.LeafHash(raw).String()
		if en.IdempotencyKey != "" {
			byKey[en.IdempotencyKey] = append(byKey[en.IdempotencyKey], seq)
		}
		return nil
	})
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	for key, seqs := range byKey {
		if len(seqs) != 1 {
			t.Errorf("key %s is in entries %v, want one", key, seqs)
		}
	}
	for key, a := range acked {
		seqs := byKey[principal+"/"+key]
		if len(seqs) != 1 || seqs[0] != a.seq || hashes[a.seq] != a.hash {
			t.Errorf("acknowledged key %s (seq %d %s) is in entries %v (hash %s)", key, a.seq, a.hash, seqs, hashes[a.seq])
		}
	}
	for key := range refused {
		if len(byKey[principal+"/"+key]) != 0 {
			t.Errorf("key %s was answered \"written\": \"no\" but is in entry %v", key, byKey[principal+"/"+key])
		}
	}
	return last
}
