package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/govledger/govledger/internal/strictjson"
)

// Skills folders (seed 000, "Skill Eligibility Metadata").
//
// A skills registry is a folder whose subfolders each may hold a SKILL.md.
// A SKILL.md whose YAML front matter (between a first line "---" and the
// next line "---") has a top-level handoff: mapping is an agent:
//
//   - agent_id is the front matter's name, which must equal the folder name;
//   - agent_type is the optional top-level agent_type (default "domain");
//   - agent_version is the optional top-level version, a quoted strict
//     semantic version (default DefaultSkillVersion);
//   - prompt_path is "<folder>/SKILL.md": the skill file itself is the prompt;
//   - the handoff block MUST have accepts_handoff (true or false). A skill
//     with accepts_handoff: true is a handoff option, and seed 000 requires
//     of it at least one handoff_categories entry and a non-empty
//     handoff_description; a skill with accepts_handoff: false is a
//     registered agent that only sends (the policy refuses handoffs to it),
//     and those two keys are optional. The block MAY have handoff_trigger,
//     protocol_version, health_check, requires, optional_consumes,
//     handoff_to (narrows the targets of this skill as a source),
//     request_types and composition (for archetype skills). Any other key
//     in the block is an error.
//
// Other top-level keys (description, license, ...) belong to other tools
// and are ignored, but the whole front matter must be strict YAML: no
// anchors, aliases, explicit tags or merge keys, no duplicate or non-string
// keys, one document, nesting at most MaxYAMLDepth and valid UTF-8. A UTF-8
// byte order mark before the first "---" is skipped. A SKILL.md without
// front matter, or whose front matter has no handoff key, is not an agent
// and is skipped.

// skillFile is the name of a skill's prompt file in its folder.
const skillFile = "SKILL.md"

// DefaultSkillVersion is the agent_version of a skill whose front matter
// has no version.
const DefaultSkillVersion = "0.0.0"

// MaxYAMLDepth is the deepest nesting of mappings and sequences accepted in
// SKILL.md front matter.
const MaxYAMLDepth = 32

// maxFrontMatter caps the front matter handed to the YAML parser.
const maxFrontMatter = 256 << 10

// SkillFile is one SKILL.md of a skills folder.
type SkillFile struct {
	// Path is slash-separated and relative to the skills folder:
	// "<folder>/SKILL.md".
	Path string
	// Data is the file's bytes.
	Data []byte
}

// ParseSkill parses the front matter of one SKILL.md. file is used in error
// messages and becomes the agent's PromptPath. ok is false, with a nil
// error, when the file declares no handoff block (it is not an agent). The
// agent is checked on its own; rules across agents (references, duplicate
// ids, the folder name) are ParseSkills'. Errors are an ErrorList.
func ParseSkill(file string, data []byte) (agent Agent, ok bool, err error) {
	a, ok, _, errs := parseAgentFile(file, file, data, false)
	if len(errs) > 0 {
		sortErrors(errs)
		return Agent{}, false, errs
	}
	return a, ok, nil
}

// ParseSkills builds a registry from the SKILL.md files of a skills folder
// dir (used for Registry.Dir and to name files in errors; not accessed).
// Agents are sorted by path. Every file's errors, and every registry rule
// across agents, are reported together as an ErrorList. The
// registry's Snapshot is its canonical JSON (see ParseSnapshot).
func ParseSkills(dir string, files []SkillFile) (*Registry, error) {
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
		folder, base := path.Split(f.Path)
		folder = strings.TrimSuffix(folder, "/")
		if base != skillFile || folder == "" || strings.Contains(folder, "/") || CheckPromptPath(f.Path) != nil {
			errs = append(errs, &Error{File: name, Err: fmt.Errorf("%w: skill files are <folder>/SKILL.md, got %s", ErrSkill, quote(f.Path))})
			continue
		}
		a, ok, at, ferrs := parseAgentFile(name, f.Path, f.Data, false)
		errs = append(errs, ferrs...)
		if !ok || len(ferrs) > 0 {
			continue
		}
		if a.ID != folder {
			s := at["agent_id"]
			errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field,
				Err: fmt.Errorf("%w: name %s must equal its folder name %s", ErrSkill, quote(a.ID), quote(folder))})
			continue
		}
		agents = append(agents, a)
		locs = append(locs, at)
		names = append(names, name)
	}
	if len(agents) > MaxAgents {
		errs = append(errs, &Error{File: dir, Err: fmt.Errorf("%w: %d skills, limit %d", ErrTooLarge, len(agents), MaxAgents)})
	}
	errs = append(errs, validate(agents, func(i int, field string) site {
		return locateSkill(names[i], locs[i], field)
	})...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	snap, err := strictjson.Canonical(skillsSnapshot{Registry: SkillsRegistry, SnapshotVersion: 1, Agents: nilIfEmpty(agents)})
	if err != nil {
		return nil, ErrorList{{File: dir, Err: fmt.Errorf("%w: %v", ErrSnapshot, err)}}
	}
	return &Registry{Agents: agents, Dir: dir, FromSkills: true, Snapshot: snap}, nil
}

