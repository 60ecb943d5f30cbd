package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/internal/testenv"
)

// The outsider verifiers (scripts/verify-export.py and the README's bundle
// check) must not depend on assert: python3 -O strips every assert, and a
// verifier whose checks are asserts accepts anything under -O. These tests
// run every case under python3 -O, the mode that used to switch the checks
// off, and the untouched inputs and a few tampered ones under python3 and
// -OO too (each run costs a python3 start-up).
var pythonModes = [][]string{{}, {"-O"}, {"-OO"}}

// modesFor returns every mode for a case in all, and -O alone otherwise.
func modesFor(all bool) [][]string {
	if all {
		return pythonModes
	}
	return [][]string{{"-O"}}
}

// python3 returns the interpreter, after checking that -O really strips
// asserts on it (otherwise these tests could not show anything about -O).
func python3(t *testing.T) string {
	t.Helper()
	// A missing interpreter skips, or fails when CI is set: the outsider
	// verifiers are part of what the project ships.
	py := testenv.LookPath(t, "apt-get install python3", "python3")
	if out, err := exec.Command(py, "-O", "-c", "assert False, 'asserts still run'").CombinedOutput(); err != nil {
		t.Fatalf("python3 -O did not strip an assert (%v: %s): these tests would not exercise -O", err, out)
	}
	return py
}

// runPython runs script with args under mode and returns its exit code and
// combined output.
func runPython(t *testing.T, py string, mode []string, script string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(py, append(append(append([]string{}, mode...), script), args...)...)
	cmd.Env = append(os.Environ(), "PYTHONOPTIMIZE=", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("running %s: %v", script, err)
	return 0, ""
}

// demoExport records the demo ledger and returns its export, one line per
// entry.
func demoExport(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if code, _, stderr := runCLI(t, "demo", "--keep", dir); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	code, out, stderr := runCLI(t, "--db", filepath.Join(dir, "demo.db"), "export")
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	lines := strings.SplitAfter(out, "\n")
	if lines[len(lines)-1] != "" {
		t.Fatalf("export does not end with a newline")
	}
	return lines[:len(lines)-1]
}

// exportLine is one line of an export, for tampering.
type exportLine struct {
	Entry      jsontext.Value `json:"entry"`
	Hash       string         `json:"hash"`
	PayloadB64 *string        `json:"payload_b64,omitzero"`
}

// rehash applies edit to the entry of line and recomputes the line's hash,
// as a forger with the export in hand would.
func rehash(t *testing.T, line string, edit func(e map[string]any)) string {
	t.Helper()
	var l exportLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(l.Entry, &e); err != nil {
		t.Fatal(err)
	}
	edit(e)
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	c, err := strictjson.CanonicalizeBytes(raw)
	if err != nil {
		// not canonicalizable (a float): hash the bytes as they are
		c = raw
	}
	sum := sha256.Sum256(append([]byte{0}, c...))
	l.Entry, l.Hash = c, hex.EncodeToString(sum[:])
	out, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(out) + "\n"
}

func lineHash(t *testing.T, line string) string {
	t.Helper()
	var l exportLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatal(err)
	}
	return l.Hash
}

// find returns the index of the first line containing every substring.
func find(t *testing.T, lines []string, subs ...string) int {
	t.Helper()
	for i, l := range lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			return i
		}
	}
	t.Fatalf("no export line contains %q", subs)
	return -1
}

