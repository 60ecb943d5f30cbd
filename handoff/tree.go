package handoff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"

	"github.com/govledger/govledger/internal/strictjson"

	"github.com/govledger/govledger/reason"
)

// MaxDepth is the deepest nesting of mappings/objects and sequences/arrays
// that Parse accepts in any format.
const MaxDepth = 32

// kind is the type of a document value after the carrier (JSON or YAML)
// has been read strictly.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kObject
	kArray
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "mapping", "list"}[k]
}

// node is one value of a document, with the line and column (1-based,
// bytes) where it starts. JSON and YAML documents are both read into nodes,
// so the format rules are written once.
type node struct {
	kind      kind
	timestamp bool // YAML plain scalar resolved as !!timestamp (text as written)
	// big marks a number outside +-(2^53-1), read only by the lenient
	// carrier pass (see numberTree); it is reported UNPARSEABLE once and
	// never used as a value.
	big  bool
	text string // string value, number literal, or "true"/"false"
	// keys are a mapping's member names in document order; items are a
	// list's items, or a mapping's member values (items[i] is keys[i]'s).
	keys  []string
	items []*node
	// index maps the names of a mapping of more than indexedMembers
	// members to their place; smaller mappings are scanned.
	index     map[string]int
	line, col int
}

// indexedMembers is the number of members above which a mapping keeps an
// index of its names.
const indexedMembers = 16

func (n *node) member(key string) (*node, bool) {
	if n == nil || n.kind != kObject {
		return nil, false
	}
	if n.index != nil {
		i, ok := n.index[key]
		if !ok {
			return nil, false
		}
		return n.items[i], true
	}
	for i, k := range n.keys {
		if k == key {
			return n.items[i], true
		}
	}
	return nil, false
}

// addMember appends member key with value v to the mapping n; it reports
// false, and adds nothing, when n has a member of that name already.
func (n *node) addMember(key string, v *node) bool {
	if _, dup := n.member(key); dup {
		return false
	}
	n.keys = append(n.keys, key)
	n.items = append(n.items, v)
	switch {
	case n.index != nil:
		n.index[key] = len(n.keys) - 1
	case len(n.keys) > indexedMembers:
		n.index = make(map[string]int, 2*indexedMembers)
		for i, k := range n.keys {
			n.index[k] = i
		}
	}
	return true
}

// carrierError is a failure of the carrier syntax (JSON or YAML), reported
// as UNPARSEABLE. Its message names positions, field paths and the rule
// broken, never a value of the document.
type carrierError struct {
	line, col int
	msg       string
	// number is set when the only failure is a number outside the safe
	// range: the lenient pass can then still read the document's fields.
	number bool
}

func (e *carrierError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg)
	}
	return e.msg
}

// jsonTree reads data, which must pass strictjson.Check, into nodes.
//
// The fast path (jsonTreeFast) reads its bytes once, by Check's rules under
// this package's lower depth limit; whatever it refuses goes through Check,
// which words the error. So data passes the fast path only if Check would
// accept it (FuzzJSONTree holds the two together).
func jsonTree(data []byte) (*node, error) {
	if n := jsonTreeFast(data); n != nil {
		return n, nil
	}
	return jsonTreeChecked(data)
}

// jsonTreeChecked is jsonTree's slow path: strictjson.Check, then a read.
func jsonTreeChecked(data []byte) (*node, error) {
	if err := strictjson.Check("", data); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			msg := jsonProblem(se)
			if p := pointerPath(se.Pointer); p != "" {
				msg = p + ": " + msg
			}
			return nil, &carrierError{line: se.Line, col: se.Column, msg: msg, number: errors.Is(se, strictjson.ErrNumber)}
		}
		return nil, &carrierError{msg: "invalid JSON"}
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	return jsonValue(dec, data, newLineIndex(data), 0, numTrust)
}

// jsonTreeBig reads data, whose strict read failed only because of
// numbers outside the safe range, with every other strict rule (no
// duplicate names, valid UTF-8, depth, exactly one value) and those numbers
// marked big. It returns nil when the data breaks any other rule.
func jsonTreeBig(data []byte) *node {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data),
		jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	n, err := jsonValue(dec, data, newLineIndex(data), 0, numMark)
	if err != nil {
		return nil
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil
	}
	return n
}

