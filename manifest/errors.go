package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned, wrapped in *Error, by Parse, ParseSkills, ParseSnapshot
// and Load. Test with errors.Is; the wrapping error carries the detail.
var (
	// ErrSyntax is returned when the document is not strict JSON (duplicate
	// names, unknown or mistyped fields, trailing data, invalid UTF-8, a
	// byte order mark, numbers outside +-(2^53-1), nesting too deep) or not
	// strict YAML front matter (anchors, aliases, tags, merge keys, a second
	// document, duplicate or non-string keys).
	ErrSyntax = errors.New("syntax")
	// ErrTooLarge is returned for a manifest or SKILL.md over MaxFileSize.
	ErrTooLarge = errors.New("file too large")
	// ErrVersion is returned when manifest_version is missing or not 1.
	ErrVersion = errors.New("unsupported manifest_version")
	// ErrMissing is returned when a required field is missing or empty.
	ErrMissing = errors.New("required field missing")
	// ErrAgentID is returned for an agent_id outside ^[a-z0-9][a-z0-9-]*$ or
	// longer than MaxIDLength.
	ErrAgentID = errors.New("invalid agent_id")
	// ErrDuplicate is returned for an agent_id declared twice (also when the
	// two differ only by case), and for a repeated list element.
	ErrDuplicate = errors.New("duplicate")
	// ErrAgentType is returned for an agent_type other than domain,
	// archetype or orchestrator.
	ErrAgentType = errors.New("invalid agent_type")
	// ErrAgentVersion is returned for an agent_version that is not strict
	// semantic versioning (MAJOR.MINOR.PATCH, no "v", no leading zeros).
	ErrAgentVersion = errors.New("invalid agent_version")
	// ErrComposition is returned for a composition on a non-archetype, an
	// archetype without one, a component that is not an existing domain
	// agent, a percent that is not a positive integer, or percents that do
	// not sum to exactly 100.
	ErrComposition = errors.New("invalid composition")
	// ErrReference is returned when handoff_to names an unknown agent or the
	// agent itself.
	ErrReference = errors.New("unknown agent reference")
	// ErrRequestType is returned for a request type outside query, task,
	// analysis, decision.
	ErrRequestType = errors.New("invalid request type")
	// ErrVBWRole is returned for a vbw_role outside VBWRoles.
	ErrVBWRole = errors.New("invalid vbw_role")
	// ErrPromptPath is returned for a prompt_path that is not a clean,
	// relative, slash-separated ASCII path inside the registry folder, or
	// that collides by case with another agent's prompt_path.
	ErrPromptPath = errors.New("invalid prompt_path")
	// ErrPathEscape is returned by Load when a prompt_path (or a skill
	// folder) resolves, through symbolic links, outside the registry
	// folder, or is not a regular file.
	ErrPathEscape = errors.New("prompt path escapes the registry folder")
	// ErrSkill is returned for a SKILL.md whose handoff block breaks the
	// skill eligibility rules (seed 000): accepts_handoff not true, no
	// handoff_categories, no handoff_description, an unknown key, a name that
	// is not its folder's name.
	ErrSkill = errors.New("invalid skill handoff metadata")
	// ErrAgentCard is returned for a file of an Agent Cards folder that is
	// not an A2A Agent Card (a required member missing or of the wrong
	// type), or whose file name is not a canonical agent id.
	ErrAgentCard = errors.New("invalid A2A agent card")
	// ErrSnapshot is returned by ParseSnapshot for bytes that are neither a
	// manifest nor a canonical skills snapshot.
	ErrSnapshot = errors.New("invalid registry snapshot")
)

// Error is one problem at a place in a registry file.
type Error struct {
	File  string // file name as given to the parser (or the SKILL.md path)
	Line  int    // 1-based; 0 when unknown
	Col   int    // 1-based, in bytes; 0 when unknown
	Field string // JSON-pointer-like path of the field, e.g. "agents/3/agent_version"; may be empty
	Err   error  // wraps one of the sentinels above, with detail
}

// Error formats e as "file:line:col: field: err", leaving out the parts
// that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	switch {
	case e.Line > 0 && e.Col > 0:
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Col)
	case e.Line > 0:
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the wrapped error, so errors.Is finds the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// ErrorList is every problem found in one registry, in file order.
type ErrorList []*Error

// Error returns the errors one per line.
func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap returns the list's errors, so errors.Is and errors.As look into
// every one of them.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}
