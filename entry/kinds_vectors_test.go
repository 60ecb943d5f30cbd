package entry_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite testdata/vectors/govledger-entries.jsonl")

// kindsChain is a chain with one entry of every kind and hostile strings,
// published as testdata/vectors/govledger-entries.jsonl for other
// implementations (same line shape as the shared vectors).
func kindsChain(t *testing.T) []*entry.Entry {
	t.Helper()
	h := func(b byte) *entry.Hash { var x entry.Hash; x[0], x[31] = b, b; return &x }
	n := func(v int64) *int64 { return &v }
	at := func(s string) entry.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return entry.Time{Time: tm}
	}
	reasons := []reason.Reason{
		{Code: reason.HashMismatch, Severity: reason.Critical, Field: "source_agent.prompt_hash", Message: "lock says <sha256:ab…> & \"doc\" differs — Ω\u2028\u007f\t\n\u0001 😀"},
		{Code: reason.AttestationMismatch, Severity: reason.Error, Field: "governance.source_agent_verified", Message: `claims true \ but`},
	}
	empty := []reason.Reason{}
	return []*entry.Entry{
		{V: 1, Seq: 1, Time: at("2026-11-21T10:00:00Z"), Kind: entry.KindSnapshot, What: entry.SnapshotManifest, ContentSHA256: h(1), Size: n(2048)},
		{V: 1, Seq: 2, Time: at("2026-11-21T10:00:00Z"), Kind: entry.KindSnapshot, What: entry.SnapshotLock, ContentSHA256: h(2), Size: n(900)},
		{V: 1, Seq: 3, Time: at("2026-11-21T10:00:00.000000001Z"), Kind: entry.KindHandoff, Format: entry.Str("governed/1"),
			Decision: reason.Rejected, Reasons: &reasons, HandoffID: entry.Str("b01b0368-1624-458c-9e28-52e99ef9c02a"),
			Source: entry.Str("domain-01-research"), Target: entry.Str("domain-02-analysis"), WorkflowID: entry.Null(),
			PayloadSHA256: h(3), PayloadSize: n(1442), ManifestSHA256: h(1), LockSHA256: h(2), Blocks: []string{"domain-01-research"},
			Inputs: []byte(`{"observations":[{"exists":true,"is_dir":true,"names":["perspective-a.md"],"op":"dir","path":"sessions/s-1/"}],"params":{"max_age_ns":86400000000000,"max_payload":1048576}}`)},
		{V: 1, Seq: 4, Time: at("2026-11-21T10:00:01.5Z"), Kind: entry.KindHandoff, Format: entry.Null(),
			Decision: reason.Rejected, Reasons: &[]reason.Reason{{Code: reason.Unparseable, Severity: reason.Error, Message: "1:2: invalid UTF-8"}},
			HandoffID: entry.Null(), Source: entry.Null(), Target: entry.Null(), WorkflowID: entry.Null(),
			PayloadSHA256: h(4), PayloadSize: n(15), ManifestSHA256: h(1), LockSHA256: h(2)},
		{V: 1, Seq: 5, Time: at("2026-11-21T10:00:02Z"), Kind: entry.KindUnblock, Agent: "domain-01-research", Note: "prompt verified; INC-2211 <ok>"},
		{V: 1, Seq: 6, Time: at("2026-11-21T10:00:03Z"), Kind: entry.KindHandoff, Format: entry.Str("vbw/1"),
			Decision: reason.Accepted, Reasons: &empty, HandoffID: entry.Null(), Source: entry.Str("domain-03-technical"),
			Target: entry.Str("domain-02-analysis"), WorkflowID: entry.Str("03-01"),
			PayloadSHA256: h(6), PayloadSize: n(0), ManifestSHA256: h(1), LockSHA256: h(2)},
		{V: 1, Seq: 7, Time: at("2026-11-21T10:00:04Z"), Kind: entry.KindRedaction, RedactedSeq: 3, Note: "personal data (GDPR art. 17)"},
		{V: 1, Seq: 8, Time: at("2026-11-21T10:00:05Z"), Kind: entry.KindKeyRotation, OldKey: "ledger+1a2b3c4d+AQID", NewKey: "ledger+5e6f7a8b+AQIE", Note: "yearly rotation"},
		{V: 1, Seq: 9, Time: at("2026-11-21T10:00:06.25Z"), Kind: entry.KindOutcome, DecisionSeq: 6, Status: entry.StatusSucceeded,
			Agent: "domain-02-analysis", WorkflowID: entry.Str("03-01"), OutputSHA256: h(9), DurationMS: n(1234),
			Submitter: "ci-analysis", IdempotencyKey: "run-7/step-3/outcome", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{V: 1, Seq: 10, Time: at("2026-11-21T10:00:07Z"), Kind: entry.KindOutcome, DecisionSeq: 6, Status: entry.StatusFailed,
			Agent: "domain-02-analysis", WorkflowID: entry.Null()},
	}
}

type kindVector struct {
	Entry     json.RawMessage `json:"entry"`
	Canonical string          `json:"canonical"`
	Hash      string          `json:"hash"`
}

func TestPublishedKindVectors(t *testing.T) {
	const path = "../testdata/vectors/govledger-entries.jsonl"
	var buf bytes.Buffer
	prev := entry.ZeroHash
	for _, e := range kindsChain(t) {
		e.Prev = prev
		c, err := e.Canonical()
		if err != nil {
			t.Fatalf("seq %d: %v", e.Seq, err)
		}
		if _, err := entry.Decode(c); err != nil {
			t.Fatalf("seq %d: DecodeEntry: %v", e.Seq, err)
		}
		prev = entry.LeafHash(c)
		line, err := json.Marshal(kindVector{Entry: c, Canonical: string(c), Hash: prev.String()})
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if *updateVectors {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-vectors)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from the encoding of kindsChain: an encoding change breaks interoperability", path)
	}
}
