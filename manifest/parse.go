package manifest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/strictjson"
)

// ManifestVersion is the only manifest_version this package reads.
const ManifestVersion = 1

// rawManifest is prompt-manifest.json as written. Agent fields that only a
// skills folder can declare are deliberately absent, so a manifest that
// carries them is refused as having unknown fields.
type rawManifest struct {
	ManifestVersion *int64      `json:"manifest_version"`
	Agents          *[]rawAgent `json:"agents"`
}

type rawAgent struct {
	ID           string      `json:"agent_id"`
	Type         string      `json:"agent_type"`
	Version      string      `json:"agent_version"`
	PromptPath   string      `json:"prompt_path"`
	HandoffTo    []string    `json:"handoff_to,omitempty"`
	RequestTypes []string    `json:"request_types,omitempty"`
	Composition  []Component `json:"composition,omitempty"`
	VBWRole      string      `json:"vbw_role,omitempty"`
}

// Parse parses and validates the bytes of a prompt-manifest.json. name is
// used only in error messages; dir becomes Registry.Dir (the folder prompt
// paths are relative to) and is not accessed.
//
// Parse is lexical: it enforces every rule that the bytes alone decide
// (strict JSON, manifest_version 1, agent ids, types, versions,
// compositions, references, request types, prompt path syntax and case
// collisions) and reports all of them at once as an ErrorList of *Error,
// each placed at the line and column of the agent or field at fault. A
// document that is not strict JSON yields a single ErrSyntax error. Checks
// that need the file system (symbolic links, regular files) are Load's.
//
// The returned registry's Snapshot is a copy of data.
func Parse(name string, data []byte, dir string) (*Registry, error) {
	if len(data) > MaxFileSize {
		return nil, ErrorList{{File: name, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxFileSize)}}
	}
	var raw rawManifest
	if err := strictjson.Unmarshal(name, data, &raw); err != nil {
		return nil, ErrorList{fromStrict(name, err)}
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); t[0] != '{' {
		return nil, ErrorList{{File: name, Line: 1, Col: 1, Err: &syntaxError{msg: "want a JSON object", cause: strictjson.ErrType}}}
	}
	idx := strictjson.NewPositions(data)
	var errs ErrorList
	top := func(ptr string, err error) {
		line, col := idx.At(ptr)
		errs = append(errs, &Error{File: name, Line: line, Col: col, Field: ptr, Err: err})
	}
	switch {
	case raw.ManifestVersion == nil:
		top("", fmt.Errorf("%w: manifest_version is missing; want %d", ErrVersion, ManifestVersion))
	case *raw.ManifestVersion != ManifestVersion:
		top("/manifest_version", fmt.Errorf("%w: %d; want %d", ErrVersion, *raw.ManifestVersion, ManifestVersion))
	}
	if raw.Agents == nil {
		top("", fmt.Errorf("%w: agents", ErrMissing))
	}
	var agents []Agent
	if raw.Agents != nil {
		if len(*raw.Agents) > MaxAgents {
			top("/agents", fmt.Errorf("%w: %d agents, limit %d", ErrTooLarge, len(*raw.Agents), MaxAgents))
			return nil, errs
		}
		agents = make([]Agent, len(*raw.Agents))
		for i, ra := range *raw.Agents {
			agents[i] = Agent{
				ID: ra.ID, Type: ra.Type, Version: ra.Version, PromptPath: ra.PromptPath,
				HandoffTo: nilIfEmpty(ra.HandoffTo), RequestTypes: nilIfEmpty(ra.RequestTypes),
				Composition: nilIfEmpty(ra.Composition), VBWRole: ra.VBWRole,
			}
		}
	}
	errs = append(errs, validate(agents, agentLocator(idx, name))...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return &Registry{Agents: agents, Dir: dir, Snapshot: bytes.Clone(data)}, nil
}

// skillsSnapshot is the canonical JSON of a registry loaded from a skills
// folder: what the ledger records as its snapshot.
type skillsSnapshot struct {
	Registry        string  `json:"registry"` // always SkillsRegistry
	SnapshotVersion int64   `json:"snapshot_version"`
	Agents          []Agent `json:"agents"`
}

