package bundle

import "errors"

// Errors returned by Verify. ErrUnreadable and the errors wrapping it mean
// the document is not a bundle at all; the others mean it is a bundle that
// does not prove what it claims. Checkpoint failures are the checkpoint
// package's errors (checkpoint.ErrUnknownKey, ErrBadSignature, ErrMalformed,
// ErrNonCanonicalSize), wrapped.
var (
	// ErrUnreadable: not JSON, an unknown schema, unknown or missing members,
	// or a member of the wrong type (a hash that is not 64 hex digits).
	ErrUnreadable = errors.New("unreadable proof bundle")
	// ErrInvalid is the family of every verification failure below; test
	// with errors.Is(err, ErrInvalid).
	ErrInvalid = errors.New("invalid proof")
	// ErrMismatch: a bundle field disagrees with its checkpoint or entry
	// (origin, tree size, seq, leaf index, redaction flag).
	ErrMismatch = wrap("bundle does not match its checkpoint or entry")
	// ErrOrigin: the checkpoint is for another origin than the bundle's.
	ErrOrigin = wrap("checkpoint origin differs from the bundle's")
	// ErrEntryHash: entry_hash is not SHA-256(0x00 || entry).
	ErrEntryHash = wrap("entry hash mismatch")
	// ErrEntry: the entry bytes are not a valid canonical ledger entry.
	ErrEntry = wrap("entry is not a valid canonical ledger entry")
	// ErrPayloadHash: the payload's SHA-256 or size is not the entry's.
	ErrPayloadHash = wrap("payload does not match the entry's payload hash")
	// ErrInclusionProof: the inclusion proof does not lead to the
	// checkpoint's root.
	ErrInclusionProof = wrap("inclusion proof does not verify against the checkpoint root")
	// ErrConsistencyProof: the consistency proof does not link the two
	// checkpoints' roots.
	ErrConsistencyProof = wrap("consistency proof does not verify between the checkpoints")
	// ErrCheckpoint: a checkpoint in the bundle does not open (bad or
	// unknown signature, malformed); the checkpoint package's error is
	// wrapped too.
	ErrCheckpoint = wrap("checkpoint does not verify")
)

type familyError struct{ msg string }

func (e *familyError) Error() string { return e.msg }
func (e *familyError) Unwrap() error { return ErrInvalid }

func wrap(msg string) error { return &familyError{msg} }