// TestVerifierExportScript runs scripts/verify-export.py on a real export
// of the demo ledger and on tampered copies of it, under python3, -O and
// -OO: the good export passes with its count and head, and every tampered
// one fails with exit 1 and a message naming the line, the seq and what
// failed.
func TestVerifierExportScript(t *testing.T) {
	py := python3(t)
	script, err := filepath.Abs("../../scripts/verify-export.py")
	if err != nil {
		t.Fatal(err)
	}
	good := demoExport(t)
	if len(good) < 10 {
		t.Fatalf("demo export has %d lines, want the demo's entries", len(good))
	}
	n := len(good)
	head := lineHash(t, good[n-1])
	accepted := find(t, good, `"decision":"accepted"`, `"payload_b64"`)
	handoff := find(t, good, `"kind":"handoff"`, `"payload_size"`)

	cases := []struct {
		name   string
		tamper func(l []string) []string
		line   int    // the line (= seq) the script must name; 0: it must pass
		msg    string // in the failure message, or the OK line
	}{
		{"untouched", func(l []string) []string { return l }, 0, fmt.Sprintf("OK: %d entries, head %s", n, head)},
		{"truncated tail passes: compare the count and head with a checkpoint", func(l []string) []string { return l[:n-2] },
			0, fmt.Sprintf("OK: %d entries, head %s", n-2, lineHash(t, good[n-3]))},
		{"entry edited, hash kept", func(l []string) []string {
			l[accepted] = strings.Replace(l[accepted], `"decision":"accepted"`, `"decision":"rejected"`, 1)
			return l
		}, accepted + 1, "hash"},
		{"hash field edited", func(l []string) []string {
			l[1] = strings.Replace(l[1], lineHash(t, l[1]), strings.Repeat("0", 64), 1)
			return l
		}, 2, "recomputed"},
		{"line deleted", func(l []string) []string { return append(l[:2:2], l[3:]...) }, 3, "seq 4, want 3"},
		{"lines swapped", func(l []string) []string { l[2], l[3] = l[3], l[2]; return l }, 3, "seq 4, want 3"},
		{"line duplicated", func(l []string) []string { return append(l[:3:3], l[2:]...) }, 4, "seq 3, want 4"},
		{"entry rewritten and re-hashed", func(l []string) []string {
			l[accepted] = rehash(t, l[accepted], func(e map[string]any) { e["decision"] = "rejected" })
			return l
		}, accepted + 2, "does not link"},
		{"prev rewritten and re-hashed", func(l []string) []string {
			l[1] = rehash(t, l[1], func(e map[string]any) { e["prev"] = strings.Repeat("0", 64) })
			return l
		}, 2, "does not link"},
		{"seq as a boolean, re-hashed", func(l []string) []string {
			l[0] = rehash(t, l[0], func(e map[string]any) { e["seq"] = true })
			return l
		}, 1, "seq True, want 1"},
		{"fraction in an entry, re-hashed", func(l []string) []string {
			l[handoff] = rehash(t, l[handoff], func(e map[string]any) { e["payload_size"] = 1.5 })
			return l
		}, handoff + 1, "not an I-JSON"},
		{"payload swapped", func(l []string) []string {
			l[accepted] = regexp.MustCompile(`"payload_b64":"[^"]*"`).ReplaceAllString(l[accepted],
				`"payload_b64":"`+base64.StdEncoding.EncodeToString([]byte(`{"forged":true}`))+`"`)
			return l
		}, accepted + 1, "payload SHA-256"},
		{"payload not base64", func(l []string) []string {
			l[accepted] = regexp.MustCompile(`"payload_b64":"[^"]*"`).ReplaceAllString(l[accepted], `"payload_b64":"!!!!"`)
			return l
		}, accepted + 1, ""},
		{"duplicate name", func(l []string) []string {
			l[1] = strings.Replace(l[1], "{", `{"hash":"`+strings.Repeat("0", 64)+`",`, 1)
			return l
		}, 2, "duplicate name"},
		{"unknown field", func(l []string) []string {
			l[1] = strings.Replace(l[1], "{", `{"note":"trust me",`, 1)
			return l
		}, 2, "unknown fields"},
		{"invalid UTF-8", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"kind":"`, "\"kind\":\"\xff", 1)
			return l
		}, 2, "utf-8"},
		{"not JSON", func(l []string) []string { return append(l, "not json\n") }, n + 1, ""},
		{"blank line", func(l []string) []string { return append(l[:1:1], append([]string{"\n"}, l[1:]...)...) }, 2, ""},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := tc.tamper(append([]string(nil), good...))
			path := filepath.Join(dir, fmt.Sprintf("export-%d.jsonl", i))
			if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, mode := range modesFor(i < 3) {
				code, out := runPython(t, py, mode, script, path)
				if tc.line == 0 {
					if code != 0 || !strings.Contains(out, tc.msg) {
						t.Errorf("python3 %v: exit %d, output %q; want exit 0 and %q", mode, code, out, tc.msg)
					}
					continue
				}
				want := fmt.Sprintf("FAIL: line %d (seq %d): ", tc.line, tc.line)
				if code != 1 || strings.Contains(out, "OK:") || !strings.HasPrefix(out, want) ||
					!strings.Contains(strings.ToLower(out), strings.ToLower(tc.msg)) || strings.Contains(out, "Traceback") {
					t.Errorf("python3 %v: exit %d, output %q; want exit 1 and %q...%q", mode, code, out, want, tc.msg)
				}
			}
		})
	}
	// The published known-answer vectors are export lines that also carry
	// each entry's canonical text: the script checks that text too.
	t.Run("known-answer vectors", func(t *testing.T) {
		for _, f := range []string{"../../testdata/vectors/entries.jsonl", "../../testdata/vectors/govledger-entries.jsonl"} {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
			if code, out := runPython(t, py, modesFor(false)[0], script, f); code != 0 || !strings.HasPrefix(out, fmt.Sprintf("OK: %d entries, head ", len(lines))) {
				t.Errorf("%s: exit %d, %q; want OK with %d entries", f, code, out, len(lines))
			}
			bad := filepath.Join(dir, filepath.Base(f))
			edited := regexp.MustCompile(`"canonical":\s*"\{`).ReplaceAllStringFunc(lines[0], func(m string) string { return m + " " })
			if edited == lines[0] {
				t.Fatalf("%s: line 1 has no canonical text to edit", f)
			}
			lines[0] = edited
			if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out := runPython(t, py, modesFor(false)[0], script, bad); code != 1 || !strings.HasPrefix(out, "FAIL: line 1 (seq 1): canonical") {
				t.Errorf("%s with its canonical text edited: exit %d, %q; want FAIL on line 1", f, code, out)
			}
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, mode := range modesFor(false) {
			if code, out := runPython(t, py, mode, script); code == 0 || !strings.Contains(out, "usage") {
				t.Errorf("python3 %v without a file: exit %d, %q", mode, code, out)
			}
			if code, out := runPython(t, py, mode, script, filepath.Join(dir, "missing.jsonl")); code != 1 || !strings.HasPrefix(out, "FAIL: ") {
				t.Errorf("python3 %v on a missing file: exit %d, %q", mode, code, out)
			}
		}
	})
}

