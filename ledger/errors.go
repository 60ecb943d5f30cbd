package ledger

import (
	"errors"
	"fmt"
	"io/fs"
)

// Errors returned by Open.
var (
	// ErrVersionMismatch is returned when the file's format version is not
	// one this build reads.
	ErrVersionMismatch = errors.New("ledger format version mismatch")
	// ErrNotExist is returned when the file is missing (or, with
	// Options.NoCreate or ReadOnly, empty). It wraps fs.ErrNotExist.
	ErrNotExist = fmt.Errorf("ledger does not exist: %w", fs.ErrNotExist)
	// ErrEmptyFile is returned when the file exists but has 0 bytes. bbolt
	// would silently initialize it; a ledger refuses, since an emptied file
	// is what a wiped ledger looks like. Remove the file to start anew.
	ErrEmptyFile = errors.New("ledger file is empty (0 bytes)")
	// ErrLocked is returned when another process holds the file lock for
	// longer than Options.Timeout.
	ErrLocked = errors.New("ledger is locked")
	// ErrNotLedger is returned for a bbolt file that is not a ledger.
	ErrNotLedger = errors.New("not a govledger ledger")
	// ErrBadOptions is returned when Options are invalid.
	ErrBadOptions = errors.New("invalid ledger options")
)

// Errors returned by Append and Redact.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("ledger is closed")
	// ErrFailed is returned by writes after a commit failed: the outcome of
	// that commit is unknown and the ledger must be reopened.
	ErrFailed = errors.New("ledger failed a commit; reopen required")
	// ErrNothingStored is wrapped by the error of a commit that failed
	// before anything of it was handed to the store: a read the decisions
	// needed failed (a damaged store: ErrCorrupt). The ledger refuses
	// writes from then on (ErrFailed), as after any failed commit, but
	// this commit's outcome is known: none of its entries were stored.
	ErrNothingStored = errors.New("nothing was stored")
	// ErrReadOnly is returned by writes on a ledger opened ReadOnly.
	ErrReadOnly = errors.New("ledger is open read-only")
	// ErrNotRedactable is returned by Redact for an entry that has no
	// payload bytes to remove (not a handoff, or its payload was not stored).
	ErrNotRedactable = errors.New("entry has no payload to redact")
	// ErrOutcomeRefused is wrapped (by an *OutcomeError) by Append for an
	// outcome entry that does not follow an accepted handoff with no
	// outcome yet: nothing of the request is stored.
	ErrOutcomeRefused = errors.New("outcome refused")
)

// Why an outcome was refused (OutcomeError.Why).
const (
	OutcomeNoDecision = "no_decision" // decision_seq names no stored entry
	OutcomeNotHandoff = "not_handoff" // decision_seq names an entry of another kind
	OutcomeRejected   = "rejected"    // the handoff was rejected: its target never ran
	OutcomeDuplicate  = "duplicate"   // the handoff has an outcome already (Existing)
	OutcomeMismatch   = "mismatch"    // agent or workflow_id are not the handoff's target and workflow
)

// OutcomeError is returned by Append for an outcome entry that may not be
// appended (see ErrOutcomeRefused). The check runs inside the commit, on
// the state the entry is appended to, so of two concurrent outcomes of one
// decision exactly one is stored.
type OutcomeError struct {
	DecisionSeq uint64
	Why         string // OutcomeNoDecision, OutcomeNotHandoff, ...
	Existing    uint64 // OutcomeDuplicate: the outcome already recorded
	Detail      string // what differs (OutcomeMismatch), or the kind (OutcomeNotHandoff)
}

func (e *OutcomeError) Error() string {
	var msg string
	switch e.Why {
	case OutcomeNoDecision:
		msg = "no such entry"
	case OutcomeNotHandoff:
		msg = "it is a " + e.Detail + " entry, not a handoff"
	case OutcomeRejected:
		msg = "the handoff was rejected: its target never ran"
	case OutcomeDuplicate:
		msg = fmt.Sprintf("it has an outcome already (seq %d)", e.Existing)
	default:
		msg = e.Detail
	}
	return fmt.Sprintf("%v: decision seq %d: %s", ErrOutcomeRefused, e.DecisionSeq, msg)
}

// Unwrap returns ErrOutcomeRefused.
func (e *OutcomeError) Unwrap() error { return ErrOutcomeRefused }

// Errors returned by readers (Get, Blob, Find, Scan, proofs, Check).
var (
	// ErrNotFound is returned for a seq or blob that is not stored.
	ErrNotFound = errors.New("not found")
	// ErrRedacted is returned by Blob for bytes removed by a redaction, and
	// by Redact for a payload that was already removed.
	ErrRedacted = errors.New("payload redacted")
	// ErrPolicyChanged is returned by Append for a Request with
	// InForceOnly whose snapshots are not the ones in force when its
	// commit is built (an operator brought another policy into force, or
	// none is in force yet): nothing of the request is stored. Decide it
	// again under the policy in force.
	ErrPolicyChanged = errors.New("the policy in force is not the one the request was decided under")
	// ErrBadRange is returned for a tree size or index out of range.
	ErrBadRange = errors.New("tree size or index out of range")
	// ErrCorrupt is returned when the file's structure is damaged: a bbolt
	// panic, a missing bucket, a malformed stored value.
	ErrCorrupt = errors.New("ledger file is corrupt")
)

// RecordError reports a failure concerning one stored entry.
type RecordError struct {
	Seq uint64
	Op  string // "get", "decode", "scan", ...
	Err error
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s seq %d: %v", e.Op, e.Seq, e.Err) }

// Unwrap returns the underlying error.
func (e *RecordError) Unwrap() error { return e.Err }
