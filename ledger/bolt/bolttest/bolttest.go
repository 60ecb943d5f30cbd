// Package bolttest helps test code that uses a ledger: MustCreate opens
// a fresh ledger whose structure is checked when the test ends, Append
// helpers record entries in one line, and the tamper helpers (tamper.go)
// damage a closed ledger file in one named way each.
package bolttest

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
)

// Default snapshot bytes brought into force by AppendHandoff.
var (
	ManifestBytes = []byte(`{"agents":[],"manifest_version":1}`)
	LockBytes     = []byte(`{"agents":{},"lock_version":1}`)
)

// MustCreate opens a new ledger in t.TempDir() and registers a cleanup
// that closes it, reopens it read-only, runs Check and fails the test on
// any finding. opts may be nil.
func MustCreate(t testing.TB, opts *bolt.Options) *ledger.Ledger {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatalf("bolt.Open(%s) = %v", path, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close() = %v", err)
			return
		}
		MustCheck(t, path)
	})
	return l
}

// MustCheck opens path read-only and fails the test on any Check finding.
func MustCheck(t testing.TB, path string) {
	t.Helper()
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Errorf("reopen %s read-only: %v", path, err)
		return
	}
	defer l.Close()
	fs, err := l.Check(context.Background())
	if err != nil {
		t.Errorf("Check(%s) = %v", path, err)
	}
	for _, f := range fs {
		t.Errorf("Check(%s): %s", path, f)
	}
}

// Handoff describes a handoff entry for AppendHandoff. Empty strings become
// null; an empty Decision is derived from Reasons.
type Handoff struct {
	ID, Source, Target, Workflow string
	Format                       string // default "governed/1"
	Decision                     string
	Reasons                      []reason.Reason
	Payload                      []byte // default: a small JSON document naming ID
	Blocks                       []string
	NoSnapshots                  bool   // do not bring ManifestBytes/LockBytes into force first
	IdempotencyKey               string // the client's retry key (none when empty)
}

// Build returns the Request that records h.
func (h Handoff) Build() *ledger.Request {
	payload := h.Payload
	if payload == nil {
		payload = []byte(`{"handoff_id":"` + h.ID + `"}`)
	}
	req := &ledger.Request{Payload: payload}
	if !h.NoSnapshots {
		req.Snapshots = []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: ManifestBytes}, {What: entry.SnapshotLock, Bytes: LockBytes}}
	}
	req.Build = func(st ledger.State, e *entry.Entry) error {
		m, l, ok := st.InForce()
		if !ok {
			return errors.New("bolttest: no snapshots in force")
		}
		rs := h.Reasons
		if rs == nil {
			rs = []reason.Reason{}
		}
		format := h.Format
		if format == "" {
			format = "governed/1"
		}
		decision := h.Decision
		if decision == "" {
			decision = reason.Decide(rs)
		}
		sum, size := entry.Sum256(payload), int64(len(payload))
		e.Kind = entry.KindHandoff
		e.Format = entry.Str(format)
		e.Decision = decision
		e.Reasons = &rs
		e.HandoffID = entry.StrOrNull(h.ID)
		e.Source = entry.StrOrNull(h.Source)
		e.Target = entry.StrOrNull(h.Target)
		e.WorkflowID = entry.StrOrNull(h.Workflow)
		e.PayloadSHA256, e.PayloadSize = &sum, &size
		e.ManifestSHA256, e.LockSHA256 = &m, &l
		e.Blocks = h.Blocks
		e.IdempotencyKey = h.IdempotencyKey
		return nil
	}
	return req
}

// AppendHandoff records h and returns the handoff's entry.
func AppendHandoff(t testing.TB, l *ledger.Ledger, h Handoff) ledger.Appended {
	t.Helper()
	res, err := l.Append(context.Background(), h.Build())
	if err != nil {
		t.Fatalf("Append(handoff %q) = %v", h.ID, err)
	}
	return *res.Last()
}

// AppendUnblock records an unblock of agent.
func AppendUnblock(t testing.TB, l *ledger.Ledger, agent, note string) ledger.Appended {
	t.Helper()
	res, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.Agent, e.Note = entry.KindUnblock, agent, note
		return nil
	}})
	if err != nil {
		t.Fatalf("Append(unblock %q) = %v", agent, err)
	}
	return *res.Last()
}

// Clock is a deterministic ledger clock: each call returns a time one
// millisecond after the previous one, starting at Start.
type Clock struct {
	Start time.Time
	n     int64
	mu    chan struct{}
}

// NewClock returns a Clock starting at start.
func NewClock(start time.Time) *Clock {
	c := &Clock{Start: start, mu: make(chan struct{}, 1)}
	return c
}

// Now returns the next time.
func (c *Clock) Now() time.Time {
	c.mu <- struct{}{}
	defer func() { <-c.mu }()
	c.n++
	return c.Start.Add(time.Duration(c.n) * time.Millisecond)
}
