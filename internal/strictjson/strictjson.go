// Package strictjson decodes JSON the way a security file must be read:
// exactly one value, no duplicate names, valid UTF-8 only, no numbers outside
// the I-JSON safe range (|n| <= 2^53-1), bounded nesting, unknown members
// refused, and every error placed at a line and column of the input.
//
// It also produces RFC 8785 (JCS) canonical bytes, the form in which
// govledger stores and hashes entries.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is the deepest nesting of objects and arrays that Check accepts.
const MaxDepth = 64

// MaxSafeInteger is 2^53-1, the largest integer every JSON reader agrees on.
const MaxSafeInteger = 1<<53 - 1

// Errors returned (wrapped in *Error) by Check and Unmarshal.
var (
	// ErrSyntax is returned for malformed JSON, including trailing data,
	// duplicate names and invalid UTF-8.
	ErrSyntax = errors.New("invalid JSON")
	// ErrNumber is returned for a number outside +-(2^53-1) or not finite.
	ErrNumber = errors.New("number outside the safe range +-(2^53-1)")
	// ErrDepth is returned when nesting exceeds MaxDepth.
	ErrDepth = errors.New("nesting too deep")
	// ErrEmpty is returned for input with no JSON value.
	ErrEmpty = errors.New("empty document")
	// ErrBOM is returned for input that starts with a UTF-8 byte order mark.
	ErrBOM = errors.New("byte order mark before the JSON value")
	// ErrType is returned when a value has the wrong JSON type for its field,
	// or a member is not known.
	ErrType = errors.New("wrong type or unknown field")
)

// Error is a decoding failure at a place in the input.
type Error struct {
	File    string // as given by the caller; may be empty
	Line    int    // 1-based; 0 if unknown
	Column  int    // 1-based, in bytes; 0 if unknown
	Pointer string // RFC 6901 JSON Pointer of the offending value, if known
	Msg     string // what is wrong, without the position
	Err     error  // one of the sentinels above
}

