package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestPublishCommand: publish writes a folder (JSON result), a second run
// writes only what is new, a folder of another ledger is refused with
// exit 1 and left as it was, and missing flags are usage errors.
func TestPublishCommand(t *testing.T) {
	db := newTestLedger(t, 300)
	key, _ := keypair(t)
	dir := filepath.Join(t.TempDir(), "log")
	code, out, errOut := runCLI(t, "--db", db, "--output", "json", "publish", "--key", key, "--to", dir, "--entries")
	if code != 0 {
		t.Fatalf("publish: exit %d: %s", code, errOut)
	}
	var res publishResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("publish --output json: %v\n%s", err, out)
	}
	if res.Schema != "govledger.publish/v1" || res.Size < 300 || res.OldSize != 0 || res.Tiles != 3 || res.Bundles != 2 || res.Origin != testOrigin {
		t.Errorf("publish result %+v", res)
	}
	for _, p := range []string{"checkpoint", "tile/0/000", "tile/1/000.p/1", "tile/entries/000"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("publish wrote no %s: %v", p, err)
		}
	}
	code, out, _ = runCLI(t, "--db", db, "publish", "--key", key, "--to", dir)
	if code != 0 || !strings.Contains(out, "0 tiles and 0 entry bundles") {
		t.Errorf("publish again: exit %d: %s", code, out)
	}
	cp, _ := os.ReadFile(filepath.Join(dir, "checkpoint"))
	other := newTestLedger(t, 10) // same origin, another tree
	code, _, errOut = runCLI(t, "--db", other, "publish", "--key", key, "--to", dir)
	if code != exitFound || !strings.Contains(errOut, "does not extend") {
		t.Errorf("publish of another ledger into the folder: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); string(got) != string(cp) {
		t.Error("the refused publish changed the checkpoint")
	}
	for _, args := range [][]string{{"publish", "--key", key}, {"publish", "--to", dir}, {"publish", "--key", key, "--to", dir, "extra"}} {
		if code, _, _ := runCLI(t, append([]string{"--db", db}, args...)...); code != exitUsage {
			t.Errorf("govledger %v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestServeTilesFlags: serve refuses tile and publish flags that cannot
// work together, before listening.
func TestServeTilesFlags(t *testing.T) {
	e := newServeEnv(t, "registry")
	for _, c := range []struct {
		what string
		args []string
		msg  string
	}{
		{"--publish-to without --key", []string{"--publish-to", filepath.Join(e.dir, "pub")}, "--publish-to needs --key"},
		{"--publish-entries without --publish-to", []string{"--publish-entries"}, "--publish-entries needs --publish-to"},
		{"--tiles-prefix without --tiles", []string{"--tiles=false", "--tiles-prefix", "/log"}, "need --tiles"},
		{"a prefix under /v1", []string{"--tiles-prefix", "/v1/log"}, "tiles prefix"},
		{"a prefix with a trailing slash", []string{"--tiles-prefix", "/log/"}, "tiles prefix"},
	} {
		out, code := e.cli(append([]string{"serve", "--addr", "127.0.0.1:0", "--tokens", e.tokens}, c.args...)...)
		if code != exitUsage || !strings.Contains(out, c.msg) || strings.Contains(out, `"listening"`) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", c.what, code, exitUsage, c.msg, out)
		}
	}
}
