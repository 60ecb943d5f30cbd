package stream_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/govledger/govledger/stream"
)

func readAll(t testing.TB, in string, max int) []stream.Item {
	t.Helper()
	r := stream.NewReader(strings.NewReader(in), max)
	var items []stream.Item
	for i := 0; i < 10000; i++ {
		it, err := r.Next()
		if errors.Is(err, io.EOF) {
			return items
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		items = append(items, it)
	}
	t.Fatal("Next never returned io.EOF")
	return nil
}

func TestReader(t *testing.T) {
	type want struct {
		line                  int
		doc                   string
		env                   bool
		key, format, from, to string
		err                   error
		field                 string
	}
	tests := []struct {
		name string
		in   string
		max  int
		want []want
	}{
		{"empty", "", 0, nil},
		{"blank lines only", "\n \n\t\r\n", 0, nil},
		{"raw json lines", "{\"handoff_id\":\"a\"}\n{\"handoff_id\":\"b\"}\n", 0, []want{
			{line: 1, doc: `{"handoff_id":"a"}`}, {line: 2, doc: `{"handoff_id":"b"}`}}},
		{"no final newline", "x\ny", 0, []want{{line: 1, doc: "x"}, {line: 2, doc: "y"}}},
		{"crlf", "a\r\nb\r\n", 0, []want{{line: 1, doc: "a"}, {line: 2, doc: "b"}}},
		{"blank lines keep numbering", "\n\na\n\n b\n", 0, []want{{line: 3, doc: "a"}, {line: 5, doc: " b"}}},
		{"envelope all members", `{"document":"## Handoff\nx: 1","idempotency_key":"k1","format":"task/1","from":"a","to":"b"}`, 0, []want{
			{line: 1, doc: "## Handoff\nx: 1", env: true, key: "k1", format: "task/1", from: "a", to: "b"}}},
		{"envelope document only", `  {"document":"{\"type\":\"x\"}"}  `, 0, []want{{line: 1, doc: `{"type":"x"}`, env: true}}},
		{"envelope escapes", `{"document":"\u00e9\ud83d\ude00\t"}`, 0, []want{{line: 1, doc: "é😀\t", env: true}}},
		{"empty object is a document", "{}", 0, []want{{line: 1, doc: "{}"}}},
		{"other member makes a document", `{"document":"x","type":"qa_result"}`, 0, []want{{line: 1, doc: `{"document":"x","type":"qa_result"}`}}},
		{"other member first makes a document", `{"type":1,"document":2}`, 0, []want{{line: 1, doc: `{"type":1,"document":2}`}}},
		{"array is a document", `["document"]`, 0, []want{{line: 1, doc: `["document"]`}}},
		{"string is a document", `"document"`, 0, []want{{line: 1, doc: `"document"`}}},
		{"broken non-envelope json is a document", `{"type": nope`, 0, []want{{line: 1, doc: `{"type": nope`}}},
		{"document not a string", `{"document":{"a":1}}`, 0, []want{{line: 1, err: stream.ErrEnvelope, field: "document"}}},
		{"key not a string", `{"document":"x","idempotency_key":7}`, 0, []want{{line: 1, err: stream.ErrEnvelope, field: "idempotency_key"}}},
		{"null member", `{"document":"x","from":null}`, 0, []want{{line: 1, err: stream.ErrEnvelope, field: "from"}}},
		{"duplicate member", `{"document":"x","document":"y"}`, 0, []want{{line: 1, err: stream.ErrEnvelope, field: "document"}}},
		{"missing document", `{"from":"a","to":"b"}`, 0, []want{{line: 1, err: stream.ErrEnvelope, field: "document"}}},
		{"empty document", `{"document":""}`, 0, []want{{line: 1, err: stream.ErrEnvelope, field: "document"}}},
		{"truncated envelope", `{"document":"abc`, 0, []want{{line: 1, err: stream.ErrEnvelope}}},
		{"trailing data after envelope", `{"document":"abc"} x`, 0, []want{{line: 1, err: stream.ErrEnvelope}}},
		{"second value after envelope", `{"document":"abc"}{"document":"d"}`, 0, []want{{line: 1, err: stream.ErrEnvelope}}},
		{"lone surrogate", `{"document":"\ud800"}`, 0, []want{{line: 1, err: stream.ErrEnvelope}}},
		{"invalid utf-8 then more", "ok\n\xff\xfe\nnext\n", 0, []want{
			{line: 1, doc: "ok"}, {line: 2, err: stream.ErrInvalidUTF8}, {line: 3, doc: "next"}}},
		{"too long then more", "0123456789\nabc\n0123456789A", 10, []want{
			{line: 1, doc: "0123456789"}, {line: 2, doc: "abc"}, {line: 3, err: stream.ErrLineTooLong}}},
		{"too long in the middle", "abc\n" + strings.Repeat("x", 200000) + "\nz\n", 1000, []want{
			{line: 1, doc: "abc"}, {line: 2, err: stream.ErrLineTooLong}, {line: 3, doc: "z"}}},
		{"exactly max with crlf", "0123456789\r\n", 10, []want{{line: 1, doc: "0123456789"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, tt.in, tt.max)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d items %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Line != w.line {
					t.Errorf("item %d: Line = %d, want %d", i, g.Line, w.line)
				}
				if w.err != nil {
					var le *stream.LineError
					if !errors.Is(g.Err, w.err) || !errors.As(g.Err, &le) {
						t.Fatalf("item %d: Err = %v, want %v in a *LineError", i, g.Err, w.err)
					}
					if le.Line != w.line || le.Field != w.field {
						t.Errorf("item %d: LineError{Line %d, Field %q}, want {%d, %q}", i, le.Line, le.Field, w.line, w.field)
					}
					if !strings.Contains(g.Err.Error(), "line ") || g.Doc != nil {
						t.Errorf("item %d: error %q names no line, or Doc %q set", i, g.Err, g.Doc)
					}
					continue
				}
				if g.Err != nil {
					t.Fatalf("item %d: Err = %v, want none", i, g.Err)
				}
				if string(g.Doc) != w.doc || g.Envelope != w.env || g.IdempotencyKey != w.key ||
					g.Format != w.format || g.From != w.from || g.To != w.to {
					t.Errorf("item %d = %+v (doc %q), want %+v", i, g, g.Doc, w)
				}
			}
		})
	}
}