// readmeBundleCheck extracts the threat model's "Verify a bundle without
// govledger" Python block (docs/threat-model.md) into a file and returns
// its path.
func readmeBundleCheck(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../docs/threat-model.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(readme, []byte("### Verify a bundle without govledger"))
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(rest)
	if !ok || m == nil {
		t.Fatal(`docs/threat-model.md has no Python block under "Verify a bundle without govledger"`)
	}
	if regexp.MustCompile(`(?m)^\s*assert\b`).Match(m[1]) {
		t.Errorf("the README's bundle check uses assert, which python3 -O removes")
	}
	path := filepath.Join(t.TempDir(), "verify_bundle.py")
	if err := os.WriteFile(path, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVerifierREADMEBundleCheck runs the README's bundle check under
// python3, -O and -OO against every named inclusion-proof vector (the valid
// one passes, each negative one fails with exit 1 and "FAIL:") and against a
// bundle govledger prove just made.
func TestVerifierREADMEBundleCheck(t *testing.T) {
	py := python3(t)
	if out, err := exec.Command(py, "-c", "import cryptography").CombinedOutput(); err != nil {
		testenv.Missing(t, "the Python cryptography package", "apt-get install python3-cryptography; .ci/run installs it", fmt.Errorf("%v %s", err, out))
	}
	script := readmeBundleCheck(t)
	vectors, err := filepath.Abs("../../checkpoint/testdata/proofs")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(vectors, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index []struct {
		File    string `json:"file"`
		Desc    string `json:"desc"`
		WantErr string `json:"want_err"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	type bundleCase struct{ file, pub, desc string }
	var valid, invalid []bundleCase
	for _, v := range index {
		if !strings.HasPrefix(v.File, "inclusion-") {
			continue // the README's check covers inclusion bundles
		}
		c := bundleCase{filepath.Join(vectors, v.File), filepath.Join(vectors, "key.pub"), v.Desc}
		if v.WantErr == "" {
			valid = append(valid, c)
		} else {
			invalid = append(invalid, c)
		}
	}
	// A fresh bundle from govledger itself, and the same with its seq moved.
	db := newTestLedger(t, 7)
	key, pub := keypair(t)
	fresh := filepath.Join(t.TempDir(), "e3.json")
	if code, _, stderr := runCLI(t, "--db", db, "prove", "--key", key, "--out", fresh, "3"); code != 0 {
		t.Fatalf("prove: %s", stderr)
	}
	valid = append(valid, bundleCase{fresh, pub, "govledger prove 3"})
	b, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(filepath.Dir(fresh), "moved.json")
	if err := os.WriteFile(moved, bytes.Replace(b, []byte(`"seq": 3`), []byte(`"seq": 4`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	invalid = append(invalid, bundleCase{moved, pub, "bundle seq moved to 4 for entry 3"})
	if len(valid) < 2 || len(invalid) < 10 {
		t.Fatalf("%d valid and %d invalid bundles: the vectors are missing", len(valid), len(invalid))
	}

	for _, mode := range pythonModes {
		all := len(mode) == 1 && mode[0] == "-O"
		for _, c := range valid {
			if code, out := runPython(t, py, mode, script, c.file, c.pub); code != 0 || !strings.HasPrefix(out, "OK: entry") {
				t.Errorf("python3 %v, %s (%s): exit %d, %q; want OK", mode, filepath.Base(c.file), c.desc, code, out)
			}
		}
		for i, c := range invalid {
			if !all && i > 0 {
				continue
			}
			if code, out := runPython(t, py, mode, script, c.file, c.pub); code != 1 || !strings.HasPrefix(out, "FAIL: ") {
				t.Errorf("python3 %v, %s (%s): exit %d, %q; want exit 1 and FAIL", mode, filepath.Base(c.file), c.desc, code, out)
			}
		}
	}
}

// TestVerifierREADMEBundleCheckCosignatures runs the threat model's
// Python check with witness keys: a bundle of a checkpoint cosigned by two
// of three witnesses passes "2 of 3", fails "3 of 3", and fails when a
// cosignature's time is changed.
func TestVerifierREADMEBundleCheckCosignatures(t *testing.T) {
	py := python3(t)
	if out, err := exec.Command(py, "-c", "import cryptography").CombinedOutput(); err != nil {
		testenv.Missing(t, "the Python cryptography package", "apt-get install python3-cryptography; .ci/run installs it", fmt.Errorf("%v %s", err, out))
	}
	script := readmeBundleCheck(t)
	db := newTestLedger(t, 7)
	key, pub := keypair(t)
	dir := t.TempDir()
	cp, cosigned := filepath.Join(dir, "cp"), filepath.Join(dir, "cosigned")
	if code, _, e := runCLI(t, "--db", db, "checkpoint", "--key", key, "--out", cp); code != 0 {
		t.Fatal(e)
	}
	w1, w2, w3 := witnessKey(t, "w1.example"), witnessKey(t, "w2.example"), witnessKey(t, "w3.example")
	cosignFile(t, cp, cosigned, w1, w3)
	bundle := filepath.Join(dir, "e3.json")
	if code, _, e := runCLI(t, "--db", db, "prove", "--checkpoint", cosigned, "--out", bundle, "3"); code != 0 {
		t.Fatal(e)
	}
	run := func(file string, args ...string) (int, string) {
		out, err := exec.Command(py, append([]string{script, file, pub}, args...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	keys := []string{w1.VerifierKey(), w2.VerifierKey(), w3.VerifierKey()}
	if code, out := run(bundle, append([]string{"2"}, keys...)...); code != 0 || !strings.Contains(out, "cosigned by 2 witnesses") {
		t.Fatalf("2 of 3: exit %d: %s", code, out)
	}
	if code, out := run(bundle, append([]string{"3"}, keys...)...); code != 1 || !strings.Contains(out, "2 witness cosignatures, 3 required") {
		t.Fatalf("3 of 3: exit %d: %s", code, out)
	}
	// Another time in w1's cosignature: its signature no longer verifies.
	b, _ := os.ReadFile(bundle)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	c := m["checkpoint"].(string)
	i := strings.Index(c, "\u2014 w1.example ")
	line := c[i+len("\u2014 w1.example "):]
	line = line[:strings.IndexByte(line, '\n')]
	raw, _ := base64.StdEncoding.DecodeString(line)
	raw[11] ^= 1
	m["checkpoint"] = strings.Replace(c, line, base64.StdEncoding.EncodeToString(raw), 1)
	bad := filepath.Join(dir, "bad.json")
	nb, _ := json.Marshal(m)
	os.WriteFile(bad, nb, 0o644)
	if code, out := run(bad, append([]string{"2"}, keys...)...); code != 1 || !strings.Contains(out, "cosignature of witness w1.example does not verify") {
		t.Fatalf("changed time: exit %d: %s", code, out)
	}
}
