package checkpoint

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// Errors returned while parsing and opening checkpoints.
var (
	// ErrMalformed is returned when a checkpoint is not a well-formed signed
	// note or its text is not a C2SP checkpoint (missing lines, empty
	// origin, bad base64, root not 32 bytes, empty extension line).
	ErrMalformed = errors.New("malformed checkpoint")
	// ErrNonCanonicalSize is returned (wrapping ErrMalformed) when the size
	// line is not the canonical decimal form ("010", "+1", " 1").
	ErrNonCanonicalSize = fmt.Errorf("%w: size is not canonical decimal", ErrMalformed)
	// ErrTooLarge is returned (wrapping ErrMalformed) for a signed
	// checkpoint longer than MaxCheckpointSize bytes.
	ErrTooLarge = fmt.Errorf("%w: too large", ErrMalformed)
	// ErrOrigin is returned by Open when the checkpoint names another origin
	// than the one required.
	ErrOrigin = errors.New("checkpoint origin mismatch")
	// ErrUnknownKey is returned by Open when no signature on the checkpoint
	// is from a trusted verifier key ("unknown key").
	ErrUnknownKey = errors.New("checkpoint not signed by a trusted key")
	// ErrBadSignature is returned by Open when a signature claims a trusted
	// key (same name and key hash) but does not verify.
	ErrBadSignature = errors.New("checkpoint signature does not verify")
)

// Errors returned for keys.
var (
	// ErrKeyFormat is returned for a key that is neither a note key nor an
	// OpenSSH ed25519 key, or whose name is invalid.
	ErrKeyFormat = errors.New("unrecognised key")
	// ErrKeyPermissions is returned by LoadSigner for a signer key file that
	// group or others may read or write (mode looser than 0600), or that is
	// not a regular file.
	ErrKeyPermissions = errors.New("signer key file permissions too open")
)

// Errors returned by anchor checks; each *AnchorError wraps one of them.
var (
	// ErrAnchor is the family of anchor failures: the ledger does not
	// extend the checkpoint. Test with errors.Is(err, ErrAnchor).
	ErrAnchor = errors.New("ledger does not extend the checkpoint")
	// ErrTruncated: the ledger holds fewer entries than the checkpoint.
	ErrTruncated = fmt.Errorf("%w: truncated", ErrAnchor)
	// ErrRewritten: the ledger's root at the checkpoint's size differs.
	ErrRewritten = fmt.Errorf("%w: rewritten", ErrAnchor)
	// ErrOtherLedger: the ledger has another origin (another log identity).
	ErrOtherLedger = fmt.Errorf("%w: another origin", ErrAnchor)
)

// Errors returned by State; each *StateError wraps one of them.
var (
	// ErrRollback: the offered checkpoint or ledger is older than the
	// newest checkpoint the state has seen for that origin.
	ErrRollback = errors.New("older than the last seen checkpoint")
	// ErrFork: the offered checkpoint or ledger is not consistent with the
	// newest checkpoint seen (same size and another root, or no valid
	// consistency proof).
	ErrFork = errors.New("fork: inconsistent with the last seen checkpoint")
	// ErrOriginChanged: a source pinned to one origin (State.Pin) now shows
	// a checkpoint of another.
	ErrOriginChanged = errors.New("another origin than the one remembered")
)

// An OriginError reports a checkpoint whose origin is not the one the
// state pinned for its source (State.Pin). It wraps ErrOriginChanged.
type OriginError struct {
	Pinned  Pin    // what the state remembers
	Offered string // the origin shown now
	File    string // the pin's file (remove it to pin the source anew)
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("%s: %s shows a checkpoint of origin %q, but the state remembers origin %q (verifier key %q) for it; "+
		"if the log really moved, remove %s", ErrOriginChanged, e.Pinned.Source, e.Offered, e.Pinned.Origin, e.Pinned.KeyName, e.File)
}

// Unwrap returns ErrOriginChanged.
func (e *OriginError) Unwrap() error { return ErrOriginChanged }

// Kinds of AnchorError.
const (
	KindTruncated = "truncated" // ledger smaller than the checkpoint
	KindRewritten = "rewritten" // root at the checkpoint's size differs
	KindOrigin    = "origin"    // another log identity
)

// An AnchorError reports that a ledger does not extend a checkpoint, with
// the evidence: the checkpoint's size and what was expected and found.
type AnchorError struct {
	Kind string // KindTruncated, KindRewritten or KindOrigin
	Size uint64 // the checkpoint's tree size
	Want string // from the checkpoint: size, root (base64) or origin
	Got  string // from the ledger
}

func (e *AnchorError) Error() string {
	switch e.Kind {
	case KindTruncated:
		return fmt.Sprintf("ledger is truncated: checkpoint has %s entries, ledger has %s", e.Want, e.Got)
	case KindRewritten:
		return fmt.Sprintf("checkpoint mismatch at size %d: checkpoint root %s, ledger root %s", e.Size, e.Want, e.Got)
	case KindOrigin:
		return fmt.Sprintf("ledger origin %q is not the checkpoint's origin %q", e.Got, e.Want)
	}
	return fmt.Sprintf("anchor check failed (%s): want %s, got %s", e.Kind, e.Want, e.Got)
}

// Unwrap returns ErrTruncated, ErrRewritten or ErrOtherLedger.
func (e *AnchorError) Unwrap() error {
	switch e.Kind {
	case KindTruncated:
		return ErrTruncated
	case KindRewritten:
		return ErrRewritten
	case KindOrigin:
		return ErrOtherLedger
	}
	return ErrAnchor
}

// A StateError reports a rollback or a fork against the stored checkpoint,
// carrying both signed checkpoints (and the consistency proof tried, if any)
// as evidence that holds up without the ledger.
type StateError struct {
	Err     error       // ErrRollback or ErrFork
	Stored  *Checkpoint // newest checkpoint seen before
	Offered *Checkpoint // the checkpoint offered; nil when the ledger itself was checked
	// LedgerSize is set when the ledger (not a checkpoint) was checked
	// against Stored.
	LedgerSize uint64
	Proof      tlog.TreeProof // consistency proof from Stored to Offered that failed, if any
	Detail     string
}

func (e *StateError) Error() string {
	s := e.Err.Error()
	if e.Offered != nil {
		s = fmt.Sprintf("checkpoint %s size %d: %s (size %d)", e.Offered.Origin, e.Offered.Size, s, e.Stored.Size)
	} else if e.Stored != nil {
		s = fmt.Sprintf("ledger %s size %d: %s (size %d)", e.Stored.Origin, e.LedgerSize, s, e.Stored.Size)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns ErrRollback or ErrFork.
func (e *StateError) Unwrap() error { return e.Err }
