package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

// fakeBackend is an in-memory ledger with the Backend contract, for
// testing the HTTP layer. Documents are JSON objects naming
// "source_agent" and "target_agent" (a governed/1 stand-in) or any other
// bytes (agents from From/To). A document's "x_fault" member makes the
// fake fail in a named way:
//
//	overloaded, unavailable, internal   the error, nothing written
//	outcome_unknown_once                append, then fail with ErrOutcomeUnknown the first time
//	panic                               panic inside Submit
//	slow                                take 300ms before answering
//	bad_hash                            HASH_MISMATCH (critical): the source is blocked
type fakeBackend struct {
	mu       sync.Mutex
	entries  []fakeEntry
	idem     map[string]idemRecord
	blocks   map[string]server.Block
	faulted  map[string]bool // idempotency keys whose outcome_unknown_once fired
	changed  chan struct{}   // closed and replaced on every append
	groups   []int           // entries per commit group
	readyErr error
	metrics  *server.Metrics
	now      time.Time
	noFaults bool          // ignore x_fault and the seq-13 panic (fuzzing)
	slowing  chan struct{} // receives (when there is room) as a slow Submit starts its wait
}

type fakeEntry struct {
	view     server.EntryView
	payload  []byte
	redacted bool
	kind     string
	decision string
	format   string
	source   string
	target   string
	workflow string
	codes    []string
	time     time.Time
}

type idemRecord struct {
	sum [32]byte
	res server.SubmitResult
}

var knownAgents = []string{"agent-a", "agent-b", "agent-c"}

