package manifest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/internal/strictjson"
)

// Agent Cards folders (A2A).
//
// An Agent Cards registry is a folder of A2A Agent Cards (A2A 0.3.0,
// section 5.5, the JSON a server publishes at
// /.well-known/agent-card.json), one file per agent, named
// "<agent_id>.json". The card stands in the agent's registry entry, and
// the whole file is the agent's prompt: the lock pins the SHA-256 of its
// bytes, like a SKILL.md's, so a card edited (a skill added, a URL
// changed) but not locked again is drift (lock check) and, for a handoff
// that quotes the card's hash, a HASH_MISMATCH.
//
//   - agent_id is the file name without ".json" (a card's name is
//     human-readable: "Recipe Agent"), which must be a canonical agent id;
//   - prompt_path is "<agent_id>.json";
//   - agent_type is "domain"; agent_version is the card's version when it
//     is a semantic version, else DefaultSkillVersion (the specification
//     leaves the card's version format to the provider);
//   - every card agent accepts handoffs (A2A: any client may send a
//     message to an agent that publishes a card) and declares no
//     handoff_to list, so any card agent may hand off to any other.
//
// A card is strict JSON (internal/strictjson) with the members A2A 0.3.0
// requires (protocolVersion, name, description, url, version,
// capabilities, defaultInputModes, defaultOutputModes, skills) of their
// types; other members are the card's own and not checked. A folder with no
// card is an error (ErrNoAgents).

// CardsRegistry is the "registry" member that marks the snapshot of an
// Agent Cards folder.
const CardsRegistry = "a2a-cards"

// cardRequired are the members of an AgentCard that A2A 0.3.0 requires
// (specification/json/a2a.json, AgentCard.required), with their JSON kinds.
var cardRequired = []struct {
	name string
	kind jsontext.Kind // '"' string, '{' object, '[' array
}{
	{"protocolVersion", '"'}, {"name", '"'}, {"description", '"'}, {"url", '"'}, {"version", '"'},
	{"capabilities", '{'}, {"defaultInputModes", '['}, {"defaultOutputModes", '['}, {"skills", '['},
}

// ParseAgentCards builds a registry from the files of an Agent Cards
// folder dir (used for Registry.Dir and in errors; not accessed). Each
// file's Path is its name in the folder ("router.json"). Agents are sorted
// by path; every problem is reported together as an ErrorList. The
// registry's Snapshot is its canonical JSON, with "registry": "a2a-cards"
// (see ParseSnapshot).
func ParseAgentCards(dir string, files []SkillFile) (*Registry, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b SkillFile) int { return strings.Compare(a.Path, b.Path) })
	var (
		errs   ErrorList
		agents []Agent
		names  []string
	)
	for _, f := range files {
		name := f.Path
		if dir != "" {
			name = filepath.Join(dir, filepath.FromSlash(f.Path))
		}
		a, ferrs := parseCard(name, f.Path, f.Data)
		errs = append(errs, ferrs...)
		if len(ferrs) > 0 {
			continue
		}
		agents = append(agents, a)
		names = append(names, name)
	}
	if len(agents) == 0 && len(errs) == 0 {
		errs = append(errs, &Error{File: dir, Err: fmt.Errorf("%w: looked for A2A Agent Cards (<agent_id>.json) in the folder, found none", ErrNoAgents)})
	}
	if len(agents) > MaxAgents {
		errs = append(errs, &Error{File: dir, Err: fmt.Errorf("%w: %d agent cards, limit %d", ErrTooLarge, len(agents), MaxAgents)})
	}
	errs = append(errs, validate(agents, func(i int, field string) site {
		return site{file: names[i], line: 1, col: 1}
	})...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	snap, err := strictjson.Canonical(skillsSnapshot{Registry: CardsRegistry, SnapshotVersion: 1, Agents: nilIfEmpty(agents)})
	if err != nil {
		return nil, ErrorList{{File: dir, Err: fmt.Errorf("%w: %v", ErrSnapshot, err)}}
	}
	return &Registry{Agents: agents, Dir: dir, FromSkills: true, FromAgentCards: true, Snapshot: snap}, nil
}

