package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// The secret every PostgreSQL URL of these tests carries: the test
// server trusts loopback, so it is never checked, and it must never be
// printed.
const pgSecret = "s3cretPW"

// pgDB creates a database on the shared test server and returns its URL
// (with a password) and its name.
func pgDB(t *testing.T) (string, string) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	name := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	return strings.Replace(dsn, "postgres@", "postgres:"+pgSecret+"@", 1), name
}

// runDB runs govledger in e's registry with --db db, failing t when the
// password shows in any output.
func (e *cliEnv) runDB(db string, args ...string) (int, string, string) {
	e.t.Helper()
	base := []string{"govledger",
		"--manifest", filepath.Join(e.dir, "reg", "prompt-manifest.json"),
		"--lock", filepath.Join(e.dir, "reg", "prompt-lock.json"),
		"--db", db, "--origin", "govledger.test/cli"}
	var stdout, stderr bytes.Buffer
	code := runWithClock(context.Background(), append(base, args...), strings.NewReader(""), &stdout, &stderr,
		func(k string) string {
			if k == "GOVLEDGER_AS" {
				return "ci-operator"
			}
			return ""
		}, e.clock.now)
	if strings.Contains(stdout.String()+stderr.String(), pgSecret) {
		e.t.Fatalf("%v: the database password is in the output:\n%s%s", args, stdout.String(), stderr.String())
	}
	return code, stdout.String(), stderr.String()
}

// mustDB runs a step that must exit want.
func (e *cliEnv) mustDB(db string, want int, args ...string) string {
	e.t.Helper()
	code, out, stderr := e.runDB(db, args...)
	if code != want {
		e.t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, stderr)
	}
	return out
}

// history records a session touching every table through the CLI: blocks,
// an unblock, a replay, a redaction, a key rotation.
func (e *cliEnv) history(db string) {
	e.t.Helper()
	e.mustDB(db, 1, "record", e.doc("01-product-to-analysis.json"), e.doc("03-content-to-security.json"),
		e.doc("04-research-hash-mismatch.json"), e.doc("05-research-blocked.json"), e.doc("06-replay-of-01.json"),
		e.doc("08-garbage.bin"))
	e.mustDB(db, 0, "unblock", "--reason", "prompt diff reviewed", "domain-01-research")
	e.mustDB(db, 0, "record", e.doc("05-research-blocked.json"), e.doc("02-thinker-to-technical.json"))
	e.mustDB(db, 0, "redact", "--reason", "personal data", "3")
	e.mustDB(db, 0, "checkpoint", "rotate", "--new-key", filepath.Join(e.dir, "k.pub"), "--reason", "first key")
	e.mustDB(db, 0, "record", "--from", "domain-03-technical", "--to", "domain-02-analysis", e.doc("09-qa-result.vbw.json"))
}

// TestPostgresCLI: --db postgres://… serves every command that opens a
// ledger, and no message shows the password.
func TestPostgresCLI(t *testing.T) {
	e := newCLIEnv(t)
	dsn, _ := pgDB(t)
	e.mustDB(dsn, 0, "lock")
	e.mustDB(dsn, 0, "keygen", "--out", filepath.Join(e.dir, "k"), "govledger.test/cli")
	// Nothing there yet: reading commands refuse (exit 2), validate
	// decides without the ledger.
	e.mustDB(dsn, 2, "verify")
	e.mustDB(dsn, 0, "validate", e.doc("01-product-to-analysis.json"))
	e.history(dsn)
	for _, step := range []struct {
		args []string
		want int
		has  string
	}{
		{[]string{"verify"}, 0, "OK: postgres://postgres:xxxxx@127.0.0.1"},
		{[]string{"--output", "json", "verify"}, 0, `"ok": true`},
		{[]string{"log", "--decision", "rejected"}, 0, "HASH_MISMATCH"},
		{[]string{"show", "5"}, 0, "domain-01-research"},
		{[]string{"trace", "550e8400-e29b-41d4-a716-446655440000"}, 0, "550e8400"},
		{[]string{"stats"}, 0, "origin govledger.test/cli"},
		{[]string{"blocks"}, 0, ""},
		{[]string{"validate", e.doc("01-product-to-analysis.json")}, 1, "REPLAY"},
		{[]string{"checkpoint", "--key", filepath.Join(e.dir, "k.key"), "--out", filepath.Join(e.dir, "cp.txt")}, 0, ""},
		{[]string{"verify", "--checkpoint", filepath.Join(e.dir, "cp.txt"), "--key", filepath.Join(e.dir, "k.pub")}, 0, "extends the signed checkpoint"},
		{[]string{"prove", "--checkpoint", filepath.Join(e.dir, "cp.txt"), "--out", filepath.Join(e.dir, "p.json"), "4"}, 0, ""},
		{[]string{"verify-proof", "--key", filepath.Join(e.dir, "k.pub"), filepath.Join(e.dir, "p.json")}, 0, ""},
		{[]string{"export", "--out", filepath.Join(e.dir, "audit.jsonl")}, 0, ""},
		{[]string{"verify", "--export", filepath.Join(e.dir, "audit.jsonl")}, 0, "OK"},
		{[]string{"--origin", "other.example/x", "log"}, 2, "postgres://postgres:xxxxx@"},
	} {
		code, out, stderr := e.runDB(dsn, step.args...)
		if code != step.want || !strings.Contains(out+stderr, step.has) {
			t.Errorf("%v: exit %d, want %d and %q in the output\n%s%s", step.args, code, step.want, step.has, out, stderr)
		}
	}

	// An unreachable server: exit 3, naming host:port, not the password.
	for _, db := range []string{"postgres://gov:" + pgSecret + "@127.0.0.1:1/ledger?sslmode=disable&connect_timeout=5",
		"postgresql://gov:" + pgSecret + "@127.0.0.1:1/ledger?sslmode=disable"} {
		for _, args := range [][]string{{"verify"}, {"record", e.doc("01-product-to-analysis.json")}, {"log"}} {
			code, out, stderr := e.runDB(db, args...)
			if code != 3 || !strings.Contains(stderr, "cannot reach the database server 127.0.0.1:1") {
				t.Errorf("%s %v: exit %d, want 3 naming 127.0.0.1:1\n%s%s", db[:11], args, code, out, stderr)
			}
		}
	}
}

