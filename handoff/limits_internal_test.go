package handoff

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlNodes counts the nodes yaml.v3 builds from the first two documents
// of text, as yamlTreeMode reads them.
func yamlNodes(text []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	n := 0
	var count func(y *yaml.Node)
	count = func(y *yaml.Node) {
		if y.Kind != yaml.DocumentNode {
			n++
		}
		for _, c := range y.Content {
			count(c)
		}
	}
	for range 2 {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				return n // what a failing read built is no more
			}
			break
		}
		count(&doc)
	}
	return n
}

// FuzzYAMLValueBound holds yamlValueBound to the reader: it never counts
// fewer values than yaml.v3 builds, so the YAML cap is checked before a
// node is built.
func FuzzYAMLValueBound(f *testing.F) {
	for _, s := range []string{"a", "[1,2]", "{a, b}", "{a: b}", "- - - a", "a:\n- 1\n- 2", "? a", "[a: b]", "[? a]",
		"a: *x", "a\n...\nb", "---\n---\n", "[{a}]", "a: [b, {c: d, e}]", `{"a":1}`, "!t a", "&x [1]"} {
		f.Add([]byte(s))
	}
	matches, _ := filepath.Glob("../testdata/handoffs/*/*/*.yaml")
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if n, bound := yamlNodes(text), yamlValueBound(text, math.MaxInt); n > bound {
			t.Fatalf("yamlValueBound(%q) = %d, yaml.v3 builds %d nodes", text, bound, n)
		}
	})
}
