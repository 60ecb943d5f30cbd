package main

// The power-cut trials: the real binary runs on internal/powercut's FUSE
// file system, which forgets every write not yet fsync'd when the test
// cuts the power at a random moment. After each cut (and a restore of the
// disk as it would be), every acknowledged entry must be in the ledger,
// nothing unacknowledged may appear except what an "outcome unknown" (a
// killed process, a lost answer) allows, verify must pass, and every file
// written by rename (the lock file, the tokens file, the compacted
// ledger) must be the old or the new one, whole.

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/fault"
	"github.com/govledger/govledger/internal/powercut"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/server"
)

var powerCuts = flag.Int("power-cuts", 0, "power cuts per scenario in TestPowerCut, 7 scenarios (default 29, 203 in all; 4 under -race, where .ci/run runs 29 again without it)")

// The state of one write the trial asked for, by its idempotency key.
const (
	attUnknown = iota // sent, and the answer was lost (killed, cut, "outcome unknown")
	attAcked          // acknowledged: exit 0 or 1 with a seq, or 201
	attRefused        // said nothing was written, or never sent
)

type attempt struct {
	state int
	seq   uint64
	hash  string
}

// pcFigures are the counts a scenario reports.
type pcFigures struct {
	cuts        int
	acked       int // writes acknowledged
	checked     int // acknowledged writes found after a cut (one per write per cut)
	unknown     int // writes whose outcome was unknown at a cut
	unknownKept int // of those, found in the ledger after the cut
	scrambled   int // cuts restored in Scramble mode (the rest in Drop)
	timed       int // cuts made by the timer, the workers having made fewer changes than drawn
}

func (f pcFigures) String() string {
	return fmt.Sprintf("%d cuts (%d scrambled, %d by the timer), %d writes acknowledged, %d acknowledged-entry checks passed, %d outcome-unknown writes (%d found in the ledger, %d not)",
		f.cuts, f.scrambled, f.timed, f.acked, f.checked, f.unknown, f.unknownKept, f.unknown-f.unknownKept)
}

// pcRun is one scenario's state across its cuts.
type pcRun struct {
	t        *testing.T
	fs       *powercut.FS
	bin      string
	dir      string // the mount
	db       string
	manifest string
	lock     string
	docs     string // handoff documents, outside the mount
	base     []byte // the example handoff
	rng      *rand.Rand

	mu      sync.Mutex
	procs   map[*exec.Cmd]bool
	cutting bool
	next    int
	att     map[string]*attempt
	fig     pcFigures
	// verifyBase, when set, is the findings verify reports on the
	// fixture the run started from (see checkLedger).
	verifyBase []string
}

