package handoff

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
)

// MaxDocumentSize is a defensive cap: Parse refuses larger input with
// PAYLOAD_TOO_LARGE without reading it. Callers enforce their own, smaller
// limit (the CLI's --max-payload) before calling Parse.
const MaxDocumentSize = 32 << 20

// Options control Parse. The zero value detects the format, checks no
// file-system rule and no expiry.
type Options struct {
	// Format forces a format; "" detects it from the content (see Detect).
	// A file name is never consulted.
	Format Format
	// From and To name the source and target agents of vbw/1 and task/1,
	// whose documents do not carry them (the CLI's --from/--to). Without
	// them those formats report AGENTS_REQUIRED. For Format "" a non-empty
	// From or To also enables the vbw/1 markdown fallback (see Detect).
	From, To string
	// Strict makes the vbw/1 markdown fallback an error (MARKDOWN_FALLBACK
	// with severity error) instead of a warning.
	Strict bool
	// Now is the ledger clock, used only by format rules (swarm/2
	// expires_at). The zero time disables those rules.
	Now time.Time
	// Env answers the file-system questions of format rules (swarm/2
	// session_path, skill/1 deliverable.location, task/1 paths). A nil Env
	// skips those rules entirely (no finding); lexical path rules still
	// apply.
	Env Env
	// Detection, for Format "", is Detect's result on the same data from a
	// caller that has already detected it (see NewDetection); nil detects.
	// It is used only when it was made under the same Rules.
	Detection *Detection
	// Rules is the version of the format rules to read by (see
	// RulesUnbounded, RulesBounded); 0 reads as RulesUnbounded, so a
	// decision recorded before versions existed is read as it was.
	Rules int
}

// Detection is what Detect found in a document, kept so that a caller who
// parses the same bytes more than once (a decision taken again after a
// conflicting commit) detects them once.
type Detection struct {
	Format  Format
	Matched []Format
	Err     error

	// tree is the strict JSON tree detection read, kept for the format's
	// reader; src is the text it was read from (Parse uses the tree only
	// for the same bytes). arena, for a Detection of Parse's own, is where
	// the tree was carved from, released when Parse is done with it.
	tree  *node
	src   string
	arena *jsonArena
	rules int // Options.Rules it was made under
}

// NewDetection runs Detect on data under the rules version rules (see
// Options.Rules): under RulesBounded it reads no carrier past a parse cap.
func NewDetection(data []byte, rules int) *Detection {
	return newDetection(data, false, rules)
}

func newDetection(data []byte, pooled bool, rules int) *Detection {
	d := &Detection{rules: max(rules, RulesUnbounded)}
	d.Format, d.Matched, d.tree, d.src, d.arena, d.Err = detect(data, pooled, newLimits(rules, len(data)))
	return d
}

// jsonTree returns the strict JSON tree of data that detection read, or
// nil.
func (d *Detection) jsonTree(data []byte) *node {
	if d == nil || d.tree == nil || strings.HasPrefix(d.src, "yaml:") || d.src != string(data) {
		return nil
	}
	return d.tree
}

// yamlTree returns the strict YAML tree of text (data after a byte order
// mark) that detection read for a swarm/2 or skill/1 document, or nil.
func (d *Detection) yamlTree(text []byte) *node {
	// A JSON tree's src is its text: no need to hash text to tell.
	if d == nil || d.tree == nil || !strings.HasPrefix(d.src, "yaml:") || d.src != "yaml:"+string(sumText(text)) {
		return nil
	}
	return d.tree
}

func sumText(text []byte) []byte {
	s := sha256.Sum256(text)
	return s[:]
}

