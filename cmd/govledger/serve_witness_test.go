package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/witness/witnesstest"
)

// TestServeWitnessing: serve --witness-policy gets its checkpoints
// cosigned by two witnesses on loopback and serves the cosigned one at
// /checkpoint (verify-proof-able under the policy); a forked ledger
// (a rewritten tail re-signed with the same key) served to the same
// witnesses raises the alarm: the log line, the metric, /readyz 503.
func TestServeWitnessing(t *testing.T) {
	e := newServeEnv(t, "registry")
	key, pub := keypair(t)
	vkeyText, _ := os.ReadFile(pub)
	vkey := strings.TrimSpace(string(vkeyText))
	logV, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	policyText := "log " + vkey + "\n"
	var ws []*witnesstest.Witness
	for i := range 2 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		c, _ := checkpoint.NewCosigner(fmt.Sprintf("w%d.example", i), priv)
		w := witnesstest.New(logV, c)
		srv := httptest.NewServer(w)
		t.Cleanup(srv.Close)
		ws = append(ws, w)
		policyText += fmt.Sprintf("witness w%d %s %s\n", i, c.VerifierKey(), srv.URL)
	}
	policyText += "group both all w0 w1\nquorum both\n"
	policyFile := filepath.Join(e.dir, "policy")
	os.WriteFile(policyFile, []byte(policyText), 0o644)
	policy, err := checkpoint.ParsePolicy([]byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	good, forked := filepath.Join(e.dir, "good.db"), filepath.Join(e.dir, "forked.db")
	growLedger(t, e, good, 40, 40, "")
	growLedger(t, e, forked, 50, 30, "rewritten")
	kept := filepath.Join(e.dir, "cosigned")

	get := func(s *liveServer, path string) (int, []byte) {
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	e.db = good
	s := e.start("--key", key, "--witness-policy", policyFile, "--witness-dir", kept)
	var cp []byte
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, b := get(s, "/checkpoint")
		if _, who, err := policy.Open(b, ""); err == nil && len(who) == 2 {
			cp = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cosigned checkpoint at /checkpoint within 20s; last:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, _ := checkpoint.Parse(cp); c.Size != 40 || ws[0].Size() != 40 || ws[1].Size() != 40 {
		t.Fatalf("cosigned size %d, witnesses at %d and %d, want 40", c.Size, ws[0].Size(), ws[1].Size())
	}
	if b, err := os.ReadFile(filepath.Join(kept, fmt.Sprintf("%020d.checkpoint", 40))); err != nil || string(b) != string(cp) {
		t.Fatalf("kept cosigned checkpoint: %v", err)
	}
	if code, _ := get(s, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}
	// verify --server --policy: the server's checkpoint is the cosigned
	// one, so the quorum holds; a policy needing a third witness refuses it.
	// (This synthetic ledger's decisions do not replay, so verify exits 1
	// for them; the checkpoint line is what is checked here.)
	if out, errOut, _ := e.runAs("auditor", "verify", "--server", s.url, "--policy", policyFile); !strings.Contains(out, "checkpoint: ledger of 40 entries extends the signed checkpoint of size 40") {
		t.Errorf("verify --server --policy: %s %s", out, errOut)
	}
	third := filepath.Join(e.dir, "policy3")
	_, priv3, _ := ed25519.GenerateKey(rand.Reader)
	c3, _ := checkpoint.NewCosigner("w3.example", priv3)
	os.WriteFile(third, []byte(strings.Replace(policyText, "group both all w0 w1", "witness w3 "+c3.VerifierKey()+"\ngroup both all w0 w1 w3", 1)), 0o644)
	if out, _, code := e.runAs("auditor", "verify", "--server", s.url, "--policy", third); code != exitFound || !strings.Contains(out, "quorum both not met") {
		t.Errorf("verify --server with a 3-witness policy: exit %d: %s", code, out)
	}
	s.stop()

	// The forked ledger: the witnesses, at 40, get size 50 whose first 40
	// entries differ: 422 from both, the alarm.
	e.db = forked
	s = e.start("--key", key, "--witness-policy", policyFile)
	for deadline := time.Now().Add(20 * time.Second); s.logLine("WITNESS ALARM: a witness saw another history of this log (fork or rollback); investigate before anything else") == nil; {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			t.Fatalf("no witness alarm within 20s:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, b := get(s, "/readyz"); code != 503 || !strings.Contains(string(b), "degraded") {
		t.Errorf("/readyz after the alarm: %d %s", code, b)
	}
	_, m := get(s, "/metrics")
	if !strings.Contains(string(m), "govledger_witness_fork_alarms_total 2") && !strings.Contains(string(m), "govledger_witness_fork_alarms_total 1") {
		t.Errorf("metrics lack the fork alarm counter:\n%s", grepLines(string(m), "govledger_witness"))
	}
	// The forked checkpoint is not served as cosigned.
	if _, b := get(s, "/checkpoint"); func() bool { _, _, err := policy.Open(b, ""); return err == nil }() {
		t.Errorf("the forked checkpoint is served as cosigned:\n%s", b)
	}
	if ws[0].Size() != 40 || ws[1].Size() != 40 {
		t.Errorf("witnesses moved to %d and %d", ws[0].Size(), ws[1].Size())
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServeWitnessingFailClosed: serve --witness-mode fail-closed with two
// witnesses that must both cosign. With one down, no checkpoint is served
// (503) and a write is stored but answered 503 NOT_WITNESSED with its
// seq (metric counted); once the witness is back, serve retries on its
// own (no new commit), the entry is witnessed, and the same
// Idempotency-Key is answered 201. A write answered 201 is covered by
// what both witnesses cosigned. The witnesses' sizes are kept in
// --witness-dir (0600): a restarted serve sends no request a witness
// answers 409. --publish-to gets only the cosigned checkpoints.
func TestServeWitnessingFailClosed(t *testing.T) {
	e := newServeEnv(t, "registry")
	key, pub := keypair(t)
	vkeyText, _ := os.ReadFile(pub)
	vkey := strings.TrimSpace(string(vkeyText))
	logV, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	policyText := "log " + vkey + "\n"
	var ws []*witnesstest.Witness
	for i := range 2 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		c, _ := checkpoint.NewCosigner(fmt.Sprintf("w%d.example", i), priv)
		w := witnesstest.New(logV, c)
		srv := httptest.NewServer(w)
		t.Cleanup(srv.Close)
		ws = append(ws, w)
		policyText += fmt.Sprintf("witness w%d %s %s\n", i, c.VerifierKey(), srv.URL)
	}
	policyText += "group both all w0 w1\nquorum both\n"
	policyFile := filepath.Join(e.dir, "policy")
	os.WriteFile(policyFile, []byte(policyText), 0o644)
	policy, err := checkpoint.ParsePolicy([]byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	kept, published := filepath.Join(e.dir, "cosigned"), filepath.Join(e.dir, "published")
	args := []string{"--key", key, "--witness-policy", policyFile, "--witness-dir", kept, "--witness-mode", "fail-closed", "--witness-ack-timeout", "2s",
		"--publish-to", published}
	publishedSize := func() uint64 {
		b, err := os.ReadFile(filepath.Join(published, "checkpoint"))
		if err != nil {
			return 0
		}
		cp, _, err := policy.Open(b, "")
		if err != nil {
			t.Fatalf("--publish-to holds a checkpoint the policy refuses (%v):\n%s", err, b)
		}
		return cp.Size
	}
	garbage := demoDoc(t, "08-garbage.bin")
	post := func(s *liveServer, idem string) answer {
		return e.do(s, "POST", "/v1/handoffs", "writer", garbage, "Idempotency-Key: "+idem)
	}
	cosignedSize := func(s *liveServer) (uint64, int) {
		a := e.do(s, "GET", "/checkpoint", "", nil)
		if a.status != 200 {
			return 0, a.status
		}
		cp, who, err := policy.Open(a.body, "")
		if err != nil || len(who) != 2 {
			t.Fatalf("fail-closed serves a checkpoint the policy refuses (%v):\n%s", err, a.body)
		}
		return cp.Size, a.status
	}

	ws[1].SetDown(true)
	s := e.start(args...)
	if _, code := cosignedSize(s); code != 503 {
		t.Fatalf("fail-closed /checkpoint with a witness down: %d, want 503", code)
	}
	wantProblem(t, "/v1/checkpoint with a witness down", e.do(s, "GET", "/v1/checkpoint", "reader", nil), 503, "UNAVAILABLE")
	a := post(s, "k-1")
	p := wantProblem(t, "a write with a witness down", a, 503, "NOT_WITNESSED")
	seq := uint64(p["seq"].(float64))
	if p["written"] != "yes" || a.header.Get("Location") != fmt.Sprintf("/v1/entries/%d", seq) || !strings.Contains(p["detail"].(string), "w1") {
		t.Fatalf("NOT_WITNESSED answer: %s (Location %q)", a.body, a.header.Get("Location"))
	}
	if a := e.do(s, "GET", fmt.Sprintf("/v1/entries/%d", seq), "reader", nil); a.status != 200 {
		t.Fatalf("the stored, unwitnessed entry %d: %d %s", seq, a.status, a.body)
	}
	if _, err := os.Stat(filepath.Join(published, "checkpoint")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--publish-to has a checkpoint before any was cosigned: %v", err)
	}
	if m := e.do(s, "GET", "/metrics", "", nil); !strings.Contains(string(m.body), "govledger_witness_unwitnessed_writes_total 1") ||
		!strings.Contains(string(m.body), "govledger_witness_declared_qpd 86400") || !strings.Contains(string(m.body), "govledger_witness_quorum_failures_total") {
		t.Errorf("metrics:\n%s", grepLines(string(m.body), "govledger_witness"))
	}

	// The witness is back: serve retries by itself, the entry is covered.
	ws[1].SetDown(false)
	waitFor(t, "a cosigned checkpoint covering the unwitnessed entry", func() bool { n, _ := cosignedSize(s); return n >= seq })
	waitFor(t, "the cosigned checkpoint in --publish-to", func() bool { return publishedSize() >= seq })
	a = post(s, "k-1")
	if m := a.json(t); a.status != 201 || m["replayed"] != true || uint64(m["seq"].(float64)) != seq {
		t.Fatalf("retry with the same key once witnessed: %d %s", a.status, a.body)
	}
	// A 201 means both witnesses cosigned a checkpoint covering it.
	for i := range 3 {
		a := post(s, fmt.Sprintf("k-2-%d", i))
		if a.status != 201 {
			t.Fatalf("write %d: %d %s", i, a.status, a.body)
		}
		n := seqOf(t, a)
		if ws[0].Size() < n || ws[1].Size() < n {
			t.Fatalf("entry %d answered 201, witnesses at %d and %d", n, ws[0].Size(), ws[1].Size())
		}
	}
	last := e.head(s)
	s.stop()

	state := filepath.Join(kept, "witness-state.json")
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v, want 0600", err, fi.Mode())
	}
	if b, _ := os.ReadFile(state); !strings.Contains(string(b), fmt.Sprintf(`"size":%d`, last)) {
		t.Fatalf("state file does not say size %d:\n%s", last, b)
	}
	conflicts := ws[0].Answers(409) + ws[1].Answers(409)
	s = e.start(args...)
	// The last cosigned checkpoint is served at once, from --witness-dir.
	if n, code := cosignedSize(s); code != 200 || n != last {
		t.Fatalf("restarted: /checkpoint %d size %d, want 200 and %d", code, n, last)
	}
	a = post(s, "k-3")
	if a.status != 201 || ws[0].Size() < seqOf(t, a) {
		t.Fatalf("after restart: %d %s", a.status, a.body)
	}
	if c := ws[0].Answers(409) + ws[1].Answers(409); c != conflicts {
		t.Errorf("the witnesses answered %d 409s after the restart, want none", c-conflicts)
	}
	if m := e.do(s, "GET", "/metrics", "", nil); strings.Contains(string(m.body), `result="conflict"`) {
		t.Errorf("metrics count conflicts after the restart:\n%s", grepLines(string(m.body), "govledger_witness"))
	}
	s.stop()
}

// TestServeWitnessFlags: serve refuses witnessing flags that cannot work,
// saying which and why, before it listens.
func TestServeWitnessFlags(t *testing.T) {
	e := newServeEnv(t, "registry")
	key, pub := keypair(t)
	vkeyText, _ := os.ReadFile(pub)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	c, _ := checkpoint.NewCosigner("w.example", priv)
	policyFile := filepath.Join(e.dir, "policy")
	os.WriteFile(policyFile, fmt.Appendf(nil, "log %s\nwitness w %s http://127.0.0.1:1\nquorum w\n", strings.TrimSpace(string(vkeyText)), c.VerifierKey()), 0o644)
	noURL := filepath.Join(e.dir, "policy-no-url")
	os.WriteFile(noURL, fmt.Appendf(nil, "log %s\nwitness w %s\nquorum w\n", strings.TrimSpace(string(vkeyText)), c.VerifierKey()), 0o644)
	otherState := filepath.Join(e.dir, "other")
	os.MkdirAll(otherState, 0o700)
	os.WriteFile(filepath.Join(otherState, "witness-state.json"), []byte(`{"schema":"govledger.witness-state/v1","origin":"another.example/log","witnesses":[]}`), 0o600)
	wp := []string{"--key", key, "--witness-policy", policyFile}
	for _, c := range []struct {
		what string
		args []string
		code int
		msg  string
	}{
		{"mode without a policy", []string{"--witness-mode", "fail-closed"}, 2, "--witness-mode needs --witness-policy"},
		{"qpd without a policy", []string{"--witness-qpd", "24"}, 2, "--witness-qpd needs --witness-policy"},
		{"unknown mode", append(wp, "--witness-mode", "closed"), 2, `--witness-mode "closed": want fail-open or fail-closed`},
		{"qpd 0", append(wp, "--witness-qpd", "0"), 2, "--witness-qpd 0: want 1 to 864000"},
		{"rate too slow for the ack timeout", append(wp, "--witness-mode", "fail-closed", "--witness-qpd", "1440"), 2, "submits at most every 1m0s: writes could not be witnessed within --witness-ack-timeout 10s"},
		{"ack timeout past the write timeout", append(wp, "--witness-mode", "fail-closed", "--witness-ack-timeout", "40s"), 2, "--witness-ack-timeout 40s must be less than --write-timeout 30s"},
		{"fail-closed without tiles", append(wp, "--witness-mode", "fail-closed", "--tiles=false"), 2, "fail-closed needs --tiles"},
		{"fail-closed, no witness reachable", []string{"--key", key, "--witness-policy", noURL, "--witness-mode", "fail-closed"}, 2, "no witness of the policy has a URL"},
		{"another log's state", append(wp, "--witness-dir", otherState), 2, `the witness state of log "another.example/log"`},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--tokens", e.tokens}, c.args...)
		out, code := e.cli(args...)
		if code != c.code || !strings.Contains(out, c.msg) || strings.Contains(out, `"listening"`) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", c.what, code, c.code, c.msg, out)
		}
	}
}