func newPCRun(t *testing.T, bin string, seed uint64) *pcRun {
	t.Helper()
	f := powercut.Mount(t, seed)
	dir := f.Dir()
	if err := os.CopyFS(filepath.Join(dir, "reg"), os.DirFS("../../testdata/registry")); err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile("../../examples/demo/data/handoffs/01-product-to-analysis.json")
	if err != nil {
		t.Fatal(err)
	}
	r := &pcRun{t: t, fs: f, bin: bin, dir: dir, db: filepath.Join(dir, "ledger.db"),
		manifest: filepath.Join(dir, "reg", "prompt-manifest.json"), lock: filepath.Join(dir, "reg", "prompt-lock.json"),
		docs: t.TempDir(), base: base, rng: rand.New(rand.NewPCG(seed, 22)),
		procs: map[*exec.Cmd]bool{}, att: map[string]*attempt{}}
	if _, code := r.cli("lock"); code != 0 {
		t.Fatalf("lock: exit %d", code)
	}
	if _, _, ok := r.record(); !ok { // creates the ledger
		t.Fatal("the first record failed")
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return r
}

// cli runs govledger on the run's files; code is -1 when the process was
// killed, -2 when it was not started (the power is cut).
func (r *pcRun) cli(args ...string) (stdout []byte, code int) {
	out, _, code := r.cliErr(args...)
	return out, code
}

func (r *pcRun) cliErr(args ...string) (stdout, stderr []byte, code int) {
	cmd := exec.Command(r.bin, append([]string{"--db", r.db, "--manifest", r.manifest, "--lock", r.lock}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	r.mu.Lock()
	if r.cutting {
		r.mu.Unlock()
		return nil, nil, -2
	}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		r.t.Errorf("start %v: %v", args, err)
		return nil, nil, -2
	}
	r.procs[cmd] = true
	r.mu.Unlock()
	cmd.Wait()
	r.mu.Lock()
	delete(r.procs, cmd)
	r.mu.Unlock()
	return out.Bytes(), errb.Bytes(), cmd.ProcessState.ExitCode()
}

// isCutting reports whether the power is cut: by the file system (an
// armed cut fired; the cycle may not have seen it yet) or by the cycle.
func (r *pcRun) isCutting() bool {
	if r.fs.IsCut() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cutting
}

// cycle runs workers until a power cut, kills every process, and
// restores the disk (Drop or Scramble, at random). The cut lands on the
// n-th file change from now, n drawn from [1, maxOps] (a cut at an I/O
// step, not between them), or after 10 seconds if the workers make fewer
// changes. onCut runs after the cut, before the workers are waited for
// (to kill a server).
func (r *pcRun) cycle(maxOps int, onCut func(), workers ...func()) {
	cutCh := r.fs.CutAt(1 + r.rng.IntN(maxOps))
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for !r.isCutting() {
				w()
			}
		})
	}
	select {
	case <-cutCh:
	case <-time.After(10 * time.Second):
		r.fs.Cut()
		r.fig.timed++
	}
	r.mu.Lock()
	r.cutting = true
	for cmd := range r.procs {
		cmd.Process.Kill()
	}
	r.mu.Unlock()
	if onCut != nil {
		onCut()
	}
	wg.Wait()
	mode := powercut.Drop
	if r.rng.IntN(2) == 0 {
		mode = powercut.Scramble
		r.fig.scrambled++
	}
	if err := r.fs.Restore(mode); err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.cutting = false
	r.mu.Unlock()
	r.fig.cuts++
}

// onDisk is the path of p (in the mount) on the backing disk. This
// process serves the mount: it must not map a file of it into memory (a
// page fault there blocks a thread the Go runtime cannot stop, and the
// next garbage collection waits for it forever), so it opens a ledger
// through the disk, between cuts, when nothing writes.
func (r *pcRun) onDisk(p string) string {
	rel, err := filepath.Rel(r.dir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		r.t.Fatalf("%s is not in the mount %s", p, r.dir)
	}
	return filepath.Join(r.fs.Disk(), rel)
}

// useLedger points the run at another ledger (or none), forgetting the
// attempts made on the last one.
func (r *pcRun) useLedger(db string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.db = db
	r.att = map[string]*attempt{}
}

// newKey files a new attempt and returns its key.
func (r *pcRun) newKey() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	key := fmt.Sprintf("pc-%d", r.next)
	r.att[key] = &attempt{state: attUnknown}
	return key
}

// settle files the outcome of key's attempt.
func (r *pcRun) settle(key string, state int, seq uint64, hash string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.att[key]
	a.state, a.seq, a.hash = state, seq, hash
	if state == attAcked {
		r.fig.acked++
	}
}

