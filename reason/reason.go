// Package reason defines the stable reason codes of govledger decisions.
//
// A Reason explains one finding about a handoff. Codes are part of the
// ledger's on-disk contract: once released, a code is never renamed or given
// another meaning. A decision is rejected when any reason has severity error
// or critical; warnings alone leave it accepted.
package reason

// Code is a stable, upper-case reason code.
type Code string

// Reason codes. docs/reference/formats.md holds the table of what triggers each and what to do.
const (
	SchemaInvalid       Code = "SCHEMA_INVALID"
	UnknownAgent        Code = "UNKNOWN_AGENT"
	HashMismatch        Code = "HASH_MISMATCH"
	VersionMismatch     Code = "VERSION_MISMATCH"
	TypeMismatch        Code = "TYPE_MISMATCH"
	CompositionInvalid  Code = "COMPOSITION_INVALID"
	BoundaryViolation   Code = "BOUNDARY_VIOLATION"
	InvalidRequestType  Code = "INVALID_REQUEST_TYPE"
	InvalidTimestamp    Code = "INVALID_TIMESTAMP"
	ClockSkew           Code = "CLOCK_SKEW"
	Stale               Code = "STALE"
	Expired             Code = "EXPIRED"
	Replay              Code = "REPLAY"
	InvalidID           Code = "INVALID_ID"
	AttestationMismatch Code = "ATTESTATION_MISMATCH"
	AgentBlocked        Code = "AGENT_BLOCKED"
	HandoffLoop         Code = "HANDOFF_LOOP"
	ChecksumMismatch    Code = "CHECKSUM_MISMATCH"
	DeliverableMissing  Code = "DELIVERABLE_MISSING"
	PathEscape          Code = "PATH_ESCAPE"
	PayloadTooLarge     Code = "PAYLOAD_TOO_LARGE"
	Unparseable         Code = "UNPARSEABLE"
	// Codes beyond the initial set.
	UnknownFormat      Code = "UNKNOWN_FORMAT"      // no format matched, or more than one did
	MarkdownFallback   Code = "MARKDOWN_FALLBACK"   // vbw/1 message that is not JSON (warning; error under --strict)
	SessionUnreadable  Code = "SESSION_UNREADABLE"  // swarm/2 session_path missing or unreadable
	PerspectiveCount   Code = "PERSPECTIVE_COUNT"   // swarm/2 perspectives_completed differs from the session
	PayloadSize        Code = "PAYLOAD_SIZE"        // swarm/2 payload_size_bytes differs from the bytes
	IneligibleTarget   Code = "INELIGIBLE_TARGET"   // swarm/2 target is not an accepts_handoff skill
	CountsInconsistent Code = "COUNTS_INCONSISTENT" // vbw/1 qa_result passed+failed != total, failures on PASS
	AgentsRequired     Code = "AGENTS_REQUIRED"     // vbw/1, task/1 recorded without --from/--to
	IDConflict         Code = "ID_CONFLICT"         // a handoff_id already accepted with other bytes
	NewerVersion       Code = "NEWER_VERSION"       // skill/1 version above 1.0: unknown fields ignored (warning)
	RequiresMissing    Code = "REQUIRES_MISSING"    // swarm/2 payload lacks a field the target skill's requires: names
	CategoryMismatch   Code = "CATEGORY_MISMATCH"   // swarm/2 target.category is not one of the target skill's handoff_categories
	RoleMismatch       Code = "ROLE_MISMATCH"       // vbw/1 sender or receiver lacks the role seed 001 names for the message type
	EntryTooLarge      Code = "ENTRY_TOO_LARGE"     // the reasons would not fit a ledger entry (tlog-tiles: 65,535 bytes): recorded compact
	ParseLimit         Code = "PARSE_LIMIT"         // a document over a parse cap (lines, values): not read
)

// Severity grades a Reason.
type Severity string

// Severities, from most to least severe.
const (
	Critical Severity = "critical"
	Error    Severity = "error"
	Warning  Severity = "warning"
)

// Reason is one finding. Field is a dotted path into the document (for
// example "source_agent.prompt_hash"), or "" when the finding concerns the
// whole document.
// Its fields are declared in RFC 8785 key order (code, field, message,
// severity), so marshaling it yields canonical bytes.
type Reason struct {
	Code     Code     `json:"code"`
	Field    string   `json:"field"`
	Message  string   `json:"message"`
	Severity Severity `json:"severity"`
}

// Rejects reports whether r makes a decision rejected.
func (r Reason) Rejects() bool { return r.Severity == Critical || r.Severity == Error }

// Decision values as stored in the ledger.
const (
	Accepted = "accepted"
	Rejected = "rejected"
)

// Decide returns Rejected when any reason rejects, else Accepted.
func Decide(rs []Reason) string {
	for _, r := range rs {
		if r.Rejects() {
			return Rejected
		}
	}
	return Accepted
}

// Codes returns the codes of rs in order.
func Codes(rs []Reason) []Code {
	out := make([]Code, len(rs))
	for i, r := range rs {
		out[i] = r.Code
	}
	return out
}