// locateSkill places field (as named by validate) in a SKILL.md, falling
// back to the enclosing field and then to the handoff block.
func locateSkill(file string, at map[string]site, field string) site {
	for f := field; ; {
		if s, ok := at[f]; ok {
			return s
		}
		i := strings.LastIndexByte(f, '/')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	if s, ok := at["handoff"]; ok {
		return s
	}
	return site{file: file, line: 1, col: 1}
}

// frontMatter returns the YAML between a first line "---" and the next
// line "---", and the number of file lines before it. found is false when
// the file does not start with front matter.
func frontMatter(data []byte) (yamlText []byte, linesBefore int, found bool, err error) {
	first, rest, _ := cutLine(data)
	if string(first) != "---" {
		return nil, 0, false, nil
	}
	start := len(data) - len(rest)
	for off := start; off < len(data); {
		line, next, _ := cutLine(data[off:])
		if string(line) == "---" {
			return data[start:off], 1, true, nil
		}
		off = len(data) - len(next)
	}
	return nil, 0, true, errors.New(`front matter is not closed by a "---" line`)
}

// cutLine splits data after its first line, dropping "\n" or "\r\n".
func cutLine(data []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(data, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, rest, found
}

// parseAgentFile parses one SKILL.md, or with subagent one Claude Code
// subagent file, named file (for errors) whose prompt path is promptPath.
// at maps validate's field names to places in the file.
func parseAgentFile(file, promptPath string, data []byte, subagent bool) (a Agent, ok bool, at map[string]site, errs ErrorList) {
	fail := func(line, col int, field string, err error) {
		errs = append(errs, &Error{File: file, Line: line, Col: col, Field: field, Err: err})
	}
	if len(data) > MaxFileSize {
		fail(0, 0, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxFileSize))
		return
	}
	// A byte order mark is text encoding, not content (editors on Windows
	// write one); the front matter starts after it.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	fm, before, found, err := frontMatter(data)
	if err != nil {
		fail(1, 1, "", fmt.Errorf("%w: %v", ErrSyntax, err))
		return
	}
	if !found {
		return
	}
	if len(fm) > maxFrontMatter {
		fail(1, 1, "", fmt.Errorf("%w: front matter is %d bytes, limit %d", ErrTooLarge, len(fm), maxFrontMatter))
		return
	}
	if !utf8.Valid(fm) {
		off := 0
		for off < len(fm) {
			r, n := utf8.DecodeRune(fm[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		line, col := strictjson.Position(fm, int64(off))
		fail(line+before, col, "", fmt.Errorf("%w: invalid UTF-8", ErrSyntax))
		return
	}
	if i := bytes.IndexByte(fm, 0); i >= 0 {
		line, col := strictjson.Position(fm, int64(i))
		fail(line+before, col, "", fmt.Errorf("%w: NUL byte", ErrSyntax))
		return
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(fm))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return // empty front matter: not an agent
		}
		fail(yamlErrLine(err, before), 0, "", fmt.Errorf("%w: %s", ErrSyntax, cleanYAMLErr(err)))
		return
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line + before
		if err != nil {
			line = yamlErrLine(err, before)
		}
		fail(line, 0, "", fmt.Errorf("%w: a second YAML document in the front matter", ErrSyntax))
		return
	}
	y := &yamlWalk{file: file, before: before}
	y.check(&doc, 0, "")
	if len(y.errs) > 0 {
		return a, false, nil, y.errs
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		fail(before+doc.Line, doc.Column, "", fmt.Errorf("%w: front matter must be a mapping", ErrSyntax))
		return
	}
	top := doc.Content[0]
	handoff := lookup(top, "handoff")
	if handoff == nil && !subagent {
		return
	}
	at = map[string]site{}
	y.at = at
	if handoff != nil {
		y.pos(handoff.key, "handoff", "handoff")
	} else {
		at["handoff"] = site{file: file, line: before + 1, col: 1}
	}
	a = Agent{Type: TypeDomain, Version: DefaultSkillVersion, PromptPath: promptPath}
	if subagent {
		// Claude Code requires both; a file missing one is not a subagent
		// it would run, so it cannot be registered either.
		for _, k := range []string{"name", "description"} {
			if n := lookup(top, k); n == nil {
				y.errs = append(y.errs, &Error{File: file, Line: before + 1, Col: 1, Field: k,
					Err: fmt.Errorf("%w: a Claude Code subagent file needs %s in its front matter", ErrMissing, k)})
			} else if k == "description" {
				y.str(n.val, k)
			}
		}
		if handoff == nil {
			a.AcceptsHandoff = true
		}
	}
	if n := lookup(top, "vbw_role"); n != nil {
		y.pos(n.val, "vbw_role", "vbw_role")
		a.VBWRole = y.str(n.val, "vbw_role")
	}
	if n := lookup(top, "name"); n == nil {
		if !subagent {
			y.fail(handoff.key, "name", fmt.Errorf("%w: a skill with a handoff block needs a name", ErrMissing))
		}
	} else {
		y.pos(n.val, "agent_id", "name")
		a.ID = y.str(n.val, "name")
	}
	if n := lookup(top, "agent_type"); n != nil {
		y.pos(n.val, "agent_type", "agent_type")
		a.Type = y.str(n.val, "agent_type")
	}
	if n := lookup(top, "version"); n != nil {
		y.pos(n.val, "agent_version", "version")
		a.Version = y.str(n.val, "version")
	}
	if handoff != nil && handoff.val.Kind != yaml.MappingNode {
		y.fail(handoff.val, "handoff", fmt.Errorf("%w: handoff must be a mapping", ErrSkill))
		return a, false, at, y.errs
	}
	var block []*yaml.Node
	if handoff != nil {
		block = handoff.val.Content
	}
	for k := 0; k+1 < len(block); k += 2 {
		key, val := block[k], block[k+1]
		f := "handoff/" + key.Value
		y.pos(key, key.Value, f)
		switch key.Value {
		case "accepts_handoff":
			a.AcceptsHandoff = y.boolean(val, f)
		case "handoff_categories":
			a.HandoffCategories = y.strList(val, f, "handoff_categories")
		case "handoff_description":
			a.HandoffDescription = y.str(val, f)
		case "handoff_trigger":
			a.HandoffTrigger = y.str(val, f)
		case "protocol_version":
			a.ProtocolVersion = y.str(val, f)
		case "health_check":
			a.HealthCheck = y.str(val, f)
		case "requires":
			a.Requires = y.strList(val, f, "requires")
		case "optional_consumes":
			a.OptionalConsumes = y.strList(val, f, "optional_consumes")
		case "handoff_to":
			a.HandoffTo = y.strList(val, f, "handoff_to")
		case "request_types":
			a.RequestTypes = y.strList(val, f, "request_types")
		case "composition":
			a.Composition = y.composition(val, f)
		default:
			y.fail(key, f, fmt.Errorf("%w: unknown handoff key %s", ErrSkill, quote(key.Value)))
		}
	}
	normalize(&a)
	if a.ID != "" {
		if err := CheckAgentID(a.ID); err != nil {
			s := at["agent_id"]
			errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field, Err: err})
		}
	}
	switch a.Type {
	case TypeDomain, TypeArchetype, TypeOrchestrator, "":
	default:
		s := at["agent_type"]
		errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field,
			Err: fmt.Errorf("%w: %s; want domain, archetype or orchestrator", ErrAgentType, quote(a.Type))})
	}
	if a.Version != "" {
		if err := CheckVersion(a.Version); err != nil {
			s := at["agent_version"]
			errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field, Err: err})
		}
	}
	if _, ok := at["accepts_handoff"]; !ok && handoff != nil {
		s := at["handoff"]
		errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field,
			Err: fmt.Errorf("%w: accepts_handoff is required (true for a handoff option, false for a skill that only sends)", ErrSkill)})
	}
	for _, p := range checkSkillAgent(&a, subagent) {
		s := locateSkill(file, at, p.field)
		if p.field == "accepts_handoff" || p.field == "handoff_categories" || p.field == "handoff_description" {
			if _, ok := at[p.field]; !ok {
				s = at["handoff"]
			}
		}
		errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field, Err: p.err})
	}
	errs = append(errs, y.errs...)
	if len(errs) > 0 {
		return a, false, at, errs
	}
	return a, true, at, nil
}