// doc writes a handoff document with a new id and a unique sentence in
// its payload, outside the mount, and returns its path and the sentence.
func (r *pcRun) doc(key string) (string, string) {
	r.mu.Lock() // concurrent workers share rng
	secret := "secret " + key + " " + fmt.Sprint(r.rng.Uint64())
	id := fmt.Sprintf("6ba7b810-9dad-41d1-80b4-%012x", r.rng.Uint64()>>16)
	r.mu.Unlock()
	d := strings.Replace(string(r.base), "550e8400-e29b-41d4-a716-446655440000", id, 1)
	d = strings.Replace(d, "Users want feature X", secret, 1)
	p := filepath.Join(r.docs, key+".json")
	if err := os.WriteFile(p, []byte(d), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p, secret
}

// record runs "govledger record" on one new document and files the
// outcome; it returns the seq when acknowledged.
func (r *pcRun) record() (uint64, string, bool) {
	key := r.newKey()
	p, secret := r.doc(key)
	out, stderr, code := r.cliErr("--output", "json", "record", "--max-age", "0", "--wait", "20s", "--idempotency-key", key, p)
	var res struct {
		Documents []struct {
			Seq       uint64 `json:"seq"`
			EntryHash string `json:"entry_hash"`
		} `json:"documents"`
	}
	switch {
	case code == -2:
		r.settle(key, attRefused, 0, "")
	case (code == 0 || code == 1) && json.Unmarshal(out, &res) == nil && len(res.Documents) == 1 && res.Documents[0].Seq > 0:
		d := res.Documents[0]
		r.settle(key, attAcked, d.Seq, d.EntryHash)
		return d.Seq, secret, true
	case code == 3 && bytes.Contains(stderr, []byte("nothing was written")) && !bytes.Contains(stderr, []byte("outcome unknown")):
		r.settle(key, attRefused, 0, "")
	case code >= 0 && !r.isCutting():
		r.t.Errorf("record %s: exit %d with the power on\n%s%s", key, code, out, stderr)
	}
	return 0, "", false
}

// checkLedger checks the ledger at db after a cut: every acknowledged
// write is in it at its seq with its hash, no refused one is, an unknown
// one may be (and is settled now, as every process is gone), no entry
// carries a key the trial never used, and verify passes.
func (r *pcRun) checkLedger() error {
	l, err := bolt.Open(r.onDisk(r.db), &bolt.Options{ReadOnly: true, NoCreate: true})
	if err != nil {
		return fmt.Errorf("open the ledger after the cut: %w", err)
	}
	type found struct {
		seq  uint64
		hash string
	}
	byKey := map[string]found{}
	var last uint64
	err = l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		if seq != last+1 {
			return fmt.Errorf("seq %d follows %d", seq, last)
		}
		last = seq
		en, err := entry.Decode(raw)
		if err != nil {
			return fmt.Errorf("seq %d: %w", seq, err)
		}
		if k := en.IdempotencyKey; k != "" {
			k = k[strings.LastIndex(k, "/")+1:]
			if _, dup := byKey[k]; dup && strings.HasPrefix(k, "pc-") {
				return fmt.Errorf("key %s is in two entries", k)
			}
			byKey[k] = found{seq, entry.LeafHash(raw).String()}
		}
		return nil
	})
	l.Close()
	if err != nil {
		return fmt.Errorf("scan after the cut: %w", err)
	}
	r.mu.Lock()
	for k, a := range r.att {
		got, ok := byKey[k]
		switch a.state {
		case attAcked:
			if !ok || got.seq != a.seq || got.hash != a.hash {
				r.mu.Unlock()
				return fmt.Errorf("acknowledged write %s (seq %d, %s) lost after the cut: found %v %+v (head %d)", k, a.seq, a.hash, ok, got, last)
			}
			r.fig.checked++
		case attRefused:
			if ok {
				r.mu.Unlock()
				return fmt.Errorf("write %s, refused with nothing written, is in the ledger at seq %d", k, got.seq)
			}
		case attUnknown:
			r.fig.unknown++
			if ok {
				r.fig.unknownKept++
				a.state, a.seq, a.hash = attAcked, got.seq, got.hash
			} else {
				a.state = attRefused
			}
		}
	}
	r.mu.Unlock()
	for k := range byKey {
		if strings.HasPrefix(k, "pc-") && r.att[k] == nil {
			return fmt.Errorf("entry with key %s, never sent, is in the ledger", k)
		}
	}
	out, stderr, code := r.cliErr("verify")
	if r.verifyBase != nil {
		// A fixture whose entries verify does not pass (the upgrade's):
		// the same findings as before the cut, no other.
		if got := findings(out); !slices.Equal(got, r.verifyBase) {
			return fmt.Errorf("verify after the cut: exit %d, findings differ from the fixture's (%d, want %d)\n%s%s", code, len(got), len(r.verifyBase), out, stderr)
		}
		return nil
	}
	if code != 0 {
		return fmt.Errorf("verify after the cut: exit %d\n%s%s", code, out, stderr)
	}
	return nil
}

