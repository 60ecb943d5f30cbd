package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger/bolt"
)

func keypair(t *testing.T) (key, pub string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "k")
	if code, _, e := runCLI(t, "keygen", "--out", prefix, testOrigin); code != 0 {
		t.Fatalf("keygen: %s", e)
	}
	return prefix + ".key", prefix + ".pub"
}

func TestCheckpointCommand(t *testing.T) {
	db := newTestLedger(t, 7)
	key, pub := keypair(t)
	dbBefore, _ := os.ReadFile(db)

	code, out, errOut := runCLI(t, "--db", db, "checkpoint", "--key", key)
	if code != 0 {
		t.Fatalf("checkpoint exit %d: %s", code, errOut)
	}
	vkey, _ := os.ReadFile(pub)
	v, _ := note.NewVerifier(strings.TrimSpace(string(vkey)))
	n, err := note.Open([]byte(out), note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open(checkpoint output): %v\n%s", err, out)
	}
	if !strings.HasPrefix(n.Text, testOrigin+"\n7\n") {
		t.Fatalf("checkpoint text %q", n.Text)
	}
	dbAfter, _ := os.ReadFile(db)
	if string(dbBefore) != string(dbAfter) {
		t.Fatal("checkpoint changed the ledger file")
	}

	outFile := filepath.Join(t.TempDir(), "cp.txt")
	if code, _, e := runCLI(t, "--db", db, "checkpoint", "--key", key, "--out", outFile); code != 0 {
		t.Fatalf("checkpoint --out: %s", e)
	}
	if b, _ := os.ReadFile(outFile); string(b) != out {
		t.Fatalf("--out wrote %q, want %q", b, out)
	}
	code, js, _ := runCLI(t, "--db", db, "-o", "json", "checkpoint", "--key", key)
	if code != 0 || !strings.HasPrefix(js, "{\n  \"schema\": \"govledger.checkpoint/v1\"") {
		t.Fatalf("json output (exit %d): %s", code, js)
	}

	// A key file readable by others is refused.
	os.Chmod(key, 0o644)
	if code, _, e := runCLI(t, "--db", db, "checkpoint", "--key", key); code != exitUsage || !strings.Contains(e, "permissions") {
		t.Fatalf("loose key: exit %d, %s", code, e)
	}
	os.Chmod(key, 0o600)
	for _, args := range [][]string{
		{"--db", db, "checkpoint"},
		{"--db", db, "checkpoint", "--key", key, "extra"},
		{"--db", filepath.Join(t.TempDir(), "missing.db"), "checkpoint", "--key", key},
		{"--db", db, "checkpoint", "--key", pub},
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

func TestCheckpointRotate(t *testing.T) {
	db := newTestLedger(t, 3)
	_, oldPub := keypair(t)
	_, newPub := keypair(t)
	code, out, errOut := runCLI(t, "--db", db, "checkpoint", "rotate", "--old-key", oldPub, "--new-key", newPub, "--reason", "yearly rotation")
	if code != 0 {
		t.Fatalf("rotate exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "seq 4") {
		t.Fatalf("rotate output %q", out)
	}
	l, err := bolt.Open(db, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := l.Get(t.Context(), 4)
	l.Close()
	nb, _ := os.ReadFile(newPub)
	ob, _ := os.ReadFile(oldPub)
	if err != nil || e.Kind != entry.KindKeyRotation || e.NewKey != strings.TrimSpace(string(nb)) ||
		e.OldKey != strings.TrimSpace(string(ob)) || e.Note != "yearly rotation" {
		t.Fatalf("entry 4 = %+v, %v", e, err)
	}
	for _, args := range [][]string{
		{"--db", db, "checkpoint", "rotate", "--new-key", "not-a-key+zz", "--reason", "x"},
		{"--db", db, "checkpoint", "rotate", "--new-key", newPub},
		{"--db", db, "checkpoint", "rotate", "--old-key", newPub, "--new-key", newPub, "--reason", "x"},
		// the rotation chain may not fork: the old key must be the one in force
		{"--db", db, "checkpoint", "rotate", "--new-key", oldPub, "--reason", "x"},
		{"--db", db, "checkpoint", "rotate", "--old-key", oldPub, "--new-key", newPub, "--reason", "again"},
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	// The next rotation starts from the key in force.
	_, thirdPub := keypair(t)
	if code, _, errOut := runCLI(t, "--db", db, "checkpoint", "rotate", "--old-key", newPub, "--new-key", thirdPub, "--reason", "next"); code != 0 {
		t.Fatalf("second rotation: exit %d: %s", code, errOut)
	}
}
