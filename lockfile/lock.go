package lockfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/manifest"
)

// Version is the only lock_version this package reads and writes.
const Version = 1

// MaxLockSize is the largest lock file Parse accepts, in bytes.
const MaxLockSize = 64 << 20

// Lock is a prompt-lock.json: the reviewed state of every agent's prompt.
type Lock struct {
	Version int              // lock_version; always Version
	Agents  map[string]Entry // by agent_id
}

// Entry is one agent's locked prompt.
type Entry struct {
	AgentVersion string // agent_version when locked
	PromptPath   string // slash-separated, relative to the registry folder
	PromptHash   string // "sha256:" and 64 lowercase hex digits of the raw file bytes
}

// Lookup returns the entry of agentID. It is safe on a nil Lock.
func (l *Lock) Lookup(agentID string) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	e, ok := l.Agents[agentID]
	return e, ok
}

type rawLock struct {
	LockVersion *int64               `json:"lock_version"`
	Agents      *map[string]rawEntry `json:"agents"`
}

type rawEntry struct {
	AgentVersion string `json:"agent_version"`
	PromptPath   string `json:"prompt_path"`
	PromptHash   string `json:"prompt_hash"`
}

// Parse parses a prompt-lock.json strictly; name is used only in error
// messages. It refuses what strictjson refuses (duplicate names, unknown
// fields, trailing data, invalid UTF-8, a byte order mark, unsafe numbers),
// a lock_version other than 1, agent ids, versions and prompt paths that the
// manifest rules refuse, and prompt hashes that are not "sha256:" and 64
// lowercase hex digits. Every problem is reported: the error is a
// manifest.ErrorList whose *manifest.Error values wrap this package's
// sentinels and carry line, column and field. Parse accepts any formatting;
// Marshal writes the one canonical form.
func Parse(name string, data []byte) (*Lock, error) {
	if len(data) > MaxLockSize {
		return nil, manifest.ErrorList{{File: name, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxLockSize)}}
	}
	var raw rawLock
	if err := strictjson.Unmarshal(name, data, &raw); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			return nil, manifest.ErrorList{{File: name, Line: se.Line, Col: se.Column, Field: se.Pointer,
				Err: fmt.Errorf("%w: %s", ErrSyntax, se.Msg)}}
		}
		return nil, manifest.ErrorList{{File: name, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}}
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); t[0] != '{' {
		return nil, manifest.ErrorList{{File: name, Line: 1, Col: 1, Err: fmt.Errorf("%w: want a JSON object", ErrSyntax)}}
	}
	pos := strictjson.NewPositions(data)
	var errs manifest.ErrorList
	add := func(ptr string, err error) {
		line, col := pos.At(ptr)
		errs = append(errs, &manifest.Error{File: name, Line: line, Col: col, Field: ptr, Err: err})
	}
	switch {
	case raw.LockVersion == nil:
		add("", fmt.Errorf("%w: lock_version is missing; want %d", ErrVersion, Version))
	case *raw.LockVersion != Version:
		add("/lock_version", fmt.Errorf("%w: %d; want %d", ErrVersion, *raw.LockVersion, Version))
	}
	if raw.Agents == nil {
		add("", fmt.Errorf("%w: agents is missing", ErrEntry))
		return nil, errs
	}
	lk := &Lock{Version: Version, Agents: make(map[string]Entry, len(*raw.Agents))}
	ids := make([]string, 0, len(*raw.Agents))
	for id := range *raw.Agents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := (*raw.Agents)[id]
		ptr := "/agents/" + escapePointer(id)
		if err := manifest.CheckAgentID(id); err != nil {
			add(ptr, fmt.Errorf("%w: %w", ErrEntry, err))
		}
		if e.AgentVersion == "" {
			add(ptr+"/agent_version", fmt.Errorf("%w: agent_version is missing", ErrEntry))
		} else if err := manifest.CheckVersion(e.AgentVersion); err != nil {
			add(ptr+"/agent_version", fmt.Errorf("%w: %w", ErrEntry, err))
		}
		if e.PromptPath == "" {
			add(ptr+"/prompt_path", fmt.Errorf("%w: prompt_path is missing", ErrEntry))
		} else if err := manifest.CheckPromptPath(e.PromptPath); err != nil {
			add(ptr+"/prompt_path", fmt.Errorf("%w: %w", ErrEntry, err))
		}
		if _, err := parseTagged(e.PromptHash); err != nil {
			add(ptr+"/prompt_hash", err)
		}
		lk.Agents[id] = Entry(e)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return lk, nil
}

// Marshal returns the lock's canonical bytes: lock_version first, agents
// sorted by id, each entry's fields in the order agent_version, prompt_path,
// prompt_hash, two-space indentation and a final newline. The same lock
// always gives the same bytes, so an unchanged registry rewrites an
// identical file and git diffs show only real changes. Parse(Marshal(l))
// equals l for every lock that Parse returns.
func (l *Lock) Marshal() []byte {
	ids := make([]string, 0, len(l.Agents))
	for id := range l.Agents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b []byte
	b = append(b, "{\n  \"lock_version\": "...)
	b = strconv.AppendInt(b, int64(l.Version), 10)
	b = append(b, ",\n  \"agents\": {"...)
	for i, id := range ids {
		e := l.Agents[id]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendString(b, id)
		b = append(b, ": {\n      \"agent_version\": "...)
		b = appendString(b, e.AgentVersion)
		b = append(b, ",\n      \"prompt_path\": "...)
		b = appendString(b, e.PromptPath)
		b = append(b, ",\n      \"prompt_hash\": "...)
		b = appendString(b, e.PromptHash)
		b = append(b, "\n    }"...)
	}
	if len(ids) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "}\n}\n"...)
	return b
}

// appendString appends s as a JSON string: '"', '\\' and control
// characters escaped, invalid UTF-8 replaced by U+FFFD (Parse never returns
// such a string; Marshal must still emit valid JSON for any Lock).
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// ChangedAgents returns the agents whose locked prompt hash differs
// between locks a and b: locked in one and not the other, or locked with
// another hash. The result is sorted. A new lock in force lifts the blocks
// of exactly these agents (their prompt was reviewed again); a re-lock
// that leaves an agent's hash as it was lifts nothing.
func ChangedAgents(a, b *Lock) []string {
	var out []string
	for id, ea := range a.Agents {
		if eb, ok := b.Agents[id]; !ok || eb.PromptHash != ea.PromptHash {
			out = append(out, id)
		}
	}
	for id := range b.Agents {
		if _, ok := a.Agents[id]; !ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ChangedBytes parses two lockfiles' bytes and returns ChangedAgents. It
// has the shape of ledger.Request.LockChanges.
func ChangedBytes(a, b []byte) ([]string, error) {
	la, err := Parse("lock in force", a)
	if err != nil {
		return nil, err
	}
	lb, err := Parse("new lock", b)
	if err != nil {
		return nil, err
	}
	return ChangedAgents(la, lb), nil
}