// checkSkillAgent applies the seed 000 eligibility rules to one skill:
// "For a skill to appear as a handoff option" it needs accepts_handoff:
// true, at least one category and a description; a skill that does not
// accept handoffs needs neither, but what it declares is still checked.
//
// Subagents (Claude Code files) are handoff targets by Claude Code's own
// rule, not seed 000's, so categories and description are not required of
// them.
func checkSkillAgent(a *Agent, subagent bool) []problem {
	var ps []problem
	if a.AcceptsHandoff && !subagent && len(a.HandoffCategories) == 0 {
		ps = append(ps, problem{"handoff_categories", fmt.Errorf("%w: handoff_categories needs at least one category (REQUIRED for a skill with accepts_handoff: true)", ErrSkill)})
	}
	seen := map[string]bool{}
	for i, c := range a.HandoffCategories {
		f := "handoff_categories/" + strconv.Itoa(i)
		if strings.TrimSpace(c) == "" {
			ps = append(ps, problem{f, fmt.Errorf("%w: empty category", ErrSkill)})
		} else if seen[c] {
			ps = append(ps, problem{f, fmt.Errorf("%w: category %s listed twice", ErrDuplicate, quote(c))})
		}
		seen[c] = true
	}
	if a.AcceptsHandoff && !subagent && strings.TrimSpace(a.HandoffDescription) == "" {
		ps = append(ps, problem{"handoff_description", fmt.Errorf("%w: handoff_description must be non-empty (REQUIRED for a skill with accepts_handoff: true)", ErrSkill)})
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"requires", a.Requires}, {"optional_consumes", a.OptionalConsumes}} {
		for i, s := range l.list {
			if strings.TrimSpace(s) == "" {
				ps = append(ps, problem{l.name + "/" + strconv.Itoa(i), fmt.Errorf("%w: empty %s entry", ErrSkill, l.name)})
			}
		}
	}
	return ps
}

