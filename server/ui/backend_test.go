package ui_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

// memLedger is an in-memory ledger with the server.Backend contract: real
// canonical entries (entry.Entry), a real RFC 6962 tree (tlog) and real
// signed checkpoints, so the browser's proof check runs against the same
// bytes a bbolt ledger would serve. Knobs let a test tamper with proofs
// and sign with another key.
type memLedger struct {
	mu       sync.Mutex
	entries  [][]byte // canonical bytes, index seq-1
	leaves   []entry.Hash
	stored   []tlog.Hash
	payloads map[uint64][]byte
	redacted map[uint64]bool
	blocks   map[string]server.Block
	changed  chan struct{}
	now      time.Time
	signer   note.Signer
	other    note.Signer // signs instead of signer when wrongKey is set
	origin   string

	tamper   map[uint64]bool // proofs of these seqs get one bit flipped
	wrongKey bool
}

var zeroHash = entry.Hash{}

func newMemLedger(t testing.TB) (*memLedger, string) {
	t.Helper()
	const origin = "ledger.example/test"
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := checkpoint.ParseSigner([]byte(skey), origin)
	if err != nil {
		t.Fatal(err)
	}
	oskey, _, err := checkpoint.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	other, err := checkpoint.ParseSigner([]byte(oskey), origin)
	if err != nil {
		t.Fatal(err)
	}
	return &memLedger{payloads: map[uint64][]byte{}, redacted: map[uint64]bool{}, blocks: map[string]server.Block{},
		changed: make(chan struct{}), now: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC), signer: signer, other: other,
		origin: origin, tamper: map[uint64]bool{}}, vkey
}

func (m *memLedger) hashReader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= int64(len(m.stored)) {
				return nil, fmt.Errorf("stored hash %d missing", x)
			}
			out[i] = m.stored[x]
		}
		return out, nil
	})
}

