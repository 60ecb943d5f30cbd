package handoff

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govledger/govledger/reason"
)

// MaxFieldLen is the longest value, in bytes, that Parse copies into a
// normalized Record field. A longer value is reported and left out.
const MaxFieldLen = 256

// checker collects the findings of one document.
type checker struct {
	rs      []reason.Reason
	missing []string
	strict  bool
	lim     *limits // the parse caps, nil for none
	// yamlRoot is the strict YAML tree of the document that detection
	// read (swarm/2, skill/1), read again instead of parsed.
	yamlRoot *node
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// fieldKey renders a member name of the document for a field path: as it
// is when it has the shape of a field name, otherwise as "<key>" (a name
// with spaces, dots, control or non-ASCII characters, or more than 64
// bytes, is content rather than a field name).
func fieldKey(k string) string {
	if isFieldKey(k) { // the shape of every name a format defines
		return k
	}
	return "<key>"
}

// quote renders a string that does not come from the document (a format
// name, a flag) for a message: Go-quoted (so control, zero-width and bidi
// characters are escaped) and cut at 80 runes. Values taken from a
// document are never quoted into a message: a message names the field,
// the rule and the allowed values, so that redacting a payload leaves
// nothing of it in the ledger entry.
func quote(s string) string {
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		return strconv.QuoteToASCII(string(r[:80])) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// add records a finding about field at n's position (or none when n is nil).
func (c *checker) add(code reason.Code, sev reason.Severity, field string, n *node, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if field != "" {
		msg = field + ": " + msg
	}
	if n != nil && n.line > 0 {
		msg = fmt.Sprintf("%d:%d: %s", n.line, n.col, msg)
	}
	c.rs = append(c.rs, reason.Reason{Code: code, Severity: sev, Field: field, Message: msg})
}

func (c *checker) schema(field string, n *node, format string, a ...any) {
	c.add(reason.SchemaInvalid, reason.Error, field, n, format, a...)
}

// get returns member key of obj; a missing or null required member is
// reported (at obj's position) and nil returned.
func (c *checker) get(obj *node, path, key string, required bool) *node {
	v, ok := obj.member(key)
	if !ok || v.kind == kNull {
		if required {
			field := join(path, key)
			if !ok {
				c.missing = append(c.missing, field)
				c.schema(field, obj, "required field is missing")
			} else {
				c.schema(field, v, "required field is null")
			}
		}
		return nil
	}
	return v
}

func (c *checker) want(field string, v *node, k kind) bool {
	if v.big {
		return false // reported UNPARSEABLE when it was read
	}
	if v.kind != k {
		c.schema(field, v, "must be a %s, not a %s", k, v.kind)
		return false
	}
	return true
}

// wantMember is want for member key of the mapping at path (the field
// path is built only for a finding).
func (c *checker) wantMember(path, key string, v *node, k kind) bool {
	if v.big {
		return false
	}
	if v.kind != k {
		return c.want(join(path, key), v, k)
	}
	return true
}

// object returns member key when it is a mapping/object.
func (c *checker) object(obj *node, path, key string, required bool) *node {
	v := c.get(obj, path, key, required)
	if v == nil || !c.wantMember(path, key, v, kObject) {
		return nil
	}
	return v
}

// str returns member key when it is a string. nonEmpty refuses "" and
// white space only.
func (c *checker) str(obj *node, path, key string, required, nonEmpty bool) (string, *node, bool) {
	v := c.get(obj, path, key, required)
	if v == nil || !c.wantMember(path, key, v, kString) {
		return "", v, false
	}
	if v.timestamp {
		c.schema(join(path, key), v, "unquoted timestamp where text is expected; quote it")
		return "", v, false
	}
	if nonEmpty && strings.TrimSpace(v.text) == "" {
		c.schema(join(path, key), v, "must not be empty")
		return "", v, false
	}
	return v.text, v, true
}

// enum returns member key when it is one of values; otherwise code.
func (c *checker) enum(obj *node, path, key string, required bool, code reason.Code, values ...string) (string, bool) {
	s, v, ok := c.str(obj, path, key, required, false)
	if !ok {
		return "", false
	}
	if !slices.Contains(values, s) {
		c.add(code, reason.Error, join(path, key), v, "is not one of %s", strings.Join(values, ", "))
		return "", false
	}
	return s, true
}

func (c *checker) boolean(obj *node, path, key string, required bool) *bool {
	v := c.get(obj, path, key, required)
	if v == nil || !c.wantMember(path, key, v, kBool) {
		return nil
	}
	b := v.text == "true"
	return &b
}

// list returns member key when it is a list.
func (c *checker) list(obj *node, path, key string, required bool) ([]*node, bool) {
	v := c.get(obj, path, key, required)
	if v == nil || !c.wantMember(path, key, v, kArray) {
		return nil, false
	}
	return v.items, true
}

// strList returns member key when it is a list of strings.
func (c *checker) strList(obj *node, path, key string, required bool) ([]string, bool) {
	items, ok := c.list(obj, path, key, required)
	if !ok {
		return nil, false
	}
	var out []string
	for i, it := range items {
		if it.big || it.kind != kString {
			c.want(index(join(path, key), i), it, kString)
			ok = false
			continue
		}
		if out == nil {
			out = make([]string, 0, len(items))
		}
		out = append(out, it.text)
	}
	if out == nil {
		out = []string{}
	}
	return out, ok
}

// objects returns the items of list member key that are mappings.
func (c *checker) objects(obj *node, path, key string, required bool) []*node {
	items, ok := c.list(obj, path, key, required)
	if !ok {
		return nil
	}
	for i, it := range items {
		if it.big || it.kind != kObject {
			// Only a list with items that are not mappings is copied.
			out := make([]*node, len(items))
			for j, it := range items {
				if j < i || c.want(index(join(path, key), j), it, kObject) {
					out[j] = it
				}
			}
			return out
		}
	}
	return items
}

// integer returns member key when it is a decimal integer >= min.
func (c *checker) integer(obj *node, path, key string, required bool, min int64) (int64, bool) {
	v := c.get(obj, path, key, required)
	if v == nil || !c.wantMember(path, key, v, kNumber) {
		return 0, false
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	if err != nil || !isDecimalInt(v.text) || v.text == "-0" {
		c.schema(join(path, key), v, "is not an integer")
		return 0, false
	}
	if n < min {
		c.schema(join(path, key), v, "is less than %d", min)
		return 0, false
	}
	return n, true
}

// number returns member key when it is any finite number.
func (c *checker) number(obj *node, path, key string, required bool) bool {
	v := c.get(obj, path, key, required)
	return v != nil && c.wantMember(path, key, v, kNumber)
}

// known reports every member of obj not in names as SCHEMA_INVALID; why
// says which schema is closed.
func (c *checker) known(obj *node, path, why string, names ...string) {
	if obj == nil {
		return
	}
	for i, k := range obj.keys {
		if !slices.Contains(names, k) {
			where := "the document"
			if path != "" {
				where = path
			}
			c.schema(join(path, fieldKey(k)), obj.items[i], "unknown field: %s; %s holds only %s", why, where, strings.Join(names, ", "))
		}
	}
}

// timestamp checks member key as an RFC 3339 timestamp (INVALID_TIMESTAMP)
// and returns its text and instant.
func (c *checker) timestamp(obj *node, path, key string, required bool) (string, time.Time, bool) {
	v := c.get(obj, path, key, required)
	if v == nil || !c.wantMember(path, key, v, kString) {
		return "", time.Time{}, false
	}
	t, ok := parseTimestamp(v.text)
	if !ok {
		c.add(reason.InvalidTimestamp, reason.Error, join(path, key), v,
			"is not an RFC 3339 timestamp (YYYY-MM-DDThh:mm:ss[.fraction](Z|+hh:mm), upper-case T and Z, at most 9 fraction digits)")
		return "", time.Time{}, false
	}
	return v.text, t, true
}

func parseTimestamp(s string) (time.Time, bool) {
	if !isRFC3339(s) { // RFC 3339 with upper-case T and Z, 1-9 fraction digits
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// agentID checks an agent name against the canonical grammar.
func (c *checker) agentID(field string, v *node, s string) bool {
	if len(s) > MaxFieldLen || !isAgentID(s) {
		c.schema(field, v, "is not a canonical agent id ([a-z0-9][a-z0-9-]*, at most %d bytes)", MaxFieldLen)
		return false
	}
	return true
}

// fits reports whether s may be copied into a normalized Record field.
func fits(s string) bool { return len(s) <= MaxFieldLen && utf8.ValidString(s) }

// lexicalPath checks a path as written, before any file-system access: it
// must be non-empty, free of NUL, control characters and backslashes, not
// a URL, and (when relativeOnly) relative and inside the root. An absolute
// path passes here when relativeOnly is false; the Env then decides.
func (c *checker) lexicalPath(field string, v *node, p string, relativeOnly bool) bool {
	why := ""
	switch {
	case p == "":
		why = "is empty"
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		why = "contains a control character"
	case strings.Contains(p, `\`):
		why = "contains a backslash"
	case strings.Contains(p, "://"):
		why = "is a URL (never fetched)"
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/"):
		if relativeOnly {
			why = "is absolute; paths must be relative to the project root"
		}
	case !filepath.IsLocal(p):
		why = "leaves the root"
	}
	if why != "" {
		c.add(reason.PathEscape, reason.Error, field, v, "path %s", why)
		return false
	}
	return true
}

// integerValue returns the value of a number node written as a decimal
// integer.
func (c *checker) integerValue(v *node) (int64, bool) {
	if !isDecimalInt(v.text) || v.text == "-0" {
		return 0, false
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	return n, err == nil
}