// Parse reads one handoff document. It never returns nil and never
// panics; Raw is data itself. The Record holds the normalized fields and
// the findings of the format's own rules (see the package documentation
// for the rules of each format). A normalized field is filled only when
// its value passed the format's syntax rule for it and is valid UTF-8 of
// at most MaxFieldLen bytes; otherwise it is "".
func Parse(data []byte, opts Options) (rec *Record) {
	rec = &Record{Raw: data}
	defer func() {
		if p := recover(); p != nil {
			// A parser bug must not take the ledger down; the document is
			// still recorded, rejected.
			// The panic value may hold document text: it is not quoted.
			*rec = Record{Format: rec.Format, Raw: data, Findings: []reason.Reason{{
				Code: reason.Unparseable, Severity: reason.Error,
				Message: "internal parser failure",
			}}}
		}
	}()
	lim := newLimits(opts.Rules, len(data))
	c := &checker{strict: opts.Strict, lim: lim}
	defer func() {
		rec.Findings = c.rs
		if rec.Findings == nil {
			rec.Findings = []reason.Reason{}
		}
		rec.MissingFields = c.missing
	}()
	if len(data) > MaxDocumentSize {
		c.add(reason.PayloadTooLarge, reason.Error, "", nil, "document of %d bytes exceeds the parser's limit of %d bytes", len(data), MaxDocumentSize)
		return rec
	}
	if _, limit, over := lim.linesOver(data); over {
		c.parseLimit(limitLines, limit, len(data))
		return rec
	}
	format := opts.Format
	var tree *node // the strict JSON tree of data, when detection read it
	if format == "" {
		d := opts.Detection
		if d == nil || d.rules != max(opts.Rules, RulesUnbounded) {
			// Parse's own: no node of its tree outlives Parse (the JSON
			// formats keep none in the Record).
			d = newDetection(data, true, opts.Rules)
			defer d.arena.release()
		}
		tree = d.jsonTree(data)
		c.yamlRoot = d.yamlTree(bytes.TrimPrefix(data, bom))
		f, err := d.Format, d.Err
		switch {
		case err == nil:
			format = f
		case errors.Is(err, ErrNotText):
			c.add(reason.Unparseable, reason.Error, "", nil, "%s", notTextReason(data))
			return rec
		case errors.Is(err, ErrUnknownFormat) && (opts.From != "" || opts.To != ""):
			// Only prose falls back to vbw/1 markdown; a document shaped
			// like another format is judged as that format, or refused.
			near, why := nearFormat(data)
			switch near {
			case "":
				format = VBW
			case Task:
				format = Task
			default:
				c.add(reason.UnknownFormat, reason.Error, "", nil, "%v; not read as vbw/1 markdown: %s", err, why)
				return rec
			}
		default:
			c.add(reason.UnknownFormat, reason.Error, "", nil, "%v", err)
			return rec
		}
	}
	if !slices.Contains(Formats, format) {
		c.add(reason.UnknownFormat, reason.Error, "", nil, "unknown format (known: %s)", formatList(Formats))
		return rec
	}
	rec.Format = format
	if tree == nil && !utf8.Valid(data) { // a strict JSON tree is valid UTF-8
		line, col := strictjson.Position(data, int64(invalidUTF8At(data)))
		c.add(reason.Unparseable, reason.Error, "", nil, "%d:%d: invalid UTF-8", line, col)
		return rec
	}
	// A byte order mark: JSON refuses it (governed/1, vbw/1 JSON: RFC 8259
	// section 8.1 lets a parser refuse it, and the strict reader does); YAML
	// 1.2 allows one at the start of a stream and markdown is text, so
	// swarm/2, skill/1, task/1 and vbw/1 markdown read the text after it.
	switch format {
	case Governed:
		parseGoverned(c, rec, data, tree)
	case Swarm:
		parseSwarm(c, rec, data, opts)
	case Skill:
		parseSkill(c, rec, data, opts)
	case VBW:
		parseVBW(c, rec, data, opts, tree)
	case Task:
		parseTask(c, rec, data, opts)
	case A2A:
		parseA2A(c, rec, data, opts, tree)
	}
	return rec
}

var bom = []byte("\xef\xbb\xbf")

func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

func notTextReason(data []byte) string {
	switch {
	case len(bytes.TrimSpace(bytes.TrimPrefix(data, bom))) == 0:
		return "empty document"
	case !utf8.Valid(data):
		line, col := strictjson.Position(data, int64(invalidUTF8At(data)))
		return fmt.Sprintf("%d:%d: invalid UTF-8; not a text document", line, col)
	default:
		i := bytes.IndexFunc(data, isControl)
		line, col := strictjson.Position(data, int64(max(i, 0)))
		return fmt.Sprintf("%d:%d: control character in the document; not a text document", line, col)
	}
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
}