// findings returns the sorted finding lines of verify's text output.
func findings(out []byte) []string {
	var got []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(strings.TrimSpace(line), "seq ") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	slices.Sort(got)
	return got
}

// pcScenario is one kind of trial: setup once, then cuts.
type pcScenario struct {
	name string
	run  func(r *pcRun, cuts int) error
}

var pcScenarios = []pcScenario{
	{"record", func(r *pcRun, cuts int) error {
		for range cuts {
			r.cycle(40, nil, func() { r.record() })
			if err := r.checkLedger(); err != nil {
				return err
			}
		}
		return nil
	}},
	{"record-concurrent", func(r *pcRun, cuts int) error {
		w := func() { r.record() }
		for range cuts {
			r.cycle(50, nil, w, w, w, w)
			if err := r.checkLedger(); err != nil {
				return err
			}
		}
		return nil
	}},
	{"serve", pcServe},
	{"redact", pcRedact},
	{"upgrade", pcUpgrade},
	{"lock", pcLock},
	{"token", pcToken},
}

// pcServe: "govledger serve" with four clients submitting, each request
// with its own Idempotency-Key; a 201 is an acknowledgement.
func pcServe(r *pcRun, cuts int) error {
	e := newServeEnvIn(r.t, filepath.Join(r.dir, "serve"), "registry")
	e.bin = r.bin
	r.useLedger(e.db)
	r.manifest, r.lock = e.manifest, e.lock
	if err := r.fs.Sync(); err != nil {
		return err
	}
	tmpl := demoDoc(r.t, "09-qa-result.vbw.json")
	const path = "/v1/handoffs?from=domain-03-technical&to=domain-02-analysis"
	for range cuts {
		s := e.start()
		client := func() {
			key := r.newKey()
			a, err := e.try(s, "POST", path, "writer", bytes.Replace(tmpl, []byte("line 42"), []byte("line "+key), 1), "Idempotency-Key: "+key)
			var p struct {
				Seq     uint64 `json:"seq"`
				Hash    string `json:"entry_hash"`
				Written string `json:"written"`
			}
			if err == nil {
				json.Unmarshal(a.body, &p)
			}
			switch {
			case err == nil && a.status == http.StatusCreated:
				r.settle(key, attAcked, p.Seq, p.Hash)
			case err == nil && p.Written == "no":
				r.settle(key, attRefused, 0, "")
			case err == nil && !r.isCutting():
				r.t.Errorf("POST %s: %d %s with the power on", key, a.status, a.body)
			}
		}
		r.cycle(150, s.kill, client, client, client, client)
		if err := r.checkLedger(); err != nil {
			return err
		}
	}
	return nil
}