// appendLocked appends e (seq, prev, time and v are set here).
func (m *memLedger) appendLocked(e *entry.Entry, payload []byte) server.EntryView {
	e.V, e.Seq = entry.Version, uint64(len(m.entries)+1)
	e.Prev = zeroHash
	if n := len(m.leaves); n > 0 {
		e.Prev = m.leaves[n-1]
	}
	m.now = m.now.Add(17 * time.Second)
	e.Time = entry.Time{Time: m.now}
	if payload != nil && e.Kind == entry.KindHandoff {
		sum, size := entry.Sum256(payload), int64(len(payload))
		e.PayloadSHA256, e.PayloadSize = &sum, &size
	}
	canon, err := e.Canonical()
	if err != nil {
		panic(err)
	}
	hs, err := tlog.StoredHashes(int64(len(m.entries)), canon, m.hashReader())
	if err != nil {
		panic(err)
	}
	m.stored = append(m.stored, hs...)
	m.entries = append(m.entries, canon)
	leaf := entry.LeafHash(canon)
	m.leaves = append(m.leaves, leaf)
	if payload != nil {
		m.payloads[e.Seq] = bytes.Clone(payload)
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return server.EntryView{Seq: e.Seq, Hash: leaf.String(), Entry: jsontext.Value(canon)}
}

// handoffEntry builds a handoff entry; reasons decide it.
func handoffEntry(format, id, source, target, workflow, submitter string, rs []reason.Reason) *entry.Entry {
	if rs == nil {
		rs = []reason.Reason{}
	}
	var zero entry.Hash
	return &entry.Entry{Kind: entry.KindHandoff, Format: entry.StrOrNull(format), HandoffID: entry.StrOrNull(id),
		Source: entry.StrOrNull(source), Target: entry.StrOrNull(target), WorkflowID: entry.StrOrNull(workflow),
		Decision: reason.Decide(rs), Reasons: &rs, Submitter: submitter, ManifestSHA256: &zero, LockSHA256: &zero}
}

// add appends a handoff entry directly (seeding).
func (m *memLedger) add(e *entry.Entry, payload []byte) server.EntryView {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.appendLocked(e, payload)
	if e.Blocks != nil {
		for _, a := range e.Blocks {
			m.blocks[a] = server.Block{Agent: a, Since: e.Seq, Submitter: e.Submitter, Code: string(reason.HashMismatch), Message: "prompt hash differs from the lock"}
		}
	}
	return v
}

func (m *memLedger) decide(r server.SubmitRequest) (*entry.Entry, *server.SubmitResult, error) {
	rec := handoff.Parse(r.Body, handoff.Options{Format: handoff.Format(r.Format), From: r.From, To: r.To})
	if r.Sources != nil && !slices.Contains(r.Sources, rec.Source.ID) {
		return nil, nil, fmt.Errorf("%w: source %q", server.ErrForbiddenSource, rec.Source.ID)
	}
	rs := slices.Clone(rec.Findings)
	for _, a := range []string{rec.Source.ID, rec.Target.ID} {
		if b, ok := m.blocks[a]; ok && a != "" {
			rs = append(rs, reason.Reason{Code: reason.AgentBlocked, Severity: reason.Error, Field: "source_agent",
				Message: fmt.Sprintf("agent blocked since entry %d", b.Since)})
		}
	}
	e := handoffEntry(string(rec.Format), rec.HandoffID, rec.Source.ID, rec.Target.ID, rec.WorkflowID, r.Submitter, rs)
	return e, &server.SubmitResult{Decision: e.Decision, Reasons: rs, Format: string(rec.Format), HandoffID: rec.HandoffID,
		Source: rec.Source.ID, Target: rec.Target.ID, WorkflowID: rec.WorkflowID}, nil
}

func (m *memLedger) Submit(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, res, err := m.decide(r)
	if err != nil {
		return nil, err
	}
	v := m.appendLocked(e, r.Body)
	res.Seq, res.EntryHash = v.Seq, v.Hash
	return res, nil
}

func (m *memLedger) SubmitBatch(ctx context.Context, rs []server.SubmitRequest) ([]server.BatchItem, error) {
	out := make([]server.BatchItem, len(rs))
	for i, r := range rs {
		out[i].Result, out[i].Err = m.Submit(ctx, r)
	}
	return out, nil
}

func (m *memLedger) Outcome(ctx context.Context, r server.OutcomeRequest) (*server.OutcomeResult, error) {
	return nil, fmt.Errorf("%w: the viewer's test ledger records no outcomes", server.ErrUnprocessable)
}

func (m *memLedger) Validate(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, res, err := m.decide(r)
	return res, err
}

func (m *memLedger) decoded(i int) *entry.Entry {
	e, err := entry.Decode(m.entries[i])
	if err != nil {
		panic(err)
	}
	return e
}

func (m *memLedger) view(i int) server.EntryView {
	return server.EntryView{Seq: uint64(i + 1), Hash: m.leaves[i].String(), Entry: jsontext.Value(m.entries[i])}
}

func (m *memLedger) Entries(ctx context.Context, q server.Query) (*server.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &server.Page{Entries: []server.EntryView{}}
	start := len(m.entries) - 1
	if q.Before != 0 {
		start = min(start, int(q.Before)-2)
	}
	for i := start; i >= 0; i-- {
		e := m.decoded(i)
		codes := []string{}
		if e.Reasons != nil {
			for _, r := range *e.Reasons {
				codes = append(codes, string(r.Code))
			}
		}
		switch {
		case q.Agent != "" && e.Source.String() != q.Agent && e.Target.String() != q.Agent,
			q.Decision != "" && e.Decision != q.Decision,
			q.Code != "" && !slices.Contains(codes, q.Code),
			q.Format != "" && e.Format.String() != q.Format,
			q.Workflow != "" && e.WorkflowID.String() != q.Workflow,
			q.Kind != "" && e.Kind != q.Kind,
			!q.Since.IsZero() && e.Time.Before(q.Since),
			!q.Until.IsZero() && !e.Time.Before(q.Until):
			continue
		}
		if len(p.Entries) == q.Limit {
			p.Next = p.Entries[len(p.Entries)-1].Seq
			break
		}
		p.Entries = append(p.Entries, m.view(i))
	}
	return p, nil
}

func (m *memLedger) Entry(ctx context.Context, seq uint64) (*server.EntryView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq == 0 || seq > uint64(len(m.entries)) {
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrNotFound)
	}
	v := m.view(int(seq - 1))
	return &v, nil
}

func (m *memLedger) Payload(ctx context.Context, seq uint64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.redacted[seq] {
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrRedacted)
	}
	b, ok := m.payloads[seq]
	if !ok {
		return nil, fmt.Errorf("entry %d has no payload: %w", seq, server.ErrNotFound)
	}
	return bytes.Clone(b), nil
}

