package entry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
)

// Version is the entry encoding version, the "v" field of every entry.
const Version = 1

// Entry kinds.
const (
	KindHandoff     = "handoff"      // a governed handoff and its decision
	KindSnapshot    = "snapshot"     // a manifest or lock came into force
	KindUnblock     = "unblock"      // an operator lifted an AGENT_BLOCKED
	KindRedaction   = "redaction"    // a payload's bytes were removed; its hash stays
	KindKeyRotation = "key_rotation" // the checkpoint verifier key changed
	KindOutcome     = "outcome"      // the target of an accepted handoff finished
)

// Outcome statuses: how the target of a handoff finished.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// ValidStatus reports whether s is an outcome status.
func ValidStatus(s string) bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Snapshot "what" values.
const (
	SnapshotManifest = "manifest"
	SnapshotLock     = "lock"
)

// Hash is a SHA-256 digest. Its text form is 64 lowercase hex digits.
type Hash [32]byte

// ZeroHash is the prev of the first entry.
var ZeroHash Hash

// Sum256 returns the SHA-256 of data as a Hash.
func Sum256(data []byte) Hash { return sha256.Sum256(data) }

// LeafHash returns SHA-256(0x00 || canonical): an entry's hash, equal to its
// RFC 6962 Merkle leaf hash.
func LeafHash(canonical []byte) Hash {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(canonical)
	var out Hash
	h.Sum(out[:0])
	return out
}

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Hash deliberately has no IsZero method: JSON "omitzero" on a *Hash
// field would call it through the pointer and drop a present all-zero hash
// from an entry. Compare with ZeroHash instead.

// MarshalText encodes h as lowercase hex.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText accepts exactly 64 lowercase hex digits.
func (h *Hash) UnmarshalText(b []byte) error {
	p, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// ErrBadHash is returned by ParseHash for anything but 64 lowercase hex digits.
var ErrBadHash = errors.New("hash must be 64 lowercase hex digits")

// ParseHash parses 64 lowercase hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 64 {
		return h, ErrBadHash
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return h, ErrBadHash
		}
	}
	hex.Decode(h[:], []byte(s))
	return h, nil
}

// Time is an entry time: UTC, RFC 3339 with up to nine fraction digits and
// trailing zeros trimmed (time.RFC3339Nano). Parsing accepts only that
// exact form, so one instant has one text.
type Time struct{ time.Time }

// MarshalText formats t in UTC as RFC 3339 with nanoseconds.
func (t Time) MarshalText() ([]byte, error) {
	return []byte(t.UTC().Format(time.RFC3339Nano)), nil
}

// UnmarshalText parses the canonical form written by MarshalText.
func (t *Time) UnmarshalText(b []byte) error {
	p, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("time: %w", err)
	}
	if p.UTC().Format(time.RFC3339Nano) != string(b) {
		return fmt.Errorf("time %q is not canonical (want UTC, Z, trailing zeros trimmed)", b)
	}
	t.Time = p.UTC()
	return nil
}

// NullString is a string field that is either absent (omitted), null, or a
// string. Handoff entries carry their string fields as null where unknown.
type NullString struct {
	Set   bool // the field is present in the entry
	Valid bool // the value is a string, not null
	S     string
}

// Str returns a present, non-null NullString.
func Str(s string) NullString { return NullString{Set: true, Valid: true, S: s} }

// Null returns a present null.
func Null() NullString { return NullString{Set: true} }

// StrOrNull returns Null() for "" and Str(s) otherwise.
func StrOrNull(s string) NullString {
	if s == "" {
		return Null()
	}
	return Str(s)
}

// IsZero reports whether the field is absent.
func (n NullString) IsZero() bool { return !n.Set }

// MarshalJSON encodes null or the string.
func (n NullString) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return jsontext.AppendQuote(nil, n.S)
}

// UnmarshalJSON decodes null or a string.
func (n *NullString) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Valid, n.S = false, ""
		return nil
	}
	v := jsontext.Value(b)
	if v.Kind() != '"' {
		return fmt.Errorf("want string or null, got %s", v.Kind())
	}
	s, err := jsontext.AppendUnquote(nil, b)
	if err != nil {
		return err
	}
	n.Valid, n.S = true, string(s)
	return nil
}

