package govern_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// setup unpacks the demo data and returns its manifest config with a
// clock pinned just after the documents' timestamps.
func setup(t *testing.T) (*govern.Config, string) {
	t.Helper()
	dir := t.TempDir()
	if err := demo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := demo.Config(dir, "registry")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now = func() time.Time { return demo.Epoch }
	return cfg, dir
}

func payload(t *testing.T, name string, max int64) *govern.Payload {
	t.Helper()
	b, err := demo.Document(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := govern.ReadPayload(bytes.NewReader(b), max)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustVerify(t *testing.T, l *ledger.Ledger) *verify.Report {
	t.Helper()
	rep, err := verify.Replay(context.Background(), verify.LedgerSource(l), verify.Options{Structural: l.Check, Head: l.Head})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %v", rep.Findings)
	}
	return rep
}

// TestConcurrentReplayOneAcceptance sends one handoff 50 times at once:
// exactly one is accepted, every other is REPLAY naming its seq, and the
// ledger verifies.
func TestConcurrentReplayOneAcceptance(t *testing.T) {
	cfg, dir := setup(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	outs := make([]*govern.Outcome, 50)
	errs := make([]error, 50)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = govern.Record(context.Background(), l, cfg, "doc", payload(t, "01-product-to-analysis.json", 1<<20))
		}()
	}
	wg.Wait()
	accepted, replays := 0, 0
	var acceptedSeq uint64
	for i, o := range outs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch {
		case o.Decision.Decision == reason.Accepted:
			accepted++
			acceptedSeq = o.Entry().Entry.Seq
		case len(o.Decision.Reasons) == 1 && o.Decision.Reasons[0].Code == reason.Replay:
			replays++
		default:
			t.Errorf("unexpected decision %s %v", o.Decision.Decision, o.Decision.Reasons)
		}
	}
	if accepted != 1 || replays != 49 {
		t.Fatalf("accepted %d, replays %d; want 1, 49", accepted, replays)
	}
	for _, o := range outs {
		if o.Decision.Decision == reason.Rejected && !strings.Contains(o.Decision.Reasons[0].Message, "seq "+itoa(acceptedSeq)) {
			t.Errorf("REPLAY message %q does not name seq %d", o.Decision.Reasons[0].Message, acceptedSeq)
		}
	}
	mustVerify(t, l)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestValidateMatchesRecord: the decision validate prints is the one record