// pair is one key and value of a YAML mapping.
type pair struct{ key, val *yaml.Node }

func lookup(m *yaml.Node, key string) *pair {
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == key {
			return &pair{m.Content[k], m.Content[k+1]}
		}
	}
	return nil
}

// yamlWalk checks and reads YAML nodes, collecting errors.
type yamlWalk struct {
	file   string
	before int // file lines before the front matter
	errs   ErrorList
	at     map[string]site
}

func (y *yamlWalk) fail(n *yaml.Node, field string, err error) {
	y.errs = append(y.errs, &Error{File: y.file, Line: n.Line + y.before, Col: n.Column, Field: field, Err: err})
}

// pos records where validate's field name sits (display is the YAML path).
func (y *yamlWalk) pos(n *yaml.Node, field, display string) {
	y.at[field] = site{file: y.file, line: n.Line + y.before, col: n.Column, field: display}
}

// check refuses anchors, aliases, explicit tags, merge keys, non-string and
// duplicate keys, and nesting deeper than MaxYAMLDepth, anywhere under n.
func (y *yamlWalk) check(n *yaml.Node, depth int, path string) {
	if depth > MaxYAMLDepth {
		y.fail(n, path, fmt.Errorf("%w: nesting deeper than %d levels", ErrSyntax, MaxYAMLDepth))
		return
	}
	switch {
	case n.Kind == yaml.AliasNode:
		y.fail(n, path, fmt.Errorf("%w: YAML alias *%s is not allowed", ErrSyntax, n.Value))
		return
	case n.Anchor != "":
		y.fail(n, path, fmt.Errorf("%w: YAML anchor &%s is not allowed", ErrSyntax, n.Anchor))
	case n.Style&yaml.TaggedStyle != 0:
		y.fail(n, path, fmt.Errorf("%w: explicit YAML tag %s is not allowed", ErrSyntax, quote(n.Tag)))
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = path + "/" + strconv.Itoa(i)
			}
			y.check(c, depth+1, p)
		}
	case yaml.MappingNode:
		seen := map[string]bool{}
		for k := 0; k+1 < len(n.Content); k += 2 {
			key, val := n.Content[k], n.Content[k+1]
			p := path + "/" + key.Value
			switch {
			case key.Kind == yaml.ScalarNode && key.Tag == "!!merge":
				y.fail(key, p, fmt.Errorf("%w: YAML merge key << is not allowed", ErrSyntax))
			case key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str":
				y.fail(key, path, fmt.Errorf("%w: mapping keys must be strings", ErrSyntax))
			case seen[key.Value]:
				y.fail(key, p, fmt.Errorf("%w: duplicate key %s", ErrSyntax, quote(key.Value)))
			}
			seen[key.Value] = true
			y.check(key, depth+1, p)
			y.check(val, depth+1, p)
		}
	}
}