func (n NullString) String() string {
	if !n.Valid {
		return ""
	}
	return n.S
}

// Entry is one ledger entry. Its stored bytes are its RFC 8785 canonical
// JSON form (see Canonical); which fields are present depends on Kind, and
// Validate enforces that.
type Entry struct {
	// Fields are declared in RFC 8785 key order (sorted by UTF-16 code
	// units, here plain ASCII order), so that marshaling an Entry already
	// yields its canonical bytes; TestMarshalIsCanonical guards this.

	Agent string `json:"agent,omitzero"` // unblock; outcome: the decision's target
	// Blocks lists the agents this entry blocked (HASH_MISMATCH); optional.
	Blocks        []string `json:"blocks,omitzero"`
	ContentSHA256 *Hash    `json:"content_sha256,omitzero"` // snapshot
	Decision      string   `json:"decision,omitzero"`       // handoff
	// DecisionSeq is the handoff entry an outcome follows: an earlier,
	// accepted handoff, followed by no other outcome.
	DecisionSeq uint64 `json:"decision_seq,omitzero"` // outcome
	// DurationMS is how long the target ran, in milliseconds (optional).
	DurationMS *int64     `json:"duration_ms,omitzero"` // outcome
	Format     NullString `json:"format,omitzero"`      // handoff
	HandoffID  NullString `json:"handoff_id,omitzero"`  // handoff
	// IdempotencyKey is the key a client sent with the document (optional):
	// a retry with the same key and bytes is answered with this entry.
	IdempotencyKey string `json:"idempotency_key,omitzero"` // handoff
	// Inputs records what the decision depended on beyond the payload and
	// snapshots (parameters and file-system observations), so that verify
	// can re-evaluate it. Opaque to the ledger; optional; canonical JSON.
	Inputs jsontext.Value `json:"inputs,omitzero"`
	Kind   string         `json:"kind"`
	// Lifts lists the agents whose blocks a lock snapshot lifted, because
	// the new lock changed their prompt hash (sorted, possibly empty). A
	// lock snapshot without it was written before lifts existed and lifted
	// every block.
	Lifts          *[]string `json:"lifts,omitzero"`           // snapshot of a lock
	LockSHA256     *Hash     `json:"lock_sha256,omitzero"`     // handoff
	ManifestSHA256 *Hash     `json:"manifest_sha256,omitzero"` // handoff
	NewKey         string    `json:"new_key,omitzero"`         // key_rotation
	Note           string    `json:"note,omitzero"`            // unblock, redaction, key_rotation: the operator's reason
	OldKey         string    `json:"old_key,omitzero"`         // key_rotation: verifier key in note format, "" for the first
	// OutputSHA256 is the SHA-256 of what the target produced (optional;
	// the ledger does not store those bytes).
	OutputSHA256  *Hash            `json:"output_sha256,omitzero"`  // outcome
	PayloadSHA256 *Hash            `json:"payload_sha256,omitzero"` // handoff
	PayloadSize   *int64           `json:"payload_size,omitzero"`   // handoff
	Prev          Hash             `json:"prev"`
	Reasons       *[]reason.Reason `json:"reasons,omitzero"`      // handoff
	RedactedSeq   uint64           `json:"redacted_seq,omitzero"` // redaction
	Seq           uint64           `json:"seq"`
	Size          *int64           `json:"size,omitzero"`   // snapshot
	Source        NullString       `json:"source,omitzero"` // handoff
	Status        string           `json:"status,omitzero"` // outcome: succeeded, failed or cancelled
	// Submitter is who submitted the entry: the CLI's --as (default the OS
	// user), the server's authenticated principal. Optional for entries
	// written before it existed.
	Submitter string     `json:"submitter,omitzero"` // any kind
	Target    NullString `json:"target,omitzero"`    // handoff
	Time      Time       `json:"time"`
	// TraceParent is the W3C traceparent the submission carried (optional).
	TraceParent string     `json:"traceparent,omitzero"` // handoff, outcome
	V           int        `json:"v"`
	What        string     `json:"what,omitzero"`        // snapshot: manifest or lock
	WorkflowID  NullString `json:"workflow_id,omitzero"` // handoff; outcome: the decision's
}

