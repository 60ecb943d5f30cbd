// Package ledgertest is the conformance suite of ledger.Driver: Run holds
// a driver to the contract the ledger core relies on — gapless seqs,
// chained prevs, compare-and-append (two cores on one store, each commit
// stored once, the loser built again), concurrent writers, views that stay
// consistent snapshots while batches land, blobs and their erasure, tables
// that answer as the fold of the entries does, tree hashes that give the
// roots tlog computes over the leaves, and Find. RunStore adds durability
// across a reopen and a search of the raw storage for erased bytes.
//
// Every driver's tests call it:
//
//	func TestConformance(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) ledger.Driver { return newDriver(t) })
//	}
package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/tiles"
)

// Store describes a driver to RunStore.
type Store struct {
	// Open returns a new, empty driver; each subtest opens its own. The
	// suite closes it (through a Ledger's Close or its own).
	Open func(t *testing.T) ledger.Driver
	// Reopen, if set, returns a driver over the store d kept, after the
	// suite closed d: what a restarted process sees. Durability tests run
	// only with it.
	Reopen func(t *testing.T, d ledger.Driver) ledger.Driver
	// Bytes, if set, returns every byte the store d keeps (a file's
	// contents, free pages included), after the suite closed d. The
	// erasure test searches it for a redacted payload.
	Bytes func(t *testing.T, d ledger.Driver) []byte
}

// Run runs the conformance suite against the drivers open returns.
func Run(t *testing.T, open func(t *testing.T) ledger.Driver) {
	RunStore(t, Store{Open: open})
}

// RunStore runs the conformance suite against s.
func RunStore(t *testing.T, s Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"Empty", testEmpty},
		{"Chain", testChain},
		{"Tables", testTables},
		{"Tree", testTree},
		{"Tiles", testTiles},
		{"Find", testFind},
		{"Conflict", testConflict},
		{"Race", testRace},
		{"Concurrent", testConcurrent},
		{"Snapshot", testSnapshot},
		{"Blobs", testBlobs},
		{"RedactionStays", testRedactionStays},
		{"Outcomes", testOutcomes},
		{"OutcomeRace", testOutcomeRace},
		{"Durable", testDurable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, s) })
	}
}

// t0 is the suite's clock start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a deterministic clock: each reading is 1ms after the last.
type clock struct {
	mu sync.Mutex
	n  int64
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return t0.Add(time.Duration(c.n) * time.Millisecond)
}

// open returns a new ledger over a new driver, closed when the test ends.
func open(t *testing.T, s Store) (*ledger.Ledger, ledger.Driver) {
	t.Helper()
	d := s.Open(t)
	l := core(t, d)
	return l, d
}

// core returns a ledger over d, closed when the test ends.
func core(t *testing.T, d ledger.Driver) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(d, &ledger.Options{Now: (&clock{}).now})
	if err != nil {
		t.Fatalf("ledger.New = %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Snapshot bytes brought into force by every handoff of the suite.
var (
	manifestV1 = []byte(`{"agents":[],"manifest_version":1}`)
	lockV1     = []byte(`{"agents":{},"lock_version":1}`)
)

// handoff describes a handoff entry.
type handoff struct {
	id, source, target, workflow, idem string
	rejected                           bool
	payload                            []byte // default: names id
	blocks                             []string
	lock                               []byte // default lockV1
	lifts                              []string
}

func (h handoff) request() *ledger.Request {
	payload := h.payload
	if payload == nil {
		payload = []byte(`{"handoff_id":"` + h.id + `"}`)
	}
	lock := h.lock
	if lock == nil {
		lock = lockV1
	}
	return &ledger.Request{
		Payload:   payload,
		Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: manifestV1}, {What: entry.SnapshotLock, Bytes: lock}},
		LockChanges: func(old, new []byte) ([]string, error) {
			return h.lifts, nil
		},
		Build: func(st ledger.State, e *entry.Entry) error {
			m, l, ok := st.InForce()
			if !ok {
				return errors.New("no snapshots in force")
			}
			rs := []reason.Reason{}
			if h.rejected {
				rs = []reason.Reason{{Code: reason.HashMismatch, Severity: reason.Critical, Field: "source_agent.prompt_hash", Message: "x"}}
			}
			sum, size := entry.Sum256(payload), int64(len(payload))
			e.Kind = entry.KindHandoff
			e.Format = entry.Str("governed/1")
			e.Decision = reason.Decide(rs)
			e.Reasons = &rs
			e.HandoffID = entry.StrOrNull(h.id)
			e.Source = entry.StrOrNull(h.source)
			e.Target = entry.StrOrNull(h.target)
			e.WorkflowID = entry.StrOrNull(h.workflow)
			e.IdempotencyKey = h.idem
			e.PayloadSHA256, e.PayloadSize = &sum, &size
			e.ManifestSHA256, e.LockSHA256 = &m, &l
			e.Blocks = h.blocks
			return nil
		},
	}
}

func appendOK(t *testing.T, l *ledger.Ledger, req *ledger.Request) *ledger.Result {
	t.Helper()
	res, err := l.Append(context.Background(), req)
	if err != nil {
		t.Fatalf("Append = %v", err)
	}
	return res
}

func unblock(agent string) *ledger.Request {
	return &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.Agent, e.Note = entry.KindUnblock, agent, "reviewed"
		return nil
	}}
}

func rotate(oldKey, newKey string) *ledger.Request {
	return &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.OldKey, e.NewKey, e.Note = entry.KindKeyRotation, oldKey, newKey, "rotated"
		return nil
	}}
}