func formatList(fs []Format) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// nearFormat says what undetected text is, for the vbw/1 markdown
// fallback: "" for prose; Task for markdown with a heading that is almost
// "## Handoff" or bare YAML with a top-level outcome (a task/1 file with a
// broken heading: judged as task/1, which refuses it); UnknownFormat-worthy
// structure otherwise (Governed stands for any JSON, Swarm for a YAML
// handoff document that is neither swarm/2 nor skill/1), with why.
func nearFormat(data []byte) (Format, string) {
	text := bytes.TrimPrefix(data, bom)
	switch {
	case vbwJSON(text):
		return Governed, "the text is JSON, and no JSON document falls back to markdown"
	case structuredLineRE.Match(text):
		return Swarm, "it has the lines of a swarm/2 or skill/1 YAML document (handoff:, source_skill:, target_skill:, session_path:, deliverable:)"
	}
	lines := splitLines(text)
	near := false
	outsideFences(lines, func(i int) bool {
		near = nearHeadingRE.MatchString(lines[i]) || outcomeLineRE.MatchString(lines[i])
		return !near
	})
	if near {
		return Task, "a task/1 file"
	}
	return "", ""
}

var (
	// structuredLineRE finds a key line of a swarm/2 or skill/1 document.
	structuredLineRE = regexp.MustCompile(`(?m)^[ \t]*(handoff|source_skill|target_skill|session_path|deliverable)[ \t]*:`)
	// nearHeadingRE finds a heading that names a handoff section.
	nearHeadingRE = regexp.MustCompile(`(?i)^ {0,3}#{1,6}[ \t]*handoff\b`)
	// outcomeLineRE finds task/1's outcome key at the top level.
	outcomeLineRE = regexp.MustCompile(`^outcome[ \t]*:`)
)

