package server_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestExampleClients runs the Python and TypeScript example clients'
// checks against a real server. A missing python3 or node fails the test:
// the examples are part of what ships.
func TestExampleClients(t *testing.T) {
	h := start(t, nil)
	for _, c := range []struct{ name, bin, script string }{
		{"python", "python3", "../examples/python/test_client.py"},
		{"typescript", "node", "../examples/typescript/test-client.mjs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, err := exec.LookPath(c.bin)
			if err != nil {
				t.Fatalf("%s is needed to test the %s client: %v", c.bin, c.name, err)
			}
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