// populate appends a ledger of every kind of entry and every change of
// the derived tables, and returns the handoffs it recorded.
func populate(t *testing.T, l *ledger.Ledger) []handoff {
	t.Helper()
	hs := []handoff{
		{id: "h1", source: "a", target: "b", workflow: "w1", idem: "k1"},
		{id: "h1", source: "a", target: "b", workflow: "w1", payload: []byte("again")},
		{id: "h2", source: "b", target: "c", workflow: "w1", rejected: true, blocks: []string{"b"}},
		{id: "h3", source: "c", target: "a", workflow: "w2", rejected: true, blocks: []string{"c", "d"}},
		{id: "h4", source: "a", target: "c", workflow: "w2", idem: "k2"},
		{id: "h5", source: "d", target: "a", lock: []byte(`{"agents":{},"lock_version":2}`), lifts: []string{"d"}},
		{id: "", source: "", target: "", rejected: true},
		{id: "h6", source: "e", target: "f", workflow: "w3", idem: "k1", payload: []byte(`{"handoff_id":"h1"}`)},
	}
	for i, h := range hs {
		res := appendOK(t, l, h.request())
		if i == 3 {
			appendOK(t, l, unblock("c"))
			appendOK(t, l, rotate("", "key-1"))
			appendOK(t, l, rotate("key-1", "key-2"))
		}
		if i == 4 { // h4 finished: an outcome found by agent c and workflow w2
			appendOK(t, l, outcome(res.Last().Entry, entry.StatusSucceeded))
		}
	}
	return hs
}

// outcome is a request for an outcome of the handoff entry d, naming its
// target and workflow as an outcome must.
func outcome(d *entry.Entry, status string) *ledger.Request {
	return outcomeOf(d.Seq, d.Target.S, d.WorkflowID, status)
}

func outcomeOf(seq uint64, agent string, workflow entry.NullString, status string) *ledger.Request {
	return &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.DecisionSeq, e.Status, e.Agent, e.WorkflowID = entry.KindOutcome, seq, status, agent, workflow
		return nil
	}}
}

// testOutcomes: an outcome is appended only after an accepted handoff
// whose target and workflow it names, and only once per handoff; each
// refusal is an *OutcomeError and stores nothing.
func testOutcomes(t *testing.T, s Store) {
	l, d := open(t, s)
	acc := appendOK(t, l, handoff{id: "o1", source: "a", target: "b", workflow: "w"}.request()).Last().Entry
	rej := appendOK(t, l, handoff{id: "o2", source: "a", target: "b", workflow: "w", rejected: true}.request()).Last().Entry
	unb := appendOK(t, l, unblock("a")).Last().Entry
	for _, c := range []struct {
		name string
		req  *ledger.Request
		why  string
	}{
		{"missing decision", outcomeOf(999, "b", entry.Str("w"), entry.StatusSucceeded), ledger.OutcomeNoDecision},
		{"not a handoff", outcomeOf(unb.Seq, "a", entry.Null(), entry.StatusSucceeded), ledger.OutcomeNotHandoff},
		{"snapshot", outcomeOf(1, "b", entry.Str("w"), entry.StatusSucceeded), ledger.OutcomeNotHandoff},
		{"rejected decision", outcome(rej, entry.StatusFailed), ledger.OutcomeRejected},
		{"other agent", outcomeOf(acc.Seq, "a", entry.Str("w"), entry.StatusSucceeded), ledger.OutcomeMismatch},
		{"other workflow", outcomeOf(acc.Seq, "b", entry.Str("v"), entry.StatusSucceeded), ledger.OutcomeMismatch},
		{"null workflow", outcomeOf(acc.Seq, "b", entry.Null(), entry.StatusSucceeded), ledger.OutcomeMismatch},
	} {
		before := view(t, d).Head()
		_, err := l.Append(context.Background(), c.req)
		var oe *ledger.OutcomeError
		if !errors.As(err, &oe) || !errors.Is(err, ledger.ErrOutcomeRefused) || oe.Why != c.why {
			t.Errorf("%s: Append = %v, want an OutcomeError %s", c.name, err, c.why)
		}
		if h := view(t, d).Head(); h != before {
			t.Errorf("%s: a refused outcome moved the head from %d to %d", c.name, before.Seq, h.Seq)
		}
	}
	first := appendOK(t, l, outcome(acc, entry.StatusSucceeded)).Last().Entry
	appendOK(t, l, handoff{id: "o3", source: "c", target: "b", workflow: "w"}.request()) // the same agent again
	_, err := l.Append(context.Background(), outcome(acc, entry.StatusFailed))
	var oe *ledger.OutcomeError
	if !errors.As(err, &oe) || oe.Why != ledger.OutcomeDuplicate || oe.Existing != first.Seq {
		t.Errorf("second outcome: Append = %v, want an OutcomeError duplicate of seq %d", err, first.Seq)
	}
	// Found by its agent and its workflow, like the handoff it follows.
	v := view(t, d)
	for _, q := range []ledger.Query{{Agent: "b"}, {WorkflowID: "w"}} {
		got, err := v.Find(context.Background(), q)
		if err != nil || !slices.Contains(got, first.Seq) {
			t.Errorf("Find(%+v) = %v %v, want it to list the outcome %d", q, got, err, first.Seq)
		}
	}
	if got, err := v.Find(context.Background(), ledger.Query{Agent: "a", After: rej.Seq}); err != nil || slices.Contains(got, first.Seq) {
		t.Errorf("Find(agent a) = %v %v: lists the outcome of agent b", got, err)
	}
	sameTables(t, v)
}