// looksJSON reports whether the first non-space byte opens a JSON object
// or array.
func looksJSON(data []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(data, bom), " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

var (
	// handoffHeadingRE is seed 004's "## Handoff" heading (CommonMark: up
	// to three spaces before it, an optional closing run of "#").
	handoffHeadingRE    = regexp.MustCompile(`^ {0,3}##[ \t]+Handoff([ \t]+#+)?[ \t]*$`)
	topHandoffKeyRE     = regexp.MustCompile(`(?m)^handoff[ \t]*:`)
	skillLineRE         = regexp.MustCompile(`(?m)^[ \t]+(source_skill|target_skill)[ \t]*:`)
	swarmLineRE         = regexp.MustCompile(`(?m)^[ \t]+(source|target|session_path)[ \t]*:`)
	topDeliverableKeyRE = regexp.MustCompile(`(?m)^deliverable[ \t]*:`)
)

var vbwTypes = []string{"scout_findings", "dev_progress", "dev_blocker", "qa_result", "debugger_report"}

// governedKeys are the top-level members that mark a governed/1 document.
var governedKeys = []string{"handoff_id", "source_agent", "target_agent", "protocol_version"}

// Detect names the format of data from its content alone. The rules, each
// applied to data (a leading byte order mark ignored):
//
//   - governed/1: a JSON object with at least one of the top-level members
//     handoff_id, source_agent, target_agent, protocol_version (names
//     compared case-insensitively, so a case-variant document is still
//     detected and then rejected by the format's exact-case rule).
//   - vbw/1: a JSON object whose top-level "type" member is a string naming
//     one of the five vbw/1 message types.
//   - swarm/2: a YAML mapping whose top-level "handoff" mapping has a
//     "source" mapping with a "skill" key, or a "version" of "2.0"; when
//     the YAML does not parse, a top-level "handoff:" line followed by an
//     indented "source:" line.
//   - skill/1: a YAML mapping whose top-level "handoff" mapping has a
//     "source_skill" key; when the YAML does not parse, a top-level
//     "handoff:" line followed by an indented "source_skill:" line.
//   - task/1: text with a "## Handoff" heading line outside fenced code
//     blocks.
//   - a2a/1: a JSON object whose top-level "kind" member is the string
//     "message", or that has a top-level "jsonrpc" or "messageId" member
//     (names compared case-insensitively).
//
// JSON is read leniently here (duplicates and invalid UTF-8 tolerated) so
// that a hostile document is still attributed to its format and rejected
// by that format's strict rules. Exactly one match is the answer. None
// gives ErrUnknownFormat (ErrNotText for bytes that are empty, not UTF-8,
// or hold control characters); two or more give ErrAmbiguous. The error is
// a *DetectError whose Notes say, per format, why it did or did not match.
// The second result lists the formats that matched.
//
// vbw/1's markdown fallback is not a detection rule: Parse applies it when
// nothing matched, Options.From or Options.To is set, and the text does
// not start with "{" or "[".
func Detect(data []byte) (Format, []Format, error) {
	f, m, _, _, a, err := detect(data, true, nil)
	a.release()
	return f, m, err
}

// detect is Detect; it also returns the strict JSON tree of data when
// data is strict JSON (read once, for detection and for the format), the
// copy of data it was read from, and (pooled) the arena it was carved
// from (see jsonTreeText). Under lim it reads no carrier past a cap (the
// lenient readers and the lines decide instead) and no lines past theirs.
func detect(data []byte, pooled bool, lim *limits) (Format, []Format, *node, string, *jsonArena, error) {
	text := bytes.TrimPrefix(data, bom)
	if len(bytes.TrimSpace(text)) == 0 {
		return "", nil, nil, "", nil, &DetectError{Notes: []string{"empty document"}, Err: ErrNotText}
	}
	var tree *node
	var src string
	var arena *jsonArena
	if len(text) == len(data) && looksJSON(text) {
		if _, _, over := lim.valuesOver(text, false); !over {
			tree, src, arena = jsonTreeText(data, pooled)
		}
	}
	valid := tree != nil || utf8.Valid(text)
	if valid && !looksJSON(text) && bytes.ContainsFunc(text, isControl) {
		return "", nil, nil, "", arena.released(), &DetectError{Notes: []string{"control characters: not a text document"}, Err: ErrNotText}
	}
	type verdict struct {
		f   Format
		ok  bool
		why string // why + arg is the reason
		arg string
	}
	var verdicts [6]verdict // one per format
	nv, nm := 0, 0
	note := func(f Format, ok bool, why, arg string) {
		if ok {
			nm++
		}
		verdicts[nv] = verdict{f, ok, why, arg}
		nv++
	}
	matched := func() []Format {
		if nm == 0 {
			return nil
		}
		out := make([]Format, 0, nm)
		for _, v := range verdicts[:nv] {
			if v.ok {
				out = append(out, v.f)
			}
		}
		return out
	}
	// notes words the verdicts, only for an error.
	notes := func() []string {
		out := make([]string, nv)
		for i, v := range verdicts[:nv] {
			if v.ok {
				out[i] = fmt.Sprintf("%s: matched (%s%s)", v.f, v.why, v.arg)
			} else {
				out[i] = fmt.Sprintf("%s: %s%s", v.f, v.why, v.arg)
			}
		}
		return out
	}
	var keys []string
	var typ, kindOf *string
	var isObj bool
	if tree != nil {
		// What the lenient read below finds in a strict document.
		if isObj = tree.kind == kObject; isObj {
			keys = tree.keys
			if t, ok := tree.member("type"); ok && t.kind == kString {
				typ = &t.text
			}
			if t, ok := tree.member("kind"); ok && t.kind == kString {
				kindOf = &t.text
			}
		}
	} else {
		keys, typ, kindOf, isObj = jsonTopLevel(text)
	}
	switch {
	case !isObj:
		note(Governed, false, "not a JSON object", "")
		note(VBW, false, "not a JSON object", "")
		note(A2A, false, "not a JSON object", "")
	default:
		gk := ""
		for _, k := range keys {
			for _, want := range governedKeys {
				if gk == "" && strings.EqualFold(k, want) {
					gk = k
				}
			}
		}
		if gk != "" {
			note(Governed, true, "member ", fieldKey(gk))
		} else {
			note(Governed, false, "no handoff_id/source_agent/target_agent/protocol_version member", "")
		}
		switch {
		case typ == nil:
			note(VBW, false, `no string "type" member`, "")
		case slices.Contains(vbwTypes, *typ):
			note(VBW, true, `"type" `, *typ)
		default:
			note(VBW, false, `"type" is not one of `, strings.Join(vbwTypes, ", "))
		}
		ak := ""
		for _, k := range keys {
			for _, want := range a2aDetectKeys {
				if ak == "" && strings.EqualFold(k, want) {
					ak = k
				}
			}
		}
		switch {
		case kindOf != nil && *kindOf == "message":
			note(A2A, true, `"kind" `, "message")
		case ak != "":
			note(A2A, true, "member ", fieldKey(ak))
		default:
			note(A2A, false, `no "kind": "message", jsonrpc or messageId member`, "")
		}
	}
	// JSON is YAML: a JSON object can only be a swarm/2 or skill/1 document
	// if it has a top-level "handoff" member, so skip the YAML parse
	// otherwise (it dominated the cost of every JSON hand-off).
	// Nor can UTF-8 text name a "handoff" or "deliverable" key without
	// those words or a backslash (YAML's escapes): markdown is not parsed
	// as YAML (FuzzNoYAMLKeys holds this to yamlHandoff).
	swarm, skill, why := false, false, noHandoffMapping
	var yamlRoot *node
	if (!isObj || slices.Contains(keys, "handoff")) && !(valid && noYAMLKeys(text)) {
		swarm, skill, why, yamlRoot = yamlHandoffRoot(text, lim)
	}
	note(Swarm, swarm, why, "")
	note(Skill, skill, why, "")
	if !valid && nm == 0 {
		return "", nil, nil, "", arena.released(), &DetectError{Notes: append(notes(), "invalid UTF-8"), Err: ErrNotText}
	}
	// The heading holds the word itself: without it no line can match, and
	// the line count and split (a third of detecting a JSON document) are
	// skipped.
	heading := bytes.Contains(text, []byte("Handoff"))
	if heading {
		_, _, manyLines := lim.linesOver(text)
		heading = !manyLines && findHandoffHeading(splitLines(text)) >= 0
	}
	if heading {
		note(Task, true, `"## Handoff" heading`, "")
	} else {
		note(Task, false, `no "## Handoff" heading outside code fences`, "")
	}
	switch m := matched(); len(m) {
	case 1:
		if tree == nil && (m[0] == Swarm || m[0] == Skill) && yamlRoot != nil {
			// The YAML tree is handed on like the JSON one (its strings
			// are its own): found again by the text's digest.
			return m[0], m, yamlRoot, "yaml:" + string(sumText(text)), arena, nil
		}
		return m[0], m, tree, src, arena, nil
	case 0:
		return "", nil, nil, "", arena.released(), &DetectError{Notes: notes(), Err: ErrUnknownFormat}
	default:
		return "", m, nil, "", arena.released(), &DetectError{Matched: m, Notes: notes(), Err: ErrAmbiguous}
	}
}

const noHandoffMapping = `no top-level YAML "handoff" mapping`

var errYAMLOverCap = errors.New("YAML over the parse caps")

// noYAMLKeys reports whether the UTF-8 text has neither of the words
// "handoff" and "deliverable" nor a backslash, so that no YAML key of it
// can be either word: yamlHandoff finds no handoff mapping in it.
func noYAMLKeys(text []byte) bool {
	return !bytes.Contains(text, []byte("handoff")) && !bytes.Contains(text, []byte("deliverable")) &&
		bytes.IndexByte(text, '\\') < 0
}

// yamlHandoff applies the swarm/2 and skill/1 detection rules.
func yamlHandoff(text []byte, lim *limits) (swarm, skill bool, why string) {
	swarm, skill, why, _ = yamlHandoffRoot(text, lim)
	return swarm, skill, why
}

// yamlHandoffRoot is yamlHandoff; it also returns the strict YAML tree of
// text it read, or nil, for the format to read again without parsing.
func yamlHandoffRoot(text []byte, lim *limits) (swarm, skill bool, why string, root *node) {
	var err error
	if _, _, over := lim.valuesOver(text, true); over {
		// Attributed by its lines, as unreadable YAML: the format refuses it.
		err = errYAMLOverCap
	} else {
		root, err = yamlTree(text, 0)
	}
	swarm, skill, why = judgeYAML(text, root, err)
	return swarm, skill, why, root
}

// judgeYAML applies the swarm/2 and skill/1 detection rules to the strict
// YAML tree of text (root), or, when it failed (err), to its lines.
func judgeYAML(text []byte, root *node, err error) (swarm, skill bool, why string) {
	if err != nil {
		if !utf8.Valid(text) || !topHandoffKeyRE.Match(text) {
			if utf8.Valid(text) && topDeliverableKeyRE.Match(text) {
				return false, true, `unparsed YAML with a top-level "deliverable:" line`
			}
			return false, false, noHandoffMapping
		}
		// Unreadable YAML with a top-level handoff key: attribute it by its
		// lines so that the format reports the syntax error.
		switch sw, sk := swarmLineRE.Match(text), skillLineRE.Match(text); {
		case sk && !sw:
			return false, true, `unparsed YAML with "handoff:" and skill/1 lines (source_skill:, target_skill:)`
		case sw && !sk:
			return true, false, `unparsed YAML with "handoff:" and swarm/2 lines (source:, target:, session_path:)`
		case sw && sk:
			return true, true, "unparsed YAML with both swarm/2 and skill/1 lines"
		}
		return false, false, "top-level \"handoff:\" line without the lines of swarm/2 or skill/1"
	}
	h, ok := root.member("handoff")
	if !ok || h.kind != kObject {
		if d, ok := root.member("deliverable"); ok && d.kind == kObject {
			return false, true, `top-level "deliverable" mapping (skill/1 without a handoff block)`
		}
		return false, false, noHandoffMapping
	}
	if _, ok := h.member("source_skill"); ok {
		skill = true
	}
	if src, ok := h.member("source"); ok && src.kind == kObject {
		if _, ok := src.member("skill"); ok {
			swarm = true
		}
	}
	if v, ok := h.member("version"); ok && v.kind == kString && v.text == "2.0" {
		swarm = true
	}
	switch {
	case swarm && skill:
		return true, true, "handoff has both source.skill/version 2.0 and source_skill"
	case swarm:
		return true, false, "handoff.source.skill or handoff.version \"2.0\""
	case skill:
		return false, true, "handoff.source_skill"
	}
	// Neither source: the other members tell a broken document's format, so
	// that it is refused naming what it lacks.
	for _, k := range []string{"source", "target", "expires_at", "context", "insights", "research_seeds", "meta"} {
		if _, ok := h.member(k); ok {
			swarm = true
		}
	}
	if _, ok := h.member("target_skill"); ok {
		skill = true
	}
	for _, k := range []string{"deliverable", "quality"} {
		if _, ok := root.member(k); ok {
			skill = true
		}
	}
	switch {
	case swarm && skill:
		return true, true, "handoff has members of both swarm/2 and skill/1"
	case swarm:
		return true, false, "handoff has swarm/2 members (source, target, context, meta, ...)"
	case skill:
		return false, true, "handoff.target_skill or a top-level deliverable or quality"
	}
	return false, false, "handoff mapping has no member of swarm/2 or skill/1"
}

func splitLines(text []byte) []string {
	return strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
}

// fence is an open fenced code block of markdown (CommonMark 4.5): a run
// of at least three backticks or tildes.
type fence struct {
	char byte
	n    int
}

// openFence reports whether line opens a fenced code block: up to three
// spaces, then three or more backticks or tildes (a backtick fence's info
// string holds no backtick). info is the info string's first word.
func openFence(line string) (f fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return fence{}, "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return fence{}, "", false
	}
	rest := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(rest, "`") {
		return fence{}, "", false
	}
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		rest = rest[:i]
	}
	return fence{char: t[0], n: n}, rest, true
}

