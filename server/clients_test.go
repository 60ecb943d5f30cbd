package server_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/govledger/govledger/internal/testenv"
)

// TestExampleClients runs the Python and TypeScript example clients'
// checks against a real server. A missing python3 or node skips, or fails
// when CI is set: the examples are part of what ships.
func TestExampleClients(t *testing.T) {
	h := start(t, nil)
	for _, c := range []struct{ name, bin, pkg, script string }{
		{"python", "python3", "python3", "../examples/python/test_client.py"},
		{"typescript", "node", "nodejs", "../examples/typescript/test-client.mjs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := testenv.LookPath(t, "apt-get install "+c.pkg, c.bin)
			script, _ := filepath.Abs(c.script)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, script, h.url, h.tokens[pClient])
			cmd.Env = append(cmd.Environ(), "GOVLEDGER_TOKEN=")
			out, err := cmd.CombinedOutput()
			t.Logf("%s", out)
			if err != nil {
				t.Fatalf("%s %s: %v", c.bin, c.script, err)
			}
		})
	}
}
