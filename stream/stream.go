// Package stream reads the NDJSON handoff stream: the body of the server's
// POST /v1/handoffs:batch, and the format for any command that reads
// handoffs as a stream.
//
// A stream is UTF-8 text split into lines by "\n" (a "\r" before it is
// dropped). Lines that are empty or hold only spaces and tabs are skipped;
// every other line is one item:
//
//   - An envelope: a JSON object whose members are all among "document",
//     "idempotency_key", "format", "from", "to" and "workflow", each a string, with
//     "document" present. The document is the envelope's "document" string
//     (its UTF-8 bytes); the other members travel with it:
//
//     {"document":"{\"type\":\"qa_result\",...}","from":"qa","to":"dev","idempotency_key":"run-7/qa"}
//
//   - Anything else: the line's own bytes are the document (a one-line
//     governed/1 JSON handoff, for example). Such a line is never inspected
//     beyond deciding that it is not an envelope.
//
// A line that is not valid UTF-8, is longer than the reader's limit, or is
// a malformed envelope (a member of the wrong type, a duplicate member, a
// missing "document", broken JSON after envelope members) yields an Item
// whose Err names the line; the stream goes on with the next line.
//
// A Reader never reads ahead of the line it returns, so a writer can answer
// each item before the next line has been sent.
//
// "govledger record -" reads standard input with Sniff, which tells an
// NDJSON stream (read with a Reader) from a YAML stream of "---"
// documents (read with a DocReader) and from a single document by the
// input's first non-blank line.
package stream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxLine is the longest line a Reader accepts when NewReader is
// given no limit: 8 MiB.
const DefaultMaxLine = 8 << 20

// Errors wrapped in a *LineError in Item.Err.
var (
	// ErrLineTooLong is returned for a line longer than the reader's limit.
	ErrLineTooLong = errors.New("line too long")
	// ErrInvalidUTF8 is returned for a line that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrEnvelope is returned for a malformed envelope.
	ErrEnvelope = errors.New("malformed envelope")
)

// LineError is a problem with one line of a stream.
type LineError struct {
	Line   int    // 1-based physical line number
	Field  string // envelope member concerned, if any
	Detail string // what is wrong
	Err    error  // one of the sentinels above
}

func (e *LineError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("line %d: %s: %s: %s", e.Line, e.Err, e.Field, e.Detail)
	}
	if e.Detail != "" {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Err, e.Detail)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Item is one document of a stream, or the error of one line.
type Item struct {
	Line           int    // 1-based physical line number
	Doc            []byte // the document's bytes (owned by the caller)
	Envelope       bool   // the line was an envelope
	IdempotencyKey string // envelope members; empty when absent
	Format         string
	From           string
	To             string
	Workflow       string // the workflow id the document is recorded under when it names none
	Err            error  // a *LineError; Doc is nil when set
}

// Reader reads items from an NDJSON stream.
type Reader struct {
	br   *bufio.Reader
	max  int
	line int
	buf  []byte
	err  error // sticky read error (io.EOF at the end)
}

// NewReader returns a Reader of r that refuses lines longer than maxLine
// bytes (DefaultMaxLine when maxLine <= 0).
func NewReader(r io.Reader, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: maxLine}
}

// Next returns the next item. At the end of the stream it returns io.EOF;
// any other error is a read error of the underlying reader, after which
// the stream is over. Problems with a single line are not errors of Next:
// they come back in Item.Err.
func (r *Reader) Next() (Item, error) {
	for {
		if r.err != nil {
			return Item{}, r.err
		}
		line, tooLong, err := r.readLine()
		if err != nil {
			r.err = err
			if len(line) == 0 && !tooLong {
				return Item{}, err
			}
		}
		r.line++
		if tooLong {
			return Item{Line: r.line, Err: &LineError{Line: r.line, Err: ErrLineTooLong,
				Detail: fmt.Sprintf("more than %d bytes", r.max)}}, nil
		}
		if blank(line) {
			continue
		}
		return Parse(r.line, line), nil
	}
}