// closes reports whether line closes f: up to three spaces, at least as
// many of the same character, then only blanks.
func (f fence) closes(line string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	n := 0
	for n < len(t) && t[n] == f.char {
		n++
	}
	return n >= f.n && strings.TrimSpace(t[n:]) == ""
}

// outsideFences calls fn with the index of every line that is not inside
// (or a delimiter of) a fenced code block, until fn returns false.
func outsideFences(lines []string, fn func(i int) bool) {
	var open fence // open.n == 0: none
	for i, l := range lines {
		if open.n > 0 {
			if open.closes(l) {
				open = fence{}
			}
			continue
		}
		if f, _, ok := openFence(l); ok {
			open = f
			continue
		}
		if !fn(i) {
			return
		}
	}
}

// findHandoffHeading returns the index of the first "## Handoff" line
// outside fenced code blocks, or -1.
func findHandoffHeading(lines []string) int {
	at := -1
	outsideFences(lines, func(i int) bool {
		if handoffHeadingRE.MatchString(lines[i]) {
			at = i
			return false
		}
		return true
	})
	return at
}

// jsonTopLevel reads the top-level member names of a JSON object leniently
// (duplicate names and invalid UTF-8 allowed, depth unbounded by this
// reader's own stack: values are skipped, not walked). typ and kindOf are
// the "type" and "kind" members when they are strings (the last of
// duplicates). isObj is false when data does not start with a JSON object.
func jsonTopLevel(data []byte) (keys []string, typ, kindOf *string, isObj bool) {
	if !looksJSON(data) {
		return nil, nil, nil, false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return nil, nil, nil, false
	}
	for dec.PeekKind() == '"' {
		k, err := dec.ReadToken()
		if err != nil {
			break
		}
		keys = append(keys, k.String())
		if name := k.String(); (name == "type" || name == "kind") && dec.PeekKind() == '"' {
			v, err := dec.ReadToken()
			if err != nil {
				break
			}
			s := v.String()
			if name == "type" {
				typ = &s
			} else {
				kindOf = &s
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			break
		}
	}
	return keys, typ, kindOf, true
}