// TestCopyCLI copies a ledger from a bbolt file to PostgreSQL and back:
// the three verify, export the same bytes, and a checkpoint signed on one
// verifies on the others; a destination that is not empty is refused.
func TestCopyCLI(t *testing.T) {
	e := newCLIEnv(t)
	file := filepath.Join(e.dir, "ledger.db")
	back := filepath.Join(e.dir, "back.db")
	dsn, _ := pgDB(t)
	e.mustDB(file, 0, "lock")
	e.mustDB(file, 0, "keygen", "--out", filepath.Join(e.dir, "k"), "govledger.test/cli")
	e.history(file)
	cp := filepath.Join(e.dir, "cp.txt")
	e.mustDB(file, 0, "checkpoint", "--key", filepath.Join(e.dir, "k.key"), "--out", cp)

	var res copyResult
	out := e.mustDB(file, 0, "--output", "json", "copy", "--from", file, "--to", dsn)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Schema != "govledger.copy/v1" || res.Redacted != 1 ||
		res.Entries == 0 || res.Origin != "govledger.test/cli" || !strings.Contains(res.To, "xxxxx") {
		t.Fatalf("copy: %v: %+v", err, res)
	}
	out = e.mustDB(file, 0, "copy", "--from", dsn, "--to", back)
	if !strings.Contains(out, fmt.Sprintf("copied %d entries", res.Entries)) {
		t.Errorf("copy back: %s", out)
	}
	var exports [][]byte
	for i, db := range []string{file, dsn, back} {
		if out := e.mustDB(db, 0, "verify"); !strings.Contains(out, fmt.Sprintf("%d entries verified, head %s", res.Entries, res.Head)) {
			t.Errorf("verify %d: %s", i, out)
		}
		e.mustDB(db, 0, "verify", "--checkpoint", cp, "--key", filepath.Join(e.dir, "k.pub"))
		x := filepath.Join(e.dir, fmt.Sprintf("x%d.jsonl", i))
		e.mustDB(db, 0, "export", "--out", x)
		e.mustDB(db, 0, "verify", "--export", x)
		b, err := os.ReadFile(x)
		if err != nil {
			t.Fatal(err)
		}
		exports = append(exports, b)
		// The redacted payload stays redacted.
		if out := e.mustDB(db, 0, "--output", "json", "show", "3"); !strings.Contains(out, "redacted") {
			t.Errorf("show 3 on copy %d does not say the payload is redacted:\n%s", i, out)
		}
	}
	if !bytes.Equal(exports[0], exports[1]) || !bytes.Equal(exports[0], exports[2]) {
		t.Error("the exports of the original and the copies differ")
	}
	// A checkpoint signed on the PostgreSQL copy verifies on the file.
	cp2 := filepath.Join(e.dir, "cp2.txt")
	e.mustDB(dsn, 0, "checkpoint", "--key", filepath.Join(e.dir, "k.key"), "--out", cp2)
	e.mustDB(back, 0, "verify", "--checkpoint", cp2, "--key", filepath.Join(e.dir, "k.pub"))

	// Refusals: a destination with entries, the same ledger twice.
	for _, args := range [][]string{{"copy", "--from", file, "--to", dsn}, {"copy", "--from", dsn, "--to", back}, {"copy", "--from", file, "--to", file}} {
		code, out, stderr := e.runDB(file, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s%s", args, code, out, stderr)
		}
	}
	// Nothing was written by the refusals.
	if out := e.mustDB(dsn, 0, "verify"); !strings.Contains(out, fmt.Sprintf("%d entries verified", res.Entries)) {
		t.Errorf("after the refused copy: %s", out)
	}
}