// parseCard reads one Agent Card file, named file (for errors), at
// promptPath in the folder.
func parseCard(file, promptPath string, data []byte) (Agent, ErrorList) {
	fail := func(line, col int, field string, err error) (Agent, ErrorList) {
		return Agent{}, ErrorList{{File: file, Line: line, Col: col, Field: field, Err: err}}
	}
	stem, ok := strings.CutSuffix(promptPath, ".json")
	switch {
	case !ok || strings.Contains(promptPath, "/") || CheckPromptPath(promptPath) != nil:
		return fail(0, 0, "", fmt.Errorf("%w: agent card files are <agent_id>.json, got %s", ErrAgentCard, quote(promptPath)))
	case CheckAgentID(stem) != nil:
		return fail(0, 0, "", fmt.Errorf("%w: file name %s: the agent_id is the file name without .json, and %v", ErrAgentCard, quote(promptPath), CheckAgentID(stem)))
	case len(data) > MaxFileSize:
		return fail(0, 0, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxFileSize))
	}
	if err := strictjson.Check(file, data); err != nil {
		return Agent{}, ErrorList{fromStrict(file, err)}
	}
	var card map[string]jsontext.Value
	if err := json.Unmarshal(data, &card); err != nil {
		return fail(1, 1, "", fmt.Errorf("%w: not a JSON object (an AgentCard is one)", ErrAgentCard))
	}
	pos := strictjson.NewPositions(data)
	var errs ErrorList
	for _, r := range cardRequired {
		v, ok := card[r.name]
		if !ok {
			errs = append(errs, &Error{File: file, Line: 1, Col: 1, Field: "/" + r.name,
				Err: fmt.Errorf("%w: required member %s is missing (A2A %s AgentCard)", ErrAgentCard, r.name, cardSpec)})
			continue
		}
		if v.Kind() != r.kind {
			line, col := pos.At("/" + r.name)
			errs = append(errs, &Error{File: file, Line: line, Col: col, Field: "/" + r.name,
				Err: fmt.Errorf("%w: %s must be %s", ErrAgentCard, r.name, kindName(r.kind))})
		}
	}
	if len(errs) > 0 {
		return Agent{}, errs
	}
	version := DefaultSkillVersion
	var v string
	if json.Unmarshal(card["version"], &v) == nil && CheckVersion(v) == nil {
		version = v
	}
	return Agent{ID: stem, Type: TypeDomain, Version: version, PromptPath: promptPath, AcceptsHandoff: true}, nil
}

// cardSpec is the A2A version whose AgentCard a card folder is read by.
const cardSpec = "0.3.0"

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '{':
		return "an object"
	}
	return "a list"
}

// isCardsFolder reports whether a registry folder is an Agent Cards
// folder: *.json files at its top level, no *.md file and no */SKILL.md.
func isCardsFolder(root *os.Root, entries []fs.DirEntry) bool {
	cards := false
	for _, e := range entries {
		if e.IsDir() {
			if _, err := root.Lstat(filepath.Join(e.Name(), skillFile)); err == nil {
				return false
			}
			continue
		}
		switch {
		case strings.HasSuffix(e.Name(), ".md"):
			return false
		case strings.HasSuffix(e.Name(), ".json"):
			cards = true
		}
	}
	return cards
}

// loadCards reads the *.json files of an Agent Cards folder (top level
// only; symbolic links refused).
func loadCards(dir string, root *os.Root, entries []fs.DirEntry) (*Registry, error) {
	files, err := readFlat(dir, root, entries, ".json", "agent card")
	if err != nil {
		return nil, err
	}
	return ParseAgentCards(dir, files)
}