// testOutcomeRace: outcomes of one decision sent at once, through one core
// (one batch) and through two cores sharing the store (a conflict), are
// stored once.
func testOutcomeRace(t *testing.T, s Store) {
	d := s.Open(t)
	t.Cleanup(func() { d.Close() }) // after the views' cleanups
	la, lb := core(t, &hooked{Driver: d}), core(t, &hooked{Driver: d})
	var decisions []*entry.Entry
	for i := range 4 {
		h := handoff{id: fmt.Sprintf("r%d", i), source: "a", target: "b", workflow: "w"}
		decisions = append(decisions, appendOK(t, la, h.request()).Last().Entry)
	}
	const each = 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[uint64]int{}
	for _, dec := range decisions {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := la
				if i%2 == 1 {
					l = lb
				}
				_, err := l.Append(context.Background(), outcome(dec, entry.StatusSucceeded))
				switch {
				case err == nil:
					mu.Lock()
					stored[dec.Seq]++
					mu.Unlock()
				case !errors.Is(err, ledger.ErrOutcomeRefused):
					t.Errorf("Append(outcome of %d) = %v", dec.Seq, err)
				}
			}()
		}
	}
	wg.Wait()
	es, _ := entries(t, view(t, d))
	count := map[uint64]int{}
	for _, e := range es {
		if e.Kind == entry.KindOutcome {
			count[e.DecisionSeq]++
		}
	}
	for _, dec := range decisions {
		if count[dec.Seq] != 1 || stored[dec.Seq] != 1 {
			t.Errorf("decision %d: %d outcomes stored, %d acknowledged; want 1", dec.Seq, count[dec.Seq], stored[dec.Seq])
		}
	}
}

// entries reads every entry of v through Scan, checking seqs and chain.
func entries(t *testing.T, v ledger.View) ([]*entry.Entry, []entry.Hash) {
	t.Helper()
	var es []*entry.Entry
	var hs []entry.Hash
	prev := entry.ZeroHash
	err := v.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		if want := uint64(len(es) + 1); seq != want {
			return fmt.Errorf("scan gave seq %d, want %d (a gap)", seq, want)
		}
		e, err := entry.Decode(raw)
		if err != nil {
			return fmt.Errorf("seq %d: %v", seq, err)
		}
		if e.Seq != seq || e.Prev != prev {
			return fmt.Errorf("seq %d says seq %d prev %s, want prev %s", seq, e.Seq, e.Prev, prev)
		}
		prev = entry.LeafHash(raw)
		es = append(es, e)
		hs = append(hs, prev)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if h := v.Head(); h.Seq != uint64(len(es)) || h.Hash != prev {
		t.Fatalf("Head = seq %d %s, Scan ends at seq %d %s", h.Seq, h.Hash, len(es), prev)
	}
	return es, hs
}