func (m *memLedger) checkpointLocked(size uint64) string {
	h, err := tlog.TreeHash(int64(size), m.hashReader())
	if err != nil {
		panic(err)
	}
	s := m.signer
	if m.wrongKey {
		s = m.other
	}
	b, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: m.origin, Size: size, Hash: h}, s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (m *memLedger) Proof(ctx context.Context, seq, size uint64) (*server.Proof, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	head := uint64(len(m.entries))
	if size == 0 {
		size = head
	}
	if seq == 0 || seq > head {
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrNotFound)
	}
	if size > head {
		return nil, fmt.Errorf("%w: tree size %d beyond the head %d", server.ErrUnprocessable, size, head)
	}
	p, err := tlog.ProveRecord(int64(size), int64(seq-1), m.hashReader())
	if err != nil {
		return nil, err
	}
	root, _ := tlog.TreeHash(int64(size), m.hashReader())
	pf := &server.Proof{Seq: seq, TreeSize: size, LeafHash: m.leaves[seq-1].String(), RootHash: entry.Hash(root).String(),
		Hashes: []string{}}
	for i, h := range p {
		if i == 0 && m.tamper[seq] {
			h[7] ^= 0x10
		}
		pf.Hashes = append(pf.Hashes, entry.Hash(h).String())
	}
	return pf, nil
}

func (m *memLedger) Workflow(ctx context.Context, id string, after uint64, limit int) (*server.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &server.Page{}
	found := false
	for i := range m.entries {
		if m.decoded(i).WorkflowID.String() != id {
			continue
		}
		found = true
		v := m.view(i)
		if v.Seq <= after {
			continue
		}
		if len(p.Entries) == limit {
			p.Next = p.Entries[limit-1].Seq
			break
		}
		p.Entries = append(p.Entries, v)
	}
	if !found {
		return nil, fmt.Errorf("workflow %q: %w", id, server.ErrNotFound)
	}
	return p, nil
}

func (m *memLedger) Blocks(ctx context.Context) ([]server.Block, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []server.Block
	for _, b := range m.blocks {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b server.Block) int { return int(a.Since) - int(b.Since) })
	return out, nil
}

func (m *memLedger) Checkpoint(ctx context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return []byte(m.checkpointLocked(uint64(len(m.entries)))), nil
}

func (m *memLedger) Consistency(ctx context.Context, from, to uint64) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := tlog.ProveTree(int64(to), int64(from), m.hashReader())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrUnprocessable, err)
	}
	out := []string{}
	for _, h := range p {
		out = append(out, entry.Hash(h).String())
	}
	return out, nil
}

func (m *memLedger) Export(ctx context.Context, after uint64, fn func([]byte) error) error {
	m.mu.Lock()
	n := len(m.entries)
	m.mu.Unlock()
	for seq := after + 1; seq <= uint64(n); seq++ {
		m.mu.Lock()
		line := fmt.Sprintf(`{"entry":%s,"hash":"%s"`, m.entries[seq-1], m.leaves[seq-1])
		if b, ok := m.payloads[seq]; ok && !m.redacted[seq] {
			line += `,"payload_b64":"` + base64.StdEncoding.EncodeToString(b) + `"`
		}
		m.mu.Unlock()
		if err := fn([]byte(line + "}")); err != nil {
			return err
		}
	}
	return nil
}

func (m *memLedger) Watch(ctx context.Context, after uint64, fn func(server.EntryView) error) error {
	for {
		m.mu.Lock()
		var next []server.EntryView
		for i := int(after); i < len(m.entries); i++ {
			next = append(next, m.view(i))
		}
		changed := m.changed
		m.mu.Unlock()
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

func (m *memLedger) Unblock(ctx context.Context, agent, why, operator string) (*server.EntryView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blocks[agent]; !ok {
		return nil, fmt.Errorf("agent %q is not blocked: %w", agent, server.ErrNotFound)
	}
	delete(m.blocks, agent)
	v := m.appendLocked(&entry.Entry{Kind: entry.KindUnblock, Agent: agent, Note: why, Submitter: operator}, nil)
	return &v, nil
}

func (m *memLedger) Redact(ctx context.Context, seq uint64, why, operator string) (*server.EntryView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.payloads[seq]; !ok {
		return nil, fmt.Errorf("entry %d has no payload: %w", seq, server.ErrNotFound)
	}
	if m.redacted[seq] {
		return nil, fmt.Errorf("entry %d: %w", seq, server.ErrRedacted)
	}
	m.redacted[seq] = true
	v := m.appendLocked(&entry.Entry{Kind: entry.KindRedaction, RedactedSeq: seq, Note: why, Submitter: operator}, nil)
	return &v, nil
}

func (m *memLedger) Reload(ctx context.Context, operator string) ([]server.EntryView, error) {
	return nil, errors.New("reload: not in the test ledger")
}

func (m *memLedger) Ready(ctx context.Context) error { return nil }

var _ server.Backend = (*memLedger)(nil)