// pcRedact: records and redactions (each compacts the file and renames
// the copy over the ledger) in turn. After a cut, the text of every
// payload whose redaction was acknowledged is in no byte of the file:
// a compaction whose rename was lost would leave the old file, which
// keeps the erased bytes in its free pages.
func pcRedact(r *pcRun, cuts int) error {
	var pool []uint64               // acknowledged records not yet redacted
	secrets := map[uint64]string{}  // seq -> the unique text of its payload
	redacted := map[uint64]string{} // seq -> secret, of acknowledged redactions
	maybe := map[uint64]bool{}      // seqs whose redact was cut before it answered
	for range 3 {
		seq, secret, ok := r.record()
		if !ok {
			return fmt.Errorf("a record before the cuts failed")
		}
		pool = append(pool, seq)
		secrets[seq] = secret
	}
	if err := r.fs.Sync(); err != nil {
		return err
	}
	worker := func() {
		if len(pool) < 3 || r.rng.IntN(2) == 0 {
			if seq, secret, ok := r.record(); ok {
				pool = append(pool, seq)
				secrets[seq] = secret
			}
			return
		}
		seq := pool[0]
		out, stderr, code := r.cliErr("redact", "--reason", "power-cut trial", fmt.Sprint(seq))
		switch {
		case code == 0:
			redacted[seq] = secrets[seq]
			pool = pool[1:]
		case code == 2 && maybe[seq]:
			// An earlier redact of seq, cut before it answered, did
			// commit: it cannot be redacted twice.
			pool = pool[1:]
		case code >= 0 && !r.isCutting():
			r.t.Errorf("redact %d: exit %d with the power on\n%s%s", seq, code, out, stderr)
			pool = pool[1:]
		case code != -2:
			maybe[seq] = true
		}
	}
	for range cuts {
		r.cycle(60, nil, worker)
		if err := r.checkLedger(); err != nil {
			return err
		}
		b, err := os.ReadFile(r.onDisk(r.db))
		if err != nil {
			return err
		}
		for seq, secret := range redacted {
			if bytes.Contains(b, []byte(secret)) {
				return fmt.Errorf("the payload of seq %d, whose redaction was acknowledged, is in the ledger file after the cut: the compacted copy was lost", seq)
			}
		}
		// Records whose outcome was unknown may be gone: keep only the
		// pool entries the ledger still has.
		pool = slices.DeleteFunc(pool, func(seq uint64) bool { return !r.hasSeq(seq) })
	}
	r.t.Logf("redact: %d redactions acknowledged (each a compaction and a rename), their payloads in no byte of the file after every later cut", len(redacted))
	return nil
}

// hasSeq reports whether an acknowledged attempt has seq.
func (r *pcRun) hasSeq(seq uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.att {
		if a.state == attAcked && a.seq == seq {
			return true
		}
	}
	return false
}

// pcUpgrade: a format 5 file is upgraded in place by the first writable
// open ("record"), cut at a random moment. After the cut the file holds
// the fixture's entries unchanged (upgraded or not) and verify passes.
func pcUpgrade(r *pcRun, cuts int) error {
	zf, err := os.Open("../../ledger/bolt/testdata/format5.db.gz")
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(zf)
	if err != nil {
		return err
	}
	fixture, err := io.ReadAll(zr)
	zf.Close()
	if err != nil {
		return err
	}
	orig := filepath.Join(r.docs, "format5.db")
	if err := os.WriteFile(orig, fixture, 0o600); err != nil {
		return err
	}
	want := fixtureHashes(r.t, orig)
	grown := 0
	r.useLedger(orig)
	out, _, code := r.cliErr("verify")
	r.verifyBase = findings(out)
	if code != 1 || len(r.verifyBase) == 0 {
		return fmt.Errorf("verify of the format 5 fixture: exit %d, %d findings; want exit 1 with the findings of its synthetic entries", code, len(r.verifyBase))
	}
	for i := range cuts {
		r.useLedger(filepath.Join(r.dir, fmt.Sprintf("up-%d.db", i)))
		if err := os.WriteFile(r.db, fixture, 0o600); err != nil {
			return err
		}
		if err := r.fs.Sync(); err != nil {
			return err
		}
		r.cycle(60, nil, func() { r.record() })
		if err := r.checkLedger(); err != nil {
			return err
		}
		got := fixtureHashes(r.t, r.onDisk(r.db))
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			return fmt.Errorf("cut %d: the upgraded file does not start with the fixture's %d entries (has %d)", i, len(want), len(got))
		}
		if len(got) > len(want) {
			grown++
		}
	}
	r.t.Logf("upgrade: after %d of %d cuts the file was upgraded and appended to; after the others, as the fixture (upgraded or not)", grown, cuts)
	return nil
}