func view(t *testing.T, d ledger.Driver) ledger.View {
	t.Helper()
	v, err := d.View(context.Background())
	if err != nil {
		t.Fatalf("View = %v", err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func testEmpty(t *testing.T, s Store) {
	d := s.Open(t)
	t.Cleanup(func() { d.Close() }) // after the views' cleanups
	if err := ledger.CheckOrigin(d.Origin()); err != nil {
		t.Errorf("Origin: %v", err)
	}
	v := view(t, d)
	if h := v.Head(); h != (entry.Head{}) {
		t.Errorf("empty Head = %+v", h)
	}
	if _, err := v.Entry(1); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Entry(1) = %v, want ErrNotFound", err)
	}
	if _, err := v.Blob(entry.Sum256([]byte("x"))); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Blob = %v, want ErrNotFound", err)
	}
	if seqs, err := v.Find(context.Background(), ledger.Query{}); err != nil || len(seqs) != 0 {
		t.Errorf("Find = %v, %v", seqs, err)
	}
	if m, err := v.Blocks(); err != nil || len(m) != 0 {
		t.Errorf("Blocks = %v, %v", m, err)
	}
	if _, ok, err := v.Accepted("x"); ok || err != nil {
		t.Errorf("Accepted = %t, %v", ok, err)
	}
	if err := v.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func testChain(t *testing.T, s Store) {
	l, d := open(t, s)
	populate(t, l)
	v := view(t, d)
	es, _ := entries(t, v)
	if len(es) < 15 {
		t.Fatalf("%d entries", len(es))
	}
	for i, e := range es {
		raw, err := v.Entry(uint64(i + 1))
		if err != nil {
			t.Fatalf("Entry(%d) = %v", i+1, err)
		}
		if got, _ := e.Canonical(); !bytes.Equal(got, raw) {
			t.Errorf("Entry(%d) differs from Scan", i+1)
		}
		if i > 0 && e.Time.Before(es[i-1].Time.Time) {
			t.Errorf("seq %d: time goes back", e.Seq)
		}
	}
	if _, err := v.Entry(uint64(len(es) + 1)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Entry(head+1) = %v, want ErrNotFound", err)
	}
	// Scan from the middle, and stopping on fn's error.
	var got []uint64
	stop := errors.New("stop")
	err := v.Scan(context.Background(), 5, func(seq uint64, _ []byte) error {
		got = append(got, seq)
		if len(got) == 3 {
			return stop
		}
		return nil
	})
	if err != stop || !slices.Equal(got, []uint64{5, 6, 7}) {
		t.Errorf("Scan(5) stopped = %v, %v; want [5 6 7], stop", got, err)
	}
}

// fold folds es with the one state fold, from an empty state.
func fold(t *testing.T, es []*entry.Entry, hs []entry.Hash) *entry.State {
	t.Helper()
	st := entry.NewState(entry.Head{}, nil)
	for i, e := range es {
		if err := st.Apply(e, hs[i]); err != nil {
			t.Fatalf("fold seq %d: %v", e.Seq, err)
		}
	}
	return st
}

// sameTables compares every answer of v with the fold of its entries.
func sameTables(t *testing.T, v ledger.View) {
	t.Helper()
	es, hs := entries(t, v)
	st := fold(t, es, hs)
	if h := v.Head(); h.Seq != st.Seq || h.Hash != st.Hash || !h.Time.Equal(st.Time) || h.Manifest != st.Manifest ||
		h.Lock != st.Lock || h.HasManifest != st.HasManifest || h.HasLock != st.HasLock || h.Key != st.Key {
		t.Errorf("Head = %+v, the fold gives %+v", h, st.Head)
	}
	ids, keys, agents := map[string]bool{"never": true}, map[string]bool{"never": true}, map[string]bool{"never": true}
	for _, e := range es {
		if e.HandoffID.Valid {
			ids[e.HandoffID.S] = true
		}
		if e.IdempotencyKey != "" {
			keys[e.IdempotencyKey] = true
		}
		for _, a := range append(slices.Clone(e.Blocks), e.Agent, e.Source.S, e.Target.S) {
			if a != "" {
				agents[a] = true
			}
		}
	}
	for id := range ids {
		seq, p, ok := st.Accepted(id)
		a, got, err := v.Accepted(id)
		if err != nil || got != ok || ok && (a.Seq != seq || a.Payload != p) {
			t.Errorf("Accepted(%q) = %+v %t %v, the fold gives %d %t", id, a, got, err, seq, ok)
		}
	}
	for k := range keys {
		want, ok := st.Idempotent(k)
		a, got, err := v.Idempotent(k)
		if err != nil || got != ok || a != want {
			t.Errorf("Idempotent(%q) = %+v %t %v, the fold gives %+v %t", k, a, got, err, want, ok)
		}
	}
	wantBlocks := map[string]uint64{}
	for a := range agents {
		seq, ok := st.Blocked(a)
		got, gotOK, err := v.Blocked(a)
		if err != nil || gotOK != ok || got != seq {
			t.Errorf("Blocked(%q) = %d %t %v, the fold gives %d %t", a, got, gotOK, err, seq, ok)
		}
		if ok {
			wantBlocks[a] = seq
		}
	}
	blocks, err := v.Blocks()
	if err != nil || fmt.Sprint(blocks) != fmt.Sprint(wantBlocks) {
		t.Errorf("Blocks = %v %v, the fold gives %v", blocks, err, wantBlocks)
	}
}

func testTables(t *testing.T, s Store) {
	l, d := open(t, s)
	populate(t, l)
	v := view(t, d)
	sameTables(t, v)
	blocks, _ := v.Blocks()
	if len(blocks) != 1 || blocks["b"] == 0 {
		t.Errorf("Blocks = %v, want b only (c unblocked, d lifted)", blocks)
	}
	if v.Head().Key != "key-2" {
		t.Errorf("Head().Key = %q, want key-2", v.Head().Key)
	}
	// The core's decisions see the same tables.
	err := l.View(t.Context(), func(st ledger.State) error {
		if _, ok := st.Blocked("b"); !ok {
			return errors.New("b not blocked")
		}
		if _, _, ok := st.Accepted("h4"); !ok {
			return errors.New("h4 not accepted")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// leafTree computes the stored hashes of hs with tlog, storage-free.
type leafTree []tlog.Hash

func (lt leafTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x < 0 || x >= int64(len(lt)) {
			return nil, fmt.Errorf("index %d", x)
		}
		out[i] = lt[x]
	}
	return out, nil
}

func treeOf(t *testing.T, hs []entry.Hash) leafTree {
	t.Helper()
	var lt leafTree
	for i, h := range hs {
		add, err := tlog.StoredHashesForRecordHash(int64(i), tlog.Hash(h), lt)
		if err != nil {
			t.Fatal(err)
		}
		lt = append(lt, add...)
	}
	return lt
}

func testTree(t *testing.T, s Store) {
	l, d := open(t, s)
	populate(t, l)
	// More, in batches of several entries, so the tree has several levels.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendOK(t, l, handoff{id: fmt.Sprintf("t%d", i), source: "x", target: "y"}.request())
		}()
	}
	wg.Wait()
	v := view(t, d)
	_, hs := entries(t, v)
	lt := treeOf(t, hs)
	n := int64(len(hs))
	if want := tlog.StoredHashCount(n); int64(len(lt)) != want {
		t.Fatalf("%d stored hashes, want %d", len(lt), want)
	}
	got, err := v.ReadHashes(seqRange(0, len(lt)))
	if err != nil {
		t.Fatalf("ReadHashes = %v", err)
	}
	if !slices.Equal(got, lt) {
		t.Fatalf("stored tree hashes differ from tlog's over the leaves")
	}
	for size := int64(1); size <= n; size++ {
		want, _ := tlog.TreeHash(size, lt)
		root, err := l.TreeHash(t.Context(), uint64(size))
		if err != nil || root != want {
			t.Fatalf("TreeHash(%d) = %x %v, tlog gives %x", size, root, err, want)
		}
		p, err := l.ProveInclusion(t.Context(), uint64(size), uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		top, _ := tlog.TreeHash(n, lt)
		if err := tlog.CheckRecord(p, n, top, size-1, tlog.Hash(hs[size-1])); err != nil {
			t.Fatalf("inclusion of %d in %d: %v", size, n, err)
		}
		cp, err := l.ProveConsistency(t.Context(), uint64(size), uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		if size != n {
			if err := tlog.CheckTree(cp, n, top, size, want); err != nil {
				t.Fatalf("consistency of %d with %d: %v", size, n, err)
			}
		}
	}
	if _, err := l.TreeHash(t.Context(), uint64(n+1)); !errors.Is(err, ledger.ErrBadRange) {
		t.Errorf("TreeHash(head+1) = %v, want ErrBadRange", err)
	}
}

func seqRange(from, to int) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, int64(i))
	}
	return out
}

func testFind(t *testing.T, s Store) {
	l, d := open(t, s)
	populate(t, l)
	v := view(t, d)
	es, _ := entries(t, v)
	mid := es[len(es)/2].Time.Time
	qs := []ledger.Query{
		{}, {HandoffID: "h1"}, {HandoffID: "none"}, {Agent: "a"}, {Agent: "c"}, {WorkflowID: "w1"},
		{Decision: "accepted"}, {Decision: "rejected"}, {Decision: "accept"}, {Since: mid}, {Until: mid},
		{Since: mid, Agent: "a"}, {Agent: "a", Limit: 2}, {Agent: "a", Limit: 2, Newest: true},
		{WorkflowID: "w2", Decision: "rejected"},
		// cursor paging: seq bounds with and without a limit
		{Before: 4}, {After: 2}, {After: 1, Before: 5, Agent: "a"}, {Before: 5, Limit: 2, Newest: true},
		{After: 2, Limit: 2}, {Agent: "a", Before: uint64(len(es)), Limit: 1, Newest: true}, {After: uint64(len(es))},
	}
	for _, q := range qs {
		var want []uint64
		for _, e := range es {
			if q.Match(e) {
				want = append(want, e.Seq)
			}
		}
		want = q.Cut(want)
		got, err := v.Find(context.Background(), q)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Find(%+v) = %v %v, want %v", q, got, err, want)
		}
	}
}

// hooked is a driver whose Append first runs a hook.
type hooked struct {
	ledger.Driver
	mu     sync.Mutex
	before func()
	last   *ledger.Batch
}

func (h *hooked) Append(ctx context.Context, b *ledger.Batch) error {
	h.mu.Lock()
	f := h.before
	h.before = nil
	h.mu.Unlock()
	if f != nil {
		f()
	}
	err := h.Driver.Append(ctx, b)
	if err == nil {
		h.mu.Lock()
		h.last = b
		h.mu.Unlock()
	}
	return err
}

// Close leaves the shared driver open: the test closes it.
func (h *hooked) Close() error { return nil }

func testConflict(t *testing.T, s Store) {
	d := s.Open(t)
	t.Cleanup(func() { d.Close() }) // after the views' cleanups
	a, b := &hooked{Driver: d}, &hooked{Driver: d}
	la, lb := core(t, a), core(t, b)
	appendOK(t, la, handoff{id: "first", source: "x", target: "y"}.request())

	// A stale batch is refused and stores nothing.
	a.mu.Lock()
	stale := a.last
	a.mu.Unlock()
	if stale == nil {
		t.Fatal("no batch recorded")
	}
	before := view(t, d).Head()
	if err := d.Append(context.Background(), stale); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("Append(a batch already stored) = %v, want ErrConflict", err)
	}
	if h := view(t, d).Head(); h != before {
		t.Fatalf("a refused batch moved the head from %d to %d", before.Seq, h.Seq)
	}

	// Core B appends between A's decision and A's Append: A's batch
	// conflicts, A decides again on the new state and stores it once.
	a.mu.Lock()
	a.before = func() { appendOK(t, lb, handoff{id: "x", source: "p", target: "q"}.request()) }
	a.mu.Unlock()
	var calls []bool // per Build call of A's request: was "x" accepted?
	req := unblock("nobody")
	req.Build = func(st ledger.State, e *entry.Entry) error {
		_, _, ok := st.Accepted("x")
		calls = append(calls, ok)
		e.Kind, e.Agent, e.Note = entry.KindUnblock, "z", fmt.Sprintf("x accepted: %t", ok)
		return nil
	}
	res := appendOK(t, la, req)
	// A driver may have the core call Build more than once per attempt
	// (ledger.Prefetcher); every call before the conflict saw the old
	// state, the last one the new state.
	if len(calls) < 2 || calls[0] || !calls[len(calls)-1] {
		t.Errorf("A's Build calls saw x accepted = %v, want false before the conflict, then true (decided again after the conflict)", calls)
	}
	if st := la.Stats(); st.Conflicts != 1 {
		t.Errorf("A's Stats().Conflicts = %d, want 1", st.Conflicts)
	}
	v := view(t, d)
	es, _ := entries(t, v)
	last := es[len(es)-1]
	if last.Seq != res.Last().Entry.Seq || last.Note != "x accepted: true" || es[len(es)-2].HandoffID.S != "x" {
		t.Errorf("last entries: %d %q after %q; want A's unblock after B's handoff x", last.Seq, last.Note, es[len(es)-2].HandoffID.S)
	}
	sameTables(t, v)
}

