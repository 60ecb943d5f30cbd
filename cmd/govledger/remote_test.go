package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/strictjson"
)

// runAs runs the binary with GOVLEDGER_TOKEN set to principal's token
// ("" for none) and returns stdout, stderr and the exit code.
func (e *serveEnv) runAs(principal string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"--db", e.db, "--manifest", e.manifest, "--lock", e.lock}, args...)...)
	cmd.Env = append(os.Environ(), "GOVLEDGER_TOKEN="+e.tok[principal], "GOVLEDGER_SERVER=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("govledger %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// writeDemoDocs writes the named demo documents into the env's folder
// and returns their paths.
func (e *serveEnv) writeDemoDocs(names ...string) []string {
	var paths []string
	for _, n := range names {
		p := filepath.Join(e.dir, n)
		if err := os.WriteFile(p, demoDoc(e.t, n), 0o644); err != nil {
			e.t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// recordBatches are the record calls of the client tests: every decision
// the demo data gives (accepted, HASH_MISMATCH that blocks, blocked,
// replay, unknown agent, unparseable bytes, vbw/1 with --from/--to).
var recordBatches = [][]string{
	{"01-product-to-analysis.json", "02-thinker-to-technical.json", "03-content-to-security.json", "04-research-hash-mismatch.json",
		"05-research-blocked.json", "06-replay-of-01.json", "07-rogue-agent.json", "08-garbage.bin"},
	{"--from", "domain-03-technical", "--to", "domain-02-analysis", "09-qa-result.vbw.json"},
}

func recordArgs(e *serveEnv, batch []string) []string {
	var args []string
	for _, a := range batch {
		if strings.Contains(a, ".") {
			a = e.writeDemoDocs(a)[0]
		}
		args = append(args, a)
	}
	return args
}

// sameDecisions compares record reports with what differs between two
// ledgers (seq, entry hash, snapshot seqs, file folder) taken out.
func sameDecisions(t *testing.T, what, remote, local string) {
	t.Helper()
	norm := func(s string) string {
		var rep map[string]any
		if err := json.Unmarshal([]byte(s), &rep); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", what, err, s)
		}
		for _, d := range rep["documents"].([]any) {
			m := d.(map[string]any)
			if m["seq"] == nil || m["entry_hash"] == nil {
				t.Fatalf("%s: a document without seq or entry hash: %v", what, m)
			}
			m["file"] = filepath.Base(m["file"].(string))
			delete(m, "seq")
			delete(m, "entry_hash")
			delete(m, "snapshot_seqs")
		}
		b, _ := json.Marshal(rep, json.Deterministic(true))
		return string(b)
	}
	if r, l := norm(remote), norm(local); r != l {
		t.Fatalf("%s: record --server and local record decide differently:\nremote %s\nlocal  %s", what, r, l)
	}
}

// TestServerClientsMatchLocal records through --server, then runs every
// read command through --server and locally on the same ledger (once the
// server stopped) and requires the same output and exit code, text and
// JSON; record is compared with a local record of the same documents
// into another ledger.
func TestServerClientsMatchLocal(t *testing.T) {
	e := newServeEnv(t, "registry")
	local := newServeEnv(t, "registry")
	keyFile := filepath.Join(e.dir, "ledger.key")
	if out, code := e.cli("--origin", "example.com/clients", "keygen", "--out", strings.TrimSuffix(keyFile, ".key"), "example.com/clients"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	s := e.start("--key", keyFile, "--origin", "example.com/clients")

	for i, batch := range recordBatches {
		for _, output := range []string{"json", "text"} {
			if output == "text" && i == 0 {
				continue // recorded once: a second time would all be REPLAY
			}
			rout, rerr, rcode := e.runAs("writer", append([]string{"record", "--output", output, "--server", s.url}, recordArgs(e, batch)...)...)
			lout, lerr, lcode := local.runAs("", append([]string{"record", "--output", output, "--max-age", "0",
				"--root", filepath.Join(local.dir, "root")}, recordArgs(local, batch)...)...)
			if rcode != lcode {
				t.Fatalf("record %v: exit %d through the server, %d locally\n%s%s\n%s%s", batch, rcode, lcode, rout, rerr, lout, lerr)
			}
			if output == "json" {
				sameDecisions(t, fmt.Sprint(batch), rout, lout)
			} else {
				strip := regexp.MustCompile(`(?m) seq \d+ entry [0-9a-f]{64}$|^\S*/`)
				if r, l := strip.ReplaceAllString(rout, ""), strip.ReplaceAllString(lout, ""); r != l || !strings.Contains(rout, " seq ") {
					t.Fatalf("record text differs:\nremote %s\nlocal  %s", rout, lout)
				}
			}
		}
	}
	if _, _, code := e.runAs("writer", append([]string{"record", "--server", s.url}, recordArgs(e, recordBatches[0][:1])...)...); code != 1 {
		t.Fatalf("record of a replayed handoff through the server: exit %d, want 1 (rejected)", code)
	}

	logOut, _, _ := e.runAs("auditor", "log", "--output", "json", "--server", s.url)
	wfm := regexp.MustCompile(`"workflow_id":"([^"]+)"`).FindStringSubmatch(logOut)
	wf := "no-workflow-recorded"
	if wfm != nil {
		wf = wfm[1]
	}
	reads := [][]string{
		{"log"}, {"log", "--decision", "rejected"}, {"log", "--limit", "3"}, {"log", "--agent", "domain-05-product"},
		{"log", "--code", "HASH_MISMATCH"}, {"log", "--kind", "snapshot"}, {"log", "--workflow", wf},
		{"log", "--since", "2000-01-01T00:00:00Z", "--until", "2999-01-01T00:00:00Z"},
		{"log", "--reverse"}, {"log", "--reverse", "--limit", "2"}, {"log", "--limit", "2", "--before", "5"},
		{"log", "--reverse", "--after", "3", "--limit", "2"}, {"log", "--decision", "rejected", "--limit", "1"},
		{"show", "1"}, {"show", "3"}, {"show", "99"}, {"show", "no-such-handoff"},
		{"trace", wf}, {"trace", "no-such-workflow"}, {"blocks"}, {"export"},
	}
	// the handoff id of a recorded entry, for show HANDOFF_ID
	out, _, _ := e.runAs("auditor", "log", "--output", "json", "--server", s.url, "--decision", "accepted")
	if m := regexp.MustCompile(`"handoff_id":"([^"]+)"`).FindStringSubmatch(out); m != nil {
		reads = append(reads, []string{"show", m[1]})
	} else {
		t.Fatalf("no accepted handoff with an id in the log:\n%s", out)
	}
	type result struct {
		out  string
		code int
	}
	remote := map[string]result{}
	for _, r := range reads {
		for _, output := range []string{"text", "json"} {
			args := append([]string{"--output", output}, r...)
			rargs := append([]string{"--output", output, r[0], "--server", s.url}, r[1:]...)
			o, errOut, code := e.runAs("auditor", rargs...)
			if code != 0 && code != 2 {
				t.Fatalf("%v: exit %d: %s", rargs, code, errOut)
			}
			remote[strings.Join(args, " ")] = result{o, code}
		}
	}
	// export --out through the server
	remoteOut := filepath.Join(e.dir, "remote.jsonl")
	if _, errOut, code := e.runAs("auditor", "export", "--server", s.url, "--out", remoteOut); code != 0 || !strings.Contains(errOut, "exported") {
		t.Fatalf("export --server --out: exit %d %s", code, errOut)
	}
	// verify through the server, with the key the user trusts
	vout, verr, vcode := e.runAs("auditor", "--output", "json", "verify", "--server", s.url, "--key", strings.TrimSuffix(keyFile, ".key")+".pub")
	if vcode != 0 {
		t.Fatalf("verify --server: exit %d\n%s%s", vcode, vout, verr)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exit %d", code)
	}

	for _, r := range reads {
		for _, output := range []string{"text", "json"} {
			args := append([]string{"--output", output}, r...)
			o, errOut, code := e.runAs("", args...)
			got := remote[strings.Join(args, " ")]
			if got.code != code || got.out != o {
				t.Fatalf("%v: through the server exit %d:\n%s\nlocally exit %d:\n%s%s", args, got.code, got.out, code, o, errOut)
			}
			if code == 0 && o == "" && !slices.Contains(r, "--workflow") {
				t.Fatalf("%v printed nothing", args)
			}
		}
	}
	localOut := filepath.Join(e.dir, "local.jsonl")
	if _, errOut, code := e.runAs("", "export", "--out", localOut); code != 0 {
		t.Fatalf("export --out: %d %s", code, errOut)
	}
	if a, b := readFile(t, remoteOut), readFile(t, localOut); a != b {
		t.Fatal("export --server --out differs from the local export")
	}
	lout, _, lcode := e.runAs("", "--output", "json", "verify")
	var rv, lv map[string]any
	json.Unmarshal([]byte(vout), &rv)
	json.Unmarshal([]byte(lout), &lv)
	if lcode != 0 || rv["entries"] != lv["entries"] || rv["head"] != lv["head"] || rv["ok"] != true || rv["anchor_ok"] != true {
		t.Fatalf("verify --server %v, local verify %v", rv, lv)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServerClientErrors: what the server refuses, and a server that is
// not there, become a message and the exit code of the exit table.
func TestServerClientErrors(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start()
	doc := e.writeDemoDocs("04-research-hash-mismatch.json")[0]

	// 503 from a stub standing for an overloaded server; nothing listening.
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(503)
		io.WriteString(w, `{"type":"urn:govledger:problem:overloaded","title":"Overloaded","status":503,"code":"OVERLOADED","detail":"commit queue full","written":"no"}`)
	}))
	defer busy.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	for _, c := range []struct {
		what      string
		principal string
		args      []string
		code      int
		msg       string
	}{
		{"no token", "", []string{"log", "--server", s.url}, 2, "401 UNAUTHENTICATED"},
		{"expired token", "expired", []string{"blocks", "--server", s.url}, 2, "401 UNAUTHENTICATED"},
		{"read token records", "reader", []string{"record", "--server", s.url, doc}, 2, "403 FORBIDDEN_SCOPE"},
		{"another agent's source", "product", []string{"record", "--server", s.url, doc}, 2, "403 FORBIDDEN_SOURCE"},
		{"export without payload:read", "reader", []string{"export", "--server", s.url}, 2, "403 FORBIDDEN_SCOPE"},
		{"a server setting with --server", "writer", []string{"record", "--server", s.url, "--strict", doc}, 2, "the server's setting"},
		{"verify --server without --key", "auditor", []string{"verify", "--server", s.url}, 2, "needs --key"},
		{"not a URL", "writer", []string{"log", "--server", "ftp://x"}, 2, "--server"},
		{"overloaded", "writer", []string{"record", "--server", busy.URL, doc}, 3, "503 OVERLOADED: commit queue full"},
		{"overloaded read", "reader", []string{"log", "--server", busy.URL}, 3, "503 OVERLOADED"},
		{"nothing listening", "reader", []string{"log", "--server", closed}, 3, "no answer from the server"},
		{"nothing listening, record", "writer", []string{"record", "--server", closed, doc}, 3, "outcome unknown"},
	} {
		out, errOut, code := e.runAs(c.principal, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%s: exit %d, stderr %q (stdout %q); want exit %d and %q", c.what, code, errOut, out, c.code, c.msg)
		}
	}
	// The environment variable works as the flag does.
	cmd := exec.Command(e.bin, "--output", "json", "blocks")
	cmd.Env = append(os.Environ(), "GOVLEDGER_SERVER="+s.url, "GOVLEDGER_TOKEN="+e.tok["reader"], "GOVLEDGER_DB="+filepath.Join(e.dir, "absent.db"))
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), `"govledger.blocks/v1"`) {
		t.Fatalf("blocks with GOVLEDGER_SERVER: %v %s", err, out)
	}
}

// TestVerifyServerTrustsNothing puts a proxy between verify --server and
// the server that edits what the server returns: one export line, the
// export's tail, the checkpoint's signer. verify names each.
func TestVerifyServerTrustsNothing(t *testing.T) {
	e := newServeEnv(t, "registry")
	keyFile := filepath.Join(e.dir, "ledger.key")
	if out, code := e.cli("--origin", "example.com/clients", "keygen", "--out", strings.TrimSuffix(keyFile, ".key"), "example.com/clients"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	otherKey := filepath.Join(e.dir, "other")
	if out, code := e.cli("keygen", "--out", otherKey, "example.com/clients"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	s := e.start("--key", keyFile, "--origin", "example.com/clients")
	if _, errOut, code := e.runAs("writer", append([]string{"record", "--server", s.url}, recordArgs(e, recordBatches[0][:4])...)...); code != 1 {
		t.Fatalf("record: exit %d %s", code, errOut)
	}
	target, _ := url.Parse(s.url)
	edit := func(export func(lines []string) []string) string {
		p := httputil.NewSingleHostReverseProxy(target)
		p.ModifyResponse = func(r *http.Response) error {
			if r.Request.URL.Path != "/v1/export" || r.StatusCode != 200 {
				return nil
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return err
			}
			lines := export(strings.SplitAfter(string(b), "\n"))
			out := strings.Join(lines, "")
			r.Body = io.NopCloser(strings.NewReader(out))
			r.ContentLength = int64(len(out))
			r.Header.Del("Content-Length")
			return nil
		}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	pub := strings.TrimSuffix(keyFile, ".key") + ".pub"
	verify := func(url, key string) (string, int) {
		out, errOut, code := e.runAs("auditor", "verify", "--server", url, "--key", key)
		return out + errOut, code
	}
	if out, code := verify(edit(func(l []string) []string { return l }), pub); code != 0 {
		t.Fatalf("through an honest proxy: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		what string
		url  string
		key  string
		want []string
	}{
		{"one export line edited", edit(func(l []string) []string {
			l[2] = strings.Replace(l[2], `"submitter":"writer"`, `"submitter":"wrider"`, 1)
			return l
		}), pub, []string{"seq 3: hash", "FAILED", "first bad entry seq 3"}},
		{"the export's last entry dropped", edit(func(l []string) []string { return append(l[:len(l)-2], l[len(l)-1]) }),
			pub, []string{"checkpoint: FAILED", "truncated"}},
		{"a checkpoint under another key", s.url, otherKey + ".pub", []string{"checkpoint: FAILED", "not signed by a trusted key"}},
	} {
		out, code := verify(c.url, c.key)
		for _, w := range c.want {
			if code != 1 || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d, want 1 and %q in:\n%s", c.what, code, w, out)
			}
		}
	}
}

// TestHeldByServer: a command on a ledger a running server holds says so
// at once, naming the server; a sidecar left by a killed server is
// ignored.
func TestHeldByServer(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start()
	pid := s.cmd.Process.Pid
	for _, args := range [][]string{{"log"}, {"verify"}, {"record", e.writeDemoDocs("01-product-to-analysis.json")[0]}} {
		start := time.Now()
		_, errOut, code := e.runAs("", args...)
		want := fmt.Sprintf("ledger %s is held by govledger serve (pid %d) at %s; use --server %s", e.db, pid, s.url, s.url)
		if code != 3 || !strings.Contains(errOut, want) {
			t.Fatalf("%v on a held ledger: exit %d %q, want 3 and %q", args, code, errOut, want)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%v took %s: it waited for the lock", args, d)
		}
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exit %d", code)
	}
	if _, err := os.Stat(e.db + ".serve"); !os.IsNotExist(err) {
		t.Fatalf("sidecar after a clean stop: %v", err)
	}
	s = e.start()
	s.kill()
	if _, err := os.Stat(e.db + ".serve"); err != nil {
		t.Fatalf("no sidecar left by the killed server: %v", err)
	}
	if _, errOut, code := e.runAs("", "log"); code != 0 {
		t.Fatalf("log after the server was killed: exit %d %s", code, errOut)
	}
}

// TestVerifyServerState: verify --server --state remembers the newest
// checkpoint it verified. A server that then shows an older checkpoint
// with its export cut to it is a rollback, one whose export disagrees with
// the remembered checkpoint (a forged tail past the checkpoint it shows)
// a fork: both exit 1 and say which. Entries past the checkpoint are
// reported as unverified, never counted as verified.
func TestVerifyServerState(t *testing.T) {
	e := newServeEnv(t, "registry")
	keyFile := filepath.Join(e.dir, "ledger.key")
	if out, code := e.cli("--origin", "example.com/clients", "keygen", "--out", strings.TrimSuffix(keyFile, ".key"), "example.com/clients"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	pub := strings.TrimSuffix(keyFile, ".key") + ".pub"
	s := e.start("--key", keyFile, "--origin", "example.com/clients")
	get := func(path string) string {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+e.tok["auditor"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if _, errOut, code := e.runAs("writer", append([]string{"record", "--server", s.url}, recordArgs(e, recordBatches[0][:2])...)...); code > 1 {
		t.Fatalf("record: exit %d %s", code, errOut)
	}
	oldCP, oldExport := get("/v1/checkpoint"), get("/v1/export")
	oldLines := strings.Count(oldExport, "\n")
	state := filepath.Join(e.dir, "state")
	verify := func(url string, args ...string) (string, int) {
		out, errOut, code := e.runAs("auditor", append([]string{"verify", "--server", url, "--key", pub}, args...)...)
		return out + errOut, code
	}
	if out, code := verify(s.url, "--state", state); code != 0 || !strings.Contains(out, fmt.Sprintf("entries 1 to %d verified", oldLines)) {
		t.Fatalf("first verify: exit %d\n%s", code, out)
	}
	if _, errOut, code := e.runAs("writer", append([]string{"record", "--server", s.url}, recordArgs(e, recordBatches[0][2:3])...)...); code > 1 {
		t.Fatalf("record: exit %d %s", code, errOut)
	}
	newExport := get("/v1/export")
	newLines := strings.Count(newExport, "\n")
	if out, code := verify(s.url, "--state", state); code != 0 || !strings.Contains(out, fmt.Sprintf("entries 1 to %d verified", newLines)) {
		t.Fatalf("second verify: exit %d\n%s", code, out)
	}
	// A proxy that shows the old checkpoint and an export of its choice.
	target, _ := url.Parse(s.url)
	lie := func(cp, export string) string {
		p := httputil.NewSingleHostReverseProxy(target)
		p.ModifyResponse = func(r *http.Response) error {
			var body string
			switch r.Request.URL.Path {
			case "/v1/checkpoint":
				body = cp
			case "/v1/export":
				body = export
			default:
				return nil
			}
			r.Body.Close()
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Del("Content-Length")
			return nil
		}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	newL := strings.SplitAfter(newExport, "\n")
	// The forged entry carries its own recomputed hash, so that only the
	// checkpoint remembered in --state can tell it from the real one.
	forgedLine := strings.Replace(newL[oldLines], `"submitter":"writer"`, `"submitter":"wrider"`, 1)
	var line struct {
		Entry jsontext.Value `json:"entry"`
		Hash  string         `json:"hash"`
	}
	if err := json.Unmarshal([]byte(forgedLine), &line, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	canon, err := strictjson.CanonicalizeBytes(line.Entry)
	if err != nil {
		t.Fatal(err)
	}
	forgedLine = strings.Replace(forgedLine, line.Hash, entry.LeafHash(canon).String(), 1)
	forged := strings.Join(newL[:oldLines], "") + forgedLine + strings.Join(newL[oldLines+1:], "")
	for _, c := range []struct {
		what   string
		url    string
		args   []string
		code   int
		want   string
		reject string
	}{
		{"the old checkpoint, the export cut to it, with --state", lie(oldCP, oldExport), []string{"--state", state}, 1, "older than the last seen checkpoint", "OK"},
		{"the old checkpoint, a forged tail, with --state", lie(oldCP, forged), []string{"--state", state}, 1, "fork", "OK"},
		{"the old checkpoint, an honest tail, no --state", lie(oldCP, newExport), nil, 0,
			fmt.Sprintf("entries 1 to %d verified against a signed checkpoint; %d entries past it are UNVERIFIED", oldLines, newLines-oldLines), ""},
	} {
		out, code := verify(c.url, c.args...)
		if code != c.code || !strings.Contains(out, c.want) || (c.reject != "" && strings.Contains(out, c.reject)) {
			t.Errorf("%s: exit %d, want %d and %q in:\n%s", c.what, code, c.code, c.want, out)
		}
	}
}

// TestVerifyServerOrigin: verify --server --state pins the server to the
// origin (and verifier key name) of the first checkpoint it verified
// there. The same server then showing a checkpoint of another origin,
// signed by the same key (a log started afresh, whose empty state would
// hide a rollback), is refused with exit 1, naming both origins; the pin
// does not move.
func TestVerifyServerOrigin(t *testing.T) {
	e := newServeEnv(t, "registry")
	keyFile := filepath.Join(e.dir, "ledger.key")
	if out, code := e.cli("--origin", "example.com/clients", "keygen", "--out", strings.TrimSuffix(keyFile, ".key"), "example.com/clients"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	pub := strings.TrimSuffix(keyFile, ".key") + ".pub"
	s := e.start("--key", keyFile, "--origin", "example.com/clients")
	if _, errOut, code := e.runAs("writer", append([]string{"record", "--server", s.url}, recordArgs(e, recordBatches[0][:2])...)...); code > 1 {
		t.Fatalf("record: exit %d %s", code, errOut)
	}
	signer, err := checkpoint.LoadSigner(keyFile, "example.com/clients")
	if err != nil {
		t.Fatal(err)
	}
	// A proxy that, once told to, re-signs the server's checkpoint under
	// another origin with the same key: same size, same root.
	var otherOrigin atomic.Bool
	target, _ := url.Parse(s.url)
	p := httputil.NewSingleHostReverseProxy(target)
	p.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != "/v1/checkpoint" || !otherOrigin.Load() {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		cp, err := checkpoint.Parse(b)
		if err != nil {
			return err
		}
		cp.Origin = "example.com/fresh"
		out, err := checkpoint.Sign(cp, signer)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(out))
		r.ContentLength = int64(len(out))
		r.Header.Del("Content-Length")
		return nil
	}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	state := filepath.Join(e.dir, "state")
	verify := func(args ...string) (string, int) {
		out, errOut, code := e.runAs("auditor", append([]string{"verify", "--server", proxy.URL, "--key", pub}, args...)...)
		return out + errOut, code
	}
	if out, code := verify("--state", state); code != 0 {
		t.Fatalf("first verify: exit %d\n%s", code, out)
	}
	otherOrigin.Store(true)
	// Without --state the re-signed checkpoint verifies (the key signed it):
	// only the pin can tell.
	if out, code := verify(); code != 0 || !strings.Contains(out, "example.com/fresh") {
		t.Fatalf("another origin without --state: exit %d, want 0\n%s", code, out)
	}
	for range 2 { // refused, and the pin stays
		out, code := verify("--state", state)
		if code != 1 || !strings.Contains(out, `origin "example.com/fresh"`) || !strings.Contains(out, `remembers origin "example.com/clients" (verifier key "example.com/clients")`) {
			t.Fatalf("another origin with --state: exit %d, want 1 naming both origins\n%s", code, out)
		}
	}
	otherOrigin.Store(false)
	if out, code := verify("--state", state); code != 0 {
		t.Fatalf("the pinned origin again: exit %d\n%s", code, out)
	}
}