func fixtureHashes(t *testing.T, path string) []string {
	t.Helper()
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true, NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []string
	if err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		out = append(out, entry.LeafHash(raw).String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// pcLock: a prompt changes (synced), then "govledger lock" rewrites the
// lock file. After a cut the lock file parses, and it is the last
// acknowledged one unless a later lock was under way.
func pcLock(r *pcRun, cuts int) error {
	prompt := filepath.Join(r.dir, "reg", "prompts", "domain-01-research.md")
	var (
		mu       sync.Mutex
		last     []byte // the lock file of the last acknowledged run
		underWay bool
		n        int
	)
	worker := func() {
		n++
		b, err := os.ReadFile(prompt)
		if err != nil {
			return // the power is cut
		}
		b = append(b, fmt.Sprintf("\nrevision %d\n", n)...)
		if writeSynced(prompt, b) != nil {
			return
		}
		mu.Lock()
		underWay = true
		mu.Unlock()
		_, code := r.cli("lock")
		if code != 0 {
			if code >= 0 && !r.isCutting() {
				r.t.Errorf("lock: exit %d with the power on", code)
			}
			return
		}
		got, err := os.ReadFile(r.lock)
		mu.Lock()
		defer mu.Unlock()
		r.fig.acked++
		if err == nil {
			last, underWay = got, false
		}
	}
	for range cuts {
		r.cycle(40, nil, worker)
		got, err := os.ReadFile(r.lock)
		if err != nil {
			return fmt.Errorf("lock file after the cut: %w", err)
		}
		if _, err := lockfile.Parse(r.lock, got); err != nil {
			return fmt.Errorf("lock file after the cut is neither the old nor the new one: %w", err)
		}
		if !underWay && last != nil {
			if !bytes.Equal(got, last) {
				return fmt.Errorf("lock file after the cut is not the last acknowledged one")
			}
			r.fig.checked++
		}
		last, underWay = got, false
	}
	return nil
}

// writeSynced writes a file in place and fsyncs it.
func writeSynced(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// pcToken: "govledger token create" adds principals to the tokens file.
// After a cut the file parses and holds every acknowledged name, and no
// name that was never asked for.
func pcToken(r *pcRun, cuts int) error {
	tokens := filepath.Join(r.dir, "tokens.json")
	r.useLedger(r.db)
	if _, code := r.cli("token", "create", "--tokens", tokens, "--scope", "ledger:read", "first"); code != 0 {
		return fmt.Errorf("token create: exit %d", code)
	}
	if err := r.fs.Sync(); err != nil {
		return err
	}
	worker := func() {
		key := r.newKey()
		_, code := r.cli("token", "create", "--tokens", tokens, "--scope", "handoff:write", "--agents", "*", key)
		switch {
		case code == 0:
			r.settle(key, attAcked, 0, "")
		case code == -2:
			r.settle(key, attRefused, 0, "")
		case code >= 0 && !r.isCutting():
			r.t.Errorf("token create %s: exit %d with the power on", key, code)
		}
	}
	for range cuts {
		r.cycle(40, nil, worker)
		b, err := os.ReadFile(tokens)
		if err != nil {
			return fmt.Errorf("tokens file after the cut: %w", err)
		}
		tf, err := server.ParseTokensFile(tokens, b)
		if err != nil {
			return fmt.Errorf("tokens file after the cut is neither the old nor the new one: %w", err)
		}
		names := map[string]bool{}
		for _, p := range tf.Tokens {
			names[p.Name] = true
		}
		r.mu.Lock()
		for k, a := range r.att {
			switch {
			case a.state == attAcked && !names[k]:
				r.mu.Unlock()
				return fmt.Errorf("token %s, acknowledged, is not in the tokens file after the cut", k)
			case a.state == attAcked:
				r.fig.checked++
			case a.state == attRefused && names[k]:
				r.mu.Unlock()
				return fmt.Errorf("token %s, never created, is in the tokens file", k)
			case a.state == attUnknown:
				r.fig.unknown++
				if names[k] {
					r.fig.unknownKept++
					a.state = attAcked
				} else {
					a.state = attRefused
				}
			}
		}
		r.mu.Unlock()
		for name := range names {
			if name != "first" && r.att[name] == nil {
				return fmt.Errorf("token %s, never asked for, is in the tokens file", name)
			}
		}
	}
	return nil
}

// TestPowerCut runs every scenario, -power-cuts cuts each, on the real
// binary.
func TestPowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: hundreds of power cuts on a FUSE mount")
	}
	bin := govledgerBinary(t)
	seed := uint64(time.Now().UnixNano())
	cuts := *powerCuts
	if cuts == 0 {
		cuts = 29
		if raceEnabled {
			cuts = 4
		}
	}
	t.Logf("seed %d, %d cuts per scenario", seed, cuts)
	start := time.Now()
	var total pcFigures
	for i, sc := range pcScenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := newPCRun(t, bin, seed+uint64(i))
			began := time.Now()
			if err := sc.run(r, cuts); err != nil {
				t.Fatalf("after %d cuts: %v", r.fig.cuts, err)
			}
			st := r.fs.Stats()
			t.Logf("%s: %v; %d unsynced writes dropped, %d kept in part, %d torn, %d name changes dropped; %s",
				sc.name, r.fig, st.DroppedOps, st.KeptOps, st.TornWrites, st.DroppedNames, time.Since(began).Round(time.Millisecond))
			total.cuts += r.fig.cuts
			total.acked += r.fig.acked
			total.checked += r.fig.checked
			total.unknown += r.fig.unknown
			total.unknownKept += r.fig.unknownKept
			total.scrambled += r.fig.scrambled
		})
	}
	t.Logf("all scenarios: %v in %s", total, time.Since(start).Round(time.Millisecond))
}