func testRace(t *testing.T, s Store) {
	d := s.Open(t)
	t.Cleanup(func() { d.Close() }) // after the views' cleanups
	const cores, writers, each = 2, 4, 15
	ls := make([]*ledger.Ledger, cores)
	for i := range ls {
		ls[i] = core(t, &hooked{Driver: d})
	}
	var wg sync.WaitGroup
	errs := make(chan error, cores*writers*each)
	for c := range cores {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					h := handoff{id: fmt.Sprintf("c%d-w%d-%d", c, w, i), source: "s", target: "t", idem: fmt.Sprintf("k-c%d-w%d-%d", c, w, i)}
					if _, err := ls[c].Append(context.Background(), h.request()); err != nil {
						errs <- err
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Append = %v", err)
	}
	v := view(t, d)
	es, _ := entries(t, v)
	seen := map[string]int{}
	for _, e := range es {
		if e.Kind == entry.KindHandoff {
			seen[e.HandoffID.S]++
		}
	}
	if len(seen) != cores*writers*each {
		t.Errorf("%d distinct handoffs stored, want %d", len(seen), cores*writers*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("handoff %s stored %d times", id, n)
		}
	}
	// Each idempotency key's first use is recorded once, across cores.
	sameTables(t, v)
	var conflicts uint64
	for _, l := range ls {
		conflicts += l.Stats().Conflicts
	}
	t.Logf("%d entries, %d conflicts retried", len(es), conflicts)
}

func testConcurrent(t *testing.T, s Store) {
	l, d := open(t, s)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[uint64]entry.Hash{}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				res, err := l.Append(context.Background(), handoff{id: fmt.Sprintf("w%d-%d", w, i), source: "s", target: "t"}.request())
				if err != nil {
					t.Errorf("Append = %v", err)
					return
				}
				mu.Lock()
				for _, a := range res.Entries {
					if _, dup := got[a.Entry.Seq]; dup {
						t.Errorf("seq %d acknowledged twice", a.Entry.Seq)
					}
					got[a.Entry.Seq] = a.Hash
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	es, hs := entries(t, view(t, d))
	if len(es) != len(got) || len(es) != writers*each+2 {
		t.Fatalf("%d entries stored, %d acknowledged, want %d", len(es), len(got), writers*each+2)
	}
	for i, h := range hs {
		if got[uint64(i+1)] != h {
			t.Errorf("seq %d: acknowledged hash differs from the stored one", i+1)
		}
	}
	if st := l.Stats(); st.Entries != uint64(len(es)) || st.Commits == 0 || st.Commits > uint64(writers*each) {
		t.Errorf("Stats = %+v", st)
	}
}

func testSnapshot(t *testing.T, s Store) {
	l, d := open(t, s)
	appendOK(t, l, handoff{id: "old", source: "a", target: "b"}.request())
	v := view(t, d)
	h := v.Head()
	root, err := tlog.TreeHash(int64(h.Seq), v)
	if err != nil {
		t.Fatal(err)
	}
	// Batches land while v is open, in another goroutine.
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendOK(t, l, handoff{id: "new", source: "b", target: "c", rejected: true, blocks: []string{"a"}, payload: []byte("new payload")}.request())
		appendOK(t, l, rotate("", "key-new"))
	}()
	for range 50 {
		if v.Head() != h {
			t.Fatal("an open view's Head moved")
		}
		if _, ok, err := v.Accepted("new"); ok || err != nil {
			t.Fatalf("view answers Accepted(new) = %t %v", ok, err)
		}
		if _, ok, err := v.Blocked("a"); ok || err != nil {
			t.Fatalf("view answers Blocked(a) = %t %v", ok, err)
		}
		time.Sleep(time.Millisecond)
	}
	<-done
	if v.Head() != h {
		t.Fatal("an open view's Head moved")
	}
	if _, err := v.Entry(h.Seq + 1); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("view reads an entry past its head: %v", err)
	}
	if _, err := v.Blob(entry.Sum256([]byte("new payload"))); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("view reads a blob stored after it: %v", err)
	}
	es, _ := entries(t, v)
	if uint64(len(es)) != h.Seq {
		t.Errorf("view scans %d entries, its head is %d", len(es), h.Seq)
	}
	if seqs, _ := v.Find(context.Background(), ledger.Query{}); uint64(len(seqs)) != h.Seq {
		t.Errorf("view finds %d entries, its head is %d", len(seqs), h.Seq)
	}
	if again, err := tlog.TreeHash(int64(h.Seq), v); err != nil || again != root {
		t.Errorf("view's tree root changed: %v", err)
	}
	if m, _ := v.Blocks(); len(m) != 0 {
		t.Errorf("view Blocks = %v", m)
	}
	sameTables(t, v)
	if now := view(t, d).Head(); now.Seq != h.Seq+2 || now.Key != "key-new" {
		t.Errorf("a new view's head = %d %q, want %d key-new", now.Seq, now.Key, h.Seq+2)
	}
}