func newFake(m *server.Metrics) *fakeBackend {
	return &fakeBackend{idem: map[string]idemRecord{}, blocks: map[string]server.Block{}, faulted: map[string]bool{},
		changed: make(chan struct{}), slowing: make(chan struct{}, 16), metrics: m, now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
}

type fakeDoc struct {
	Source   string `json:"source_agent"`
	Target   string `json:"target_agent"`
	ID       string `json:"handoff_id"`
	Workflow string `json:"workflow_id"`
	Fault    string `json:"x_fault"`
}

// decide parses and decides r as the fake's policy does.
func (f *fakeBackend) decide(r server.SubmitRequest) (*server.SubmitResult, fakeDoc, error) {
	var d fakeDoc
	format := "vbw/1"
	if json.Unmarshal(r.Body, &d) == nil && d.Source != "" {
		format = "governed/1"
	} else {
		d.Source, d.Target = r.From, r.To
	}
	if r.Format != "" {
		if !slices.Contains([]string{"governed/1", "swarm/2", "skill/1", "vbw/1", "task/1"}, r.Format) {
			return nil, d, fmt.Errorf("%w: unknown format %q", server.ErrBadInput, r.Format)
		}
		format = r.Format
	}
	if f.noFaults {
		d.Fault = ""
	}
	switch d.Fault {
	case "overloaded":
		return nil, d, fmt.Errorf("queue of 64 full: %w", server.ErrOverloaded)
	case "unavailable":
		return nil, d, fmt.Errorf("database closed: %w", server.ErrUnavailable)
	case "internal":
		return nil, d, errors.New("disk on fire at /var/secret/path")
	case "panic":
		panic("fake backend panic")
	}
	if r.Sources != nil && !slices.Contains(r.Sources, d.Source) {
		return nil, d, fmt.Errorf("%w: source %q", server.ErrForbiddenSource, d.Source)
	}
	rs := []reason.Reason{}
	switch {
	case d.Source == "" || d.Target == "":
		rs = append(rs, reason.Reason{Code: reason.AgentsRequired, Severity: reason.Error, Message: "no agents"})
	default:
		for _, a := range []string{d.Source, d.Target} {
			if !slices.Contains(knownAgents, a) {
				rs = append(rs, reason.Reason{Code: reason.UnknownAgent, Field: "source_agent", Severity: reason.Error, Message: "unknown agent " + a})
			} else if b, ok := f.blocks[a]; ok {
				rs = append(rs, reason.Reason{Code: reason.AgentBlocked, Severity: reason.Error, Message: fmt.Sprintf("blocked since %d", b.Since)})
			}
		}
	}
	if d.Fault == "bad_hash" {
		rs = append(rs, reason.Reason{Code: reason.HashMismatch, Field: "source_agent.prompt_hash", Severity: reason.Critical, Message: "hash differs"})
	}
	return &server.SubmitResult{Decision: reason.Decide(rs), Reasons: rs, Format: format, HandoffID: d.ID,
		Source: d.Source, Target: d.Target, WorkflowID: d.Workflow}, d, nil
}

// appendLocked appends an entry built from fields; f.mu is held.
func (f *fakeBackend) appendLocked(fields map[string]any, payload []byte, fe fakeEntry) server.EntryView {
	seq := uint64(len(f.entries) + 1)
	prev := make([]byte, 32)
	if seq > 1 {
		prev, _ = hex.DecodeString(f.entries[seq-2].view.Hash)
	}
	f.now = f.now.Add(time.Second)
	fields["v"], fields["seq"], fields["prev"], fields["time"] = 1, seq, hex.EncodeToString(prev), f.now.Format(time.RFC3339Nano)
	if payload != nil {
		sum := sha256.Sum256(payload)
		fields["payload_sha256"], fields["payload_size"] = hex.EncodeToString(sum[:]), len(payload)
	}
	canon, err := strictjson.Canonical(fields)
	if err != nil {
		panic(err)
	}
	h := sha256.Sum256(append([]byte{0}, canon...))
	fe.view = server.EntryView{Seq: seq, Hash: hex.EncodeToString(h[:]), Entry: jsontext.Value(canon)}
	fe.payload, fe.time = payload, f.now
	f.entries = append(f.entries, fe)
	close(f.changed)
	f.changed = make(chan struct{})
	return fe.view
}

func (f *fakeBackend) submitLocked(r server.SubmitRequest) (*server.SubmitResult, error) {
	sum := sha256.Sum256(append([]byte(r.Format+"\x00"+r.From+"\x00"+r.To+"\x00"), r.Body...))
	if r.IdempotencyKey != "" {
		if rec, ok := f.idem[r.Submitter+"\x00"+r.IdempotencyKey]; ok {
			if rec.sum != sum {
				return nil, fmt.Errorf("%w: key %q", server.ErrIdempotencyConflict, r.IdempotencyKey)
			}
			res := rec.res
			res.Replayed = true
			return &res, nil
		}
	}
	res, d, err := f.decide(r)
	if err != nil {
		return nil, err
	}
	codes := make([]string, len(res.Reasons))
	for i, x := range res.Reasons {
		codes[i] = string(x.Code)
	}
	fields := map[string]any{"kind": "handoff", "format": res.Format, "decision": res.Decision, "reasons": res.Reasons,
		"handoff_id": nullable(res.HandoffID), "source": nullable(res.Source), "target": nullable(res.Target),
		"workflow_id": nullable(res.WorkflowID), "submitter": r.Submitter}
	if r.TraceParent != "" {
		fields["traceparent"] = r.TraceParent
	}
	v := f.appendLocked(fields, bytes.Clone(r.Body), fakeEntry{kind: "handoff", decision: res.Decision, format: res.Format,
		source: res.Source, target: res.Target, workflow: res.WorkflowID, codes: codes})
	res.Seq, res.EntryHash = v.Seq, v.Hash
	if d.Fault == "bad_hash" && res.Source != "" {
		f.blocks[res.Source] = server.Block{Agent: res.Source, Since: v.Seq, Submitter: r.Submitter, Code: string(reason.HashMismatch), Message: "hash differs"}
	}
	f.metrics.ObserveAppend(res.Decision, codes)
	if r.IdempotencyKey != "" {
		f.idem[r.Submitter+"\x00"+r.IdempotencyKey] = idemRecord{sum: sum, res: *res}
	}
	if d.Fault == "outcome_unknown_once" && !f.faulted[r.IdempotencyKey] {
		f.faulted[r.IdempotencyKey] = true
		return nil, fmt.Errorf("fdatasync: input/output error: %w", server.ErrOutcomeUnknown)
	}
	return res, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (f *fakeBackend) Submit(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	if bytes.Contains(r.Body, []byte(`"x_fault":"slow"`)) && !f.noFaults {
		select {
		case f.slowing <- struct{}{}:
		default:
		}
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.entries)
	res, err := f.submitLocked(r)
	if len(f.entries) > n {
		f.groups = append(f.groups, len(f.entries)-n)
		f.metrics.ObserveCommit(len(f.entries)-n, time.Millisecond)
	}
	return res, err
}

func (f *fakeBackend) SubmitBatch(ctx context.Context, rs []server.SubmitRequest) ([]server.BatchItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.entries)
	items := make([]server.BatchItem, len(rs))
	for i, r := range rs {
		items[i].Result, items[i].Err = f.submitLocked(r)
	}
	if len(f.entries) > n {
		f.groups = append(f.groups, len(f.entries)-n)
		f.metrics.ObserveCommit(len(f.entries)-n, time.Millisecond)
	}
	return items, nil
}

// Outcome links an outcome to an accepted handoff of the fake, once.
func (f *fakeBackend) Outcome(ctx context.Context, r server.OutcomeRequest) (*server.OutcomeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.DecisionSeq > uint64(len(f.entries)) {
		return nil, fmt.Errorf("%w: decision seq %d: no such entry", server.ErrUnprocessable, r.DecisionSeq)
	}
	d := f.entries[r.DecisionSeq-1]
	if d.kind != "handoff" || d.decision != "accepted" {
		return nil, fmt.Errorf("%w: decision seq %d is not an accepted handoff", server.ErrUnprocessable, r.DecisionSeq)
	}
	if r.Agents != nil && !slices.Contains(r.Agents, d.target) {
		return nil, fmt.Errorf("%w: agent %q", server.ErrForbiddenSource, d.target)
	}
	for _, e := range f.entries {
		if e.kind == "outcome" && e.source == fmt.Sprint(r.DecisionSeq) {
			return nil, fmt.Errorf("%w: decision seq %d has an outcome already", server.ErrUnprocessable, r.DecisionSeq)
		}
	}
	fields := map[string]any{"kind": "outcome", "decision_seq": r.DecisionSeq, "status": r.Status, "agent": d.target,
		"workflow_id": nullable(d.workflow), "submitter": r.Submitter}
	v := f.appendLocked(fields, nil, fakeEntry{kind: "outcome", source: fmt.Sprint(r.DecisionSeq), target: d.target, workflow: d.workflow})
	f.metrics.ObserveOutcome(r.Status)
	res := &server.OutcomeResult{Seq: v.Seq, Kind: "outcome", DecisionSeq: r.DecisionSeq, Agent: d.target, Status: r.Status}
	if d.workflow != "" {
		w := d.workflow
		res.WorkflowID = &w
	}
	return res, nil
}

func (f *fakeBackend) Validate(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, _, err := f.decide(r)
	return res, err
}

func (f *fakeBackend) Entries(ctx context.Context, q server.Query) (*server.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &server.Page{}
	for i := len(f.entries) - 1; i >= 0; i-- {
		e := f.entries[i]
		switch {
		case q.Before != 0 && e.view.Seq >= q.Before,
			q.Agent != "" && e.source != q.Agent && e.target != q.Agent,
			q.Decision != "" && e.decision != q.Decision,
			q.Code != "" && !slices.Contains(e.codes, q.Code),
			q.Format != "" && e.format != q.Format,
			q.Workflow != "" && e.workflow != q.Workflow,
			q.Kind != "" && e.kind != q.Kind,
			!q.Since.IsZero() && e.time.Before(q.Since),
			!q.Until.IsZero() && !e.time.Before(q.Until):
			continue
		}
		if len(p.Entries) == q.Limit {
			p.Next = p.Entries[len(p.Entries)-1].Seq
			break
		}
		p.Entries = append(p.Entries, e.view)
	}
	return p, nil
}

func (f *fakeBackend) get(seq uint64) (*fakeEntry, error) {
	if seq == 0 || seq > uint64(len(f.entries)) {
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrNotFound)
	}
	return &f.entries[seq-1], nil
}

