package main

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestBlocksOnTheRecord walks a block through its life on the CLI: an
// attributable hash mismatch blocks the agent, blocks lists it with the
// submitter, a re-lock that leaves its hash unchanged keeps it, unblock
// ends it (recording the operator), and verify agrees at every step.
func TestBlocksOnTheRecord(t *testing.T) {
	e := newCLIEnv(t)
	mustRun := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := e.run("", args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errOut)
		}
		return out
	}
	blocked := func() []blockView {
		t.Helper()
		var rep blocksReport
		if err := json.Unmarshal([]byte(mustRun(0, "--output", "json", "blocks")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Schema != "govledger.blocks/v1" {
			t.Fatalf("schema %q", rep.Schema)
		}
		return rep.Blocks
	}
	mustRun(0, "lock")
	mustRun(2, "blocks") // no ledger yet: unreadable input, like every read command
	mustRun(0, "record", e.doc("01-product-to-analysis.json"))
	if got := blocked(); len(got) != 0 {
		t.Fatalf("blocks with nothing blocked = %+v", got)
	}
	mustRun(1, "record", "--as", "agent-runner-7", e.doc("04-research-hash-mismatch.json"))
	got := blocked()
	if len(got) != 1 || got[0].Agent != "domain-01-research" || got[0].Submitter != "agent-runner-7" || got[0].Code != "HASH_MISMATCH" || got[0].Since == 0 {
		t.Fatalf("blocks after a hash mismatch = %+v", got)
	}
	mustRun(0, "verify")
	// A re-lock that leaves the blocked agent's hash unchanged lifts nothing.
	mustRun(0, "lock")
	if again := blocked(); len(again) != 1 || again[0] != got[0] {
		t.Fatalf("blocks after an unchanged re-lock = %+v, want %+v", again, got)
	}
	mustRun(1, "record", e.doc("05-research-blocked.json"))
	out := mustRun(0, "unblock", "--as", "sec-oncall", "--reason", "prompt diff reviewed", "domain-01-research")
	if !strings.Contains(out, "unblocked domain-01-research") {
		t.Fatalf("unblock output %q", out)
	}
	if got := blocked(); len(got) != 0 {
		t.Fatalf("blocks after unblock = %+v", got)
	}
	show := mustRun(0, "--output", "json", "show", "6")
	if !strings.Contains(show, `"submitter": "sec-oncall"`) && !strings.Contains(show, `\"submitter\":\"sec-oncall\"`) {
		t.Fatalf("the unblock entry does not record its operator:\n%s", show)
	}
	mustRun(0, "verify")
	if text := mustRun(0, "blocks"); !strings.Contains(text, "no agent is blocked") {
		t.Fatalf("blocks text = %q", text)
	}
}
