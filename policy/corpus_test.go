package policy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

const corpusDir = "../testdata/handoffs"

type corpusDoc struct {
	path   string // slash-separated, relative to corpusDir
	data   []byte
	fromTo bool // vbw/1 and task/1 documents need --from/--to
}

// corpus returns every handoff document under testdata/handoffs (not the
// expect*.json files), sorted by path.
func corpus(tb testing.TB) []corpusDoc {
	var docs []corpusDoc
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), "expect") || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(corpusDir, path)
		rel = filepath.ToSlash(rel)
		top, _, _ := strings.Cut(rel, "/")
		docs = append(docs, corpusDoc{path: rel, data: data, fromTo: top == "vbw" || top == "task"})
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return docs
}

// TestCorpus runs every corpus document through Decide with the example
// registry and lock: no panic, deterministic, a valid entry; and where
// testdata/handoffs/<dir>/expect-policy.json names a document, exactly the
// codes it lists (in order).
func TestCorpus(t *testing.T) {
	docs := corpus(t)
	if len(docs) == 0 {
		t.Skip("no corpus under " + corpusDir)
	}
	expect := map[string][]reason.Code{}
	matches, _ := filepath.Glob(filepath.Join(corpusDir, "*", "expect-policy.json"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var exp map[string][]reason.Code
		if err := json.Unmarshal(data, &exp); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		dir := filepath.Base(filepath.Dir(m))
		for name, codes := range exp {
			expect[dir+"/"+name] = codes
		}
	}
	seen := 0
	for _, doc := range docs {
		t.Run(doc.path, func(t *testing.T) {
			in := corpusInput(t, doc)
			d := policy.Decide(in)
			if again := policy.Decide(in); !reflect.DeepEqual(d, again) {
				t.Fatalf("Decide is not deterministic")
			}
			checkFill(t, d, in)
			if want, ok := expect[doc.path]; ok {
				seen++
				if got := reason.Codes(d.Reasons); !slices.Equal(got, want) {
					t.Errorf("codes = %v, want %v\nreasons: %+v", got, want, d.Reasons)
				}
			}
		})
	}
	if seen != len(expect) {
		t.Errorf("expect-policy.json names %d documents, %d found", len(expect), seen)
	}
}

func corpusInput(t testing.TB, doc corpusDoc) policy.Input {
	in := input(t, doc.data)
	in.Inputs.Params.MaxAge = 0 // corpus timestamps are fixed dates
	if doc.fromTo {
		in.Inputs.Params.From, in.Inputs.Params.To = "domain-01-research", "domain-02-analysis"
	}
	return in
}
