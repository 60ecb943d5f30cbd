package verify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/verify"
)

const registryDir = "../testdata/registry"

// start is the ledger clock's start; documents are timestamped a minute
// before it.
var start = time.Date(2026, 2, 11, 0, 50, 0, 0, time.UTC)

type obj = map[string]any

var promptHash = map[string]string{
	"domain-02-analysis":        "91a3c63e7eb1dca488acc7c8a2661bd579d21d53f3c099fe76f4614e4dd33846",
	"domain-05-product":         "e504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509d",
	"domain-06-security":        "4568fd4af96308c05842187cf50a4c36c4b75a85d136ceba673662c85a6c954d",
	"archetype-product-thinker": "1145d79318c71d416d2bda0e8ca33d44a3cff87f55186b0c8986099877108f89",
	"orchestrator":              "ee7ee5e9314c499e648413ac5d223d6e9025a05e45458b462fa9a09c333955de",
}

var agentInfo = map[string][2]string{ // type, version
	"domain-02-analysis":        {"domain", "1.0.0"},
	"domain-05-product":         {"domain", "1.0.0"},
	"domain-06-security":        {"domain", "2.0.0"},
	"archetype-product-thinker": {"archetype", "1.2.0"},
	"orchestrator":              {"orchestrator", "2.0.0"},
}

func ref(id string) obj {
	return obj{"agent_id": id, "agent_type": agentInfo[id][0], "agent_version": agentInfo[id][1], "prompt_hash": promptHash[id]}
}

