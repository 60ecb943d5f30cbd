package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"

	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
)

// handoffDoc writes a copy of the example governed/1 handoff with handoff
// id number i and returns its path.
func (e *cliEnv) handoffDoc(i int) string {
	e.t.Helper()
	base, err := os.ReadFile(e.doc("01-product-to-analysis.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	id := fmt.Sprintf("6ba7b810-9dad-41d1-80b4-%012x", i)
	doc := strings.Replace(string(base), "550e8400-e29b-41d4-a716-446655440000", id, 1)
	if doc == string(base) {
		e.t.Fatal("the example handoff changed: no handoff id to replace")
	}
	path := filepath.Join(e.dir, fmt.Sprintf("handoff-%d.json", i))
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// entries returns the ledger's entries, in order.
func (e *cliEnv) entries() []*entry.Entry {
	e.t.Helper()
	l, err := bolt.Open(filepath.Join(e.dir, "ledger.db"), &bolt.Options{ReadOnly: true, NoCreate: true})
	if errors.Is(err, ledger.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	defer l.Close()
	var out []*entry.Entry
	err = l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		en, err := entry.Decode(raw)
		out = append(out, en)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// withKey returns the entries carrying idempotency key k.
func withKey(es []*entry.Entry, k string) []*entry.Entry {
	var out []*entry.Entry
	for _, en := range es {
		if en.IdempotencyKey == k {
			out = append(out, en)
		}
	}
	return out
}

func (e *cliEnv) lock() {
	e.t.Helper()
	if code, _, stderr := e.run("", "lock"); code != 0 {
		e.t.Fatalf("lock: %s", stderr)
	}
}

// TestRecordIdempotencyKey: a retry with the same key and request prints
// the first decision and exit code and appends nothing; the key with
// another document, submitter or --from/--to is refused (exit 2) and
// appends nothing; without a key the REPLAY rule stands.
func TestRecordIdempotencyKey(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	doc1, doc2 := e.handoffDoc(1), e.handoffDoc(2)
	vbw := e.doc("09-qa-result.vbw.json")
	rejected := e.doc("03-content-to-security.json")
	steps := []struct {
		name   string
		args   []string
		exit   int
		want   string // in stdout (stderr for exit 2)
		growth int    // entries appended
	}{
		{"first", []string{"record", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc1}, 0, "ACCEPTED (governed/1, domain-05-product -> domain-02-analysis) seq 3 entry", 3}, // and the two snapshots
		{"retry", []string{"record", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc1}, 0, "seq 3 entry", 0},
		{"retry says so", []string{"record", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc1}, 0, "(retry of seq 3: nothing appended)", 0},
		{"retry in JSON", []string{"-o", "json", "record", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc1}, 0, `"replayed": true`, 0},
		{"other bytes", []string{"record", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc2}, 2,
			`idempotency key already used for a different request: key "run-1/step-1" was used by seq 3 for other bytes`, 0},
		{"other submitter", []string{"record", "--as", "someone-else", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc1}, 2,
			`was used by seq 3 for submitter "ci-operator"`, 0},
		{"other format", []string{"record", "--format", "governed/1", "--max-age", "0", "--idempotency-key", "run-1/step-1", doc1}, 2,
			`was used by seq 3 for format "", from "", to ""`, 0},
		{"no key: REPLAY stands", []string{"record", "--max-age", "0", doc1}, 1, "REPLAY", 1},
		{"rejected first", []string{"record", "--idempotency-key", "k-rejected", rejected}, 1, "REJECTED", 1},
		{"rejected retry keeps exit 1", []string{"record", "--idempotency-key", "k-rejected", rejected}, 1, "(retry of seq 5: nothing appended)", 0},
		{"from/to are part of the request", []string{"record", "--from", "domain-03-technical", "--to", "domain-02-analysis", "--idempotency-key", "k-vbw", vbw}, 0, "ACCEPTED (vbw/1", 1},
		{"other to", []string{"record", "--from", "domain-03-technical", "--to", "domain-05-product", "--idempotency-key", "k-vbw", vbw}, 2,
			`to "domain-02-analysis"`, 0},
		{"stdin is one document with a key", []string{"record", "--from", "domain-03-technical", "--to", "domain-02-analysis", "--idempotency-key", "k-vbw", "-"}, 0,
			"-: ACCEPTED (vbw/1, domain-03-technical -> domain-02-analysis) seq 6 entry", 0},
		{"key of one document", []string{"record", "--idempotency-key", "k2", doc1, doc2}, 2, "--idempotency-key is the key of one document", 0},
		{"key with a space", []string{"record", "--idempotency-key", "a b", doc2}, 2, "--idempotency-key: byte 2 is not a visible ASCII character", 0},
		{"key too long", []string{"record", "--idempotency-key", strings.Repeat("k", 256), doc2}, 2, "--idempotency-key: 256 characters, want 1 to 255", 0},
		{"empty key", []string{"record", "--idempotency-key", "", doc2}, 2, "--idempotency-key: 0 characters", 0},
	}
	stdinDoc, err := os.ReadFile(vbw)
	if err != nil {
		t.Fatal(err)
	}
	before := len(e.entries())
	for _, s := range steps {
		stdin := ""
		if s.args[len(s.args)-1] == "-" {
			stdin = string(stdinDoc)
		}
		code, stdout, stderr := e.run(stdin, s.args...)
		out := stdout
		if s.exit == 2 {
			out = stderr
		}
		if code != s.exit || !strings.Contains(out, s.want) {
			t.Errorf("%s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", s.name, code, s.exit, s.want, stdout, stderr)
		}
		after := len(e.entries())
		if after-before != s.growth {
			t.Errorf("%s: %d entries appended, want %d", s.name, after-before, s.growth)
		}
		before = after
	}
	es := e.entries()
	for k, n := range map[string]int{"run-1/step-1": 1, "k-rejected": 1, "k-vbw": 1} {
		if got := len(withKey(es, k)); got != n {
			t.Errorf("key %q: %d entries, want %d", k, got, n)
		}
	}
	if code, stdout, stderr := e.run("", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestRecordStream: "record -" reads NDJSON (raw documents and envelopes
// with their own format, from, to and idempotency key) and YAML streams,
// and prints one decision per line, in text and as JSON Lines.
func TestRecordStream(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	compact := func(name string) string {
		var v any
		if err := json.Unmarshal([]byte(read(name)), &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	envelope := func(doc string, members ...string) string {
		m := map[string]string{"document": doc}
		for i := 0; i < len(members); i += 2 {
			m[members[i]] = members[i+1]
		}
		b, err := json.Marshal(m, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	vbw := read(e.doc("09-qa-result.vbw.json"))
	ndjson := strings.Join([]string{
		compact(e.handoffDoc(1)),
		"",
		envelope(vbw, "from", "domain-03-technical", "to", "domain-02-analysis", "idempotency_key", "qa-1"),
		envelope(vbw, "from", "domain-03-technical", "to", "domain-02-analysis", "idempotency_key", "qa-1"),
		envelope(vbw, "from", "domain-03-technical", "to", "domain-05-product", "idempotency_key", "qa-1"),
		envelope(vbw, "format", "xml/1"),
		`{"document": 7}`,
		compact(e.doc("03-content-to-security.json")),
	}, "\n") + "\n"

	code, stdout, stderr := e.run(ndjson, "record", "--max-age", "0", "-")
	wantLines := []string{
		"-:1: ACCEPTED (governed/1, domain-05-product -> domain-02-analysis) seq 3 entry ",
		"-:3: ACCEPTED (vbw/1, domain-03-technical -> domain-02-analysis) seq 4 entry ",
		"-:4: ACCEPTED (vbw/1, domain-03-technical -> domain-02-analysis) seq 4 entry ",
		`-:5: REFUSED: idempotency key already used for a different request: key "qa-1" was used by seq 4 for format "", from "domain-03-technical", to "domain-02-analysis": nothing was appended`,
		`-:6: unreadable: line 6: format "xml/1": want one of governed/1, swarm/2, skill/1, vbw/1, task/1`,
		"-:7: unreadable: line 7: malformed envelope: document: want a string",
		"-:8: REJECTED (governed/1, domain-04-content -> domain-06-security) seq 5 entry ",
	}
	var got []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "-:") {
			got = append(got, l)
		}
	}
	if code != 2 || len(got) != len(wantLines) || !strings.Contains(stderr, "2 of 7 documents could not be read") {
		t.Fatalf("NDJSON stream: exit %d, %d result lines, want exit 2 and %d\nstdout:\n%s\nstderr:\n%s", code, len(got), len(wantLines), stdout, stderr)
	}
	for i, w := range wantLines {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("line %d:\n got %s\nwant %s…", i, got[i], w)
		}
	}
	if !strings.Contains(got[2], "(retry of seq 4: nothing appended)") {
		t.Errorf("the retry on line 4 does not say so: %s", got[2])
	}

	// A YAML stream: two documents, each recorded with its exact bytes.
	swarm, skill := read(e.doc("11-swarm-to-litpm.yaml")), read(e.doc("12-researcher-to-synthesizer.yaml"))
	yamlStream := "---\n" + swarm + "---\n" + skill
	code, stdout, stderr = e.run(yamlStream, "--output", "json", "record", "--max-age", "0", "--root", filepath.Join(e.dir, "docs"), "-")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("JSON line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || code > 1 {
		t.Fatalf("YAML stream: exit %d, %d lines\n%s\n%s", code, len(lines), stdout, stderr)
	}
	for i, want := range []struct {
		line   float64
		format string
		doc    string
	}{{1, "swarm/2", "---\n" + swarm}, {1 + float64(strings.Count("---\n"+swarm, "\n")), "skill/1", "---\n" + skill}} {
		m := lines[i]
		if m["schema"] != "govledger.record.line/v1" || m["line"] != want.line || m["format"] != want.format ||
			m["payload_sha256"] != entry.Sum256([]byte(want.doc)).String() {
			t.Errorf("YAML document %d: %v; want line %v, format %s and the hash of its exact bytes", i, m, want.line, want.format)
		}
	}
	if code, stdout, stderr := e.run("", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}

// cliProc runs the built govledger binary on e's registry and ledger.
func (e *cliEnv) command(env []string, args ...string) *exec.Cmd {
	base := []string{
		"--manifest", filepath.Join(e.dir, "reg", "prompt-manifest.json"),
		"--lock", filepath.Join(e.dir, "reg", "prompt-lock.json"),
		"--db", filepath.Join(e.dir, "ledger.db"),
		"--origin", "govledger.test/cli",
	}
	cmd := exec.Command(govledgerBinary(e.t), append(base, args...)...)
	cmd.Env = append([]string{"HOME=" + e.dir, "GOVLEDGER_AS=ci-operator"}, env...)
	return cmd
}

// TestRecordStreamReleasesLedger: while "record -" waits for its next
// line, the ledger is free: another process opens it for writing at once.
func TestRecordStreamReleasesLedger(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	cmd := e.command(nil, "record", "--max-age", "0", "-")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdout)
	for i := 1; i <= 3; i++ {
		doc, err := os.ReadFile(e.handoffDoc(i))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stdin.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		answer, err := out.ReadString('\n')
		if err != nil || !strings.HasPrefix(answer, fmt.Sprintf("-:%d: ACCEPTED", i)) {
			t.Fatalf("answer to line %d: %q, %v (stderr %s)", i, answer, err, stderr.String())
		}
		// The child now waits for line i+1, which does not come until the
		// ledger opens here: it must let go of the ledger (it closes it
		// just after the answer; a child that kept it while waiting would
		// keep it forever).
		l, err := bolt.Open(filepath.Join(e.dir, "ledger.db"), &bolt.Options{Timeout: 5 * time.Second, NoCreate: true})
		if err != nil {
			t.Fatalf("after line %d, while record - waits on stdin: %v", i, err)
		}
		size, _ := l.TreeSize(t.Context())
		l.Close()
		if want := uint64(2 + i); size != want {
			t.Errorf("after line %d: %d entries, want %d (each answer is durable)", i, size, want)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record -: %v\n%s", err, stderr.String())
	}
}

// TestRecordConcurrentProcesses: 16 record processes on one ledger all
// succeed with the default wait; a ledger held longer than --wait (or
// GOVLEDGER_WAIT) is "ledger busy — nothing was written", exit 3.
func TestRecordConcurrentProcesses(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	const n = 16
	docs := make([]string, n)
	for i := range docs {
		docs[i] = e.handoffDoc(100 + i)
	}
	// The first record creates the ledger; then 16 at once.
	if out, err := e.command(nil, "record", "--max-age", "0", e.handoffDoc(99)).CombinedOutput(); err != nil {
		t.Fatalf("first record: %v\n%s", err, out)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([][]byte, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = e.command(nil, "record", "--max-age", "0", docs[i]).CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	accepted := map[string]bool{}
	for _, en := range e.entries() {
		if en.Kind == entry.KindHandoff && en.Decision == "accepted" {
			accepted[en.HandoffID.S] = true
		}
	}
	if len(accepted) != n+1 {
		t.Errorf("%d accepted handoffs in the ledger, want %d", len(accepted), n+1)
	}

	// Busy: the test holds the ledger.
	holder, err := bolt.Open(filepath.Join(e.dir, "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := holder.TreeSize(t.Context())
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		exit int
		want string
	}{
		{"--wait", nil, []string{"record", "--wait", "200ms", docs[0]}, 3, "busy: held by another process for 200ms — nothing was written (wait longer with --wait or GOVLEDGER_WAIT)"},
		{"--wait 0", nil, []string{"record", "--wait", "0", docs[0]}, 3, "held by another process for 0s — nothing was written"},
		{"GOVLEDGER_WAIT", []string{"GOVLEDGER_WAIT=300ms"}, []string{"record", docs[0]}, 3, "held by another process for 300ms — nothing was written"},
		{"a stream", []string{"GOVLEDGER_WAIT=100ms"}, []string{"record", "-"}, 3, "nothing was written for line 1 and after"},
		{"GOVLEDGER_WAIT invalid", []string{"GOVLEDGER_WAIT=soon"}, []string{"record", docs[0]}, 2, `GOVLEDGER_WAIT "soon": want a duration such as 30s or 2m`},
		{"--wait negative", nil, []string{"record", "--wait", "-1s", docs[0]}, 2, "--wait -1s: must not be negative"},
	} {
		cmd := e.command(tc.env, tc.args...)
		cmd.Stdin = strings.NewReader(`{"document": "x"}` + "\n")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.exit || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %v, want exit %d and %q\n%s", tc.name, err, tc.exit, tc.want, out)
		}
	}
	if after, _ := holder.TreeSize(t.Context()); after != size {
		t.Errorf("busy ledger grew from %d to %d entries", size, after)
	}
	holder.Close()
}

// TestRecordKillRetry SIGKILLs "record --idempotency-key K" at random
// moments, retries with the same key, and finds exactly one entry for K
// every time, whether the kill came before or after the commit.
func TestRecordKillRetry(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	if out, err := e.command(nil, "record", "--max-age", "0", e.handoffDoc(999)).CombinedOutput(); err != nil {
		t.Fatalf("first record: %v\n%s", err, out)
	}
	// How long one record takes here: the kills spread over it.
	start := time.Now()
	if out, err := e.command(nil, "record", "--max-age", "0", "--idempotency-key", "timing", e.handoffDoc(998)).CombinedOutput(); err != nil {
		t.Fatalf("timing record: %v\n%s", err, out)
	}
	span := time.Since(start)
	const trials = 20
	rng := rand.New(rand.NewPCG(1, 2))
	var replays, fresh int
	for i := range trials {
		key := fmt.Sprintf("kill/%d", i)
		doc := e.handoffDoc(i)
		cmd := e.command(nil, "record", "--max-age", "0", "--idempotency-key", key, doc)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(span) * 3 / 2)))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		out, err := e.command(nil, "-o", "json", "record", "--wait", "1m", "--max-age", "0", "--idempotency-key", key, doc).Output()
		if err != nil {
			t.Fatalf("trial %d: retry: %v\n%s", i, err, out)
		}
		var rep docReport
		if err := json.Unmarshal(out, &rep); err != nil || len(rep.Documents) != 1 || rep.Documents[0].Decision != "accepted" {
			t.Fatalf("trial %d: retry: %v\n%s", i, err, out)
		}
		if rep.Documents[0].Replayed {
			replays++
		} else {
			fresh++
		}
		if got := withKey(e.entries(), key); len(got) != 1 || got[0].Seq != rep.Documents[0].Seq {
			t.Fatalf("trial %d: %d entries with key %q (retry answered seq %d), want exactly that one", i, len(got), key, rep.Documents[0].Seq)
		}
	}
	t.Logf("%d trials over %s: the kill came after the commit %d times (retry replayed), before it %d times", trials, span, replays, fresh)
	if code, stdout, stderr := e.run("", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestHostileSubmitter: --as and GOVLEDGER_AS that could not be shown as
// they are are refused (exit 2) before anything is written.
func TestHostileSubmitter(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	doc := e.handoffDoc(1)
	run := func(as string, env map[string]string, args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		base := []string{"govledger",
			"--manifest", filepath.Join(e.dir, "reg", "prompt-manifest.json"),
			"--lock", filepath.Join(e.dir, "reg", "prompt-lock.json"),
			"--db", filepath.Join(e.dir, "ledger.db"),
		}
		if as != "" {
			args = append([]string{args[0], "--as", as}, args[1:]...)
		}
		code := run(context.Background(), append(base, args...), strings.NewReader(""), &stdout, &stderr,
			func(k string) string { return env[k] })
		return code, stderr.String()
	}
	cases := []struct {
		name, as string
		want     string
	}{
		{"newline", "alice\nmallory", `--as "alice\nmallory": U+000A at byte 6 is a control or format character`},
		{"carriage return", "alice\rbob", `U+000D at byte 6`},
		{"escape sequence", "\x1b[31mroot", `U+001B at byte 1`},
		{"tab", "a\tb", `U+0009 at byte 2`},
		{"NUL", "a\x00b", `U+0000 at byte 2`},
		{"DEL", "a\x7fb", `U+007F at byte 2`},
		{"C1 control", "a\u0085b", `U+0085 at byte 2`},
		{"bidi override", "alice\u202egnp.exe", `U+202E at byte 6`},
		{"zero width space", "ali\u200bce", `U+200B at byte 4`},
		{"line separator", "a\u2028b", `U+2028 at byte 2`},
		{"invalid UTF-8", "al\xffice", `invalid UTF-8 at byte 3`},
		{"overlong", strings.Repeat("a", 257), `--as is 257 bytes long; want 1 to 256 bytes of printable UTF-8`},
		{"overlong in runes", strings.Repeat("é", 129), `--as is 258 bytes long`},
	}
	for _, tc := range cases {
		for _, via := range []string{"--as", "GOVLEDGER_AS"} {
			var code int
			var stderr string
			if via == "--as" {
				code, stderr = run(tc.as, nil, "record", "--max-age", "0", doc)
			} else {
				code, stderr = run("", map[string]string{"GOVLEDGER_AS": tc.as}, "record", "--max-age", "0", doc)
			}
			want := strings.Replace(tc.want, "--as", via, 1)
			if code != exitUsage || !strings.Contains(stderr, want) || strings.Contains(stderr, tc.as) && len(tc.as) < 200 {
				t.Errorf("%s via %s: exit %d, stderr %q; want exit 2 and %q, the name escaped", tc.name, via, code, stderr, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "ledger.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused submitter created or wrote the ledger (%v)", err)
	}
	// Printable names pass, trimmed; unblock refuses the same names.
	for i, as := range []string{"alice", "ci-bot@example.com", "Jürgen Müller", " spaced ", strings.Repeat("é", 128)} {
		code, stderr := run(as, nil, "record", "--max-age", "0", e.handoffDoc(10+i))
		if code != 0 {
			t.Errorf("--as %q: exit %d: %s", as, code, stderr)
		}
	}
	es := e.entries()
	if got := es[len(es)-2].Submitter; got != "spaced" {
		t.Errorf("--as \" spaced \" recorded as %q", got)
	}
	if code, stderr := run("a\nb", nil, "unblock", "--reason", "r", "domain-05-product"); code != exitUsage || !strings.Contains(stderr, `--as "a\nb"`) {
		t.Errorf("unblock --as with a newline: exit %d, %q", code, stderr)
	}
}
