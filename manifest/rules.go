package manifest

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Limits on registry values. They keep error messages, snapshots and lock
// files small and make lookalike tricks impossible.
const (
	// MaxIDLength is the longest agent_id accepted.
	MaxIDLength = 64
	// MaxVersionLength is the longest agent_version accepted.
	MaxVersionLength = 64
	// MaxPathLength is the longest prompt_path accepted, in bytes.
	MaxPathLength = 1024
	// MaxFileSize is the largest manifest or SKILL.md read, in bytes.
	MaxFileSize = 8 << 20
	// MaxAgents is the most agents one registry may declare.
	MaxAgents = 100_000
)

// Request types an agent may narrow its targets' accepted requests to.
var requestTypes = map[string]bool{"query": true, "task": true, "analysis": true, "decision": true}

// CheckAgentID reports whether id is a canonical agent id: 1 to MaxIDLength
// bytes of ^[a-z0-9][a-z0-9-]*$. The grammar is ASCII only, so lookalike
// letters, normalization forms and case variants cannot name one agent
// twice. The error wraps ErrAgentID.
func CheckAgentID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrAgentID)
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrAgentID, len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Errorf("%w: %s: want lowercase ^[a-z0-9][a-z0-9-]*$", ErrAgentID, quote(id))
		}
	}
	return nil
}

// CheckVersion reports whether v is a strict semantic version
// (https://semver.org): MAJOR.MINOR.PATCH with an optional -prerelease and
// +build, no "v" prefix, no leading zeros, at most MaxVersionLength bytes.
// The error wraps ErrAgentVersion.
func CheckVersion(v string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s: %s", ErrAgentVersion, quote(v), why)
	}
	switch {
	case v == "":
		return fmt.Errorf("%w: empty", ErrAgentVersion)
	case len(v) > MaxVersionLength:
		return bad(fmt.Sprintf("longer than %d bytes", MaxVersionLength))
	case v[0] == 'v' || v[0] == 'V':
		return bad(`want MAJOR.MINOR.PATCH without a "v" prefix`)
	}
	core := v
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	// x/mod/semver also accepts the shorthands v1 and v1.2; a registry must not.
	if strings.Count(core, ".") != 2 || !semver.IsValid("v"+v) {
		return bad("want strict semantic version MAJOR.MINOR.PATCH (no leading zeros)")
	}
	return nil
}

// CheckPromptPath reports whether p is an acceptable prompt_path, lexically:
// relative, slash-separated, at most MaxPathLength bytes of printable ASCII,
// no empty, "." or ".." elements, no backslash, no NUL, no Windows reserved
// names, and local by filepath.IsLocal. Non-ASCII names are refused because
// NFC and NFD spellings (macOS) of one name cannot otherwise be told apart.
// Symbolic links are checked by Load, not here. The error wraps
// ErrPromptPath.
func CheckPromptPath(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s: %s", ErrPromptPath, quote(p), why)
	}
	if p == "" {
		return fmt.Errorf("%w: empty", ErrPromptPath)
	}
	if len(p) > MaxPathLength {
		return bad(fmt.Sprintf("longer than %d bytes", MaxPathLength))
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == 0:
			return bad("contains NUL")
		case c == '\\':
			return bad("contains a backslash; use /")
		case c < 0x20 || c == 0x7f:
			return bad("contains a control character")
		case c >= 0x80:
			return bad("contains non-ASCII bytes (NFC/NFD ambiguity)")
		}
	}
	if p[0] == '/' || (len(p) >= 2 && p[1] == ':') {
		return bad("absolute path; want a path relative to the registry folder")
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return bad(`".." leaves the registry folder`)
		}
		if elem == "." {
			return bad(`"." element; want a clean path`)
		}
	}
	if err := module.CheckFilePath(p); err != nil {
		return bad(strings.TrimPrefix(err.Error(), "malformed file path "+fmt.Sprintf("%q", p)+": "))
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return bad("not a local path")
	}
	return nil
}

// quote quotes s for an error message, shortened so hostile input cannot
// flood the output.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("%q", s)
}