// secret is a payload the erasure test redacts and then searches for.
var secret = []byte(`{"handoff_id":"s","api_key":"sk-live-0123456789abcdef-SECRET-PAYLOAD"}`)

func testBlobs(t *testing.T, s Store) {
	d := s.Open(t)
	l := core(t, d)
	res := appendOK(t, l, handoff{id: "s", source: "a", target: "b", payload: secret}.request())
	seq := res.Last().Entry.Seq
	sum := entry.Sum256(secret)
	if got, err := l.Blob(t.Context(), sum); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Blob = %q %v", got, err)
	}
	if got, err := l.Blob(t.Context(), entry.Sum256(lockV1)); err != nil || !bytes.Equal(got, lockV1) {
		t.Fatalf("Blob(lock) = %q %v", got, err)
	}
	// The same bytes again are stored once.
	appendOK(t, l, handoff{id: "s2", source: "a", target: "b", payload: secret}.request())
	before := view(t, d)
	if _, err := l.Redact(context.Background(), seq, "leaked key"); err != nil {
		t.Fatalf("Redact = %v", err)
	}
	if _, err := l.Blob(t.Context(), sum); !errors.Is(err, ledger.ErrRedacted) {
		t.Errorf("Blob after Redact = %v, want ErrRedacted", err)
	}
	if _, err := l.Redact(context.Background(), seq, "again"); !errors.Is(err, ledger.ErrRedacted) {
		t.Errorf("Redact twice = %v, want ErrRedacted", err)
	}
	if _, err := l.Redact(context.Background(), 1, "snapshot"); !errors.Is(err, ledger.ErrNotRedactable) {
		t.Errorf("Redact(snapshot) = %v, want ErrNotRedactable", err)
	}
	if _, err := l.Redact(context.Background(), 999, "none"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Redact(999) = %v, want ErrNotFound", err)
	}
	// A view opened before the redaction may not give the bytes back either.
	if got, err := before.Blob(sum); err == nil && bytes.Equal(got, secret) && s.Bytes != nil {
		t.Logf("a view opened before the redaction still reads the bytes (allowed until it closes)")
	}
	before.Close()
	v := view(t, d)
	sameTables(t, v)
	es, _ := entries(t, v)
	if last := es[len(es)-1]; last.Kind != entry.KindRedaction || last.RedactedSeq != seq {
		t.Errorf("last entry = %s %d, want the redaction of %d", last.Kind, last.RedactedSeq, seq)
	}
	v.Close()
	if s.Bytes == nil {
		return
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw := s.Bytes(t, d)
	if len(raw) == 0 {
		t.Fatal("Bytes returned nothing")
	}
	if i := bytes.Index(raw, []byte("SECRET-PAYLOAD")); i >= 0 {
		t.Errorf("the redacted payload is still in the store's bytes at offset %d", i)
	}
	if !bytes.Contains(raw, []byte(`"kind":"redaction"`)) {
		t.Errorf("the store's bytes hold no redaction entry: Bytes reads the wrong thing")
	}
}