func (e *Error) Error() string {
	var b bytes.Buffer
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Pointer != "" {
		fmt.Fprintf(&b, "%s: ", e.Pointer)
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Position converts a byte offset in data to a 1-based line and column.
func Position(data []byte, offset int64) (line, col int) {
	if offset < 0 {
		offset = 0
	}
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line = 1 + bytes.Count(data[:offset], []byte{'\n'})
	start := bytes.LastIndexByte(data[:offset], '\n') + 1
	return line, int(offset) - start + 1
}

func newError(file string, data []byte, offset int64, ptr string, sentinel error, msg string) *Error {
	line, col := Position(data, offset)
	return &Error{File: file, Line: line, Column: col, Pointer: ptr, Msg: msg, Err: sentinel}
}

// Check reports whether data is exactly one strict JSON value. file is used
// only in error messages.
func Check(file string, data []byte) error {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return &Error{File: file, Line: 1, Column: 1, Msg: ErrBOM.Error(), Err: ErrBOM}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{File: file, Line: 1, Column: 1, Msg: ErrEmpty.Error(), Err: ErrEmpty}
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data),
		jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	depth := 0
	for {
		off := dec.InputOffset()
		tok, err := dec.ReadToken()
		if err != nil {
			return syntaxError(file, data, off, err)
		}
		switch tok.Kind() {
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return newError(file, data, off, string(dec.StackPointer()), ErrDepth,
					fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
			}
		case '}', ']':
			depth--
		case '0':
			if err := checkNumber(tok.String()); err != nil {
				return newError(file, data, dec.InputOffset()-int64(len(tok.String())), string(dec.StackPointer()), ErrNumber,
					fmt.Sprintf("number %s is outside the safe range +-(2^53-1)", truncate(tok.String())))
			}
		}
		if depth == 0 {
			break
		}
	}
	// Exactly one value: anything but white space after it is an error.
	off := dec.InputOffset()
	if _, err := dec.ReadToken(); err == nil {
		return newError(file, data, skipSpace(data, off), "", ErrSyntax, "trailing data after the JSON value")
	} else if !errors.Is(err, io.EOF) {
		return syntaxError(file, data, off, err)
	}
	return nil
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && (data[off] == ' ' || data[off] == '\t' || data[off] == '\n' || data[off] == '\r') {
		off++
	}
	return off
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// CheckNumber reports whether the JSON number literal lit is within the
// safe range Check enforces (ErrNumber if not), for callers that read JSON
// with their own strict jsontext.Decoder.
func CheckNumber(lit string) error { return checkNumber(lit) }

func checkNumber(lit string) error {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > MaxSafeInteger {
		return ErrNumber
	}
	return nil
}

func syntaxError(file string, data []byte, off int64, err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		msg := se.Err.Error()
		if se.Err == nil {
			msg = se.Error()
		}
		return newError(file, data, se.ByteOffset, string(se.JSONPointer), ErrSyntax, cleanMsg(msg))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return newError(file, data, int64(len(data)), "", ErrSyntax, "unexpected end of input")
	}
	return newError(file, data, off, "", ErrSyntax, cleanMsg(err.Error()))
}

func cleanMsg(s string) string {
	if !utf8.ValidString(s) {
		return "invalid JSON"
	}
	return s
}

// Unmarshal checks data with Check and then decodes it into v, refusing
// members that v does not declare and values of the wrong type. Names match
// exactly (case-sensitive).
func Unmarshal(file string, data []byte, v any) error {
	if err := Check(file, data); err != nil {
		return err
	}
	err := json.Unmarshal(data, v, json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if errors.As(err, &se) {
		msg := "wrong type"
		switch {
		case se.Err != nil && errors.Is(se.Err, json.ErrUnknownName):
			msg = "unknown field"
		case se.Err != nil:
			msg = cleanMsg(se.Err.Error())
		case se.JSONKind != 0 && se.GoType != nil:
			msg = fmt.Sprintf("cannot use JSON %s as %s", kindName(se.JSONKind), se.GoType)
		}
		return newError(file, data, se.ByteOffset, string(se.JSONPointer), ErrType, msg)
	}
	return syntaxError(file, data, 0, err)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// Canonical returns the RFC 8785 (JCS) canonical form of v marshaled as
// JSON: members sorted by UTF-16 code units, no insignificant white space,
// minimal string escaping (no HTML escaping), shortest number form.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v, jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false), json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return CanonicalizeBytes(b)
}

// CanonicalizeBytes returns the RFC 8785 canonical form of the JSON value in
// data. The input must pass Check; numbers outside the safe range would be
// silently rounded by JCS, so they are refused here.
func CanonicalizeBytes(data []byte) ([]byte, error) {
	if err := Check("", data); err != nil {
		return nil, err
	}
	v := jsontext.Value(bytes.Clone(data))
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	return []byte(v), nil
}

// Positions maps the JSON Pointer of every member and element of a
// document to the line and column where it starts (the member name, for
// object members). The map is built on first use, so valid documents never
// pay for it.
type Positions struct {
	data []byte
	off  map[string]int64
}

// NewPositions returns the positions of data (read lazily).
func NewPositions(data []byte) *Positions { return &Positions{data: data} }

func (p *Positions) index() {
	p.off = map[string]int64{}
	dec := jsontext.NewDecoder(bytes.NewReader(p.data))
	for {
		off := dec.InputOffset()
		if _, err := dec.ReadToken(); err != nil {
			break
		}
		ptr := string(dec.StackPointer())
		if _, ok := p.off[ptr]; !ok {
			p.off[ptr] = skipSeparators(p.data, off)
		}
	}
}

func skipSeparators(data []byte, off int64) int64 {
	for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n,:"), data[off]) >= 0 {
		off++
	}
	return off
}

// At returns the 1-based line and column of ptr, or of its nearest
// ancestor that is in the document (1, 1 if none).
func (p *Positions) At(ptr string) (line, col int) {
	if p.off == nil {
		p.index()
	}
	for {
		if off, ok := p.off[ptr]; ok {
			return Position(p.data, off)
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return 1, 1
		}
		ptr = ptr[:i]
	}
}
