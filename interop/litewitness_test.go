package interop

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// A litewitness is a real litewitness (torchwood v0.9.0) on loopback,
// knowing the fixture's origin and log key, with its key in an in-process
// ssh-agent. It can be stopped and started again on the same address and
// database.
type litewitness struct {
	t                *testing.T
	bin, db, sock    string
	addr, log, keyFP string
	cos              *checkpoint.Cosigner
	cmd              *exec.Cmd
	done             chan struct{}
}

const litewitnessName = "witness.example/interop"

func newLitewitness(t *testing.T, e *env) *litewitness {
	t.Helper()
	sqlite := testenv.LookPath(t, "apt-get install sqlite3", "sqlite3")
	bin := buildLitewitness(t)
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	spub, _ := ssh.NewPublicKey(priv.Public())
	cos, _ := checkpoint.NewCosigner(litewitnessName, priv)
	lw := &litewitness{t: t, bin: bin, db: filepath.Join(dir, "litewitness.db"), sock: sshAgent(t, priv),
		log: filepath.Join(dir, "litewitness.log"), keyFP: ssh.FingerprintSHA256(spub), cos: cos}
	// The witness's known logs: the fixture's origin at size 0, its key.
	schema := `PRAGMA foreign_keys = ON;
CREATE TABLE log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
CREATE TABLE key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
CREATE TABLE bastion (origin TEXT NOT NULL, bastion TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
INSERT INTO log VALUES ('` + origin + `', 0, '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
INSERT INTO key VALUES ('` + origin + `', '` + e.vkey + `');
`
	if out, err := exec.Command(sqlite, lw.db, schema).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lw.addr = ln.Addr().String()
	ln.Close()
	lw.start()
	t.Cleanup(lw.stop)
	return lw
}

// start runs litewitness and waits until it listens.
func (lw *litewitness) start() {
	t := lw.t
	t.Helper()
	lf, err := os.OpenFile(lw.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lw.cmd = exec.Command(lw.bin, "-name", litewitnessName, "-db", lw.db, "-ssh-agent", lw.sock, "-listen", lw.addr, "-key", lw.keyFP)
	lw.cmd.Stdout, lw.cmd.Stderr = lf, lf
	if err := lw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lw.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); lf.Close(); close(done) }(lw.cmd, lw.done)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", lw.addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("litewitness did not listen within 30s:\n%s", lw.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills litewitness and waits for it (nothing when it is not running).
func (lw *litewitness) stop() {
	if lw.cmd == nil {
		return
	}
	lw.cmd.Process.Kill()
	<-lw.done
	lw.cmd = nil
}

func (lw *litewitness) logText() string {
	b, _ := os.ReadFile(lw.log)
	return string(b)
}

