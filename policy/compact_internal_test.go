package policy

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/reason"
)

// TestCompact: reasons within the bound are kept as they are; beyond it,
// the critical reasons (which carry the blocks) stay, in order, followed by
// one ENTRY_TOO_LARGE error counting every reason by code, and the
// decision stays rejected. A bound of 0 keeps everything.
func TestCompact(t *testing.T) {
	rs := []reason.Reason{
		{Code: reason.HashMismatch, Severity: reason.Critical, Field: "source_agent.prompt_hash", Message: "source"},
		{Code: reason.HashMismatch, Severity: reason.Critical, Field: "target_agent.prompt_hash", Message: "target"},
	}
	for range 500 {
		rs = append(rs, reason.Reason{Code: reason.SchemaInvalid, Severity: reason.Error, Field: "x", Message: strings.Repeat("m", 100)})
	}
	rs = append(rs, reason.Reason{Code: reason.Stale, Severity: reason.Warning, Message: "old"})
	size := ReasonsSize(rs)
	for _, x := range [][]reason.Reason{{}, rs[:1], rs, {{Code: reason.Stale, Field: "a\"<\u2028\x01", Message: "é\t"}}} {
		b, err := json.Marshal(x, jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false))
		if err != nil || ReasonsSize(x) != int64(len(b)) {
			t.Errorf("ReasonsSize = %d, the JSON is %d bytes (%v)", ReasonsSize(x), len(b), err)
		}
	}
	if got := compact(rs, size); len(got) != len(rs) {
		t.Errorf("reasons of exactly the bound compacted to %d", len(got))
	}
	if got := compact(rs, 0); len(got) != len(rs) {
		t.Errorf("bound 0 compacted to %d", len(got))
	}
	got := compact(rs, size-1)
	if len(got) != 3 || got[0] != rs[0] || got[1] != rs[1] || got[2].Code != reason.EntryTooLarge || got[2].Severity != reason.Error {
		t.Fatalf("compact = %v", got)
	}
	if msg := got[2].Message; !strings.Contains(msg, "503 reasons") || !strings.Contains(msg, "HASH_MISMATCH ×2, SCHEMA_INVALID ×500, STALE ×1") {
		t.Errorf("message %q", msg)
	}
	if reason.Decide(got) != reason.Rejected {
		t.Error("a compacted decision is not rejected")
	}
	if s := ReasonsSize(got); s > 2048 {
		t.Errorf("compact reasons take %d bytes", s)
	}
}
