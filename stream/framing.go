package stream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Framing says how a stream of handoff documents is cut into documents.
type Framing int

const (
	// Single: the whole input is one document, its bytes exactly as read.
	Single Framing = iota
	// NDJSON: one document (or envelope) per line, read with a Reader.
	NDJSON
	// YAML: a YAML stream, one document per "---" line, read with a
	// DocReader.
	YAML
)

func (f Framing) String() string {
	switch f {
	case NDJSON:
		return "ndjson"
	case YAML:
		return "yaml"
	}
	return "single"
}

// ErrDocumentTooLong is returned (in a *LineError) for a document of a
// YAML stream longer than the DocReader's limit.
var ErrDocumentTooLong = errors.New("document too long")

// Sniff decides the framing of r from its first line that is not blank,
// reading r up to that line's end and no further (a writer may wait for
// an answer before it sends more):
//
//   - a line that is exactly one JSON object ("{" ... "}", nothing after
//     it but spaces) starts an NDJSON stream;
//   - a line "---" (a YAML document marker; spaces after it are allowed)
//     starts a YAML stream;
//   - anything else, a line longer than maxLine, or an input with no
//     non-blank line, is a single document.
//
// It returns a reader that yields every byte of r from the start, the
// bytes Sniff read included. The error is a read error of r other than
// io.EOF.
func Sniff(r io.Reader, maxLine int) (Framing, io.Reader, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var seen []byte
	framing := Single
	for {
		start := len(seen)
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			seen = append(seen, chunk...)
			if !errors.Is(err, bufio.ErrBufferFull) || len(seen)-start > maxLine+2 {
				break
			}
		}
		line := bytes.TrimRight(seen[start:], "\r\n")
		switch {
		case len(seen)-start > maxLine+2:
			// Too long to be a line of a stream: one document.
		case blank(line) && err == nil:
			continue
		case isSeparator(line):
			framing = YAML
		case isJSONObject(line):
			framing = NDJSON
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return Single, nil, err
		}
		return framing, io.MultiReader(bytes.NewReader(seen), br), nil
	}
}

// isSeparator reports whether line (without its terminator) is a YAML
// document marker on its own: "---", then only spaces or tabs.
func isSeparator(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) && blank(line[3:])
}

// isJSONObject reports whether line is one JSON object and nothing else
// (spaces and tabs around it aside).
func isJSONObject(line []byte) bool {
	line = bytes.Trim(line, " \t")
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(line), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadValue(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return errors.Is(err, io.EOF)
}

// DocReader reads the documents of a YAML stream: a document starts at a
// "---" line (the first one at the start of the input) and ends before the
// next "---" line or at the end of the input. Each document's bytes are
// exactly those of the input, its "---" line and line terminators
// included, so a single document reads back as the bytes it was. A
// document with nothing but blank lines after its "---" is skipped (a
// stream may end with "---").
//
// A document is complete only when the next "---" line (or the end of the
// input) has been read: a writer that waits for an answer must send it.
type DocReader struct {
	br          *bufio.Reader
	max         int
	line        int    // physical lines read
	pending     []byte // the "---" line that starts the next document
	pendingLine int
	err         error // sticky (io.EOF at the end)
}

// NewDocReader returns a DocReader of r that refuses documents longer
// than maxDoc bytes (DefaultMaxLine when maxDoc <= 0).
func NewDocReader(r io.Reader, maxDoc int) *DocReader {
	if maxDoc <= 0 {
		maxDoc = DefaultMaxLine
	}
	return &DocReader{br: bufio.NewReaderSize(r, 64<<10), max: maxDoc}
}

// Next returns the next document (Item.Doc, Item.Line the line of its
// "---"), or an Item whose Err wraps ErrDocumentTooLong. At the end it
// returns io.EOF; any other error is a read error of the underlying
// reader, after which the stream is over.
func (d *DocReader) Next() (Item, error) {
	for {
		if d.pending == nil && d.err != nil {
			return Item{}, d.err
		}
		var doc []byte
		first, hasSep, content, tooLong := d.line+1, false, false, false
		if d.pending != nil {
			doc, first, hasSep = d.pending, d.pendingLine, true
			d.pending = nil
		}
		for d.err == nil {
			line, err := d.readLine()
			if err != nil {
				d.err = err
			}
			if len(line) == 0 {
				break
			}
			d.line++
			text := bytes.TrimRight(line, "\r\n")
			switch {
			case isSeparator(text) && (hasSep || content):
				d.pending, d.pendingLine = line, d.line
			case isSeparator(text):
				// Only blank lines before the first "---": they belong
				// to the first document.
				hasSep, first = true, d.line
			case !blank(text):
				content = true
			}
			if d.pending != nil {
				break
			}
			if !tooLong && len(doc)+len(line) > d.max {
				tooLong, doc = true, nil
			}
			if !tooLong {
				doc = append(doc, line...)
			}
		}
		switch {
		case tooLong:
			return Item{Line: first, Err: &LineError{Line: first, Err: ErrDocumentTooLong,
				Detail: fmt.Sprintf("more than %d bytes", d.max)}}, nil
		case content:
			return Item{Line: first, Doc: doc}, nil
		}
		// A document of blank lines only: skipped.
	}
}

// readLine reads one physical line with its terminator. A line longer
// than the limit comes back cut after the limit (its document is too long
// whatever the rest holds).
func (d *DocReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := d.br.ReadSlice('\n')
		if len(line) <= d.max {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}