// Errors returned by Decode and Validate.
var (
	// ErrMalformed is returned when stored bytes are not a valid entry.
	ErrMalformed = errors.New("malformed entry")
	// ErrNotCanonical is returned when stored bytes parse but are not in
	// canonical form (their hash would not be reproducible).
	ErrNotCanonical = errors.New("entry bytes are not canonical")
	// ErrVersionMismatch is returned for an entry with another "v".
	ErrVersionMismatch = errors.New("entry version mismatch")
)

// Blob returns the SHA-256 of the bytes stored beside the entry — a
// handoff's payload, a snapshot's content — or nil for other kinds.
func (e *Entry) Blob() *Hash {
	switch e.Kind {
	case KindHandoff:
		return e.PayloadSHA256
	case KindSnapshot:
		return e.ContentSHA256
	}
	return nil
}

// Canonical returns the RFC 8785 canonical bytes of e. Entry's fields are
// declared in canonical key order and strings are escaped as JCS requires,
// so marshaling yields the canonical form directly (TestMarshalIsCanonical
// and FuzzCanonical hold it to the full canonicalizer); Inputs, carried
// verbatim, must itself be canonical.
func (e *Entry) Canonical() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if e.Inputs != nil {
		ci, err := strictjson.CanonicalizeBytes(e.Inputs)
		if err != nil || !bytes.Equal(ci, e.Inputs) {
			return nil, fmt.Errorf("%w: seq %d: inputs are not canonical JSON", ErrMalformed, e.Seq)
		}
	}
	c, err := e.marshal()
	if err != nil {
		return nil, fmt.Errorf("%w: seq %d: %v", ErrMalformed, e.Seq, err)
	}
	return c, nil
}

// marshal encodes e in field order, which is canonical key order.
func (e *Entry) marshal() ([]byte, error) {
	return json.Marshal(e, jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false))
}

