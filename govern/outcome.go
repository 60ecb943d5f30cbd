package govern

import (
	"context"
	"errors"
	"fmt"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// OutcomeRequest is how the target of an accepted handoff finished, to
// record as an outcome entry linked to that handoff's entry.
type OutcomeRequest struct {
	DecisionSeq  uint64
	Status       string      // entry.StatusSucceeded, StatusFailed or StatusCancelled
	OutputSHA256 *entry.Hash // optional: SHA-256 of what the target produced
	DurationMS   *int64      // optional: how long it ran, >= 0
	Submitter    string
	// IdempotencyKey, as stored (a server scopes it by its principal):
	// a retry of the same outcome with the same key is answered with the
	// first outcome (Replayed); a key an earlier entry used for anything
	// else fails with ErrIdempotencyConflict.
	IdempotencyKey string
	TraceParent    string
	// Allow, if set, is asked whether the submitter may record an
	// outcome for agent (the handoff's target) before anything is
	// written; its error is returned as is.
	Allow func(agent string) error
}

// OutcomeResult is a recorded outcome.
type OutcomeResult struct {
	ledger.Appended
	// Replayed: the request repeats an outcome recorded before with the
	// same idempotency key; nothing was appended now.
	Replayed bool
}

// RecordOutcome appends the outcome r describes. Its agent and workflow_id
// are the handoff's target and workflow_id. The ledger refuses (an
// *ledger.OutcomeError, nothing written) an outcome whose decision is
// missing, not a handoff, rejected, or has an outcome already, deciding
// inside the commit, so two concurrent outcomes of one decision append one.
func RecordOutcome(ctx context.Context, l *ledger.Ledger, r OutcomeRequest) (*OutcomeResult, error) {
	if !entry.ValidStatus(r.Status) {
		return nil, fmt.Errorf("%w: status %q: want succeeded, failed or cancelled", entry.ErrMalformed, r.Status)
	}
	if r.DurationMS != nil && *r.DurationMS < 0 {
		return nil, fmt.Errorf("%w: duration_ms %d: want 0 or more", entry.ErrMalformed, *r.DurationMS)
	}
	d, _, err := l.Get(ctx, r.DecisionSeq)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil, &ledger.OutcomeError{DecisionSeq: r.DecisionSeq, Why: ledger.OutcomeNoDecision}
	case err != nil:
		return nil, err
	case d.Kind != entry.KindHandoff:
		return nil, &ledger.OutcomeError{DecisionSeq: r.DecisionSeq, Why: ledger.OutcomeNotHandoff, Detail: d.Kind}
	case d.Decision != "accepted" || !d.Target.Valid:
		return nil, &ledger.OutcomeError{DecisionSeq: r.DecisionSeq, Why: ledger.OutcomeRejected}
	}
	if r.Allow != nil {
		if err := r.Allow(d.Target.S); err != nil {
			return nil, err
		}
	}
	fill := func(e *entry.Entry) {
		e.Kind, e.DecisionSeq, e.Status, e.Agent, e.WorkflowID = entry.KindOutcome, r.DecisionSeq, r.Status, d.Target.S, d.WorkflowID
		e.OutputSHA256, e.DurationMS = r.OutputSHA256, r.DurationMS
		e.Submitter, e.IdempotencyKey, e.TraceParent = r.Submitter, r.IdempotencyKey, r.TraceParent
	}
	res, err := l.Append(ctx, &ledger.Request{Build: func(st ledger.State, e *entry.Entry) error {
		if r.IdempotencyKey != "" {
			if a, ok := st.Idempotent(r.IdempotencyKey); ok {
				return fmt.Errorf("%w: key %q was used by seq %d for a handoff", ErrIdempotencyConflict, r.IdempotencyKey, a.Seq)
			}
		}
		fill(e)
		return nil
	}})
	var oe *ledger.OutcomeError
	if errors.As(err, &oe) && oe.Why == ledger.OutcomeDuplicate && r.IdempotencyKey != "" {
		return replayOutcome(ctx, l, r, oe, fill)
	}
	if err != nil {
		return nil, err
	}
	return &OutcomeResult{Appended: *res.Last()}, nil
}

// replayOutcome answers an outcome refused as a duplicate: with the first
// outcome when it carries the same key and fields, a conflict when it
// carries the same key and other fields, the refusal otherwise.
func replayOutcome(ctx context.Context, l *ledger.Ledger, r OutcomeRequest, oe *ledger.OutcomeError, fill func(*entry.Entry)) (*OutcomeResult, error) {
	first, raw, err := l.Get(ctx, oe.Existing)
	if err != nil {
		return nil, err
	}
	if first.IdempotencyKey != r.IdempotencyKey {
		return nil, oe
	}
	want := *first
	want.OutputSHA256, want.DurationMS = nil, nil
	fill(&want)
	want.TraceParent = first.TraceParent // a retry may carry another trace context
	if !sameHash(want.OutputSHA256, first.OutputSHA256) || !sameInt(want.DurationMS, first.DurationMS) ||
		want.Status != first.Status || want.Submitter != first.Submitter {
		return nil, fmt.Errorf("%w: key %q was used by seq %d for another outcome", ErrIdempotencyConflict, r.IdempotencyKey, first.Seq)
	}
	return &OutcomeResult{Appended: ledger.Appended{Entry: first, Raw: raw, Hash: entry.LeafHash(raw)}, Replayed: true}, nil
}

func sameHash(a, b *entry.Hash) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
func sameInt(a, b *int64) bool       { return a == nil && b == nil || a != nil && b != nil && *a == *b }
