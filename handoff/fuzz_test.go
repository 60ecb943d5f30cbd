package handoff_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
)

// addCorpus seeds f with every document of the given corpus folders.
func addCorpus(f *testing.F, formats ...string) {
	for _, name := range formats {
		for _, kind := range []string{"valid", "hostile"} {
			paths, _ := filepath.Glob(filepath.Join(corpusRoot, name, kind, "*"))
			for _, p := range paths {
				if filepath.Base(p) == "expect.json" {
					continue
				}
				if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
					f.Add(b)
				}
			}
		}
	}
}

// fuzzEnv answers every question from a fixed, plausible world so that
// fuzzing reaches the file-system rules without touching the disk.
type fuzzEnv struct{}

func (fuzzEnv) Observe(op, path string) handoff.Observation {
	o := handoff.Observation{Op: op, Path: path}
	switch {
	case strings.Contains(path, "escape"):
		o.Escapes = true
	case strings.Contains(path, "missing"):
	case op == "dir":
		o.Exists, o.IsDir, o.Names = true, true, []string{"perspective-a.md", "perspective-b.md", "x.md"}
	default:
		o.Exists, o.Size, o.SHA256 = true, 3, strings.Repeat("ab", 32)
	}
	return o
}

var fuzzNow = time.Date(2026, 2, 4, 20, 0, 0, 0, time.UTC)

// checkParse asserts the properties every Parse result has.
func checkParse(t *testing.T, data []byte, opts handoff.Options) *handoff.Record {
	rec := handoff.Parse(data, opts)
	checkRecordInvariants(t, data, rec)
	for _, r := range rec.Findings {
		if strings.Contains(r.Message, "internal parser failure") {
			t.Fatalf("parser panicked: %s", r.Message)
		}
	}
	again := handoff.Parse(data, opts)
	if !reflect.DeepEqual(rec, again) {
		t.Fatalf("Parse is not deterministic:%s\nvs%s", dump(rec.Findings), dump(again.Findings))
	}
	return rec
}

func FuzzParse(f *testing.F) {
	addCorpus(f, allFormats...)
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := checkParse(t, data, handoff.Options{Now: fuzzNow, Env: fuzzEnv{}})
		// Detection and Parse agree.
		got, _, err := handoff.Detect(data)
		if err == nil && len(data) <= handoff.MaxDocumentSize && rec.Format != got {
			t.Fatalf("Detect = %s, Parse format = %s", got, rec.Format)
		}
		if err != nil && rec.Format != "" {
			t.Fatalf("Detect failed (%v) but Parse chose %s", err, rec.Format)
		}
		if err != nil && reason.Decide(rec.Findings) != reason.Rejected {
			t.Fatalf("undetected document accepted")
		}
		withAgents := checkParse(t, data, handoff.Options{Now: fuzzNow, Env: fuzzEnv{}, From: "a", To: "b", Strict: true})
		if withAgents.Format == handoff.VBW && reason.Decide(withAgents.Findings) == reason.Accepted && !looksLikeJSON(data) {
			t.Fatalf("strict markdown fallback accepted")
		}
		roundTrip(t, data, rec, handoff.Options{Now: fuzzNow, Env: fuzzEnv{}})
	})
}

func looksLikeJSON(b []byte) bool {
	s := strings.TrimLeft(strings.TrimPrefix(string(b), "\xef\xbb\xbf"), " \t\r\n")
	return strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")
}

// roundTrip: an accepted JSON document re-encoded in RFC 8785 canonical
// form parses to the same record.
func roundTrip(t *testing.T, data []byte, rec *handoff.Record, opts handoff.Options) {
	if (rec.Format != handoff.Governed && rec.Format != handoff.VBW && rec.Format != handoff.A2A) || reason.Decide(rec.Findings) != reason.Accepted || !looksLikeJSON(data) ||
		slices.Contains(reason.Codes(rec.Findings), reason.MarkdownFallback) {
		return // not read as JSON (vbw/1 markdown may start with "[")
	}
	canon, err := strictjson.CanonicalizeBytes(data)
	if err != nil {
		t.Fatalf("accepted document does not canonicalize: %v", err)
	}
	opts.Format = rec.Format
	again := handoff.Parse(canon, opts)
	again.Raw, again.Findings = nil, nil
	want := *rec
	want.Raw, want.Findings = nil, nil
	if !reflect.DeepEqual(&want, again) {
		t.Fatalf("canonical form parses differently:\n%+v\n%+v", want, *again)
	}
}

func fuzzFormat(f *testing.F, format handoff.Format, folder string) {
	addCorpus(f, folder)
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := handoff.Options{Format: format, Now: fuzzNow, Env: fuzzEnv{}, From: "a", To: "b"}
		rec := checkParse(t, data, opts)
		if rec.Format != format && len(data) <= handoff.MaxDocumentSize {
			t.Fatalf("Format = %q, want %q", rec.Format, format)
		}
		roundTrip(t, data, rec, opts)
	})
}

func FuzzParseGoverned(f *testing.F) { fuzzFormat(f, handoff.Governed, "governed") }
func FuzzParseSwarm(f *testing.F)    { fuzzFormat(f, handoff.Swarm, "swarm") }
func FuzzParseSkill(f *testing.F)    { fuzzFormat(f, handoff.Skill, "skill") }
func FuzzParseVBW(f *testing.F)      { fuzzFormat(f, handoff.VBW, "vbw") }
func FuzzParseTask(f *testing.F)     { fuzzFormat(f, handoff.Task, "task") }
func FuzzParseA2A(f *testing.F)      { fuzzFormat(f, handoff.A2A, "a2a") }
