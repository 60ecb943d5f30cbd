package server

import (
	"errors"
	"fmt"
)

// Errors a Backend wraps (with %w) to choose the HTTP answer. Test them with
// errors.Is.
var (
	// ErrNotFound is returned when the entry, payload, workflow or block
	// asked for does not exist: 404.
	ErrNotFound = errors.New("not found")
	// ErrRedacted is returned for a payload whose bytes were redacted: 410.
	ErrRedacted = errors.New("payload redacted")
	// ErrIdempotencyConflict is returned when an Idempotency-Key was used
	// before with other bytes or parameters: 409, nothing written.
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
	// ErrForbiddenSource is returned when the handoff's source agent is not
	// one the submitter may submit for: 403, nothing written.
	ErrForbiddenSource = errors.New("source agent not allowed for this principal")
	// ErrBadInput is returned for a request that cannot be handled as sent
	// (malformed parameter, unknown format id): 400, nothing written.
	ErrBadInput = errors.New("bad request")
	// ErrUnprocessable is returned for a well-formed request whose
	// parameters are invalid together (a tree size beyond the head, from
	// after to): 422, nothing written. It wraps ErrBadInput.
	ErrUnprocessable = fmt.Errorf("invalid parameters: %w", ErrBadInput)
	// ErrTooLarge is returned for a request over a size limit: 413,
	// nothing written.
	ErrTooLarge = errors.New("request too large")
	// ErrOverloaded is returned when the commit queue is full: 503 with
	// Retry-After, nothing written.
	ErrOverloaded = errors.New("commit queue full")
	// ErrOutcomeUnknown is returned when storage failed while committing:
	// the write may or may not be durable. 503; the client retries with
	// the same Idempotency-Key to learn which.
	ErrOutcomeUnknown = errors.New("storage failure: outcome unknown")
	// ErrUnavailable is returned when the backend cannot serve now (the
	// database is down, no signing key): 503, nothing written.
	ErrUnavailable = errors.New("unavailable")
	// ErrNotWitnessed is wrapped by a NotWitnessedError: the write is
	// stored, but it is not acknowledged because no checkpoint covering it
	// was cosigned by the witness policy's quorum in time (Config.
	// Acknowledge; serve --witness-mode fail-closed). 503 NOT_WITNESSED,
	// written "yes", with the entry's seq.
	ErrNotWitnessed = errors.New("written, but not witnessed")
)

// A NotWitnessedError refuses to acknowledge the write whose last entry
// is Seq: it is stored (it is never removed), but not yet covered by a
// checkpoint the witnesses cosigned. Err says why (the witnesses' errors,
// the time allowed).
type NotWitnessedError struct {
	Seq uint64
	Err error
}

func (e *NotWitnessedError) Error() string {
	return fmt.Sprintf("entry %d is stored but not witnessed: %v", e.Seq, e.Err)
}

func (e *NotWitnessedError) Unwrap() []error { return []error{ErrNotWitnessed, e.Err} }

// Errors of authentication (TokenStore).
var (
	// ErrUnauthenticated is returned for a missing, unknown or malformed
	// credential.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrExpired is returned for a credential past its expiry. It wraps
	// ErrUnauthenticated.
	ErrExpired = fmt.Errorf("credential expired: %w", ErrUnauthenticated)
)
