package lockfile

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/govledger/govledger/manifest"
)

// Class is the kind of a drift between a registry and its lock.
type Class string

// Drift classes. Their names are stable: CI rules and SARIF rule ids use them.
const (
	// Changed: the prompt file's bytes differ from the locked hash. Moved
	// prompts (same agent, another prompt_path) are Changed too, with
	// Finding.LockedPath set, even when the bytes are the same.
	Changed Class = "CHANGED"
	// MissingFile: a locked agent's prompt file does not exist.
	MissingFile Class = "MISSING_FILE"
	// Unlocked: an agent of the registry has no lock entry.
	Unlocked Class = "UNLOCKED"
	// StaleEntry: a lock entry names an agent the registry no longer has.
	StaleEntry Class = "STALE_ENTRY"
	// VersionDrift: the agent's version differs from the locked version.
	VersionDrift Class = "VERSION_DRIFT"
)

// Classes lists every class, in the order Check sorts findings of one agent.
var Classes = []Class{Changed, MissingFile, Unlocked, StaleEntry, VersionDrift}

// Finding is one drift, with the evidence to act on it.
type Finding struct {
	Class         Class  `json:"class"`
	AgentID       string `json:"agent_id"`
	PromptPath    string `json:"prompt_path"`              // the registry's path (the lock's, for STALE_ENTRY)
	LockedPath    string `json:"locked_path,omitempty"`    // set when the lock names another path
	LockedHash    string `json:"locked_hash,omitempty"`    // "sha256:..." from the lock
	ActualHash    string `json:"actual_hash,omitempty"`    // "sha256:..." of the file now
	LockedVersion string `json:"locked_version,omitempty"` // for VERSION_DRIFT
	AgentVersion  string `json:"agent_version,omitempty"`  // for VERSION_DRIFT
	// Cosmetic, for CHANGED, says when the only differences are line
	// endings (CRLF/LF), a UTF-8 byte order mark, trailing white space or
	// the final newline. It is a diagnosis: the finding is still drift.
	Cosmetic string `json:"cosmetic,omitempty"`
	Message  string `json:"message"`
}

// Report is the outcome of Check.
type Report struct {
	InSync   bool      `json:"in_sync"`
	Agents   int       `json:"agents"` // agents in the registry
	Findings []Finding `json:"findings"`
}

// Check compares reg with lk and reports every drift, sorted by agent id
// and class. Each distinct prompt file is read once through open (in
// parallel) and hashed as raw bytes; a file that is not byte-identical to
// the lock is CHANGED, whatever Diagnose says. A missing file
// (fs.ErrNotExist) is a MISSING_FILE finding; any other read failure is
// returned, joined, as *FileError values, with no report. A nil lk is an
// empty lock (every agent UNLOCKED).
func Check(reg *manifest.Registry, lk *Lock, open func(path string) ([]byte, error)) (*Report, error) {
	if lk == nil {
		lk = &Lock{Version: Version}
	}
	paths := distinctPaths(reg)
	index := make(map[string]int, len(paths))
	for i, p := range paths {
		index[p] = i
	}
	want := make([][][32]byte, len(paths))
	for _, a := range reg.Agents {
		if e, ok := lk.Lookup(a.ID); ok {
			if d, err := parseTagged(e.PromptHash); err == nil {
				i := index[a.PromptPath]
				if !slices.Contains(want[i], d) {
					want[i] = append(want[i], d)
				}
			}
		}
	}
	res := hashAll(paths, open, want)
	var errs []error
	for i, r := range res {
		if r.err != nil && !errors.Is(r.err, fs.ErrNotExist) {
			errs = append(errs, &FileError{Path: paths[i], Err: r.err})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	rep := &Report{Agents: len(reg.Agents), Findings: []Finding{}}
	inReg := make(map[string]bool, len(reg.Agents))
	for _, a := range reg.Agents {
		inReg[a.ID] = true
		r := res[index[a.PromptPath]]
		missing := r.err != nil
		actual := ""
		if !missing {
			actual = FormatDigest(r.sum)
		}
		e, ok := lk.Lookup(a.ID)
		if !ok {
			msg := "agent is not in the lock; run 'govledger lock' after review"
			if missing {
				msg += "; its prompt file does not exist either"
			}
			rep.Findings = append(rep.Findings, Finding{Class: Unlocked, AgentID: a.ID, PromptPath: a.PromptPath,
				ActualHash: actual, AgentVersion: a.Version, Message: msg})
			continue
		}
		moved := ""
		if e.PromptPath != a.PromptPath {
			moved = e.PromptPath
		}
		locked, _ := parseTagged(e.PromptHash)
		switch {
		case missing:
			msg := "prompt file does not exist"
			if moved != "" {
				msg += fmt.Sprintf(" (the lock has it at %s)", moved)
			}
			rep.Findings = append(rep.Findings, Finding{Class: MissingFile, AgentID: a.ID, PromptPath: a.PromptPath,
				LockedPath: moved, LockedHash: e.PromptHash, Message: msg})
		case r.sum != locked:
			f := Finding{Class: Changed, AgentID: a.ID, PromptPath: a.PromptPath, LockedPath: moved,
				LockedHash: e.PromptHash, ActualHash: actual, Cosmetic: r.cosmetic[locked]}
			f.Message = "prompt bytes differ from the lock"
			if moved != "" {
				f.Message = fmt.Sprintf("prompt moved from %s and its bytes differ from the lock", moved)
			}
			if f.Cosmetic != "" {
				f.Message += " (" + f.Cosmetic + "; still drift: the lock pins exact bytes)"
			}
			rep.Findings = append(rep.Findings, f)
		case moved != "":
			rep.Findings = append(rep.Findings, Finding{Class: Changed, AgentID: a.ID, PromptPath: a.PromptPath,
				LockedPath: moved, LockedHash: e.PromptHash, ActualHash: actual,
				Message: fmt.Sprintf("prompt moved from %s (bytes unchanged); run 'govledger lock'", moved)})
		}
		if e.AgentVersion != a.Version {
			rep.Findings = append(rep.Findings, Finding{Class: VersionDrift, AgentID: a.ID, PromptPath: a.PromptPath,
				LockedVersion: e.AgentVersion, AgentVersion: a.Version,
				Message: fmt.Sprintf("agent_version is %s, locked %s", a.Version, e.AgentVersion)})
		}
	}
	for id, e := range lk.Agents {
		if !inReg[id] {
			rep.Findings = append(rep.Findings, Finding{Class: StaleEntry, AgentID: id, PromptPath: e.PromptPath,
				LockedHash: e.PromptHash, LockedVersion: e.AgentVersion,
				Message: "the lock names an agent the registry does not have; run 'govledger lock'"})
		}
	}
	slices.SortFunc(rep.Findings, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.AgentID, b.AgentID),
			cmp.Compare(slices.Index(Classes, a.Class), slices.Index(Classes, b.Class)))
	})
	rep.InSync = len(rep.Findings) == 0
	return rep, nil
}