// TestLitewitness: a real litewitness (torchwood v0.9.0) knowing the
// fixture's origin and log key cosigns govledger's checkpoints through
// serve --witness-policy (the cosigned checkpoint is served at
// /checkpoint and satisfies the policy); a forked ledger (another tail,
// re-signed with the same key) is refused by it, and serve raises the
// alarm (log line, /readyz 503).
func TestLitewitness(t *testing.T) {
	e := fixture(t)
	lw := newLitewitness(t, e)
	cos, addr, wlog := lw.cos, lw.addr, lw.log
	dir := t.TempDir()

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

// statusCounter is a reverse proxy in front of a witness that counts its
// answers by status, as the witness sent them.
type statusCounter struct {
	mu     sync.Mutex
	counts map[int]int
}

func (c *statusCounter) get(status int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[status]
}

func countingProxy(t *testing.T, target string) (*statusCounter, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &statusCounter{counts: map[int]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a witness down is expected: 502
	rp.ModifyResponse = func(r *http.Response) error {
		c.mu.Lock()
		c.counts[r.StatusCode]++
		c.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// TestLitewitnessFailClosed: serve --witness-mode fail-closed with a real
// litewitness as the quorum. A write is answered 201 only once
// litewitness's own database holds a cosigned size covering it; with
// litewitness down, a write is stored and answered 503 NOT_WITNESSED; once
// it is back, serve retries by itself and the same Idempotency-Key is
// answered 201. The witness's size is kept in --witness-dir: a restarted
// serve gets no 409 from litewitness (counted on the wire by a proxy),
// while one whose state file was removed gets exactly one.
func TestLitewitnessFailClosed(t *testing.T) {
	e := fixture(t)
	lw := newLitewitness(t, e)
	sqlite := testenv.LookPath(t, "apt-get install sqlite3", "sqlite3")
	counts, proxyURL := countingProxy(t, "http://"+lw.addr)
	dir := t.TempDir()
	policyText := fmt.Sprintf("log %s\nwitness lw %s %s\nquorum lw\n", e.vkey, lw.cos.VerifierKey(), proxyURL)
	policyFile := filepath.Join(dir, "policy")
	os.WriteFile(policyFile, []byte(policyText), 0o644)
	policy, err := checkpoint.ParsePolicy([]byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	witnessed := func() uint64 { // litewitness's own record of the log
		out, err := exec.Command(sqlite, lw.db, "SELECT tree_size FROM log WHERE origin = '"+origin+"'").CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatalf("litewitness tree_size %q: %v", out, err)
		}
		return n
	}
	type answer struct {
		status int
		header http.Header
		body   map[string]any
	}
	post := func(base, key string) answer {
		req, _ := http.NewRequest("POST", base+"/v1/handoffs", strings.NewReader("not a handoff document"))
		req.Header.Set("Authorization", "Bearer "+e.writer)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("POST: %d %s", resp.StatusCode, b)
		}
		return answer{resp.StatusCode, resp.Header, m}
	}
	seq := func(a answer) uint64 { n, _ := a.body["seq"].(float64); return uint64(n) }
	cosignedSize := func(base string) uint64 {
		resp, err := http.Get(base + "/checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return 0
		}
		cp, _, err := policy.Open(b, origin)
		if err != nil {
			t.Fatalf("fail-closed serves a checkpoint the policy refuses: %v\n%s", err, b)
		}
		return cp.Size
	}

	db := smallLedger(t, 300, "fail-closed")
	wdir := filepath.Join(dir, "witnessed")
	args := []string{"--witness-policy", policyFile, "--witness-dir", wdir, "--witness-mode", "fail-closed", "--witness-ack-timeout", "5s"}
	base, stop := e.serveStop(t, db, args...)
	a := post(base, "k-1")
	if a.status != 201 {
		t.Fatalf("write: %d %v\nlitewitness:\n%s", a.status, a.body, lw.logText())
	}
	if n := witnessed(); n < seq(a) {
		t.Fatalf("entry %d answered 201, litewitness's database at size %d", seq(a), n)
	}

	// litewitness down: stored, not acknowledged.
	lw.stop()
	a = post(base, "k-2")
	if a.status != 503 || a.body["code"] != "NOT_WITNESSED" || a.body["written"] != "yes" || seq(a) == 0 ||
		a.header.Get("Location") != fmt.Sprintf("/v1/entries/%d", seq(a)) {
		t.Fatalf("write with litewitness down: %d %v", a.status, a.body)
	}
	pending := seq(a)
	lw.start()
	for deadline := time.Now().Add(60 * time.Second); cosignedSize(base) < pending; {
		if time.Now().After(deadline) {
			t.Fatalf("entry %d not witnessed within 60s of litewitness's return\nlitewitness:\n%s", pending, lw.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a = post(base, "k-2"); a.status != 201 || a.body["replayed"] != true || seq(a) != pending || witnessed() < pending {
		t.Fatalf("retry once witnessed: %d %v (litewitness at %d)", a.status, a.body, witnessed())
	}
	stop()
	if fi, err := os.Stat(filepath.Join(wdir, "witness-state.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v (mode %v), want 0600", err, fi.Mode())
	}

	// Restarted with the state: no 409.
	conflicts, cosigned := counts.get(http.StatusConflict), counts.get(http.StatusOK)
	base, stop = e.serveStop(t, db, args...)
	if a = post(base, "k-3"); a.status != 201 || witnessed() < seq(a) {
		t.Fatalf("write after restart: %d %v", a.status, a.body)
	}
	if c := counts.get(http.StatusConflict) - conflicts; c != 0 || counts.get(http.StatusOK) == cosigned {
		t.Errorf("after a restart with the state: %d 409s (want 0), %d new cosignatures", c, counts.get(http.StatusOK)-cosigned)
	}
	stop()

	// Restarted without it: the 409 round trip the state saves.
	os.Remove(filepath.Join(wdir, "witness-state.json"))
	base, stop = e.serveStop(t, db, args...)
	if a = post(base, "k-4"); a.status != 201 || witnessed() < seq(a) {
		t.Fatalf("write after a restart without the state: %d %v", a.status, a.body)
	}
	if c := counts.get(http.StatusConflict) - conflicts; c != 1 {
		t.Errorf("after a restart without the state: %d 409s, want 1", c)
	}
	stop()
}

// TestLitewitnessRate: serve keeps to its declared rate (--witness-qpd
// 1440: one add-checkpoint request a minute to a witness): after the first
// checkpoint real litewitness cosigned, five writes in a row (five commits,
// each waking the witnessing) send no second request for as long as the
// test watches (3s; without the rate they are sent within milliseconds),
// and the metrics say so.
func TestLitewitnessRate(t *testing.T) {
	e := fixture(t)
	lw := newLitewitness(t, e)
	counts, proxyURL := countingProxy(t, "http://"+lw.addr)
	dir := t.TempDir()
	policyText := fmt.Sprintf("log %s\nwitness lw %s %s\nquorum lw\n", e.vkey, lw.cos.VerifierKey(), proxyURL)
	policyFile := filepath.Join(dir, "policy")
	os.WriteFile(policyFile, []byte(policyText), 0o644)
	requests := func() int {
		return counts.get(http.StatusOK) + counts.get(http.StatusConflict) + counts.get(http.StatusUnprocessableEntity)
	}
	base := e.serve(t, smallLedger(t, 20, "rate"), "--witness-policy", policyFile, "--witness-qpd", "1440")
	for deadline := time.Now().Add(30 * time.Second); requests() == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no request to litewitness within 30s\nlitewitness:\n%s", lw.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 5 {
		req, _ := http.NewRequest("POST", base+"/v1/handoffs", strings.NewReader("not a handoff document"))
		req.Header.Set("Authorization", "Bearer "+e.writer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("write %d: %d", i, resp.StatusCode)
		}
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n := requests(); n > 1 {
			t.Fatalf("%d add-checkpoint requests within a minute at --witness-qpd 1440", n)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`govledger_witness_requests_total{witness="lw"} 1`, "govledger_witness_declared_qpd 1440",
		`govledger_witness_cosigned_size{witness="lw"}`, "govledger_witness_quorum_size"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