// testRedactionStays holds redaction to be per entry: the same bytes
// submitted again after a redaction are the new entry's, and the redacted
// entry's payload (and that of an earlier entry naming the same bytes)
// stays erased, before and after a reopen.
func testRedactionStays(t *testing.T, s Store) {
	d := s.Open(t)
	l := core(t, d)
	data := []byte(`{"handoff_id":"r","ssn":"078-05-1120"}`)
	sum := entry.Sum256(data)
	sibling := appendOK(t, l, handoff{id: "r0", source: "a", target: "b", payload: data}.request()).Last().Entry.Seq
	red := appendOK(t, l, handoff{id: "r1", source: "a", target: "b", payload: data}.request()).Last().Entry.Seq
	res, err := l.Redact(context.Background(), red, "erasure request")
	if err != nil {
		t.Fatalf("Redact = %v", err)
	}
	rseq := res.Last().Entry.Seq
	again := appendOK(t, l, handoff{id: "r2", source: "a", target: "b", payload: data}.request()).Last().Entry.Seq
	check := func(t *testing.T, l *ledger.Ledger, d ledger.Driver, erased []uint64, again, rseq uint64) {
		t.Helper()
		for _, seq := range erased {
			if got, err := l.EntryBlob(t.Context(), seq, sum); !errors.Is(err, ledger.ErrRedacted) {
				t.Errorf("EntryBlob(%d) after the same bytes came again = %q %v, want ErrRedacted", seq, got, err)
			}
		}
		if got, err := l.EntryBlob(t.Context(), again, sum); err != nil || !bytes.Equal(got, data) {
			t.Errorf("EntryBlob(%d), the later entry's own payload = %q %v, want its bytes", again, got, err)
		}
		if got, err := l.Blob(t.Context(), sum); err != nil || !bytes.Equal(got, data) {
			t.Errorf("Blob (by content) = %q %v, want the later entry's bytes", got, err)
		}
		v := view(t, d)
		if r, ok, err := v.Erased(sum); err != nil || !ok || r != rseq {
			t.Errorf("Erased = %d %t %v, want the redaction seq %d", r, ok, err, rseq)
		}
		if r, ok, err := v.Erased(entry.Sum256(lockV1)); err != nil || ok {
			t.Errorf("Erased(lock) = %d %t %v, want none", r, ok, err)
		}
		v.Close()
	}
	check(t, l, d, []uint64{sibling, red}, again, rseq)
	// A redacted entry is not redacted again: that would erase the later
	// entry's bytes.
	for _, seq := range []uint64{red, sibling} {
		if _, err := l.Redact(context.Background(), seq, "again"); !errors.Is(err, ledger.ErrRedacted) {
			t.Errorf("Redact(%d) again = %v, want ErrRedacted", seq, err)
		}
	}
	check(t, l, d, []uint64{sibling, red}, again, rseq)
	// A redaction and the same bytes submitted at once: the bytes are the
	// new entry's when it comes after the redaction, whatever the batches.
	prev, erased := again, []uint64{sibling, red}
	for i := range 8 {
		var wg sync.WaitGroup
		var rres *ledger.Result
		var rerr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			rres, rerr = l.Redact(context.Background(), prev, "erasure request")
		}()
		next := appendOK(t, l, handoff{id: fmt.Sprintf("r3-%d", i), source: "a", target: "b", payload: data}.request()).Last().Entry.Seq
		wg.Wait()
		if rerr != nil {
			t.Fatalf("Redact(%d) = %v", prev, rerr)
		}
		r := rres.Last().Entry.Seq
		erased, rseq = append(erased, prev), r
		if got, err := l.EntryBlob(t.Context(), prev, sum); !errors.Is(err, ledger.ErrRedacted) {
			t.Errorf("round %d: EntryBlob(%d), redacted by %d = %q %v, want ErrRedacted", i, prev, r, got, err)
		}
		got, err := l.EntryBlob(t.Context(), next, sum)
		switch {
		case next > r && (err != nil || !bytes.Equal(got, data)):
			t.Errorf("round %d: EntryBlob(%d), after the redaction %d = %q %v, want its bytes", i, next, r, got, err)
		case next < r && !errors.Is(err, ledger.ErrRedacted):
			t.Errorf("round %d: EntryBlob(%d), before the redaction %d = %q %v, want ErrRedacted", i, next, r, got, err)
		}
		if next < r {
			erased = append(erased, next)
			// Both erased: store the bytes once more for the next round.
			next = appendOK(t, l, handoff{id: fmt.Sprintf("r4-%d", i), source: "a", target: "b", payload: data}.request()).Last().Entry.Seq
		}
		prev = next
	}
	check(t, l, d, erased, prev, rseq)
	v := view(t, d)
	sameTables(t, v)
	v.Close() // bbolt's Close waits for its views
	if s.Reopen == nil {
		return
	}
	// Reopen with the bytes readable again: the last entry's.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := s.Reopen(t, d)
	l2 := core(t, d2)
	check(t, l2, d2, erased, prev, rseq)
}

