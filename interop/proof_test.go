package interop

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// checkTLogProof is an independent reader of c2sp.org/tlog-proof@v1,
// written from the spec with x/mod's note and tlog only: it parses the
// proof, opens the checkpoint with the log's verifier and the witnesses'
// (torchwood's cosignature verifiers), needs k witnesses, and checks the
// inclusion of the extra data's leaf hash at the index.
func checkTLogProof(data []byte, logV note.Verifier, witnesses []note.Verifier, k int) error {
	head, cp, ok := strings.Cut(string(data), "\n\n")
	if !ok {
		return errors.New("no empty line before the checkpoint")
	}
	lines := strings.Split(head, "\n")
	if lines[0] != "c2sp.org/tlog-proof@v1" {
		return fmt.Errorf("header %q", lines[0])
	}
	lines = lines[1:]
	var extra []byte
	if strings.HasPrefix(lines[0], "extra ") {
		var err error
		if extra, err = base64.StdEncoding.DecodeString(lines[0][len("extra "):]); err != nil {
			return err
		}
		lines = lines[1:]
	}
	idx, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "index "), 10, 64)
	if err != nil {
		return err
	}
	var proof tlog.RecordProof
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != 32 {
			return fmt.Errorf("hash %q", l)
		}
		proof = append(proof, tlog.Hash(h))
	}
	n, err := note.Open([]byte(cp), note.VerifierList(append([]note.Verifier{logV}, witnesses...)...))
	if err != nil {
		return err
	}
	logSigned, cosigned := false, 0
	for _, s := range n.Sigs {
		if s.Name == logV.Name() && s.Hash == logV.KeyHash() {
			logSigned = true
		}
		for _, w := range witnesses {
			if s.Name == w.Name() && s.Hash == w.KeyHash() {
				cosigned++
			}
		}
	}
	if !logSigned {
		return errors.New("no log signature")
	}
	if cosigned < k {
		return fmt.Errorf("%d cosignatures, policy needs %d", cosigned, k)
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return err
	}
	return tlog.CheckRecord(proof, c.N, c.Hash, idx, tlog.RecordHash(extra))
}

// TestTLogProofIndependent: a tlog-proof govledger writes, of a checkpoint
// cosigned by two witnesses with torchwood's CosignatureSigner, verifies
// with the independent reader above and with govledger verify-proof
// --policy (2 of 3); with a cosignature removed both refuse it.
func TestTLogProofIndependent(t *testing.T) {
	e := fixture(t)
	dir := t.TempDir()
	cp := filepath.Join(dir, "cp")
	if out, code := e.run(t, e.db, "checkpoint", "--key", e.key, "--out", cp); code != 0 {
		t.Fatalf("checkpoint: %s", out)
	}
	signed, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(e.verifier))
	if err != nil {
		t.Fatal(err)
	}
	var ws []*torchwood.CosignatureSigner
	var wvs []note.Verifier
	for i := range 3 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		w, err := torchwood.NewCosignatureSigner(fmt.Sprintf("witness%d.example", i), priv)
		if err != nil {
			t.Fatal(err)
		}
		ws, wvs = append(ws, w), append(wvs, w.Verifier())
	}
	// Witnesses 0 and 2 cosign: their lines are appended to the log's note.
	cosigned := append([]byte(nil), signed...)
	for _, w := range []*torchwood.CosignatureSigner{ws[0], ws[2]} {
		b, err := note.Sign(&note.Note{Text: n.Text}, w)
		if err != nil {
			t.Fatal(err)
		}
		_, sig, _ := strings.Cut(string(b), "\n\n")
		cosigned = append(cosigned, sig...)
	}
	cosignedFile := filepath.Join(dir, "cosigned")
	os.WriteFile(cosignedFile, cosigned, 0o644)
	proofFile := filepath.Join(dir, "e.tlog-proof")
	if out, code := e.run(t, e.db, "prove", "--format", "tlog-proof", "--checkpoint", cosignedFile, "--out", proofFile, "12345"); code != 0 {
		t.Fatalf("prove: %s", out)
	}
	proof, _ := os.ReadFile(proofFile)
	if err := checkTLogProof(proof, e.verifier, wvs, 2); err != nil {
		t.Fatalf("independent check of govledger's tlog-proof: %v\n%s", err, proof)
	}
	vkey := func(v note.Verifier) string { return v.(*torchwood.CosignatureVerifier).String() }
	logKey := e.vkey
	policy := filepath.Join(dir, "policy")
	os.WriteFile(policy, fmt.Appendf(nil, "log %s\nwitness a %s\nwitness b %s\nwitness c %s\ngroup g 2 a b c\nquorum g\n",
		logKey, vkey(wvs[0]), vkey(wvs[1]), vkey(wvs[2])), 0o644)
	if out, code := e.run(t, e.db, "verify-proof", "--policy", policy, proofFile); code != 0 {
		t.Fatalf("verify-proof --policy: exit %d: %s", code, out)
	}

	// Witness 2's line removed: one cosignature left.
	var kept []string
	for _, l := range strings.SplitAfter(string(proof), "\n") {
		if !strings.HasPrefix(l, "\u2014 witness2.example ") {
			kept = append(kept, l)
		}
	}
	cut := []byte(strings.Join(kept, ""))
	if len(cut) == len(proof) {
		t.Fatal("no witness2 line to remove")
	}
	if err := checkTLogProof(cut, e.verifier, wvs, 2); err == nil {
		t.Error("independent check accepts a proof with one cosignature under a 2-of-3 policy")
	}
	os.WriteFile(proofFile, cut, 0o644)
	if out, code := e.run(t, e.db, "verify-proof", "--policy", policy, proofFile); code != 1 || !strings.Contains(out, "quorum g not met") {
		t.Fatalf("verify-proof --policy, one cosignature: exit %d: %s", code, out)
	}
}
