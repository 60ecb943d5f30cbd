package handoff

import (
	"bytes"

	"github.com/govledger/govledger/reason"
)

// Rules versions (Options.Rules, recorded by policy in every decision's
// inputs). A version names the format rules a document was read by, so
// that a decision is re-taken later by the rules it was taken by.
const (
	// RulesUnbounded (1, and 0: entries written before versions existed)
	// reads a document with no cap but MaxDocumentSize.
	RulesUnbounded = 1
	// RulesBounded (2) adds the parse caps: lines, and values per carrier
	// (see MaxLines, MaxValues). A document over a cap is refused with
	// PARSE_LIMIT before its carrier is read.
	RulesBounded = 2
	// CurrentRules is the version new decisions are taken by.
	CurrentRules = RulesBounded
)

// The parse caps of RulesBounded. Each allows a floor whatever the size,
// plus a density: a document may hold more lines and values the larger it
// is, but never more per byte than its reader can hold in a small
// multiple of the document's size (8x; the YAML reader spends about 800
// bytes per value, the JSON reader about 160).
const (
	// BaseLines lines are allowed in any document, plus one per
	// BytesPerLine bytes.
	BaseLines    = 4096
	BytesPerLine = 16
	// BaseValues values (scalars, lists and mappings) are allowed in any
	// document, plus one per JSONBytesPerValue bytes of JSON or
	// YAMLBytesPerValue bytes of YAML.
	BaseValues        = 4096
	JSONBytesPerValue = 96
	YAMLBytesPerValue = 192
)

// MaxLines is the most lines a document of size bytes may have under
// RulesBounded.
func MaxLines(size int) int { return BaseLines + size/BytesPerLine }

// MaxValues is the most values a document of size bytes may hold under
// RulesBounded, in JSON or (yaml) in YAML. For YAML the values are counted
// from its indicators before it is read (see yamlValueBound), an upper
// bound of what the reader would build.
func MaxValues(size int, yaml bool) int {
	if yaml {
		return BaseValues + size/YAMLBytesPerValue
	}
	return BaseValues + size/JSONBytesPerValue
}

// limits are the caps one Parse applies; nil applies none (RulesUnbounded).
type limits struct {
	size int // of the whole document: the caps grow with it
}

func newLimits(rules, size int) *limits {
	if rules < RulesBounded {
		return nil
	}
	return &limits{size: size}
}

// linesOver reports the lines of data and whether they exceed the cap.
func (l *limits) linesOver(data []byte) (n, limit int, over bool) {
	if l == nil {
		return 0, 0, false
	}
	limit = MaxLines(l.size)
	// Counting stops past the cap: the answer is the same.
	n = 1
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		n++
		if n > limit {
			return n, limit, true
		}
		i += j + 1
	}
	return n, limit, false
}

// valuesOver reports an upper bound of the values the carrier would build
// from text and whether it exceeds the cap.
func (l *limits) valuesOver(text []byte, yaml bool) (n, limit int, over bool) {
	if l == nil {
		return 0, 0, false
	}
	limit = MaxValues(l.size, yaml)
	if yaml {
		n = yamlValueBound(text, limit)
	} else {
		n = countValues(string(text))
	}
	return n, limit, n > limit
}

// parseLimit adds the PARSE_LIMIT finding of a cap that was hit: what
// names what was counted.
func (c *checker) parseLimit(what string, limit, size int) {
	c.add(reason.ParseLimit, reason.Error, "", nil,
		"the document has more %s than the %d allowed in a document of %d bytes (the parse caps of rules %d); it was not read",
		what, limit, size, RulesBounded)
}

// What parseLimit names.
const (
	limitLines      = "lines"
	limitJSONValues = "JSON values"
	limitYAMLValues = "YAML values (counted by their indicators - : , ? [ { *)"
)

// yamlValueBound returns an upper bound of the nodes yaml.v3 builds from
// text (two documents at most: the reader stops after the second), or a
// number above stop once it is past stop. Every node but a document's root
// is introduced by an indicator: a flow collection by "[" or "{" (with its
// first entry: 2 and 3), a further flow entry by "," (a key and a value:
// 2), a mapping entry by ":" (key and value: 2) or "?" (2), a block
// sequence entry by "-" before a blank, an alias by "*". Each is counted
// wherever it stands (in a quoted scalar or a comment too), so the bound
// never undercounts; FuzzYAMLValueBound holds it to the reader.
func yamlValueBound(text []byte, stop int) int {
	n := 2
	for i, c := range text {
		switch c {
		case '[', '?', ',', ':':
			n += 2
		case '{':
			n += 3
		case '*':
			n++
		case '-':
			if i+1 == len(text) || isYAMLBlank(text[i+1]) {
				n++
			}
		default:
			continue
		}
		if n > stop {
			return n
		}
	}
	return n
}

func isYAMLBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
