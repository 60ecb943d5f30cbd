package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/govledger/govledger/internal/strictjson"
)

// Subagents folders (Claude Code's .claude/agents/).
//
// A subagents registry is a folder of Markdown files, one per Claude Code
// subagent: YAML front matter with name and description (Claude Code's
// required keys; tools, model and any other key of Claude Code are
// ignored), then the body, which is the subagent's system prompt. The
// whole file is the agent's prompt: the lock pins its bytes, like a
// SKILL.md, so an edited subagent file that is not locked again is a
// HASH_MISMATCH.
//
//   - agent_id is the front matter's name, which must equal the file name
//     without ".md";
//   - prompt_path is "<name>.md";
//   - agent_type (default "domain"), version (default DefaultSkillVersion)
//     and vbw_role are optional top-level keys, as in a SKILL.md;
//   - a subagent accepts handoffs (Claude Code lets any agent call any
//     subagent) unless it has a handoff block, which is read exactly as a
//     SKILL.md's (accepts_handoff, handoff_to, request_types, ...).
//
// Files without front matter (a README.md) are skipped; a front matter
// without name or description is an error. A folder that holds no
// subagent file is an error (ErrNoAgents): it names what was looked for.

// SubagentsRegistry is the "registry" member that marks the snapshot of a
// subagents folder.
const SubagentsRegistry = "claude-agents"

// ErrNoAgents is returned for a registry folder that holds no agent.
var ErrNoAgents = errors.New("no agents in the registry folder")

// ParseSubagents builds a registry from the files of a Claude Code
// subagents folder dir (used for Registry.Dir and in errors; not
// accessed). Each file's Path is its name in the folder ("reviewer.md").
// Agents are sorted by path; every problem is reported together as an
// ErrorList. The registry's Snapshot is its canonical JSON, with
// "registry": "claude-agents" (see ParseSnapshot).
func ParseSubagents(dir string, files []SkillFile) (*Registry, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b SkillFile) int { return strings.Compare(a.Path, b.Path) })
	var (
		errs   ErrorList
		agents []Agent
		locs   []map[string]site
		names  []string
	)
	for _, f := range files {
		name := f.Path
		if dir != "" {
			name = filepath.Join(dir, filepath.FromSlash(f.Path))
		}
		stem, ok := strings.CutSuffix(f.Path, ".md")
		if !ok || stem == "" || strings.Contains(f.Path, "/") || CheckPromptPath(f.Path) != nil {
			errs = append(errs, &Error{File: name, Err: fmt.Errorf("%w: subagent files are <name>.md, got %s", ErrSkill, quote(f.Path))})
			continue
		}
		a, ok, at, ferrs := parseAgentFile(name, f.Path, f.Data, true)
		errs = append(errs, ferrs...)
		if !ok || len(ferrs) > 0 {
			continue
		}
		if a.ID != stem {
			s := at["agent_id"]
			errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field,
				Err: fmt.Errorf("%w: name %s must equal its file name without .md, %s", ErrSkill, quote(a.ID), quote(stem))})
			continue
		}
		agents = append(agents, a)
		locs = append(locs, at)
		names = append(names, name)
	}
	if len(agents) == 0 && len(errs) == 0 {
		errs = append(errs, &Error{File: dir, Err: fmt.Errorf("%w: looked for Claude Code subagent files (<name>.md with front matter naming name and description) in the folder, found none", ErrNoAgents)})
	}
	if len(agents) > MaxAgents {
		errs = append(errs, &Error{File: dir, Err: fmt.Errorf("%w: %d subagents, limit %d", ErrTooLarge, len(agents), MaxAgents)})
	}
	errs = append(errs, validate(agents, func(i int, field string) site {
		return locateSkill(names[i], locs[i], field)
	})...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	snap, err := strictjson.Canonical(skillsSnapshot{Registry: SubagentsRegistry, SnapshotVersion: 1, Agents: nilIfEmpty(agents)})
	if err != nil {
		return nil, ErrorList{{File: dir, Err: fmt.Errorf("%w: %v", ErrSnapshot, err)}}
	}
	return &Registry{Agents: agents, Dir: dir, FromSkills: true, FromSubagents: true, Snapshot: snap}, nil
}

// loadSubagents reads the *.md files of a subagents folder (top level
// only; symbolic links refused).
func loadSubagents(dir string, root *os.Root, entries []fs.DirEntry) (*Registry, error) {
	files, err := readFlat(dir, root, entries, ".md", "subagent file")
	if err != nil {
		return nil, err
	}
	return ParseSubagents(dir, files)
}

// readFlat reads the files of a registry folder whose names end in suffix
// (top level only): a symbolic link is refused as a path escape, a file
// over MaxFileSize as too large, each naming the file (what names its kind
// in the message); other entries are skipped.
func readFlat(dir string, root *os.Root, entries []fs.DirEntry, suffix, what string) ([]SkillFile, error) {
	var (
		files []SkillFile
		errs  ErrorList
	)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			errs = append(errs, &Error{File: filepath.Join(dir, name),
				Err: fmt.Errorf("%w: %s %s is a symbolic link", ErrPathEscape, what, quote(name))})
			continue
		case !e.Type().IsRegular():
			continue
		}
		fi, err := root.Lstat(name)
		if err != nil {
			return nil, err
		}
		if fi.Size() > MaxFileSize {
			errs = append(errs, &Error{File: filepath.Join(dir, name),
				Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), MaxFileSize)})
			continue
		}
		data, err := root.ReadFile(name)
		if err != nil {
			return nil, err
		}
		files = append(files, SkillFile{Path: name, Data: data})
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return files, nil
}
