package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProveAndVerifyProof(t *testing.T) {
	db := newTestLedger(t, 9)
	key, pub := keypair(t)
	dir := t.TempDir()
	bundlePath := filepath.Join(dir, "e5.json")
	if code, _, e := runCLI(t, "--db", db, "prove", "--key", key, "--out", bundlePath, "5"); code != 0 {
		t.Fatalf("prove: %s", e)
	}
	code, out, e := runCLI(t, "verify-proof", "--key", pub, bundlePath)
	if code != 0 || !strings.HasPrefix(out, "OK ") || !strings.Contains(out, "payload verified") {
		t.Fatalf("verify-proof exit %d: %s %s", code, out, e)
	}
	code, js, _ := runCLI(t, "-o", "json", "verify-proof", "--key", pub, bundlePath)
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(js), &res) != nil || res["schema"] != "govledger.verify-proof/v1" || res["ok"] != true {
		t.Fatalf("json verify-proof (exit %d): %s", code, js)
	}

	// Tampered bundle: exit 1.
	data, _ := os.ReadFile(bundlePath)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(strings.Replace(string(data), `"seq": 5`, `"seq": 4`, 1)), 0o644)
	if code, out, _ := runCLI(t, "verify-proof", "--key", pub, bad); code != exitFound || !strings.HasPrefix(out, "INVALID") {
		t.Fatalf("tampered: exit %d %s", code, out)
	}
	// Another key: exit 1. Unreadable: exit 2.
	_, otherPub := keypair(t)
	if code, _, _ := runCLI(t, "verify-proof", "--key", otherPub, bundlePath); code != exitFound {
		t.Fatalf("other key: exit %d, want 1", code)
	}
	os.WriteFile(bad, []byte("{not json"), 0o644)
	if code, _, _ := runCLI(t, "verify-proof", "--key", pub, bad); code != exitUsage {
		t.Fatalf("unreadable: exit %d, want 2", code)
	}

	// Against a published checkpoint, then consistency from it.
	cp := filepath.Join(dir, "cp.txt")
	if code, _, e := runCLI(t, "--db", db, "checkpoint", "--key", key, "--out", cp); code != 0 {
		t.Fatal(e)
	}
	if code, out, e := runCLI(t, "--db", db, "prove", "--checkpoint", cp, "9"); code != 0 || !strings.Contains(out, `"tree_size": 9`) {
		t.Fatalf("prove --checkpoint: %d %s %s", code, out, e)
	}
	cons := filepath.Join(dir, "cons.json")
	if code, _, e := runCLI(t, "--db", db, "prove", "--consistency", cp, "--key", key, "--out", cons); code != 0 {
		t.Fatalf("prove --consistency: %s", e)
	}
	if code, out, _ := runCLI(t, "verify-proof", "--key", pub, cons); code != 0 || !strings.Contains(out, "extends") {
		t.Fatalf("verify consistency: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"--db", db, "prove", "--key", key, "0"},
		{"--db", db, "prove", "--key", key, "10"},
		{"--db", db, "prove", "--key", key, "x"},
		{"--db", db, "prove", "5"},
		{"--db", db, "prove", "--key", key, "--checkpoint", cp, "5"},
		{"--db", db, "prove", "--key", key, "5", "--out", "x"},
		{"verify-proof", bundlePath},
		{"verify-proof", "--key", pub, filepath.Join(dir, "missing.json")},
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestVerifyProofVectors runs verify-proof on the package's named vectors:
// the valid ones exit 0, every negative one exits 1.
func TestVerifyProofVectors(t *testing.T) {
	dir := filepath.Join("..", "..", "checkpoint", "testdata", "proofs")
	var index []struct {
		File    string `json:"file"`
		WantErr string `json:"want_err"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	for _, v := range index {
		want := exitOK
		if v.WantErr != "" {
			want = exitFound
		}
		if code, out, e := runCLI(t, "verify-proof", "--key", filepath.Join(dir, "key.pub"), filepath.Join(dir, v.File)); code != want {
			t.Errorf("%s: exit %d, want %d: %s %s", v.File, code, want, out, e)
		}
	}
}