// slowReader hands out its data one chunk per Read and fails the test if
// it is read past the chunk the reader needs.
type chunkReader struct {
	chunks [][]byte
	reads  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.reads >= len(c.chunks) {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[c.reads])
	c.reads++
	return n, nil
}

// TestNoReadAhead checks that an item is returned as soon as its line is
// complete, without waiting for (reading) the next line.
func TestNoReadAhead(t *testing.T) {
	cr := &chunkReader{chunks: [][]byte{[]byte("first\n"), []byte("sec"), []byte("ond\n"), []byte("third\n")}}
	r := stream.NewReader(cr, 0)
	for i, want := range []struct {
		doc   string
		reads int
	}{{"first", 1}, {"second", 3}, {"third", 4}} {
		it, err := r.Next()
		if err != nil || string(it.Doc) != want.doc {
			t.Fatalf("item %d = %q, %v; want %q", i, it.Doc, err, want.doc)
		}
		if cr.reads != want.reads {
			t.Fatalf("after item %d the source was read %d times, want %d (read ahead)", i, cr.reads, want.reads)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next at end = %v, want io.EOF", err)
	}
}

type failReader struct{ n int }

func (f *failReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		f.n++
		return copy(p, "a\nb"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestReadError(t *testing.T) {
	r := stream.NewReader(&failReader{}, 0)
	it, err := r.Next()
	if err != nil || string(it.Doc) != "a" {
		t.Fatalf("first = %q, %v", it.Doc, err)
	}
	// The partial line "b" is delivered with the error pending.
	it, err = r.Next()
	if err != nil || string(it.Doc) != "b" {
		t.Fatalf("second = %q, %v; want the partial line", it.Doc, err)
	}
	if _, err := r.Next(); err == nil || errors.Is(err, io.EOF) || err.Error() != "disk on fire" {
		t.Fatalf("third = %v, want the read error", err)
	}
	if _, err := r.Next(); err == nil || err.Error() != "disk on fire" {
		t.Fatalf("after the error Next = %v, want it again", err)
	}
}

func TestAppendEnvelopeRoundTrip(t *testing.T) {
	for _, it := range []stream.Item{
		{Doc: []byte("plain")},
		{Doc: []byte("{\"a\":\"<&>\u2028\"}\n\r\x00\x1f"), IdempotencyKey: "k", Format: "vbw/1", From: "a", To: "b"},
		{Doc: []byte("é"), To: "b"},
		{Doc: []byte("x"), Workflow: "run-7 ü"},
	} {
		line, err := stream.AppendEnvelope(nil, it)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(line, "\n\r") {
			t.Fatalf("envelope %q spans lines", line)
		}
		got := stream.Parse(1, line)
		if got.Err != nil || !got.Envelope || !bytes.Equal(got.Doc, it.Doc) || got.IdempotencyKey != it.IdempotencyKey ||
			got.Format != it.Format || got.From != it.From || got.To != it.To || got.Workflow != it.Workflow {
			t.Fatalf("Parse(AppendEnvelope(%+v)) = %+v", it, got)
		}
	}
	if _, err := stream.AppendEnvelope(nil, stream.Item{}); !errors.Is(err, stream.ErrEnvelope) {
		t.Fatalf("AppendEnvelope(empty) = %v, want ErrEnvelope", err)
	}
	if _, err := stream.AppendEnvelope(nil, stream.Item{Doc: []byte("\xff")}); !errors.Is(err, stream.ErrEnvelope) {
		t.Fatalf("AppendEnvelope(invalid UTF-8) = %v, want ErrEnvelope", err)
	}
}

// FuzzReader checks that no input crashes the reader, that line numbers
// rise, that every document is valid UTF-8 within the limit, that a raw
// document is the line itself, and that every item re-encoded as an
// envelope reads back the same.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"a\nb\n", `{"document":"x","from":"a"}`, `{"document":"x","document":"y"}`, "\xff\n{}", `{"document":1}`,
		"{\"type\":\"qa_result\"}\r\n\n", `{"document":"\ud83d\ude00"}`, `{"from":"a"`,
	} {
		f.Add([]byte(s))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, in []byte) {
		r := stream.NewReader(bytes.NewReader(in), max)
		last := 0
		lines := bytes.Split(in, []byte("\n"))
		for i := 0; ; i++ {
			if i > len(in)+1 {
				t.Fatal("more items than bytes")
			}
			it, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.Line <= last || it.Line > len(lines) {
				t.Fatalf("line %d after %d (of %d)", it.Line, last, len(lines))
			}
			last = it.Line
			if it.Err != nil {
				if it.Doc != nil {
					t.Fatal("Doc with Err")
				}
				continue
			}
			if !utf8.Valid(it.Doc) || len(it.Doc) == 0 {
				t.Fatalf("invalid document %q", it.Doc)
			}
			raw := bytes.TrimSuffix(lines[it.Line-1], []byte("\r"))
			if !it.Envelope && !bytes.Equal(it.Doc, raw) {
				t.Fatalf("raw document %q, line %q", it.Doc, raw)
			}
			if len(raw) > max {
				t.Fatalf("line of %d bytes accepted over the %d limit", len(raw), max)
			}
			env, err := stream.AppendEnvelope(nil, it)
			if err != nil {
				t.Fatal(err)
			}
			back := stream.Parse(it.Line, env)
			if back.Err != nil || !bytes.Equal(back.Doc, it.Doc) || back.IdempotencyKey != it.IdempotencyKey ||
				back.Format != it.Format || back.From != it.From || back.To != it.To {
				t.Fatalf("round trip of %+v gave %+v", it, back)
			}
		}
	})
}
