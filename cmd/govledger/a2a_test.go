package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// a2aCards copies the example A2A Agent Cards folder (testdata/a2a-cards)
// into a temporary folder and returns the folder and its lock's path.
func a2aCards(t *testing.T) (dir, cards, lock string) {
	t.Helper()
	dir = t.TempDir()
	cards = filepath.Join(dir, "cards")
	if err := os.CopyFS(cards, os.DirFS(filepath.Join(moduleRoot(t), "testdata", "a2a-cards"))); err != nil {
		t.Fatal(err)
	}
	return dir, cards, filepath.Join(dir, "cards-lock.json")
}

// a2aDoc is an A2A 0.3.0 message from planner to router (id: its
// messageId) quoting the sha256 of router's card as it is now, as an
// adapter that resolved the card would.
func a2aDoc(t *testing.T, cards, id string) []byte {
	t.Helper()
	card, err := os.ReadFile(filepath.Join(cards, "router.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(card)
	return []byte(`{"kind": "message", "messageId": "` + id + `", "contextId": "trip-42", "role": "user",
 "parts": [{"kind": "text", "text": "Route the airport leg, avoiding tolls."}],
 "metadata": {"govledger": {"source": "planner", "target": "router", "target_prompt_hash": "sha256:` + hex.EncodeToString(sum[:]) + `"}}}`)
}

// TestRecordA2A: an A2A message is decided and recorded against a folder
// of Agent Cards locked by their files' bytes; an edited card is drift for
// lock check and, quoted by the next message, a HASH_MISMATCH; verify
// re-decides every a2a/1 entry.
func TestRecordA2A(t *testing.T) {
	dir, cards, lock := a2aCards(t)
	db := filepath.Join(dir, "ledger.db")
	gl := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append([]string{"--db", db, "--manifest", cards, "--lock", lock}, args...)...)
	}
	if code, out, errs := gl("lock"); code != 0 {
		t.Fatalf("lock: %d %s %s", code, out, errs)
	}
	if code, out, errs := gl("lock", "check"); code != 0 || !strings.Contains(out, "in sync: 2 agents") {
		t.Fatalf("lock check: %d %s %s", code, out, errs)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type result struct {
		Documents []struct {
			Format, Decision, Source, Target, HandoffID, WorkflowID string
			Reasons                                                 []struct{ Code, Field, Severity string }
		}
	}
	record := func(args ...string) result {
		t.Helper()
		_, out, errs := gl(append([]string{"record", "--output", "json"}, args...)...)
		var r result
		if err := json.Unmarshal([]byte(out), &r, json.MatchCaseInsensitiveNames(true)); err != nil || len(r.Documents) != 1 {
			t.Fatalf("record %v: %v\n%s\n%s", args, err, out, errs)
		}
		return r
	}
	r := record(write("m1.json", a2aDoc(t, cards, "msg-1")))
	if d := r.Documents[0]; d.Format != "a2a/1" || d.Decision != "accepted" || d.Source != "planner" || d.Target != "router" ||
		d.HandoffID != "msg-1" || d.WorkflowID != "trip-42" {
		t.Fatalf("first message: %+v", d)
	}
	// The request names the agents of a message that does not.
	bare := []byte(`{"kind": "message", "messageId": "msg-2", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}`)
	if d := record("--from", "router", "--to", "planner", write("m2.json", bare)).Documents[0]; d.Decision != "accepted" || d.Source != "router" {
		t.Fatalf("agents from the request: %+v", d)
	}
	if d := record(write("m3.json", []byte(strings.Replace(string(bare), "msg-2", "msg-3", 1)))).Documents[0]; d.Decision != "rejected" || d.Reasons[0].Code != "AGENTS_REQUIRED" {
		t.Fatalf("no agents: %+v", d)
	}
	// The router's card changes (a new capability) and is not locked again.
	card := filepath.Join(cards, "router.json")
	b, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(card, []byte(strings.Replace(string(b), `"supportsAuthenticatedExtendedCard": false`, `"supportsAuthenticatedExtendedCard": true`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := gl("lock", "check"); code != 1 || !strings.Contains(out, "CHANGED router") || !strings.Contains(out, "router.json") {
		t.Fatalf("lock check after the card changed: %d %s", code, out)
	}
	d := record(write("m4.json", a2aDoc(t, cards, "msg-4"))).Documents[0]
	if d.Decision != "rejected" || len(d.Reasons) != 1 || d.Reasons[0].Code != "HASH_MISMATCH" || d.Reasons[0].Field != "metadata.govledger.target_prompt_hash" {
		t.Fatalf("message quoting the edited card: %+v", d)
	}
	// verify re-decides every entry, a2a/1 ones included, from the
	// recorded inputs.
	if code, out, errs := gl("verify"); code != 0 || !strings.Contains(out, "6 entries verified") {
		t.Fatalf("verify: %d %s %s", code, out, errs)
	}
	if code, out, _ := gl("log", "--workflow", "trip-42"); code != 0 || strings.Count(out, "a2a/1") != 2 {
		t.Fatalf("log --workflow trip-42 (contextId): %d %s", code, out)
	}
}

// TestServeA2A: a real "govledger serve" over a folder of Agent Cards
// decides A2A messages and SendMessageRequests posted to /v1/handoffs; the
// agents come from the message's metadata or from ?from=&to=, and a token
// bound to other agents is refused by the source the metadata names.
func TestServeA2A(t *testing.T) {
	e := newServeEnv(t, "registry")
	_, cards, lock := a2aCards(t)
	e.manifest, e.lock = cards, lock
	if out, code := e.cli("lock"); code != 0 {
		t.Fatalf("lock: %d %s", code, out)
	}
	s := e.start()
	post := func(path, principal string, body []byte) map[string]any {
		t.Helper()
		a := e.do(s, "POST", path, principal, body)
		if a.status != 201 {
			t.Fatalf("POST %s: %d %s", path, a.status, a.body)
		}
		return a.json(t)
	}
	m := post("/v1/handoffs", "writer", a2aDoc(t, cards, "srv-1"))
	if m["format"] != "a2a/1" || m["decision"] != "accepted" || m["handoff_id"] != "srv-1" || m["workflow_id"] != "trip-42" {
		t.Fatalf("message: %v", m)
	}
	req := []byte(`{"jsonrpc": "2.0", "id": "r-1", "method": "message/send", "params": {"message": ` +
		`{"kind": "message", "messageId": "srv-2", "contextId": "trip-42", "role": "user", "parts": [{"kind": "data", "data": {"leg": 2}}]}}}`)
	m = post("/v1/handoffs?from=router&to=planner", "writer", req)
	if m["format"] != "a2a/1" || m["decision"] != "accepted" || m["source"] != "router" || m["target"] != "planner" {
		t.Fatalf("request with ?from=&to=: %v", m)
	}
	m = post("/v1/handoffs", "writer", []byte(strings.Replace(string(req), "srv-2", "srv-3", 1)))
	if m["decision"] != "rejected" || !strings.Contains(string(mustJSON(t, m["reasons"])), "AGENTS_REQUIRED") {
		t.Fatalf("request naming no agents: %v", m)
	}
	// product may submit only for domain-05-product: the metadata's source
	// is planner.
	wantProblem(t, "other principal's source", e.do(s, "POST", "/v1/handoffs", "product", a2aDoc(t, cards, "srv-4")), 403, "FORBIDDEN_SOURCE")
	a := e.do(s, "GET", "/v1/workflows/trip-42", "reader", nil)
	if a.status != 200 || strings.Count(string(a.body), `"a2a/1"`) != 3 {
		t.Fatalf("workflow trip-42: %d %s", a.status, a.body)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}
}

// TestHandoffNewA2A: handoff new --format a2a/1 writes an A2A message
// that names both agents with their locked card hashes, and it is
// accepted; another format is a usage error.
func TestHandoffNewA2A(t *testing.T) {
	dir, cards, lock := a2aCards(t)
	db := filepath.Join(dir, "ledger.db")
	gl := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append([]string{"--db", db, "--manifest", cards, "--lock", lock}, args...)...)
	}
	if code, out, errs := gl("lock"); code != 0 {
		t.Fatalf("lock: %d %s %s", code, out, errs)
	}
	code, doc, errs := gl("handoff", "new", "--format", "a2a/1", "--from", "planner", "--to", "router", "--description", "route the airport leg")
	if code != 0 || !strings.Contains(doc, `"kind": "message"`) || !strings.Contains(doc, `"target_prompt_hash": "sha256:02936fa4f21c97c6206e9e47e86ccf3608157fb042d860fcbbfdb016f92f9d5f"`) {
		t.Fatalf("handoff new --format a2a/1: %d %s %s", code, doc, errs)
	}
	p := filepath.Join(dir, "new.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := gl("record", p); code != 0 || !strings.Contains(out, "ACCEPTED (a2a/1, planner -> router)") {
		t.Fatalf("record of handoff new's message: %d %s %s", code, out, errs)
	}
	if code, _, errs := gl("handoff", "new", "--format", "vbw/1", "--from", "planner", "--to", "router"); code != 2 || !strings.Contains(errs, "want governed/1 or a2a/1") {
		t.Fatalf("handoff new --format vbw/1: %d %s", code, errs)
	}
}
