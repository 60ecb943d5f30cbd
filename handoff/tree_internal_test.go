package handoff

import (
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

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
