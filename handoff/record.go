package handoff

import (
	"strings"

	"github.com/govledger/govledger/reason"
)

// Format identifies one of the six handoff formats.
type Format string

// The handoff formats (see docs/reference/formats.md).
const (
	Governed Format = "governed/1" // seed 003: JSON, source_agent/target_agent
	Swarm    Format = "swarm/2"    // seed 000: YAML, handoff.source.skill/handoff.target.skill
	Skill    Format = "skill/1"    // seed 002: YAML, handoff.source_skill/handoff.target_skill
	VBW      Format = "vbw/1"      // seed 001: JSON with "type"; markdown fallback; --from/--to
	Task     Format = "task/1"     // seed 004: YAML under "## Handoff" in markdown; --from/--to
	A2A      Format = "a2a/1"      // A2A 0.3.0 Message or SendMessageRequest: JSON; metadata or --from/--to
)

// Formats lists every format in detection order.
var Formats = []Format{Governed, Swarm, Skill, VBW, Task, A2A}

// AgentRef is an agent as a handoff document names it. Fields the format
// does not carry are empty.
type AgentRef struct {
	ID         string
	Type       string // governed/1 only
	Version    string // governed/1 only
	PromptHash string // as written: bare hex or "sha256:hex"; governed/1 only
}

// Attestation is the governed/1 "governance" block: claims to check.
type Attestation struct {
	SourceAgentVerified *bool
	TargetAgentVerified *bool
	CompositionValid    *bool
	BoundariesRespected *bool
	AuditTrail          string
}

// Record is a handoff normalized across formats. Parse always returns one,
// even for bytes that are not a handoff at all (then Format may be "" and
// Findings holds UNPARSEABLE or UNKNOWN_FORMAT).
type Record struct {
	Format     Format
	HandoffID  string // "" when the format or document has none
	Source     AgentRef
	Target     AgentRef
	WorkflowID string
	// Timestamp is the document's own timestamp text as written ("" if none).
	Timestamp string
	// RequestType is governed/1 context.request.type ("" otherwise).
	RequestType string
	// Attestation is governed/1's governance block (nil otherwise).
	Attestation *Attestation
	// MissingFields lists the dotted paths of required fields the document
	// lacks, in document order (also reported as SCHEMA_INVALID findings).
	MissingFields []string
	// SessionPath is swarm/2 handoff.source.session_path as written ("" for
	// other formats); SeedError uses it for payload_preserved.
	SessionPath string
	// Findings are the format's own rule violations, with stable codes.
	// Governance rules (registry, lock, boundaries) are not checked here.
	Findings []reason.Reason
	// MessageType is the vbw/1 message "type" ("" for other formats and
	// for a markdown message).
	MessageType string
	// Raw is the document exactly as submitted.
	Raw []byte

	// root is the parsed swarm/2 document, for Text and HasValue.
	root *node
}

// Text returns the string at the dotted member path of a swarm/2 document
// (for example "handoff.target.category"), whatever its length; ok is
// false when the member is absent or not a string, and for other formats.
// The policy uses it for rules that need the registry; a value it returns
// is the document's and must not be copied into a message.
func (r *Record) Text(path string) (string, bool) {
	n := r.lookup(path)
	if n == nil || n.kind != kString {
		return "", false
	}
	return n.text, true
}

// HasValue reports whether the dotted member path of a swarm/2 document
// holds a value: present, not null, not an empty or blank string, not an
// empty list or mapping. It is false for other formats.
func (r *Record) HasValue(path string) bool {
	n := r.lookup(path)
	switch {
	case n == nil || n.big || n.kind == kNull:
		return false
	case n.kind == kString:
		return strings.TrimSpace(n.text) != ""
	case n.kind == kArray:
		return len(n.items) > 0
	case n.kind == kObject:
		return len(n.keys) > 0
	}
	return true
}

func (r *Record) lookup(path string) *node {
	if r == nil || r.root == nil || path == "" {
		return nil
	}
	n := r.root
	for _, k := range strings.Split(path, ".") {
		m, ok := n.member(k)
		if !ok {
			return nil
		}
		n = m
	}
	return n
}

// Observation is one fact about the file system that a format rule needed
// (seed 000 session_path, seed 002 deliverable.location, …). Observations
// are recorded in the ledger entry so verify can re-evaluate the decision
// without the files.
type Observation struct {
	Op      string `json:"op"`   // "file" (read and hash) or "dir" (list)
	Path    string `json:"path"` // as written in the document
	Escapes bool   `json:"escapes,omitzero"`
	Exists  bool   `json:"exists,omitzero"`
	IsDir   bool   `json:"is_dir,omitzero"`
	Size    int64  `json:"size,omitzero"`
	// SHA256 is the lowercase hex SHA-256 of a file's bytes (op "file").
	SHA256 string `json:"sha256,omitzero"`
	// Names are the entries of a directory (op "dir"), sorted.
	Names []string `json:"names,omitzero"`
	// Err is why the path could not be read, if it exists but could not be.
	Err string `json:"err,omitzero"`
}

// Env answers file-system questions for format rules. Paths are as written
// in the document; an Env resolves them against its root and reports
// Escapes for any path that would leave it (including through symlinks).
type Env interface {
	// Observe returns what op ("file" or "dir") finds at path.
	Observe(op, path string) Observation
}
