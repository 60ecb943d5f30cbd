package main

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/server"
)

// TestCraftedFilesEveryCommand: on a ledger whose freelist or page graph
// was crafted (bolttest.Crafts: a freelist count that would make bbolt
// allocate 2^40 page ids, ids it must never hand out, a page loop on the
// path of every append), the real binary of every command that writes or
// reads everything (record, unblock, redact, verify, export, serve)
// refuses the file with "corrupt" on stderr and exit 1 or 3, and the
// point reads (show, log, stats) answer or refuse it: never a Go fatal
// error (out of memory, stack overflow) or a panic. Before the pre-open
// check, record, unblock and serve died of Go's out-of-memory error on
// the first craft while verify said OK.
func TestCraftedFilesEveryCommand(t *testing.T) {
	e := newCLIEnv(t)
	e.lock()
	for i := range 40 { // enough for branch pages in entries and blobs
		if code, _, stderr := e.run("", "record", "--max-age", "0", e.handoffDoc(i)); code != 0 && code != 1 {
			t.Fatalf("record %d: exit %d: %s", i, code, stderr)
		}
	}
	db := filepath.Join(e.dir, "ledger.db")
	tokens := filepath.Join(e.dir, "tokens.json")
	tf := &server.TokensFile{Version: server.TokensVersion}
	_, hash, err := server.NewToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := tf.Add(server.TokenEntry{Name: "reader", Scopes: []server.Scope{server.ScopeLedgerRead}, Hash: hash,
		Created: time.Now().UTC().Truncate(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := server.WriteTokensFile(tokens, tf); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	type cmdCase struct {
		args   []string
		refuse bool // must refuse the file; else may also answer (exit 0)
	}
	cmds := []cmdCase{
		{[]string{"record", "--max-age", "0", e.handoffDoc(1000)}, true},
		{[]string{"unblock", "--reason", "r", "domain-05-product"}, true},
		{[]string{"redact", "--reason", "r", "3"}, true},
		{[]string{"verify"}, true},
		{[]string{"export"}, true},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--tokens", tokens, "--root", filepath.Join(e.dir, "root"), "--max-age", "0"}, true},
		{[]string{"show", "40"}, false},
		{[]string{"log", "--limit", "3"}, false},
		{[]string{"stats"}, false},
	}
	for _, c := range bolttest.Crafts {
		t.Run(c.Name, func(t *testing.T) {
			if err := os.WriteFile(db, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := c.Apply(db); err != nil {
				t.Fatalf("craft: %v", err)
			}
			crafted, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, cc := range cmds {
				if err := os.WriteFile(db, crafted, 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				cmd := e.command(nil, cc.args...)
				cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
				cmd.Env = append([]string{"HOME=" + e.dir, "GOVLEDGER_AS=ci-operator"}, os.Environ()...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				err := cmd.Run()
				cancel()
				code := 0
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee):
					code = ee.ExitCode()
				case err != nil:
					t.Fatalf("%s: %v", cc.args[0], err)
				}
				msg := stderr.String()
				if strings.Contains(msg, "fatal error") || strings.Contains(msg, "panic:") || strings.Contains(msg, "goroutine ") {
					t.Errorf("%s: Go crashed (exit %d):\n%.2000s", cc.args[0], code, msg)
					continue
				}
				switch {
				case code == 1 || code == 3:
					if cc.refuse && !strings.Contains(msg, "corrupt") {
						t.Errorf("%s: exit %d, stderr does not say corrupt:\n%s", cc.args[0], code, msg)
					}
				case cc.refuse || code != 0:
					t.Errorf("%s: exit %d, want 1 or 3:\n%s", cc.args[0], code, msg)
				}
				t.Logf("%s: exit %d: %s", cc.args[0], code, firstLine(msg))
			}
		})
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
