package policy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

const corpusDir = "../testdata/handoffs"

type corpusDoc struct {
	path   string // slash-separated, relative to corpusDir: <format>/<valid|hostile>/<name>
	data   []byte
	fromTo bool      // vbw/1, task/1 and a2a/1 documents need --from/--to
	now    time.Time // the "now" of the directory's expect.json, if any
}

// corpus returns every handoff document under testdata/handoffs/<format>/
// {valid,hostile}/ (not the expect*.json files), sorted by path.
func corpus(tb testing.TB) []corpusDoc {
	var docs []corpusDoc
	nows := map[string]time.Time{}
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(corpusDir, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if d.IsDir() || len(parts) != 3 || (parts[1] != "valid" && parts[1] != "hostile") || !d.Type().IsRegular() ||
			strings.HasPrefix(parts[2], "expect") {
			return nil
		}
		dir := filepath.Dir(path)
		if _, ok := nows[dir]; !ok {
			nows[dir] = expectNow(tb, filepath.Join(dir, "expect.json"))
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs = append(docs, corpusDoc{path: strings.Join(parts, "/"), data: data,
			fromTo: parts[0] == "vbw" || parts[0] == "task" || parts[0] == "a2a", now: nows[dir]})
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return docs
}

// expectNow reads the "now" of a corpus expect.json (zero if absent).
func expectNow(tb testing.TB, path string) time.Time {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	var e struct {
		Now time.Time `json:"now"`
	}
	if err := json.Unmarshal(data, &e, json.RejectUnknownMembers(false)); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return e.Now
}

// policyExpect is testdata/handoffs/governed/expect-policy.json.
type policyExpect struct {
	Comment  string                   `json:"comment"`
	Now      time.Time                `json:"now"`
	MaxAgeNS int64                    `json:"max_age_ns"`
	Files    map[string][]reason.Code `json:"files"`
}

// TestCorpus runs every corpus document through Decide with the example
// registry and lock: no panic, deterministic, a valid ledger entry. The
// governed/1 documents listed in governed/expect-policy.json must give
// exactly the codes listed there (each code once, in decision order).
func TestCorpus(t *testing.T) {
	docs := corpus(t)
	// The corpus ships with the repository: its absence is a failure, not
	// a reason to pass without checking anything.
	if len(docs) < 300 {
		t.Fatalf("found %d corpus documents under %s, want the committed corpus (>= 300)", len(docs), corpusDir)
	}
	var exp policyExpect
	data, err := os.ReadFile(filepath.Join(corpusDir, "governed", "expect-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &exp, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("expect-policy.json: %v", err)
	}
	checked := map[string]bool{}
	for _, doc := range docs {
		t.Run(doc.path, func(t *testing.T) {
			in := corpusInput(t, doc)
			want, listed := exp.Files[strings.TrimPrefix(doc.path, "governed/")]
			listed = listed && strings.HasPrefix(doc.path, "governed/")
			if listed {
				in.Now, in.Inputs.Params.MaxAge = exp.Now, exp.MaxAgeNS
			}
			d := policy.Decide(in)
			if again := policy.Decide(in); !reflect.DeepEqual(d, again) {
				t.Fatalf("Decide is not deterministic")
			}
			// A caller's detection (govern detects once per document)
			// decides exactly as Decide's own.
			withDet := in
			withDet.Detection = handoff.NewDetection(in.Payload, withDet.Inputs.Rules)
			if again := policy.Decide(withDet); !reflect.DeepEqual(d, again) {
				t.Fatalf("Decide with the caller's Detection differs:\n got %+v\nwant %+v", again, d)
			}
			checkFill(t, d, in)
			if strings.Contains(doc.path, "/valid/") && !listed && d.Decision != reason.Accepted {
				// Valid documents of other formats may fail governance
				// (their agents are not in the example registry), never
				// the format's own rules.
				for _, r := range d.Record.Findings {
					if r.Rejects() {
						t.Errorf("valid document rejected by its format: %+v", r)
					}
				}
			}
			if !listed {
				return
			}
			checked[doc.path] = true
			got := dedup(reason.Codes(d.Reasons))
			if !slices.Equal(got, want) {
				t.Errorf("codes = %v, want %v\nreasons: %+v", got, want, d.Reasons)
			}
			if (len(want) == 0) != (d.Decision == reason.Accepted) {
				t.Errorf("decision %s with codes %v", d.Decision, got)
			}
		})
	}
	for name := range exp.Files {
		if !checked["governed/"+name] {
			t.Errorf("expect-policy.json names %s, which is not in the corpus", name)
		}
	}
	for _, doc := range docs {
		if strings.HasPrefix(doc.path, "governed/") && !checked[doc.path] {
			t.Logf("%s has no governance expectation in expect-policy.json", doc.path)
		}
	}
}

// dedup keeps the first occurrence of each code, in order.
func dedup(cs []reason.Code) []reason.Code {
	var out []reason.Code
	for _, c := range cs {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func corpusInput(t testing.TB, doc corpusDoc) policy.Input {
	in := input(t, doc.data)
	in.Inputs.Params.MaxAge = 0 // corpus timestamps are fixed dates
	if !doc.now.IsZero() {
		in.Now = doc.now
	}
	switch {
	case doc.fromTo && strings.HasPrefix(doc.path, "a2a/"):
		// The agents the a2a/1 corpus's metadata names (its expect.json's).
		in.Inputs.Params.From, in.Inputs.Params.To = "planner", "router"
	case doc.fromTo:
		in.Inputs.Params.From, in.Inputs.Params.To = "domain-01-research", "domain-02-analysis"
	}
	return in
}