// jsonProblem words a strict JSON failure by its kind alone: the decoder's
// own text may quote the offending characters or member names.
func jsonProblem(se *strictjson.Error) string {
	switch {
	case errors.Is(se, strictjson.ErrNumber):
		return "number outside the safe range +-(2^53-1)"
	case errors.Is(se, strictjson.ErrDepth):
		return fmt.Sprintf("nesting deeper than %d levels", strictjson.MaxDepth)
	case errors.Is(se, strictjson.ErrEmpty):
		return "empty document"
	case errors.Is(se, strictjson.ErrBOM):
		return "byte order mark before the JSON value"
	}
	m := se.Msg
	for _, k := range []struct{ in, out string }{
		{"duplicate", "duplicate member name"},
		{"trailing data", "trailing data after the JSON value"},
		{"after top-level value", "trailing data after the JSON value"},
		{"end of input", "unexpected end of input"},
		{"UTF-8", "invalid UTF-8"},
		{"surrogate", "invalid surrogate pair in a string"},
		{"escape", "invalid escape sequence in a string"},
		{"must be a string", "member name is not a string"},
		{"after object name", "missing value after a member name"},
		{"character", "invalid character"},
	} {
		if strings.Contains(m, k.in) {
			return "invalid JSON: " + k.out
		}
	}
	return "invalid JSON"
}