func testDurable(t *testing.T, s Store) {
	if s.Reopen == nil {
		t.Log("no Reopen: durability is the driver's own test")
		return
	}
	d := s.Open(t)
	l := core(t, d)
	populate(t, l)
	v := view(t, d)
	es, _ := entries(t, v)
	root, _ := tlog.TreeHash(int64(len(es)), v)
	head := v.Head()
	v.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := s.Reopen(t, d)
	l2 := core(t, d2)
	v2 := view(t, d2)
	if h := v2.Head(); h.Seq != head.Seq || h.Hash != head.Hash || !h.Time.Equal(head.Time) || h.Key != head.Key ||
		h.Lock != head.Lock || h.Manifest != head.Manifest {
		t.Errorf("reopened Head = %+v, want %+v", h, head)
	}
	es2, _ := entries(t, v2)
	if len(es2) != len(es) {
		t.Errorf("reopened: %d entries, want %d", len(es2), len(es))
	}
	if r, err := tlog.TreeHash(int64(len(es)), v2); err != nil || r != root {
		t.Errorf("reopened tree root differs: %v", err)
	}
	sameTables(t, v2)
	v2.Close()
	// And it goes on.
	appendOK(t, l2, handoff{id: "after", source: "a", target: "b"}.request())
	sameTables(t, view(t, d2))
}

// testTiles reads every tlog-tiles resource of a tree of 600 entries (two
// full level-0 tiles, partial tiles at levels 0 and 1) through
// Ledger.Tile, and checks them against tlog's tree over the entries: the
// hashes, the root rebuilt from the tiles alone, each bundle's entries,
// partial tiles of smaller sizes, and ErrNotFound beyond the head.
func testTiles(t *testing.T, s Store) {
	l, d := open(t, s)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 600 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendOK(t, l, unblock(fmt.Sprintf("agent-%03d", i)))
		}()
	}
	wg.Wait()
	v := view(t, d)
	es, hs := entries(t, v)
	lt := treeOf(t, hs)
	n := uint64(len(hs))
	data := map[tlog.Tile][]byte{}
	count := 0
	for tile := range tiles.HashTiles(0, n) {
		got, err := l.Tile(ctx, tile)
		if err != nil {
			t.Fatalf("Tile(%s) = %v", tile, err)
		}
		want, _ := tiles.HashTile(lt, tile)
		if !bytes.Equal(got, want) || len(got) != tile.Width*tiles.HashSize {
			t.Fatalf("Tile(%s): %d bytes, not tlog's %d", tile, len(got), len(want))
		}
		data[tile.TlogTile()] = got
		count++
	}
	if count != 4 { // 0/000, 0/001, 0/002.p/88, 1/000.p/2
		t.Errorf("%d hash tiles for %d entries, want 4", count, n)
	}
	root, _ := tlog.TreeHash(int64(n), lt)
	fromTiles, err := tlog.TreeHash(int64(n), tlog.TileHashReader(tlog.Tree{N: int64(n), Hash: root}, tileData(data)))
	if err != nil || fromTiles != root {
		t.Errorf("root from the tiles = %x, %v; want %x", fromTiles, err, root)
	}
	for b := range tiles.EntryBundles(0, n) {
		got, err := l.Tile(ctx, b)
		if err != nil {
			t.Fatalf("Tile(%s) = %v", b, err)
		}
		raws, err := tiles.SplitBundle(got)
		if err != nil || len(raws) != b.Width {
			t.Fatalf("bundle %s: %d entries, %v", b, len(raws), err)
		}
		for i, raw := range raws {
			seq := b.Index*tiles.Width + uint64(i) + 1
			if entry.LeafHash(raw) != hs[seq-1] || es[seq-1].Seq != seq {
				t.Fatalf("bundle %s entry %d is not entry seq %d", b, i, seq)
			}
		}
	}
	// A partial tile of an earlier size is a prefix of the full tile.
	full, _ := l.Tile(ctx, tiles.Tile{Width: 256})
	part, err := l.Tile(ctx, tiles.Tile{Width: 3})
	if err != nil || !bytes.Equal(part, full[:3*tiles.HashSize]) {
		t.Errorf("tile/0/000.p/3 = %x, %v; want the first 3 hashes of tile/0/000", part, err)
	}
	for _, beyond := range []tiles.Tile{
		{Index: 2, Width: 256}, {Index: 2, Width: 89}, {Level: 1, Width: 3}, {Entries: true, Index: 2, Width: 256}, {Entries: true, Index: 3, Width: 1},
	} {
		if got, err := l.Tile(ctx, beyond); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Tile(%s) beyond %d entries = %d bytes, %v; want ErrNotFound", beyond, n, len(got), err)
		}
	}
	if _, err := l.Tile(ctx, tiles.Tile{Width: 0}); !errors.Is(err, ledger.ErrBadRange) {
		t.Errorf("Tile of width 0 = %v, want ErrBadRange", err)
	}
}

// tileData is a tlog.TileReader over tiles held in memory.
type tileData map[tlog.Tile][]byte

func (m tileData) Height() int { return tiles.Height }
func (m tileData) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		b, ok := m[t]
		if !ok {
			return nil, fmt.Errorf("no tile %s", t.Path())
		}
		out[i] = b
	}
	return out, nil
}
func (m tileData) SaveTiles([]tlog.Tile, [][]byte) {}
