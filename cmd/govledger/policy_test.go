package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
)

// witnessKey makes a witness's cosigner with a fresh key.
func witnessKey(t *testing.T, name string) *checkpoint.Cosigner {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w, err := checkpoint.NewCosigner(name, priv)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// cosignFile adds the witnesses' cosignatures to the checkpoint in file in
// and writes the result to out.
func cosignFile(t *testing.T, in, out string, ws ...*checkpoint.Cosigner) {
	t.Helper()
	msg, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := cp.Text()
	for _, w := range ws {
		lines, err := note.Sign(&note.Note{Text: string(text)}, w)
		if err != nil {
			t.Fatal(err)
		}
		msg = checkpoint.AddSignatures(msg, lines)
	}
	if err := os.WriteFile(out, msg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPolicyProofsAndVerify: a tlog-proof of a checkpoint cosigned by two
// of three witnesses verifies under a 2-of-3 policy and fails with one
// cosignature removed; verify --policy refuses a checkpoint with too few
// cosignatures and accepts a quorum.
func TestPolicyProofsAndVerify(t *testing.T) {
	db := newTestLedger(t, 9)
	key, pub := keypair(t)
	dir := t.TempDir()
	w1, w2, w3 := witnessKey(t, "w1.example"), witnessKey(t, "w2.example"), witnessKey(t, "w3.example")
	logKey, err := os.ReadFile(pub)
	if err != nil {
		logKey = []byte(pub)
	}
	policy := filepath.Join(dir, "policy")
	os.WriteFile(policy, fmt.Appendf(nil, "log %s\nwitness one %s https://w1.example/\nwitness two %s\nwitness three %s\ngroup two-of-three 2 one two three\nquorum two-of-three\n",
		strings.TrimSpace(string(logKey)), w1.VerifierKey(), w2.VerifierKey(), w3.VerifierKey()), 0o644)

	cp := filepath.Join(dir, "cp.txt")
	if code, _, e := runCLI(t, "--db", db, "checkpoint", "--key", key, "--out", cp); code != 0 {
		t.Fatal(e)
	}
	one, two := filepath.Join(dir, "one.txt"), filepath.Join(dir, "two.txt")
	cosignFile(t, cp, one, w2)
	cosignFile(t, cp, two, w1, w3)

	// prove --format tlog-proof against the cosigned checkpoint.
	proof := filepath.Join(dir, "e5.tlog-proof")
	if code, _, e := runCLI(t, "--db", db, "prove", "--format", "tlog-proof", "--checkpoint", two, "--out", proof, "5"); code != 0 {
		t.Fatalf("prove --format tlog-proof: %s", e)
	}
	data, _ := os.ReadFile(proof)
	if !strings.HasPrefix(string(data), "c2sp.org/tlog-proof@v1\nextra ") || !strings.Contains(string(data), "\nindex 4\n") {
		t.Fatalf("not a tlog-proof of index 4:\n%s", data)
	}
	code, out, e := runCLI(t, "verify-proof", "--policy", policy, proof)
	if code != 0 || !strings.Contains(out, "entry 5") || !strings.Contains(out, "one, three") {
		t.Fatalf("verify-proof --policy: exit %d: %s %s", code, out, e)
	}
	// One cosignature removed: the quorum fails.
	lines := strings.Split(string(data), "\n")
	var cut []string
	removed := false
	for _, l := range lines {
		if !removed && strings.HasPrefix(l, "\u2014 w3.example ") {
			removed = true
			continue
		}
		cut = append(cut, l)
	}
	if !removed {
		t.Fatal("no w3 cosignature line in the proof")
	}
	bad := filepath.Join(dir, "cut.tlog-proof")
	os.WriteFile(bad, []byte(strings.Join(cut, "\n")), 0o644)
	if code, out, _ := runCLI(t, "verify-proof", "--policy", policy, bad); code != exitFound || !strings.Contains(out, "quorum two-of-three not met") {
		t.Fatalf("cosignature removed: exit %d: %s", code, out)
	}
	// --key alone (no witness needed) still takes it.
	if code, out, e := runCLI(t, "verify-proof", "--key", pub, bad); code != 0 {
		t.Fatalf("verify-proof --key: exit %d: %s %s", code, out, e)
	}
	// A changed entry fails the inclusion proof.
	tampered := strings.Replace(string(data), "\nindex 4\n", "\nindex 3\n", 1)
	os.WriteFile(bad, []byte(tampered), 0o644)
	if code, out, _ := runCLI(t, "verify-proof", "--policy", policy, bad); code != exitFound {
		t.Fatalf("other index: exit %d: %s", code, out)
	}
	// A JSON bundle against the cosigned checkpoint takes --policy too.
	js := filepath.Join(dir, "e5.json")
	if code, _, e := runCLI(t, "--db", db, "prove", "--checkpoint", one, "--out", js, "5"); code != 0 {
		t.Fatal(e)
	}
	if code, out, _ := runCLI(t, "verify-proof", "--policy", policy, js); code != exitFound || !strings.Contains(out, "quorum") {
		t.Fatalf("json bundle, one cosignature: exit %d: %s", code, out)
	}
	// A witness key was "unknown verifier algorithm" as a --key; it is a
	// key like any other now, and it did sign this checkpoint.
	if code, _, e := runCLI(t, "verify-proof", "--key", w1.VerifierKey(), proof); code != 0 {
		t.Fatalf("witness key as --key: exit %d: %s", code, e)
	}
}

// TestVerifyPolicy: verify --policy refuses a checkpoint with too few
// cosignatures (exit 1, naming the quorum) and accepts a quorum.
func TestVerifyPolicy(t *testing.T) {
	e := newCLIEnv(t)
	key := filepath.Join(e.dir, "k")
	for _, args := range [][]string{{"lock"}, {"keygen", "--out", key, "govledger.test/cli"}, {"record", e.doc("01-product-to-analysis.json")}} {
		if code, out, stderr := e.run("", args...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, stderr)
		}
	}
	cp := filepath.Join(e.dir, "cp.txt")
	if code, out, stderr := e.run("", "checkpoint", "--key", key+".key", "--out", cp); code != 0 {
		t.Fatalf("checkpoint: %s%s", out, stderr)
	}
	logKey, _ := os.ReadFile(key + ".pub")
	w1, w2, w3 := witnessKey(t, "w1.example"), witnessKey(t, "w2.example"), witnessKey(t, "w3.example")
	policy := filepath.Join(e.dir, "policy")
	os.WriteFile(policy, fmt.Appendf(nil, "log %s\nwitness one %s\nwitness two %s\nwitness three %s\ngroup two-of-three 2 one two three\nquorum two-of-three\n",
		strings.TrimSpace(string(logKey)), w1.VerifierKey(), w2.VerifierKey(), w3.VerifierKey()), 0o644)
	one, two := filepath.Join(e.dir, "one.txt"), filepath.Join(e.dir, "two.txt")
	cosignFile(t, cp, one, w2)
	cosignFile(t, cp, two, w1, w3)
	// verify --policy: the log key alone and one witness are refused
	// (exit 1, naming the quorum), two of three accepted.
	for _, tc := range []struct {
		cp   string
		want int
	}{{cp, exitFound}, {one, exitFound}, {two, 0}} {
		code, out, e := e.run("", "verify", "--checkpoint", tc.cp, "--policy", policy)
		if code != tc.want {
			t.Errorf("verify --policy with %s: exit %d, want %d: %s %s", filepath.Base(tc.cp), code, tc.want, out, e)
		}
		if tc.want != 0 && !strings.Contains(out, "quorum two-of-three not met") {
			t.Errorf("verify --policy with %s does not name the quorum: %s", filepath.Base(tc.cp), out)
		}
	}

	// --key and --policy together: the key is trusted too, the quorum still needed.
	if code, out, _ := e.run("", "verify", "--checkpoint", one, "--key", key+".pub", "--policy", policy); code != exitFound {
		t.Errorf("--key with --policy, one cosignature: exit %d: %s", code, out)
	}
}