// SkillsRegistry is the "registry" member that marks a skills snapshot.
const SkillsRegistry = "skills"

// ParseSnapshot reads back the bytes of a Registry.Snapshot: either a
// prompt-manifest.json, or the canonical JSON (RFC 8785) that Load and
// ParseSkills produce for a skills folder, an object
// {"agents":[...],"registry":"skills","snapshot_version":1} whose agents
// carry every field of Agent. The registry is validated like Parse does
// (lexically); Dir is empty. A skills snapshot that is not in canonical form
// is refused with ErrSnapshot, so one registry has one snapshot.
func ParseSnapshot(data []byte) (*Registry, error) {
	const name = "snapshot"
	if err := strictjson.Check(name, data); err != nil {
		return nil, ErrorList{fromStrict(name, err)}
	}
	var peek struct {
		Registry *string `json:"registry"`
	}
	if err := json.Unmarshal(data, &peek); err != nil || peek.Registry == nil {
		return Parse(name, data, "")
	}
	subagents := *peek.Registry == SubagentsRegistry
	cards := *peek.Registry == CardsRegistry
	if *peek.Registry != SkillsRegistry && !subagents && !cards {
		return nil, ErrorList{{File: name, Field: "/registry", Err: fmt.Errorf("%w: registry %s; want %q, %q or %q", ErrSnapshot, quote(*peek.Registry), SkillsRegistry, SubagentsRegistry, CardsRegistry)}}
	}
	var snap skillsSnapshot
	if err := strictjson.Unmarshal(name, data, &snap); err != nil {
		return nil, ErrorList{fromStrict(name, err)}
	}
	if snap.SnapshotVersion != 1 {
		return nil, ErrorList{{File: name, Field: "/snapshot_version", Err: fmt.Errorf("%w: snapshot_version %d; want 1", ErrSnapshot, snap.SnapshotVersion)}}
	}
	if canon, err := strictjson.CanonicalizeBytes(data); err != nil || !bytes.Equal(canon, data) {
		return nil, ErrorList{{File: name, Err: fmt.Errorf("%w: skills snapshot is not in RFC 8785 canonical form", ErrSnapshot)}}
	}
	if len(snap.Agents) > MaxAgents {
		return nil, ErrorList{{File: name, Field: "/agents", Err: fmt.Errorf("%w: %d agents, limit %d", ErrTooLarge, len(snap.Agents), MaxAgents)}}
	}
	idx := strictjson.NewPositions(data)
	loc := agentLocator(idx, name)
	var errs ErrorList
	for i := range snap.Agents {
		a := &snap.Agents[i]
		normalize(a)
		for _, p := range checkSkillAgent(a, subagents || cards) {
			s := loc(i, p.field)
			errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field, Err: p.err})
		}
		want := a.ID + "/" + skillFile
		switch {
		case subagents:
			want = a.ID + ".md"
		case cards:
			want = a.ID + ".json"
		}
		if a.ID != "" && a.PromptPath != want {
			s := loc(i, "prompt_path")
			errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field,
				Err: fmt.Errorf("%w: skill prompt_path %s; want %q", ErrSkill, quote(a.PromptPath), want)})
		}
	}
	if !slices.IsSortedFunc(snap.Agents, func(a, b Agent) int { return strings.Compare(a.PromptPath, b.PromptPath) }) {
		errs = append(errs, &Error{File: name, Field: "/agents", Err: fmt.Errorf("%w: skills snapshot agents are not sorted by prompt_path", ErrSnapshot)})
	}
	errs = append(errs, validate(snap.Agents, loc)...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return &Registry{Agents: snap.Agents, FromSkills: true, FromSubagents: subagents, FromAgentCards: cards, Snapshot: bytes.Clone(data)}, nil
}

// problem is a rule broken by one agent field, before it is placed.
type problem struct {
	field string // relative to the agent: "agent_version", "handoff_to/2", "composition/0/percent"
	err   error
}

