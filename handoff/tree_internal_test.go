package handoff

import (
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/govledger/govledger/internal/strictjson"
)

// FuzzJSONTree holds jsonTree's single-pass fast path to the checked path:
// whatever the fast path accepts, strictjson.Check accepts, and both read
// it into the same nodes.
func FuzzJSONTree(f *testing.F) {
	for _, dir := range []string{"governed", "vbw"} {
		for _, kind := range []string{"valid", "hostile"} {
			paths, _ := filepath.Glob(filepath.Join("..", "testdata", "handoffs", dir, kind, "*"))
			for _, p := range paths {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
		}
	}
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[9007199254740992]`, `{"a":1} x`, "\xef\xbb\xbf{}", `1e400`, `"\udc00"`, "[\"\xff\"]", ``, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast := jsonTreeFast(data)
		slow, err := jsonTreeChecked(data)
		if fast == nil {
			return
		}
		if cerr := strictjson.Check("", data); cerr != nil {
			t.Fatalf("fast path accepted %q; strictjson.Check: %v", data, cerr)
		}
		if err != nil {
			t.Fatalf("fast path accepted %q; checked path: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast and checked trees differ for %q", data)
		}
	})
}

// TestYAMLTreeCache: a tree from the cache is the tree a fresh parse
// gives (with the same line offset), for every swarm/2 and skill/1 corpus
// document, read twice with
// other documents in between and from several goroutines (run with -race).
func TestYAMLTreeCache(t *testing.T) {
	var docs [][]byte
	for _, dir := range []string{"swarm", "skill"} {
		for _, kind := range []string{"valid", "hostile"} {
			paths, _ := filepath.Glob(filepath.Join("..", "testdata", "handoffs", dir, kind, "*.yaml"))
			for _, p := range paths {
				if b, err := os.ReadFile(p); err == nil {
					docs = append(docs, b)
				}
			}
		}
	}
	if len(docs) < 50 {
		t.Fatalf("only %d corpus documents found", len(docs))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 2 {
				for i := range docs {
					d := docs[(i+g*7)%len(docs)]
					off := i % 3 // task/1 blocks shift line numbers
					want, werr := yamlTreeParse(d, off)
					got, gerr := yamlTree(d, off)
					if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
						t.Errorf("round %d doc %d: cached tree or error differs from a fresh parse (%v vs %v)", round, i, gerr, werr)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestJSONTreeFastTaken: every valid governed/1 and vbw/1 JSON document of
// the corpus is read by the one-pass reader (the slow path is for what it
// refuses), to the tree the checked path builds, and detection hands that
// tree to Parse.
func TestJSONTreeFastTaken(t *testing.T) {
	n := 0
	for _, dir := range []string{"governed", "vbw"} {
		paths, _ := filepath.Glob(filepath.Join("..", "testdata", "handoffs", dir, "valid", "*.json"))
		for _, p := range paths {
			if filepath.Base(p) == "expect.json" { // the corpus's expectations
				continue
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n++
			fast := jsonTreeFast(data)
			if fast == nil {
				t.Errorf("%s: the one-pass reader refused a valid document", p)
				continue
			}
			slow, err := jsonTreeChecked(data)
			if err != nil || !reflect.DeepEqual(fast, slow) {
				t.Errorf("%s: the one-pass and checked trees differ (checked: %v)", p, err)
			}
			if d := NewDetection(data, 0); d.jsonTree(data) == nil || !reflect.DeepEqual(d.jsonTree(data), fast) {
				t.Errorf("%s: detection kept no tree for Parse", p)
			}
			if d := NewDetection(data, 0); d.jsonTree(append([]byte(" "), data...)) != nil {
				t.Errorf("%s: detection's tree is handed over for other bytes", p)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d valid JSON documents in the corpus", n)
	}
}

// TestCountValues: countValues, the size of the first block of nodes, is
// exact for documents without empty arrays and survives any bytes.
func TestCountValues(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want int
	}{
		{`1`, 1},
		{`{"a":1,"b":[1,2,{"c":"x,y:z\"]"}],"d\\":"\\"}`, 8},
		{`[[1],[2,3]]`, 6},
		{`[]`, 2},
		{`]]]]]]{[,:`, 3},
		{`"unterminated \" , :`, 1},
	} {
		if got := countValues(c.doc); got != c.want {
			t.Errorf("countValues(%s) = %d, want %d", c.doc, got, c.want)
		}
	}
}

// TestPooledTreeNotKept: the nodes of the JSON tree Parse reads for its
// own detection go back to a pool when Parse returns, so no Record may
// hold one. Every corpus document is parsed, then every other one (which
// reuses the pooled nodes), and its Record must still be the one a parse
// with a detection of the caller's own (whose tree is never pooled) gives.
func TestPooledTreeNotKept(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "handoffs", "*", "*", "*"))
	opts := Options{From: "domain-01-research", To: "domain-02-analysis"}
	var docs [][]byte
	var recs []*Record
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // a directory
		}
		docs = append(docs, data)
		recs = append(recs, Parse(data, opts))
	}
	if len(docs) < 50 {
		t.Fatalf("only %d corpus documents", len(docs))
	}
	for i, data := range docs {
		o := opts
		o.Detection = NewDetection(data, 0)
		if want := Parse(data, o); !reflect.DeepEqual(recs[i], want) {
			t.Errorf("document %d: its Record changed after other documents were parsed:\n got %+v\nwant %+v", i, recs[i], want)
		}
	}
}

// FuzzNoYAMLKeys: text that noYAMLKeys lets detection skip parsing as
// YAML is text in which yamlHandoff finds no handoff mapping.
func FuzzNoYAMLKeys(f *testing.F) {
	for _, s := range []string{"a: 1", "hand: off", "\"hand\\x6fff\": {source: {skill: x}}", "{handoff: {source_skill: a}}",
		"'handoff': {version: '2.0'}", "? handoff\n: {source_skill: a}", "# Task\n\n## Handoff\n\n```yaml\noutcome: completed\n```\n",
		"deliverable:\n  type: x\n", "x: &a handoff\n*a : {source_skill: b}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if !utf8.Valid(text) || !noYAMLKeys(text) {
			return
		}
		if swarm, skill, why := yamlHandoff(text, nil); swarm || skill || why != noHandoffMapping {
			t.Fatalf("yamlHandoff(%q) = %v, %v, %q; noYAMLKeys says no mapping", text, swarm, skill, why)
		}
	})
}