func (f *fakeBackend) Entry(ctx context.Context, seq uint64) (*server.EntryView, error) {
	if seq == 13 && !f.noFaults {
		panic("unlucky seq")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.get(seq)
	if err != nil {
		return nil, err
	}
	v := e.view
	return &v, nil
}

func (f *fakeBackend) Payload(ctx context.Context, seq uint64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.get(seq)
	switch {
	case err != nil:
		return nil, err
	case e.redacted:
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrRedacted)
	case e.payload == nil:
		return nil, fmt.Errorf("entry %d has no payload: %w", seq, server.ErrNotFound)
	}
	return bytes.Clone(e.payload), nil
}

func (f *fakeBackend) Proof(ctx context.Context, seq, size uint64) (*server.Proof, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	head := uint64(len(f.entries))
	if size == 0 {
		size = head
	}
	if size > head {
		return nil, fmt.Errorf("%w: tree size %d beyond the head %d", server.ErrUnprocessable, size, head)
	}
	e, err := f.get(seq)
	if err != nil {
		return nil, err
	}
	return &server.Proof{Seq: seq, TreeSize: size, LeafHash: e.view.Hash, RootHash: f.entries[size-1].view.Hash,
		Hashes: []string{}}, nil
}

func (f *fakeBackend) checkpointLocked(size uint64) string {
	return fmt.Sprintf("example.com/ledger\n%d\n%s\n\n— example.com/ledger AAAAAAAAAAAA\n", size, base64.StdEncoding.EncodeToString(make([]byte, 32)))
}

