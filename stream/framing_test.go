package stream_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/govledger/govledger/stream"
)

func TestSniff(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want stream.Framing
	}{
		{"empty", "", stream.Single},
		{"blank only", "\n \n\t\n", stream.Single},
		{"one-line object", `{"handoff_id":"a"}` + "\n", stream.NDJSON},
		{"object after blank lines", "\n\n  {\"a\":1}  \r\n{\"b\":2}\n", stream.NDJSON},
		{"envelope", `{"document":"x"}`, stream.NDJSON},
		{"pretty-printed object", "{\n  \"handoff_id\": \"a\"\n}\n", stream.Single},
		{"broken object", `{"a":` + "\n", stream.Single},
		{"object then data on the line", `{"a":1} {"b":2}` + "\n", stream.Single},
		{"array", "[1,2]\n", stream.Single},
		{"yaml marker", "---\nhandoff:\n  version: \"2.0\"\n", stream.YAML},
		{"yaml marker with spaces", "\n---  \t\r\nx: 1\n", stream.YAML},
		{"yaml marker with content", "--- x\n", stream.Single},
		{"yaml without marker", "handoff:\n  version: \"2.0\"\n", stream.Single},
		{"markdown", "# Task 1: x\n\n## Handoff\n", stream.Single},
		{"bom before object", "\ufeff{\"a\":1}\n", stream.Single},
		{"invalid UTF-8", "\xff\xfe{}\n", stream.Single},
		{"line over the limit", `{"a":"` + strings.Repeat("x", 100) + `"}` + "\n", stream.Single},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per read: Sniff must not depend on how reads split.
			f, r, err := stream.Sniff(iotest.OneByteReader(strings.NewReader(tc.in)), 64)
			if err != nil {
				t.Fatal(err)
			}
			if f != tc.want {
				t.Errorf("framing %v, want %v", f, tc.want)
			}
			all, err := io.ReadAll(r)
			if err != nil || string(all) != tc.in {
				t.Errorf("replayed %q (%v), want every byte %q", all, err, tc.in)
			}
		})
	}
}

// TestSniffReadsOneLine: Sniff returns after the first non-blank line even
// though the writer has sent nothing more (it waits for an answer).
func TestSniffReadsOneLine(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("\n{\"a\":1}\n"))
	type res struct {
		f   stream.Framing
		err error
	}
	done := make(chan res, 1)
	go func() {
		f, _, err := stream.Sniff(pr, 0)
		done <- res{f, err}
	}()
	r := <-done
	if r.err != nil || r.f != stream.NDJSON {
		t.Fatalf("Sniff: %v, %v", r.f, r.err)
	}
}

func TestSniffReadError(t *testing.T) {
	boom := errors.New("boom")
	if _, _, err := stream.Sniff(iotest.ErrReader(boom), 0); !errors.Is(err, boom) {
		t.Fatalf("Sniff of a failing reader: %v", err)
	}
}

func readDocs(t testing.TB, in string, max int) []stream.Item {
	t.Helper()
	r := stream.NewDocReader(strings.NewReader(in), max)
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

func TestDocReader(t *testing.T) {
	type want struct {
		line int
		doc  string
		err  error
	}
	tests := []struct {
		name string
		in   string
		max  int
		want []want
	}{
		{"empty", "", 0, nil},
		{"one document keeps its bytes", "---\nhandoff:\n  a: 1\n", 0, []want{{1, "---\nhandoff:\n  a: 1\n", nil}}},
		{"no final newline", "---\na: 1", 0, []want{{1, "---\na: 1", nil}}},
		{"two documents", "---\na: 1\n---\nb: 2\n", 0, []want{{1, "---\na: 1\n", nil}, {3, "---\nb: 2\n", nil}}},
		{"leading blank lines stay in the first", "\n\n---\na: 1\n--- \r\nb: 2\r\n", 0, []want{
			{3, "\n\n---\na: 1\n", nil}, {5, "--- \r\nb: 2\r\n", nil}}},
		{"empty documents skipped", "---\n---\n\n---\na: 1\n---\n\n", 0, []want{{4, "---\na: 1\n", nil}}},
		{"marker with content is content", "---\na: |\n  --- x\n", 0, []want{{1, "---\na: |\n  --- x\n", nil}}},
		{"too long, then the next", "---\n" + strings.Repeat("x", 40) + "\n---\nb: 2\n", 32, []want{
			{1, "", stream.ErrDocumentTooLong}, {3, "---\nb: 2\n", nil}}},
		{"a long line", "---\na: " + strings.Repeat("y", 100) + "\n", 32, []want{{1, "", stream.ErrDocumentTooLong}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := readDocs(t, tc.in, tc.max)
			if len(got) != len(tc.want) {
				t.Fatalf("%d items, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Line != w.line || string(g.Doc) != w.doc || !errors.Is(g.Err, w.err) || (w.err == nil) != (g.Err == nil) {
					t.Errorf("item %d: line %d doc %q err %v; want line %d doc %q err %v", i, g.Line, g.Doc, g.Err, w.line, w.doc, w.err)
				}
			}
		})
	}
}

// TestDocReaderAnswersBeforeMore: a document is returned as soon as the
// next "---" arrives, before the writer sends anything else.
func TestDocReaderAnswersBeforeMore(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("---\na: 1\n---\n"))
	r := stream.NewDocReader(pr, 0)
	it, err := r.Next()
	if err != nil || string(it.Doc) != "---\na: 1\n" {
		t.Fatalf("Next: %q, %v", it.Doc, err)
	}
}

func FuzzDocReader(f *testing.F) {
	for _, s := range []string{"---\na: 1\n---\nb\n", "\n---\r\n---", "--- \nx\n---\n\n", "x\n---\ny"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		items := readDocs(t, string(in), 64)
		last, off := 0, 0
		for _, it := range items {
			if it.Line <= last {
				t.Fatalf("line %d after %d", it.Line, last)
			}
			last = it.Line
			if it.Err != nil {
				continue
			}
			if len(it.Doc) == 0 || len(it.Doc) > 64 {
				t.Fatalf("document of %d bytes", len(it.Doc))
			}
			// Documents are pieces of the input, in order, byte for byte.
			i := bytes.Index(in[off:], it.Doc)
			if i < 0 {
				t.Fatalf("document %q is not in the input after byte %d: %q", it.Doc, off, in)
			}
			off += i + len(it.Doc)
		}
	})
}

func FuzzSniff(f *testing.F) {
	for _, s := range []string{"{\"a\":1}\n{}", "\n---\nx\n", "{\n}", "# Task\n", "\xff{}\n", "  \t\n"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		// The framing and the replayed bytes do not depend on how the
		// input arrives.
		whole, r, err := stream.Sniff(bytes.NewReader(in), 64)
		if err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(all, in) {
			t.Fatalf("replayed %q (%v), want %q", all, err, in)
		}
		n := int(chunk%8) + 1
		split, r, err := stream.Sniff(&nReader{in, n}, 64)
		if err != nil || split != whole {
			t.Fatalf("read %d bytes at a time: %v (%v), read whole: %v", n, split, err, whole)
		}
		if all, _ := io.ReadAll(r); !bytes.Equal(all, in) {
			t.Fatalf("read %d bytes at a time: replayed %q, want %q", n, all, in)
		}
	})
}

// nReader returns at most n bytes per Read.
type nReader struct {
	b []byte
	n int
}

func (c *nReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