// readLine reads one physical line without its "\n" (and "\r"). A line
// over the limit is consumed to its end and reported as tooLong. err is
// io.EOF when the stream ended with this line (or had none left).
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(r.buf)+len(chunk) > r.max+2 { // room for "\r\n"
				tooLong = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(r.buf, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !tooLong && len(line) > r.max {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// envelope member names.
const (
	memberDocument = "document"
	memberKey      = "idempotency_key"
	memberFormat   = "format"
	memberFrom     = "from"
	memberTo       = "to"
	memberWorkflow = "workflow"
)

func isMember(name string) bool {
	switch name {
	case memberDocument, memberKey, memberFormat, memberFrom, memberTo, memberWorkflow:
		return true
	}
	return false
}

// Parse turns one line (without its line terminator) into an Item, as a
// Reader does for each non-blank line. lineNo is used in errors.
func Parse(lineNo int, line []byte) Item {
	fail := func(field, detail string, sentinel error) Item {
		return Item{Line: lineNo, Err: &LineError{Line: lineNo, Field: field, Detail: detail, Err: sentinel}}
	}
	if !utf8.Valid(line) {
		off := 0
		for off < len(line) {
			r, n := utf8.DecodeRune(line[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return fail("", fmt.Sprintf("at byte %d", off+1), ErrInvalidUTF8)
	}
	doc := Item{Line: lineNo, Doc: bytes.Clone(line)}
	trimmed := bytes.TrimLeft(line, " \t")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return doc
	}
	dec := jsontext.NewDecoder(bytes.NewReader(trimmed), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadToken(); err != nil { // '{'
		return doc
	}
	var (
		it      = Item{Line: lineNo, Envelope: true}
		seen    = map[string]bool{}
		dup     string
		badType string
		hasDoc  bool
	)
	for {
		if dec.PeekKind() == '}' {
			break
		}
		tok, err := dec.ReadToken()
		if err != nil {
			if len(seen) > 0 {
				return fail("", "not valid JSON after envelope members", ErrEnvelope)
			}
			return doc
		}
		name := tok.String()
		if tok.Kind() != '"' || !isMember(name) {
			return doc // some other JSON object: the line is the document
		}
		if seen[name] && dup == "" {
			dup = name
		}
		seen[name] = true
		val, err := dec.ReadValue()
		if err != nil {
			return fail("", "not valid JSON after envelope members", ErrEnvelope)
		}
		if val.Kind() != '"' {
			if badType == "" {
				badType = name
			}
			continue
		}
		s, err := jsontext.AppendUnquote(nil, val)
		if err != nil {
			return fail(name, "invalid string", ErrEnvelope)
		}
		switch name {
		case memberDocument:
			it.Doc, hasDoc = s, true
		case memberKey:
			it.IdempotencyKey = string(s)
		case memberFormat:
			it.Format = string(s)
		case memberFrom:
			it.From = string(s)
		case memberTo:
			it.To = string(s)
		case memberWorkflow:
			it.Workflow = string(s)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return fail("", "not valid JSON after envelope members", ErrEnvelope)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if len(seen) == 0 {
			return doc
		}
		return fail("", "trailing data after the envelope", ErrEnvelope)
	}
	switch {
	case len(seen) == 0:
		return doc // "{}" is a document, not an envelope
	case dup != "":
		return fail(dup, "duplicate member", ErrEnvelope)
	case badType != "":
		return fail(badType, "want a string", ErrEnvelope)
	case !hasDoc:
		return fail(memberDocument, "missing", ErrEnvelope)
	case len(it.Doc) == 0:
		return fail(memberDocument, "empty", ErrEnvelope)
	}
	return it
}

// AppendEnvelope appends the envelope line (without "\n") that a Reader
// reads back as it (Doc, IdempotencyKey, Format, From, To, Workflow; empty members
// are left out). Doc must be valid UTF-8 and not empty.
func AppendEnvelope(dst []byte, it Item) ([]byte, error) {
	if len(it.Doc) == 0 {
		return dst, fmt.Errorf("%w: %s: empty", ErrEnvelope, memberDocument)
	}
	var err error
	add := func(name, v string, always bool) {
		if err != nil || (v == "" && !always) {
			return
		}
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
		dst, _ = jsontext.AppendQuote(dst, name)
		dst = append(dst, ':')
		dst, err = jsontext.AppendQuote(dst, v)
	}
	dst = append(dst, '{')
	add(memberDocument, string(it.Doc), true)
	add(memberKey, it.IdempotencyKey, false)
	add(memberFormat, it.Format, false)
	add(memberFrom, it.From, false)
	add(memberTo, it.To, false)
	add(memberWorkflow, it.Workflow, false)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrEnvelope, err)
	}
	return append(dst, '}'), nil
}