func (f *fakeBackend) Workflow(ctx context.Context, id string, after uint64, limit int) (*server.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &server.Page{}
	found := false
	for _, e := range f.entries {
		if e.workflow != id {
			continue
		}
		found = true
		if e.view.Seq <= after {
			continue
		}
		if len(p.Entries) == limit {
			p.Next = p.Entries[limit-1].Seq
			break
		}
		p.Entries = append(p.Entries, e.view)
	}
	if !found {
		return nil, fmt.Errorf("workflow %q: %w", id, server.ErrNotFound)
	}
	return p, nil
}

func (f *fakeBackend) Blocks(ctx context.Context) ([]server.Block, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var bs []server.Block
	for _, b := range f.blocks {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b server.Block) int { return int(a.Since) - int(b.Since) })
	return bs, nil
}

func (f *fakeBackend) Checkpoint(ctx context.Context) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []byte(f.checkpointLocked(uint64(len(f.entries)))), nil
}

func (f *fakeBackend) Consistency(ctx context.Context, from, to uint64) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if to > uint64(len(f.entries)) {
		return nil, fmt.Errorf("%w: tree size %d beyond the head", server.ErrUnprocessable, to)
	}
	return []string{}, nil
}

func (f *fakeBackend) Export(ctx context.Context, after uint64, fn func([]byte) error) error {
	f.mu.Lock()
	es := slices.Clone(f.entries)
	f.mu.Unlock()
	for _, e := range es {
		if e.view.Seq <= after {
			continue
		}
		line := fmt.Sprintf(`{"entry":%s,"hash":"%s","payload_b64":"%s"}`, e.view.Entry, e.view.Hash, base64.StdEncoding.EncodeToString(e.payload))
		if err := fn([]byte(line)); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeBackend) Watch(ctx context.Context, after uint64, fn func(server.EntryView) error) error {
	for {
		f.mu.Lock()
		var next []server.EntryView
		for _, e := range f.entries {
			if e.view.Seq > after {
				next = append(next, e.view)
			}
		}
		changed := f.changed
		f.mu.Unlock()
		for _, v := range next {
			if err := fn(v); err != nil {
				return err
			}
			after = v.Seq
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

func (f *fakeBackend) Unblock(ctx context.Context, agent, why, operator string) (*server.EntryView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.blocks[agent]; !ok {
		return nil, fmt.Errorf("agent %q is not blocked: %w", agent, server.ErrNotFound)
	}
	delete(f.blocks, agent)
	v := f.appendLocked(map[string]any{"kind": "unblock", "agent": agent, "reason": why, "submitter": operator}, nil, fakeEntry{kind: "unblock"})
	return &v, nil
}

func (f *fakeBackend) Redact(ctx context.Context, seq uint64, why, operator string) (*server.EntryView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.get(seq)
	switch {
	case err != nil:
		return nil, err
	case e.redacted:
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrRedacted)
	case e.payload == nil:
		return nil, fmt.Errorf("entry %d has no payload: %w", seq, server.ErrNotFound)
	}
	e.redacted = true
	v := f.appendLocked(map[string]any{"kind": "redaction", "redacts": seq, "reason": why, "submitter": operator}, nil, fakeEntry{kind: "redaction"})
	return &v, nil
}

func (f *fakeBackend) Reload(ctx context.Context, operator string) ([]server.EntryView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.appendLocked(map[string]any{"kind": "snapshot", "what": "lock", "submitter": operator}, []byte("lock bytes"), fakeEntry{kind: "snapshot"})
	return []server.EntryView{v}, nil
}

func (f *fakeBackend) Ready(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyErr
}

// count returns the number of entries.
func (f *fakeBackend) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.entries)
}

func (f *fakeBackend) entry(seq uint64) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(f.entries[seq-1].view.Entry, &m); err != nil {
		panic(err)
	}
	return m
}

var _ server.Backend = (*fakeBackend)(nil)
var _ = strconv.Itoa
