package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	db := newTestLedger(t, 4)
	key, pub := keypair(t)
	contains := func(s string) bool {
		raw, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(raw, []byte(s))
	}
	if !contains("payload-1") {
		t.Fatal("the file does not hold payload-1 before the redaction: the search below proves nothing")
	}
	code, out, e := runCLI(t, "--db", db, "redact", "--reason", "GDPR erasure", "3")
	if code != 0 || !strings.Contains(out, "redacted payload of seq 3") || !strings.Contains(out, "seq 5") {
		t.Fatalf("redact exit %d: %s %s", code, out, e)
	}
	// Erased from the file's bytes, free pages included; the rest stays.
	if contains("payload-1") || !contains("payload-4") {
		t.Errorf("after redact: file holds payload-1 %t (want false), payload-4 %t (want true)", contains("payload-1"), contains("payload-4"))
	}
	// The entry still proves; the bundle says redacted.
	b := filepath.Join(t.TempDir(), "b.json")
	if code, _, e := runCLI(t, "--db", db, "prove", "--key", key, "--out", b, "3"); code != 0 {
		t.Fatal(e)
	}
	if code, out, _ := runCLI(t, "verify-proof", "--key", pub, b); code != 0 || !strings.Contains(out, "payload redacted") {
		t.Fatalf("verify redacted: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"--db", db, "redact", "--reason", "again", "3"},   // already redacted
		{"--db", db, "redact", "--reason", "x", "1"},       // a snapshot entry
		{"--db", db, "redact", "--reason", "x", "99"},      // no such entry
		{"--db", db, "redact", "--reason", "x", "0"},       // not a seq
		{"--db", db, "redact", "--reason", "x", "abc"},     // not a seq
		{"--db", db, "redact", "3"},                        // no reason
		{"--db", db, "redact", "--reason", "x", "4", "-v"}, // flag after arg
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