// TestPowerCutCatchesFaults builds govledger with the test-only fault
// switches (internal/fault) and shows the trials fail with each fault on:
// the bbolt file opened NoSync (record), and the compaction's rename
// without its fsyncs (redact).
func TestPowerCutCatchesFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: builds a second binary and cuts power")
	}
	if raceEnabled && *powerCuts == 0 {
		t.Skip("skipped under -race: .ci/run runs it without -race, with TestPowerCut's 203 cuts")
	}
	bin := filepath.Join(t.TempDir(), "govledger-faults")
	build := exec.Command("go", "build", "-tags", "govledger_faults", "-o", bin, "./cmd/govledger")
	build.Dir = moduleRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags govledger_faults: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		fault    string
		scenario string
	}{
		{fault.BoltNoSync, "record"},
		{fault.CompactNoSync, "redact"},
		{"", "record"}, // the faulty build with no fault on passes
		{"", "redact"},
	} {
		t.Run(tc.fault+"/"+tc.scenario, func(t *testing.T) {
			t.Setenv("GOVLEDGER_TEST_FAULTS", tc.fault)
			i := slices.IndexFunc(pcScenarios, func(s pcScenario) bool { return s.name == tc.scenario })
			r := newPCRun(t, bin, uint64(time.Now().UnixNano()))
			// A fault is caught at the first cut after an acknowledged
			// write it touched (most cuts); the run stops there. Without
			// a fault a few cuts show the tagged build passes.
			cuts := 20
			if tc.fault == "" {
				cuts = 4
			}
			err := pcScenarios[i].run(r, cuts)
			switch {
			case tc.fault == "" && err != nil:
				t.Fatalf("no fault on, yet the trial failed: %v", err)
			case tc.fault == "":
				t.Logf("no fault: %v", r.fig)
			case err == nil:
				t.Fatalf("fault %s on: %d cuts of %s passed (%v); the trials do not catch it", tc.fault, cuts, tc.scenario, r.fig)
			default:
				t.Logf("fault %s caught after %d cuts: %v", tc.fault, r.fig.cuts, err)
			}
		})
	}
}