// appends, for every demo document of the manifest registry.
func TestValidateMatchesRecord(t *testing.T) {
	cfg, dir := setup(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, name := range []string{"01-product-to-analysis.json", "02-thinker-to-technical.json", "03-content-to-security.json", "07-rogue-agent.json", "08-garbage.bin"} {
		v, err := govern.Validate(cfg, name, payload(t, name, 1<<20), nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := govern.Record(context.Background(), l, cfg, name, payload(t, name, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		if v.Decision.Decision != r.Decision.Decision || len(v.Decision.Reasons) != len(r.Decision.Reasons) {
			t.Errorf("%s: validate %s %v, record %s %v", name, v.Decision.Decision, reason.Codes(v.Decision.Reasons),
				r.Decision.Decision, reason.Codes(r.Decision.Reasons))
		}
	}
	mustVerify(t, l)
}

// TestPayloadTooLarge: an oversized document is recorded with its hash and
// size only, and the ledger still verifies.
func TestPayloadTooLarge(t *testing.T) {
	cfg, dir := setup(t)
	cfg.Params.MaxPayload = 100
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := payload(t, "01-product-to-analysis.json", 100)
	if p.Data != nil || p.Size <= 100 {
		t.Fatalf("ReadPayload kept %d bytes of %d", len(p.Data), p.Size)
	}
	o, err := govern.Record(context.Background(), l, cfg, "big", p)
	if err != nil {
		t.Fatal(err)
	}
	if got := reason.Codes(o.Decision.Reasons); len(got) != 1 || got[0] != reason.PayloadTooLarge {
		t.Fatalf("codes = %v, want [PAYLOAD_TOO_LARGE]", got)
	}
	e := o.Entry().Entry
	if *e.PayloadSize != p.Size || *e.PayloadSHA256 != p.SHA256 {
		t.Errorf("entry records size %d hash %s, want %d %s", *e.PayloadSize, e.PayloadSHA256, p.Size, p.SHA256)
	}
	if _, err := l.Blob(t.Context(), p.SHA256); err == nil {
		t.Error("oversized payload was stored")
	}
	mustVerify(t, l)
}

// TestDecisionUsesEntryTime: when the ledger raises the entry time above
// the proposed one (an earlier entry is later), the decision made before
// the commit is discarded and taken again at the entry's time; here that
// turns an acceptance into STALE, and verify agrees.
func TestDecisionUsesEntryTime(t *testing.T) {
	cfg, dir := setup(t)
	later := demo.Epoch.Add(48 * time.Hour)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// An entry at "later" (the ledger clock), then a record proposing Epoch.
	if _, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.Agent, e.Note = entry.KindUnblock, "nobody", "clock test"
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	v, err := govern.Validate(cfg, "doc", payload(t, "01-product-to-analysis.json", 1<<20), nil)
	if err != nil || v.Decision.Decision != reason.Accepted {
		t.Fatalf("at the proposed time the handoff is %v (%v), want accepted", v.Decision.Decision, err)
	}
	o, err := govern.Record(context.Background(), l, cfg, "doc", payload(t, "01-product-to-analysis.json", 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	e := o.Entry().Entry
	if !e.Time.Equal(later) {
		t.Fatalf("entry time %v, want %v", e.Time, later)
	}
	if got := reason.Codes(o.Decision.Reasons); o.Decision.Decision != reason.Rejected || len(got) != 1 || got[0] != reason.Stale {
		t.Fatalf("decision %s %v, want rejected [STALE] at the entry's time", o.Decision.Decision, got)
	}
	mustVerify(t, l)
}

// TestIdempotencyKeyOnce submits one document 20 times at once under one
// idempotency key: exactly one entry is appended (carrying the key and the
// traceparent), every other call gets a *KeyUsedError naming it, and the
// ledger verifies.
func TestIdempotencyKeyOnce(t *testing.T) {
	cfg, dir := setup(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := *cfg
	c.IdempotencyKey, c.TraceParent = "ci/run-7", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const n = 20
	outs, errs := make([]*govern.Outcome, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = govern.Record(context.Background(), l, &c, "doc", payload(t, "01-product-to-analysis.json", 1<<20))
		}()
	}
	wg.Wait()
	var first *govern.Outcome
	used := 0
	for i, err := range errs {
		var ku *govern.KeyUsedError
		switch {
		case err == nil && first == nil:
			first = outs[i]
		case err == nil:
			t.Fatalf("two appends under one key: seq %d and %d", first.Entry().Entry.Seq, outs[i].Entry().Entry.Seq)
		case errors.As(err, &ku):
			used++
		default:
			t.Fatalf("Record: %v", err)
		}
	}
	if first == nil || used != n-1 {
		t.Fatalf("appended %v, key-used errors %d, want 1 and %d", first != nil, used, n-1)
	}
	e := first.Entry().Entry
	if e.IdempotencyKey != c.IdempotencyKey || e.TraceParent != c.TraceParent {
		t.Fatalf("entry carries key %q traceparent %q", e.IdempotencyKey, e.TraceParent)
	}
	for _, err := range errs {
		var ku *govern.KeyUsedError
		if errors.As(err, &ku) && (ku.Seq != e.Seq || ku.Payload != *e.PayloadSHA256) {
			t.Fatalf("KeyUsedError names seq %d payload %s, want %d %s", ku.Seq, ku.Payload, e.Seq, e.PayloadSHA256)
		}
	}
	mustVerify(t, l)
}

// TestEntryTooLarge records a document with 3,000 schema errors, whose
// reasons alone would take some 400 KB (each wrong value padded with
// white space, so the document stays under rules 2's parse caps: values
// per byte): its entry is compact (the critical
// reasons and one ENTRY_TOO_LARGE counting the rest), fits the 65,535
// bytes of a tlog-tiles entry, records the bound it was taken with, and
// verifies; a small document's entry does not record the bound.
func TestEntryTooLarge(t *testing.T) {
	cfg, dir := setup(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), &bolt.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	doc, err := demo.Document("01-product-to-analysis.json")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Replace(string(doc), `"constraints": [`, `"constraints": [`+strings.Repeat("1"+strings.Repeat(" ", 100)+", ", 3000), 1)
	if big == string(doc) {
		t.Fatal("the demo document has no constraints list to fill")
	}
	p, err := govern.ReadPayload(strings.NewReader(big), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	full, err := govern.Validate(cfg, "big", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := govern.Record(context.Background(), l, cfg, "big", p)
	if err != nil {
		t.Fatal(err)
	}
	a := o.Entry()
	rs := *a.Entry.Reasons
	if len(a.Raw) > 65535 || a.Entry.Decision != reason.Rejected || len(rs) != 1 || rs[0].Code != reason.EntryTooLarge {
		t.Fatalf("entry of %d bytes, decision %s, %d reasons (first %v)", len(a.Raw), a.Entry.Decision, len(rs), rs[0].Code)
	}
	if !strings.Contains(rs[0].Message, "SCHEMA_INVALID ×3000") || !bytes.Contains(a.Entry.Inputs, []byte(`"max_reasons_bytes":49152`)) {
		t.Errorf("message %q, inputs %s", rs[0].Message, a.Entry.Inputs)
	}
	if len(full.Decision.Reasons) != 1 { // Validate compacts as Record does
		t.Errorf("validate gives %d reasons", len(full.Decision.Reasons))
	}
	small := governtestHandoff(t)
	o, err = govern.Record(context.Background(), l, cfg, "small", small)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(o.Entry().Entry.Inputs, []byte("max_reasons_bytes")) {
		t.Errorf("a small decision records the bound: %s", o.Entry().Entry.Inputs)
	}
	mustVerify(t, l)
}

func governtestHandoff(t *testing.T) *govern.Payload {
	return payload(t, "01-product-to-analysis.json", 1<<20)
}