// pointerPath turns an RFC 6901 JSON Pointer into the dotted field path
// the findings use ("/a/0/b" is "a[0].b"), each member name passed through
// fieldKey.
func pointerPath(ptr string) string {
	if ptr == "" || ptr[0] != '/' {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if isDecimalInt(tok) && !strings.HasPrefix(tok, "-") {
			// Array index (a member named like a number reads the same way).
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(fieldKey(tok))
	}
	return b.String()
}

// lineIndex maps byte offsets to 1-based lines and columns in O(log n).
type lineIndex []int // offsets where lines start

func newLineIndex(data []byte) lineIndex {
	idx := lineIndex{0}
	for i, b := range data {
		if b == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

func (x lineIndex) position(off int64) (line, col int) {
	i := sort.Search(len(x), func(i int) bool { return int64(x[i]) > off }) - 1
	return i + 1, int(off) - x[i] + 1
}

// numMode says what jsonValue does with a number outside the safe range.
type numMode uint8

const (
	numTrust  numMode = iota // the input passed strictjson.Check
	numRefuse                // fail (the fast path)
	numMark                  // keep it, marked big (the lenient pass)
)

func jsonValue(dec *jsontext.Decoder, data []byte, lines lineIndex, depth int, numbers numMode) (*node, error) {
	off := skipSpace(data, dec.InputOffset())
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, &carrierError{msg: "invalid JSON"}
	}
	line, col := lines.position(off)
	n := &node{line: line, col: col}
	switch tok.Kind() {
	case 'n':
		n.kind = kNull
	case 't', 'f':
		n.kind, n.text = kBool, strconv.FormatBool(tok.Bool())
	case '"':
		n.kind, n.text = kString, tok.String()
	case '0':
		n.kind, n.text = kNumber, tok.String()
		if numbers != numTrust && strictjson.CheckNumber(n.text) != nil {
			if numbers == numRefuse {
				return nil, &carrierError{line: line, col: col, msg: "number outside the safe range", number: true}
			}
			n.big = true
		}
	case '{', '[':
		if depth+1 > MaxDepth {
			return nil, &carrierError{line: line, col: col, msg: fmt.Sprintf("nesting deeper than %d levels", MaxDepth)}
		}
		if tok.Kind() == '[' {
			n.kind = kArray
			for dec.PeekKind() != ']' {
				v, err := jsonValue(dec, data, lines, depth+1, numbers)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
		} else {
			n.kind = kObject
			for dec.PeekKind() != '}' {
				tok, err := dec.ReadToken()
				if err != nil {
					return nil, &carrierError{msg: "invalid JSON"}
				}
				k := tok.String() // tok is void after the next read
				v, err := jsonValue(dec, data, lines, depth+1, numbers)
				if err != nil {
					return nil, err
				}
				if !n.addMember(k, v) {
					return nil, &carrierError{msg: "invalid JSON"}
				}
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, &carrierError{msg: "invalid JSON"}
		}
	default:
		return nil, &carrierError{line: line, col: col, msg: "invalid JSON"}
	}
	return n, nil
}

// skipSpace skips white space and the ':' or ',' before a JSON value.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
		off++
	}
	return off
}

var (
	yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	decimalRE  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// yamlTree reads exactly one YAML document strictly: no anchors, aliases,
// explicit tags, merge keys, duplicate or non-string keys, nesting deeper
// than MaxDepth, or second document. lineOff is added to every line (for a
// YAML block embedded in a larger file).
func yamlTree(data []byte, lineOff int) (*node, error) {
	if len(data) > maxCachedYAML {
		return yamlTreeParse(data, lineOff)
	}
	if root, err, ok := yamlTrees.get(data, lineOff); ok {
		return root, err
	}
	root, err := yamlTreeParse(data, lineOff)
	yamlTrees.put(data, lineOff, root, err)
	return root, err
}

// maxCachedYAML bounds the documents yamlTrees keeps (a copy of each).
const maxCachedYAML = 64 << 10

// yamlTrees remembers the trees of the last documents read. Recording one
// document reads its YAML up to five times (detection, the file-system
// observation pass, the decision's detection and parse), and YAML parsing
// dominated the cost of the YAML formats. Entries are found by content,
// compared in full (never by identity or hash alone), and nodes are never
// changed once built, so a tree can be shared between goroutines.
var yamlTrees yamlCache

type yamlCache struct {
	mu      sync.Mutex
	next    int
	entries [32]struct {
		data    []byte
		lineOff int // line numbers are shifted by it (task/1 blocks)
		root    *node
		err     error
	}
}

func (c *yamlCache) get(data []byte, lineOff int) (*node, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		if e := &c.entries[i]; e.data != nil && e.lineOff == lineOff && bytes.Equal(e.data, data) {
			return e.root, e.err, true
		}
	}
	return nil, nil, false
}

func (c *yamlCache) put(data []byte, lineOff int, root *node, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &c.entries[c.next]
	e.data, e.lineOff, e.root, e.err = bytes.Clone(data), lineOff, root, err
	if e.data == nil {
		e.data = []byte{}
	}
	c.next = (c.next + 1) % len(c.entries)
}

func yamlTreeParse(data []byte, lineOff int) (*node, error) {
	return yamlTreeMode(data, lineOff, false)
}

// yamlTreeBig reads data, whose strict read failed only because of
// numbers outside the safe range, with every other strict rule and those
// numbers marked big. It returns nil when the data breaks any other rule.
func yamlTreeBig(data []byte, lineOff int) *node {
	n, err := yamlTreeMode(data, lineOff, true)
	if err != nil {
		return nil
	}
	return n
}

func yamlTreeMode(data []byte, lineOff int, lenient bool) (*node, error) {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, &carrierError{line: 1 + lineOff, col: 1, msg: "byte order mark before the YAML document"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &carrierError{line: 1 + lineOff, col: 1, msg: "empty YAML document"}
		}
		return nil, yamlSyntax(err, lineOff)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlSyntax(err, lineOff)
		}
		return nil, &carrierError{line: extra.Line + lineOff, col: extra.Column, msg: "more than one YAML document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &carrierError{line: 1 + lineOff, col: 1, msg: "empty YAML document"}
	}
	y := yamlReader{lineOff: lineOff, lenient: lenient}
	return y.value(doc.Content[0], 1, "")
}

// yamlQuotedRE matches the fragments of a yaml.v3 error that quote the
// document ('anchor', `value`).
var yamlQuotedRE = regexp.MustCompile("'[^']*'|`[^`]*`|\"[^\"]*\"")

func yamlSyntax(err error, lineOff int) error {
	msg := yamlQuotedRE.ReplaceAllString(err.Error(), "(…)")
	if !utf8.ValidString(msg) {
		msg = "yaml: invalid YAML"
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		l, _ := strconv.Atoi(m[1])
		return &carrierError{line: l + lineOff, col: 1, msg: "invalid YAML: " + m[2]}
	}
	return &carrierError{msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// yamlReader turns yaml.Nodes into nodes, refusing what the carrier
// forbids. Its errors name the field path and the rule, never a value, an
// anchor or a tag of the document.
type yamlReader struct {
	lineOff int
	lenient bool // keep numbers outside the safe range, marked big
}

func (r yamlReader) value(y *yaml.Node, depth int, path string) (*node, error) {
	line, col := y.Line+r.lineOff, y.Column
	bad := func(format string, a ...any) error {
		msg := fmt.Sprintf(format, a...)
		if path != "" {
			msg = path + ": " + msg
		}
		return &carrierError{line: line, col: col, msg: msg}
	}
	switch {
	case y.Kind == yaml.AliasNode:
		return nil, bad("YAML alias is not allowed")
	case y.Anchor != "":
		return nil, bad("YAML anchor is not allowed")
	case y.Style&yaml.TaggedStyle != 0:
		return nil, bad("explicit YAML tag is not allowed")
	}
	n := &node{line: line, col: col}
	switch y.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		if depth > MaxDepth {
			return nil, bad("nesting deeper than %d levels", MaxDepth)
		}
		if y.Kind == yaml.SequenceNode {
			n.kind = kArray
			for i, c := range y.Content {
				v, err := r.value(c, depth+1, index(path, i))
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			return n, nil
		}
		n.kind = kObject
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			kl, kc := k.Line+r.lineOff, k.Column
			at := func(msg string) error {
				if path != "" {
					msg = path + ": " + msg
				}
				return &carrierError{line: kl, col: kc, msg: msg}
			}
			switch {
			case k.Kind == yaml.AliasNode || k.Anchor != "" || k.Style&yaml.TaggedStyle != 0:
				if _, err := r.value(k, depth+1, path); err != nil {
					return nil, err
				}
			case k.Kind != yaml.ScalarNode:
				return nil, at("mapping key is not a string")
			case k.ShortTag() == "!!merge":
				return nil, at("YAML merge key << is not allowed")
			case k.ShortTag() != "!!str":
				return nil, at(fmt.Sprintf("mapping key is not a string (it reads as %s)", k.ShortTag()))
			}
			if _, dup := n.member(k.Value); dup {
				return nil, at(fmt.Sprintf("duplicate key %s", fieldKey(k.Value)))
			}
			val, err := r.value(v, depth+1, join(path, fieldKey(k.Value)))
			if err != nil {
				return nil, err
			}
			n.addMember(k.Value, val)
		}
		return n, nil
	case yaml.ScalarNode:
		switch y.ShortTag() {
		case "!!str":
			n.kind, n.text = kString, y.Value
		case "!!timestamp":
			n.kind, n.text, n.timestamp = kString, y.Value, true
		case "!!null":
			n.kind = kNull
		case "!!bool":
			n.kind, n.text = kBool, strconv.FormatBool(strings.EqualFold(y.Value, "true"))
		case "!!int", "!!float":
			if y.ShortTag() == "!!int" && !isDecimalInt(y.Value) {
				return nil, bad("integer is not in decimal notation")
			}
			if y.ShortTag() == "!!float" && !decimalRE.MatchString(y.Value) {
				return nil, bad("number is not a finite decimal number")
			}
			n.kind, n.text = kNumber, y.Value
			if !safeNumber(y.Value) {
				if !r.lenient {
					e := bad("number outside the safe range +-(2^53-1)").(*carrierError)
					e.number = true
					return nil, e
				}
				n.big = true
			}
		default:
			return nil, bad("YAML value of type %s is not allowed", y.ShortTag())
		}
		return n, nil
	}
	return nil, bad("unexpected YAML node")
}

func safeNumber(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) <= strictjson.MaxSafeInteger
}

// yamlObject parses data as the strict YAML of a swarm/2 or skill/1
// document and returns its top-level mapping; a document that does not
// parse is UNPARSEABLE, one that is not a mapping SCHEMA_INVALID.
func (c *checker) yamlObject(data []byte) (*node, bool) {
	if c.yamlRoot != nil {
		return c.yamlRoot, c.want("", c.yamlRoot, kObject)
	}
	root, ok := c.carrier(data, 0, true, yamlTree, yamlTreeBig)
	if !ok {
		return nil, false
	}
	return root, c.want("", root, kObject)
}

// jsonRoot parses data as the strict JSON of a governed/1 or vbw/1
// document; see carrier. tree, when not nil, is data's strict tree, read
// by detection.
func (c *checker) jsonRoot(data []byte, tree *node) (*node, bool) {
	if tree != nil {
		return tree, true
	}
	return c.carrier(data, 0, false,
		func(d []byte, _ int) (*node, error) { return jsonTree(d) },
		func(d []byte, _ int) *node { return jsonTreeBig(d) })
}

// carrier reads data with strict, reporting a failure as UNPARSEABLE. When
// the only failure is numbers outside the safe range, the document's
// fields are still read (through big) so that its agents, handoff id and
// workflow reach the record and the ledger's indexes; each such number is
// reported UNPARSEABLE, so the document stays rejected.
//
// Under the parse caps (c.lim), data holding more values than allowed is
// refused with PARSE_LIMIT and not read.
func (c *checker) carrier(data []byte, lineOff int, yaml bool, strict func([]byte, int) (*node, error), big func([]byte, int) *node) (*node, bool) {
	if _, limit, over := c.lim.valuesOver(data, yaml); over {
		what := limitJSONValues
		if yaml {
			what = limitYAMLValues
		}
		c.parseLimit(what, limit, c.lim.size)
		return nil, false
	}
	root, err := strict(data, lineOff)
	if err == nil {
		return root, true
	}
	var ce *carrierError
	if errors.As(err, &ce) && ce.number {
		if root := big(data, lineOff); root != nil {
			c.bigNumbers(root, "")
			return root, true
		}
	}
	c.add(reason.Unparseable, reason.Error, "", nil, "%v", err)
	return nil, false
}

// bigNumbers reports every number of n marked big, in document order.
func (c *checker) bigNumbers(n *node, path string) {
	switch {
	case n.big:
		c.add(reason.Unparseable, reason.Error, path, n, "number outside the safe range +-(2^53-1)")
	case n.kind == kObject:
		for i, k := range n.keys {
			c.bigNumbers(n.items[i], join(path, fieldKey(k)))
		}
	case n.kind == kArray:
		for i, it := range n.items {
			c.bigNumbers(it, index(path, i))
		}
	}
}