// TestPostgresTamperCLI: the database administrator is the attacker.
// Rows rewritten in SQL (an entry's bytes, a tree hash, a blocked or an
// accepted row, a payload) are named by verify; rows deleted at the tail
// with the head row moved back pass the chain alone and are caught against
// a signed checkpoint kept elsewhere.
func TestPostgresTamperCLI(t *testing.T) {
	e := newCLIEnv(t)
	dsn, db := pgDB(t)
	srv := pgtest.Shared(t)
	psql := func(sql string) {
		t.Helper()
		if out, err := srv.Psql(db, sql); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	e.mustDB(dsn, 0, "lock")
	e.mustDB(dsn, 0, "keygen", "--out", filepath.Join(e.dir, "k"), "govledger.test/cli")
	e.history(dsn)
	cp := filepath.Join(e.dir, "cp.txt")
	e.mustDB(dsn, 0, "checkpoint", "--key", filepath.Join(e.dir, "k.key"), "--out", cp)
	var save, restore string
	for _, tb := range []string{"head", "entries", "blobs", "redacted", "tree", "accepted", "idempotency", "blocked"} {
		save += fmt.Sprintf("CREATE TABLE saved.%[1]s AS TABLE govledger.%[1]s;\n", tb)
		restore += fmt.Sprintf("TRUNCATE govledger.%[1]s; INSERT INTO govledger.%[1]s SELECT * FROM saved.%[1]s;\n", tb)
	}
	psql("CREATE SCHEMA saved;\n" + save)
	type finding struct {
		Seq  uint64 `json:"seq"`
		Kind string `json:"kind"`
	}
	for _, tc := range []struct {
		name, sql string
		want      finding
	}{
		{"entry bytes", `UPDATE govledger.entries SET raw = convert_to(replace(convert_from(raw, 'UTF8'), '"domain-03-technical"', '"domain-03-technicaX"'), 'UTF8') WHERE seq = 11`, finding{11, "hash"}},
		{"tree hash", `UPDATE govledger.tree SET hash = sha256(hash) WHERE idx = 7`, finding{5, "tree"}},
		{"blocked row", `INSERT INTO govledger.blocked VALUES (sha256('domain-05-product'), 'domain-05-product', 3)`, finding{3, "index"}},
		{"accepted row", `UPDATE govledger.accepted SET seq = 4 WHERE seq = 3`, finding{3, "index"}},
		{"payload", `UPDATE govledger.blobs SET bytes = convert_to(replace(convert_from(bytes, 'UTF8'), 'security', 'SECURITY'), 'UTF8') WHERE bytes LIKE '%security%'::bytea`, finding{4, "payload"}},
		{"entry deleted", `DELETE FROM govledger.entries WHERE seq = 6`, finding{6, "corrupt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			psql(tc.sql)
			defer psql(restore)
			code, out, stderr := e.runDB(dsn, "--output", "json", "verify")
			var res struct {
				OK       bool      `json:"ok"`
				Findings []finding `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.OK {
				t.Fatalf("verify: exit %d, %v\n%s%s", code, err, out, stderr)
			}
			for _, f := range res.Findings {
				if f.Kind == tc.want.Kind && (tc.want.Seq == 0 || f.Seq == tc.want.Seq) {
					return
				}
			}
			t.Fatalf("findings %+v; want %+v", res.Findings, tc.want)
		})
	}
	e.mustDB(dsn, 0, "verify")
	// The tail cut off after the redaction (seq 12; a cut before it would
	// leave a payload missing that no redaction explains), with every
	// table made to agree: a consistent, shorter ledger.
	psql(`DELETE FROM govledger.entries WHERE seq > 12;
DELETE FROM govledger.tree WHERE idx >= ` + fmt.Sprint(tlog.StoredHashIndex(0, 12)) + `;
DELETE FROM govledger.accepted WHERE seq > 12; DELETE FROM govledger.idempotency WHERE seq > 12;
DELETE FROM govledger.blocked WHERE seq > 12; DELETE FROM govledger.redacted WHERE seq > 12;
DELETE FROM govledger.blobs WHERE encode(sha256, 'hex') NOT IN (SELECT coalesce(j->>'payload_sha256', j->>'content_sha256')
  FROM (SELECT convert_from(raw, 'UTF8')::json AS j FROM govledger.entries) x WHERE coalesce(j->>'payload_sha256', j->>'content_sha256') IS NOT NULL);
UPDATE govledger.head SET seq = 12, hash = e.hash, time_s = e.time_s, time_ns = e.time_ns, key = ''
  FROM govledger.entries e WHERE e.seq = 12;`)
	if out := e.mustDB(dsn, 0, "verify"); !strings.Contains(out, "12 entries verified") {
		t.Fatalf("verify of the cut ledger: %s", out)
	}
	out := e.mustDB(dsn, 1, "verify", "--checkpoint", cp, "--key", filepath.Join(e.dir, "k.pub"))
	if !strings.Contains(out, "checkpoint: FAILED") {
		t.Fatalf("verify --checkpoint of the cut ledger:\n%s", out)
	}
}