// doc returns a governed/1 document; set overrides top-level members.
func doc(t testing.TB, id, src, dst string, set obj) []byte {
	var n int
	fmt.Sscanf(id, "h%d", &n)
	d := obj{
		"handoff_id":       fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
		"timestamp":        start.Add(-time.Minute).Format(time.RFC3339),
		"protocol_version": "1.0.0",
		"source_agent":     ref(src),
		"target_agent":     ref(dst),
		"context": obj{"request": obj{"type": "analysis", "description": "Analyze <data> & \"report\" — café",
			"input_data": obj{}, "constraints": []any{}, "expected_output": "a report"},
			"state": obj{"conversation_history": []any{}, "accumulated_context": obj{}, "decisions_made": []any{}}},
		"governance": obj{"source_agent_verified": true, "target_agent_verified": true,
			"composition_valid": true, "boundaries_respected": true, "audit_trail": "log"},
	}
	for k, v := range set {
		d[k] = v
	}
	b, err := json.Marshal(d, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixture is a ledger built by buildLedger, closed, with what the tests
// need to know about it.
type fixture struct {
	path  string
	head  uint64
	kinds map[uint64]string // seq -> what the entry is ("accepted", "HASH_MISMATCH", ...)
}

// recorder records governed decisions exactly as the CLI does: Decide with
// the ledger's state and the entry time inside Build, then Fill.
type recorder struct {
	t         testing.TB
	l         *ledger.Ledger
	reg       *manifest.Registry
	lock      *lockfile.Lock
	lockBytes []byte
	params    policy.Params
}

func (r *recorder) record(payload []byte, keep bool) *ledger.Appended {
	r.t.Helper()
	size, sum := int64(len(payload)), entry.Sum256(payload)
	req := &ledger.Request{Snapshots: []ledger.Snapshot{
		{What: entry.SnapshotManifest, Bytes: r.reg.Snapshot},
		{What: entry.SnapshotLock, Bytes: r.lockBytes},
	}, LockChanges: lockfile.ChangedBytes}
	var kept []byte
	if keep {
		kept, req.Payload = payload, payload
	}
	req.Build = func(st ledger.State, e *entry.Entry) error {
		in := policy.Input{Payload: kept, PayloadSize: size, PayloadSHA256: sum, Registry: r.reg, Lock: r.lock,
			Now: e.Time.Time, State: st, Inputs: policy.Inputs{Params: r.params}}
		return policy.Decide(in).Fill(e, in)
	}
	res, err := r.l.Append(context.Background(), req)
	if err != nil {
		r.t.Fatalf("Append = %v", err)
	}
	return res.Last()
}

// buildLedger writes a 19-entry ledger of real governed decisions:
//
//	 1 snapshot manifest            2 snapshot lock
//	 3 h1 accepted                  4 unknown agent, rejected
//	 5 h1 again: REPLAY             6 HASH_MISMATCH, blocks domain-05-product
//	 7 AGENT_BLOCKED                8 unblock domain-05-product
//	 9 h5 accepted (to archetype)  10 UNPARSEABLE
//	11 PAYLOAD_TOO_LARGE (no blob) 12 h7 accepted (orchestrator)
//	13 redaction of 10             14 snapshot lock v2 (orchestrator unlocked)
//	15 h8 orchestrator: unlocked   16 HASH_MISMATCH, blocks domain-02-analysis
//	17 snapshot lock v1 again      18 h9 to domain-02-analysis: AGENT_BLOCKED (the
//	   (lifts orchestrator only)      re-lock left its hash unchanged: the block stays)
//	19 AGENT_BLOCKED, BOUNDARY_VIOLATION
func buildLedger(t testing.TB) *fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(registryDir, "prompt-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := manifest.Parse("prompt-manifest.json", data, registryDir)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := lockfile.Generate(reg, lockfile.DirOpener(registryDir))
	if err != nil {
		t.Fatal(err)
	}
	lk2 := &lockfile.Lock{Version: lk.Version, Agents: map[string]lockfile.Entry{}}
	for id, e := range lk.Agents {
		if id != "orchestrator" {
			lk2.Agents[id] = e
		}
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, &bolt.Options{Now: bolttest.NewClock(start).Now, Origin: "test.example/verify", IndexBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{t: t, l: l, reg: reg, lock: lk, lockBytes: lk.Marshal(),
		params: policy.Params{MaxAge: int64(24 * time.Hour), MaxPayload: 4096}}
	f := &fixture{path: path, kinds: map[uint64]string{1: "snapshot", 2: "snapshot"}}
	rec := func(what string, payload []byte) {
		a := r.record(payload, int64(len(payload)) <= r.params.MaxPayload)
		f.kinds[a.Entry.Seq] = what
		if got := a.Entry.Decision + ":" + codes(a.Entry); !strings.HasPrefix(got, what) {
			t.Fatalf("seq %d = %s, want %s: %+v", a.Entry.Seq, got, what, *a.Entry.Reasons)
		}
	}
	bad := ref("domain-05-product")
	bad["prompt_hash"] = strings.Repeat("0", 64)
	bad2 := ref("domain-02-analysis")
	bad2["prompt_hash"] = strings.Repeat("1", 64)

	rec("accepted:", doc(t, "h1", "domain-05-product", "domain-02-analysis", nil))
	rec("rejected:UNKNOWN_AGENT", doc(t, "h2", "domain-05-product", "domain-02-analysis", obj{"target_agent": obj{"agent_id": "ghost", "agent_type": "domain", "agent_version": "1.0.0", "prompt_hash": strings.Repeat("a", 64)}}))
	rec("rejected:REPLAY", doc(t, "h1", "domain-05-product", "domain-02-analysis", nil))
	rec("rejected:HASH_MISMATCH", doc(t, "h3", "domain-05-product", "domain-02-analysis", obj{"source_agent": bad}))
	rec("rejected:AGENT_BLOCKED", doc(t, "h4", "domain-05-product", "domain-02-analysis", nil))
	ua := bolttest.AppendUnblock(t, l, "domain-05-product", "prompt reviewed")
	f.kinds[ua.Entry.Seq] = "unblock"
	rec("accepted:", doc(t, "h5", "domain-05-product", "archetype-product-thinker", nil))
	rec("rejected:UNPARSEABLE", []byte("\x00\xffnot a handoff"))
	rec("rejected:PAYLOAD_TOO_LARGE", []byte(strings.Repeat("x", 5000)))
	rec("accepted:", doc(t, "h7", "orchestrator", "domain-06-security", nil))
	red, err := l.Redact(context.Background(), 10, "contains secrets")
	if err != nil {
		t.Fatal(err)
	}
	f.kinds[red.Last().Entry.Seq] = "redaction"
	r.lock, r.lockBytes = lk2, lk2.Marshal()
	rec("rejected:HASH_MISMATCH", doc(t, "h8", "orchestrator", "domain-06-security", nil))
	f.kinds[14] = "snapshot"
	rec("rejected:HASH_MISMATCH", doc(t, "h9", "domain-05-product", "domain-02-analysis", obj{"target_agent": bad2}))
	r.lock, r.lockBytes = lk, lk.Marshal()
	rec("rejected:AGENT_BLOCKED", doc(t, "h10", "domain-05-product", "domain-02-analysis", nil))
	f.kinds[17] = "snapshot"
	rec("rejected:AGENT_BLOCKED,BOUNDARY_VIOLATION", doc(t, "h11", "domain-02-analysis", "domain-06-security", nil))
	f.head, _, err = l.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func codes(e *entry.Entry) string {
	var s []string
	for _, r := range *e.Reasons {
		s = append(s, string(r.Code))
	}
	return strings.Join(s, ",")
}

// verifyFile opens path read-only and replays it with the structural
// check and the stored head, as `govledger verify` does.
func verifyFile(t testing.TB, path string, opts verify.Options) (*verify.Report, error) {
	t.Helper()
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true, Timeout: time.Second, CheckPages: true})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	opts.Structural = l.Check
	opts.Head = l.Head
	return verify.Replay(context.Background(), verify.LedgerSource(l), opts)
}

func TestReplayLedger(t *testing.T) {
	f := buildLedger(t)
	rep, err := verifyFile(t, f.path, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range rep.Findings {
		t.Errorf("finding: %s", x)
	}
	if rep.Entries != 19 || f.head != 19 || rep.FirstBad != 0 || !rep.OK() {
		t.Errorf("Replay = %d entries, first bad %d, OK %v; want 19, 0, true", rep.Entries, rep.FirstBad, rep.OK())
	}
	t.Logf("counts %v redacted %v", rep.Counts, rep.Redacted)
}