// Diagnose says how data differs from the bytes whose SHA-256 is locked,
// when the difference is cosmetic: line endings (CRLF/LF), a UTF-8 byte
// order mark, trailing white space, the final newline, or a combination.
// It tries those normalizations of data and compares hashes; it returns ""
// when none matches (a real content change) or when data already matches.
// The result is a diagnosis only: the lock pins exact bytes.
func Diagnose(data []byte, locked [32]byte) string {
	if sha256.Sum256(data) == locked || len(data) > MaxPromptSize {
		return ""
	}
	bom := []byte("\xef\xbb\xbf")
	type step struct {
		name, detail string
		apply        func([]byte) []byte
	}
	hasCRLF := bytes.Contains(data, []byte("\r\n"))
	hasLF := bytes.Count(data, []byte("\n")) > bytes.Count(data, []byte("\r\n"))
	var eols, boms, wss, finals []step
	eols = append(eols, step{})
	if hasCRLF {
		eols = append(eols, step{"line endings", "CRLF in the file, LF when locked", toLF})
	}
	if hasLF {
		eols = append(eols, step{"line endings", "LF in the file, CRLF when locked", toCRLF})
	}
	boms = append(boms, step{})
	if bytes.HasPrefix(data, bom) {
		boms = append(boms, step{"UTF-8 BOM", "in the file, not when locked", func(b []byte) []byte { return b[len(bom):] }})
	} else {
		boms = append(boms, step{"UTF-8 BOM", "when locked, not in the file", func(b []byte) []byte { return append(slices.Clip(bom), b...) }})
	}
	wss = append(wss, step{})
	if !bytes.Equal(trimTrailingSpace(data), data) {
		wss = append(wss, step{"trailing white space", "added at line ends", trimTrailingSpace})
	}
	finals = append(finals, step{})
	if bytes.HasSuffix(data, []byte("\n")) {
		finals = append(finals, step{"final newline", "added", func(b []byte) []byte {
			b = bytes.TrimSuffix(b, []byte("\n"))
			return bytes.TrimSuffix(b, []byte("\r"))
		}})
	}
	finals = append(finals, step{"final newline", "removed", func(b []byte) []byte {
		if bytes.Contains(b, []byte("\r\n")) {
			return append(slices.Clip(b), '\r', '\n')
		}
		return append(slices.Clip(b), '\n')
	}})
	var best []step
	for _, e := range eols {
		for _, bo := range boms {
			for _, w := range wss {
				for _, f := range finals {
					chain := []step{e, bo, w, f}
					b := data
					var used []step
					for _, s := range chain {
						if s.apply != nil {
							b = s.apply(b)
							used = append(used, s)
						}
					}
					if len(used) == 0 || (best != nil && len(used) >= len(best)) {
						continue
					}
					if sha256.Sum256(b) == locked {
						best = used
					}
				}
			}
		}
	}
	switch len(best) {
	case 0:
		return ""
	case 1:
		return best[0].name + " only: " + best[0].detail
	}
	names := make([]string, len(best))
	details := make([]string, len(best))
	for i, s := range best {
		names[i] = s.name
		details[i] = s.name + ": " + s.detail
	}
	return strings.Join(names, " and ") + " only (" + strings.Join(details, "; ") + ")"
}

func toLF(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) }

func toCRLF(b []byte) []byte {
	return bytes.ReplaceAll(toLF(b), []byte("\n"), []byte("\r\n"))
}

// trimTrailingSpace removes spaces and tabs before each line end and at the
// end of the data, keeping the line ends.
func trimTrailingSpace(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		line, rest, found := bytes.Cut(b, []byte("\n"))
		cr := bytes.HasSuffix(line, []byte("\r"))
		line = bytes.TrimRight(bytes.TrimSuffix(line, []byte("\r")), " \t")
		out = append(out, line...)
		if cr {
			out = append(out, '\r')
		}
		if found {
			out = append(out, '\n')
		}
		b = rest
	}
	return out
}