// site is where an agent field sits in its file.
type site struct {
	file      string
	line, col int
	field     string // for Error.Field
}

// locator places field of the i'th agent.
type locator func(i int, field string) site

// validate applies the registry rules (docs/reference/files.md, "Field reference") that involve one agent or the
// whole registry, and places every problem with loc.
func validate(agents []Agent, loc locator) ErrorList {
	var errs ErrorList
	add := func(i int, field string, err error) {
		s := loc(i, field)
		errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field, Err: err})
	}
	byID := make(map[string]int, len(agents))
	byFold := make(map[string]int, len(agents))
	byPath := make(map[string]int, len(agents))
	for i, a := range agents {
		if a.ID == "" {
			add(i, "agent_id", fmt.Errorf("%w: agent_id", ErrMissing))
		} else if err := CheckAgentID(a.ID); err != nil {
			add(i, "agent_id", err)
		}
		if j, ok := byID[a.ID]; ok && a.ID != "" {
			add(i, "agent_id", fmt.Errorf("%w: agent_id %s already declared by agent %d", ErrDuplicate, quote(a.ID), j))
		} else if j, ok := byFold[strings.ToLower(a.ID)]; ok && a.ID != "" {
			add(i, "agent_id", fmt.Errorf("%w: agent_id %s differs only by case from %s", ErrDuplicate, quote(a.ID), quote(agents[j].ID)))
		}
		if _, ok := byID[a.ID]; !ok {
			byID[a.ID] = i
			byFold[strings.ToLower(a.ID)] = i
		}
		switch a.Type {
		case TypeDomain, TypeArchetype, TypeOrchestrator:
		case "":
			add(i, "agent_type", fmt.Errorf("%w: agent_type", ErrMissing))
		default:
			add(i, "agent_type", fmt.Errorf("%w: %s; want domain, archetype or orchestrator", ErrAgentType, quote(a.Type)))
		}
		if a.Version == "" {
			add(i, "agent_version", fmt.Errorf("%w: agent_version", ErrMissing))
		} else if err := CheckVersion(a.Version); err != nil {
			add(i, "agent_version", err)
		}
		if a.PromptPath == "" {
			add(i, "prompt_path", fmt.Errorf("%w: prompt_path", ErrMissing))
		} else if err := CheckPromptPath(a.PromptPath); err != nil {
			add(i, "prompt_path", err)
		} else {
			fold := strings.ToLower(a.PromptPath)
			if j, ok := byPath[fold]; ok && agents[j].PromptPath != a.PromptPath {
				add(i, "prompt_path", fmt.Errorf("%w: %s differs only by case from %s (agent %s): one file on case-insensitive file systems",
					ErrPromptPath, quote(a.PromptPath), quote(agents[j].PromptPath), quote(agents[j].ID)))
			} else if !ok {
				byPath[fold] = i
			}
		}
		if a.VBWRole != "" && !slices.Contains(VBWRoles, a.VBWRole) {
			add(i, "vbw_role", fmt.Errorf("%w: %s; want one of %s", ErrVBWRole, quote(a.VBWRole), strings.Join(VBWRoles, ", ")))
		}
		seen := map[string]bool{}
		for k, rt := range a.RequestTypes {
			f := "request_types/" + strconv.Itoa(k)
			switch {
			case !requestTypes[rt]:
				add(i, f, fmt.Errorf("%w: %s; want query, task, analysis or decision", ErrRequestType, quote(rt)))
			case seen[rt]:
				add(i, f, fmt.Errorf("%w: request type %s listed twice", ErrDuplicate, quote(rt)))
			}
			seen[rt] = true
		}
	}
	// References need every id first.
	for i, a := range agents {
		seen := map[string]bool{}
		for k, t := range a.HandoffTo {
			f := "handoff_to/" + strconv.Itoa(k)
			_, ok := byID[t]
			switch {
			case t == a.ID:
				add(i, f, fmt.Errorf("%w: %s hands off to itself", ErrReference, quote(t)))
			case !ok || t == "":
				add(i, f, fmt.Errorf("%w: handoff_to %s is not a registered agent", ErrReference, quote(t)))
			case seen[t]:
				add(i, f, fmt.Errorf("%w: handoff_to %s listed twice", ErrDuplicate, quote(t)))
			}
			seen[t] = true
		}
		switch {
		case a.Type != TypeArchetype && len(a.Composition) > 0:
			add(i, "composition", fmt.Errorf("%w: only archetype agents have a composition (agent_type %s)", ErrComposition, quote(a.Type)))
			continue
		case a.Type == TypeArchetype && len(a.Composition) == 0:
			add(i, "agent_type", fmt.Errorf("%w: archetype %s needs a composition of domain agents", ErrComposition, quote(a.ID)))
			continue
		case a.Type != TypeArchetype:
			continue
		}
		sum, sumOK := 0, true
		seen = map[string]bool{}
		for k, c := range a.Composition {
			f := "composition/" + strconv.Itoa(k)
			j, ok := byID[c.AgentID]
			switch {
			case c.AgentID == "":
				add(i, f+"/agent_id", fmt.Errorf("%w: composition agent_id", ErrMissing))
			case !ok:
				add(i, f+"/agent_id", fmt.Errorf("%w: %s is not a registered agent", ErrComposition, quote(c.AgentID)))
			case agents[j].Type != TypeDomain:
				add(i, f+"/agent_id", fmt.Errorf("%w: %s is a %s agent; a composition has domain agents only", ErrComposition, quote(c.AgentID), agents[j].Type))
			case seen[c.AgentID]:
				add(i, f+"/agent_id", fmt.Errorf("%w: composition lists %s twice", ErrDuplicate, quote(c.AgentID)))
			}
			seen[c.AgentID] = true
			if c.Percent <= 0 || c.Percent > 100 {
				add(i, f+"/percent", fmt.Errorf("%w: percent %d; want an integer from 1 to 100", ErrComposition, c.Percent))
				sumOK = false
				continue
			}
			sum += c.Percent
		}
		if sumOK && sum != 100 {
			add(i, "composition", fmt.Errorf("%w: percents sum to %d; want exactly 100", ErrComposition, sum))
		}
	}
	return errs
}