// Validate checks that e has exactly the fields of its kind.
func (e *Entry) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: seq %d: %s", ErrMalformed, e.Seq, fmt.Sprintf(format, args...))
	}
	if e.V != Version {
		return fmt.Errorf("%w: seq %d has v=%d, want %d", ErrVersionMismatch, e.Seq, e.V, Version)
	}
	if e.Seq == 0 || e.Seq > strictjson.MaxSafeInteger || e.RedactedSeq > strictjson.MaxSafeInteger {
		return bad("seq out of range 1..2^53-1")
	}
	if e.DecisionSeq > strictjson.MaxSafeInteger {
		return bad("decision_seq out of range 1..2^53-1")
	}
	for _, n := range []*int64{e.PayloadSize, e.Size, e.DurationMS} {
		if n != nil && *n > strictjson.MaxSafeInteger {
			return bad("size beyond 2^53-1")
		}
	}
	if e.Time.IsZero() {
		return bad("time missing")
	}
	if e.Submitter != "" {
		if err := checkLabel(e.Submitter, 256); err != nil {
			return bad("submitter: %v", err)
		}
	}
	if e.IdempotencyKey != "" {
		if err := checkLabel(e.IdempotencyKey, 255); err != nil {
			return bad("idempotency_key: %v", err)
		}
	}
	if e.TraceParent != "" && !validTraceParent(e.TraceParent) {
		return bad("traceparent is not a W3C traceparent (version-traceid-parentid-flags, lowercase hex)")
	}
	// Fields of handoffs alone; fields handoffs and outcomes share; fields
	// of outcomes alone; of snapshots.
	handoffOnly := e.Format.Set || e.Decision != "" || e.Reasons != nil || e.HandoffID.Set || e.Source.Set ||
		e.Target.Set || e.PayloadSHA256 != nil || e.PayloadSize != nil ||
		e.ManifestSHA256 != nil || e.LockSHA256 != nil || e.Blocks != nil || e.Inputs != nil
	shared := e.WorkflowID.Set || e.IdempotencyKey != "" || e.TraceParent != ""
	outcome := e.DecisionSeq != 0 || e.Status != "" || e.OutputSHA256 != nil || e.DurationMS != nil
	handoff := handoffOnly || shared || outcome // anything a kind other than these two may not have
	snapshot := e.What != "" || e.ContentSHA256 != nil || e.Size != nil || e.Lifts != nil
	switch e.Kind {
	case KindHandoff:
		if outcome || snapshot || e.Agent != "" || e.RedactedSeq != 0 || e.OldKey != "" || e.NewKey != "" || e.Note != "" {
			return bad("handoff entry has fields of another kind")
		}
		if !e.Format.Set || !e.HandoffID.Set || !e.Source.Set || !e.Target.Set || !e.WorkflowID.Set ||
			e.Reasons == nil || e.PayloadSHA256 == nil || e.PayloadSize == nil ||
			e.ManifestSHA256 == nil || e.LockSHA256 == nil {
			return bad("handoff entry lacks a required field")
		}
		if e.Decision != reason.Accepted && e.Decision != reason.Rejected {
			return bad("decision %q", e.Decision)
		}
		if *e.PayloadSize < 0 {
			return bad("negative payload_size")
		}
		if want := reason.Decide(*e.Reasons); want != e.Decision {
			return bad("decision %q contradicts its reasons (%s)", e.Decision, want)
		}
	case KindOutcome:
		if handoffOnly || snapshot || e.RedactedSeq != 0 || e.OldKey != "" || e.NewKey != "" || e.Note != "" {
			return bad("outcome entry has fields of another kind")
		}
		if e.DecisionSeq == 0 || e.Status == "" || e.Agent == "" || !e.WorkflowID.Set {
			return bad("outcome entry needs decision_seq, status, agent and workflow_id")
		}
		if e.DecisionSeq >= e.Seq {
			return bad("outcome of decision seq %d, not an earlier entry", e.DecisionSeq)
		}
		if !ValidStatus(e.Status) {
			return bad("status %q: want succeeded, failed or cancelled", e.Status)
		}
		if e.DurationMS != nil && *e.DurationMS < 0 {
			return bad("negative duration_ms")
		}
	case KindSnapshot:
		if handoff || e.Agent != "" || e.RedactedSeq != 0 || e.OldKey != "" || e.NewKey != "" || e.Note != "" {
			return bad("snapshot entry has fields of another kind")
		}
		if (e.What != SnapshotManifest && e.What != SnapshotLock) || e.ContentSHA256 == nil || e.Size == nil || *e.Size < 0 {
			return bad("snapshot entry needs what (manifest|lock), content_sha256 and size")
		}
		if e.Lifts != nil {
			if e.What != SnapshotLock {
				return bad("lifts on a manifest snapshot")
			}
			for i, a := range *e.Lifts {
				if a == "" || (i > 0 && (*e.Lifts)[i-1] >= a) {
					return bad("lifts must be non-empty agent ids, sorted, without repeats")
				}
			}
		}
	case KindUnblock:
		if handoff || snapshot || e.RedactedSeq != 0 || e.OldKey != "" || e.NewKey != "" || e.Agent == "" || e.Note == "" {
			return bad("unblock entry needs exactly agent and note")
		}
	case KindRedaction:
		if handoff || snapshot || e.Agent != "" || e.OldKey != "" || e.NewKey != "" || e.RedactedSeq == 0 || e.Note == "" {
			return bad("redaction entry needs exactly redacted_seq and note")
		}
		if e.RedactedSeq >= e.Seq {
			return bad("redaction of a later entry")
		}
	case KindKeyRotation:
		if handoff || snapshot || e.Agent != "" || e.RedactedSeq != 0 || e.NewKey == "" || e.Note == "" {
			return bad("key_rotation entry needs new_key and note")
		}
	default:
		return bad("unknown kind %q", e.Kind)
	}
	return nil
}

// checkLabel accepts 1..max bytes of UTF-8 without control characters.
func checkLabel(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%d bytes, want at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return errors.New("contains a control character")
		}
	}
	return nil
}

// validTraceParent reports whether s is a W3C Trace Context traceparent:
// 2 hex version (not ff), 32 hex trace id (not all zero), 16 hex parent id
// (not all zero), 2 hex flags, lowercase, dash-separated.
func validTraceParent(s string) bool {
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s[3:35] != strings.Repeat("0", 32) && s[36:52] != strings.Repeat("0", 16)
}
