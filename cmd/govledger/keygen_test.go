package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "ledger")
	code, out, errOut := runCLI(t, "keygen", "--out", prefix, testOrigin)
	if code != 0 {
		t.Fatalf("keygen exit %d: %s", code, errOut)
	}
	vkey := strings.TrimSpace(out)
	if !strings.HasPrefix(vkey, testOrigin+"+") {
		t.Fatalf("printed %q, want the verifier key NAME+hash+key", vkey)
	}
	if _, err := note.NewVerifier(vkey); err != nil {
		t.Fatalf("printed key does not parse: %v", err)
	}
	fi, err := os.Stat(prefix + ".key")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	pub, _ := os.ReadFile(prefix + ".pub")
	if strings.TrimSpace(string(pub)) != vkey {
		t.Fatalf(".pub = %q, want %q", pub, vkey)
	}
	skey, _ := os.ReadFile(prefix + ".key")
	if _, err := note.NewSigner(strings.TrimSpace(string(skey))); err != nil {
		t.Fatalf(".key does not parse: %v", err)
	}
	// Never overwrite.
	before, _ := os.ReadFile(prefix + ".key")
	if code, _, _ := runCLI(t, "keygen", "--out", prefix, testOrigin); code != exitUsage {
		t.Fatalf("second keygen exit %d, want %d", code, exitUsage)
	}
	after, _ := os.ReadFile(prefix + ".key")
	if string(before) != string(after) {
		t.Fatal("keygen overwrote the key")
	}
	for _, args := range [][]string{{"keygen"}, {"keygen", "a b"}, {"keygen", "a", "b"}, {"keygen", "x", "--out", "y"}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