// sortErrors orders errs by file, line and column, keeping the order of
// errors at one place.
func sortErrors(errs ErrorList) {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// normalize makes empty slices nil, so a registry compares equal to the
// registry read back from its snapshot.
func normalize(a *Agent) {
	a.HandoffTo = nilIfEmpty(a.HandoffTo)
	a.RequestTypes = nilIfEmpty(a.RequestTypes)
	a.Composition = nilIfEmpty(a.Composition)
	a.HandoffCategories = nilIfEmpty(a.HandoffCategories)
	a.Requires = nilIfEmpty(a.Requires)
	a.OptionalConsumes = nilIfEmpty(a.OptionalConsumes)
}

// syntaxError is a strictjson failure: it matches ErrSyntax and the
// strictjson sentinel (strictjson.ErrNumber, ErrDepth, ...).
type syntaxError struct {
	msg   string
	cause error
}

func (e *syntaxError) Error() string   { return e.msg }
func (e *syntaxError) Unwrap() []error { return []error{ErrSyntax, e.cause} }

func fromStrict(name string, err error) *Error {
	var se *strictjson.Error
	if errors.As(err, &se) {
		return &Error{File: name, Line: se.Line, Col: se.Column, Field: se.Pointer,
			Err: &syntaxError{msg: se.Msg, cause: se.Err}}
	}
	return &Error{File: name, Err: &syntaxError{msg: err.Error(), cause: err}}
}

// agentLocator places the fields of the agents of the document p indexes.
func agentLocator(p *strictjson.Positions, file string) locator {
	return func(i int, field string) site {
		ptr := "/agents/" + strconv.Itoa(i) + "/" + field
		line, col := p.At(ptr)
		return site{file: file, line: line, col: col, field: ptr}
	}
}