func (y *yamlWalk) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		y.fail(n, field, fmt.Errorf("%w: want a string, got %s (quote it)", ErrSyntax, describe(n)))
		return ""
	}
	return n.Value
}

func (y *yamlWalk) boolean(n *yaml.Node, field string) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || (n.Value != "true" && n.Value != "false") {
		y.fail(n, field, fmt.Errorf("%w: want true or false, got %s", ErrSyntax, describe(n)))
		return false
	}
	return n.Value == "true"
}

func (y *yamlWalk) strList(n *yaml.Node, field, name string) []string {
	if n.Kind != yaml.SequenceNode {
		y.fail(n, field, fmt.Errorf("%w: want a list of strings, got %s", ErrSyntax, describe(n)))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		f := field + "/" + strconv.Itoa(i)
		y.pos(c, name+"/"+strconv.Itoa(i), f)
		out = append(out, y.str(c, f))
	}
	return out
}

func (y *yamlWalk) composition(n *yaml.Node, field string) []Component {
	if n.Kind != yaml.SequenceNode {
		y.fail(n, field, fmt.Errorf("%w: want a list of {agent_id, percent}, got %s", ErrSyntax, describe(n)))
		return nil
	}
	var out []Component
	for i, c := range n.Content {
		f := field + "/" + strconv.Itoa(i)
		y.pos(c, "composition/"+strconv.Itoa(i), f)
		if c.Kind != yaml.MappingNode {
			y.fail(c, f, fmt.Errorf("%w: want {agent_id, percent}, got %s", ErrSyntax, describe(c)))
			continue
		}
		var comp Component
		for k := 0; k+1 < len(c.Content); k += 2 {
			key, val := c.Content[k], c.Content[k+1]
			switch key.Value {
			case "agent_id":
				y.pos(val, "composition/"+strconv.Itoa(i)+"/agent_id", f+"/agent_id")
				comp.AgentID = y.str(val, f+"/agent_id")
			case "percent":
				y.pos(val, "composition/"+strconv.Itoa(i)+"/percent", f+"/percent")
				if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!int" || !decimal(val.Value) {
					y.fail(val, f+"/percent", fmt.Errorf("%w: want a decimal integer, got %s", ErrSyntax, describe(val)))
					continue
				}
				comp.Percent, _ = strconv.Atoi(val.Value)
			default:
				y.fail(key, f+"/"+key.Value, fmt.Errorf("%w: unknown composition key %s", ErrSkill, quote(key.Value)))
			}
		}
		out = append(out, comp)
	}
	return out
}

// decimal reports whether s is a plain decimal integer of at most 9 digits
// (YAML would also read 0x10, 0o17 and 1_000 as integers).
func decimal(s string) bool {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strings.TrimPrefix(n.ShortTag(), "!!") + " " + quote(n.Value)
	}
	return "an alias"
}

// yamlErrLine finds "line N" in a yaml.v3 error.
func yamlErrLine(err error, before int) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		j := i + 5
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if n, e := strconv.Atoi(s[i+5 : j]); e == nil {
			return n + before
		}
	}
	return 0
}

func cleanYAMLErr(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if !utf8.ValidString(s) {
		return "invalid YAML"
	}
	return s
}
