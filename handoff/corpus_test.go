package handoff_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/testenv"
	"github.com/govledger/govledger/reason"
)

var allFormats = []string{"governed", "swarm", "skill", "vbw", "task", "a2a"}

func loadExpect(t *testing.T, dir string) expectFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expectFile
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func corpusOptions(t *testing.T, e expectFile, d expectDoc, env handoff.Env) handoff.Options {
	t.Helper()
	now, err := time.Parse(time.RFC3339, e.Now)
	if err != nil {
		t.Fatal(err)
	}
	o := handoff.Options{Now: now, Env: env, From: e.From, To: e.To}
	if d.NoAgents {
		o.From, o.To = "", ""
	}
	return o
}

func distinctCodes(rs []reason.Reason) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, string(r.Code)) {
			out = append(out, string(r.Code))
		}
	}
	sort.Strings(out)
	return out
}

func rootEnv(t *testing.T) *handoff.RootEnv {
	t.Helper()
	env, err := handoff.NewRootEnv(corpusRoot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// TestCorpus parses every corpus document with detection, the corpus root
// as Env and the corpus clock, and compares the record's format and the
// distinct finding codes with expect.json. Valid documents must have no
// rejecting finding, hostile ones at least one.
func TestCorpus(t *testing.T) {
	counts := map[string][2]int{}
	for _, f := range allFormats {
		for i, kind := range []string{"valid", "hostile"} {
			dir := filepath.Join(corpusRoot, f, kind)
			e := loadExpect(t, dir)
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, ent := range entries {
				if ent.Name() == "expect.json" {
					continue
				}
				if _, ok := e.Files[ent.Name()]; !ok {
					t.Errorf("%s/%s: no entry in expect.json", dir, ent.Name())
				}
			}
			for name, want := range e.Files {
				n++
				t.Run(f+"/"+kind+"/"+name, func(t *testing.T) {
					data, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					rec := handoff.Parse(data, corpusOptions(t, e, want, rootEnv(t)))
					got := distinctCodes(rec.Findings)
					if got == nil {
						got = []string{}
					}
					if !slices.Equal(got, want.Codes) {
						t.Errorf("codes = %v, want %v\nfindings: %s", got, want.Codes, dump(rec.Findings))
					}
					if string(rec.Format) != want.Format {
						t.Errorf("format = %q, want %q", rec.Format, want.Format)
					}
					rejected := reason.Decide(rec.Findings) == reason.Rejected
					if rejected != (kind == "hostile") {
						t.Errorf("decision rejected=%v for a %s document: %s", rejected, kind, dump(rec.Findings))
					}
					checkRecordInvariants(t, data, rec)
				})
			}
			c := counts[f]
			c[i] = n
			counts[f] = c
		}
	}
	for _, f := range allFormats {
		c := counts[f]
		t.Logf("%s: %d valid, %d hostile", f, c[0], c[1])
		min := 10
		if f == "governed" {
			min = 100
		}
		if c[0] < 4 || c[1] < min {
			t.Errorf("%s corpus has %d valid and %d hostile documents, want >= 4 and >= %d", f, c[0], c[1], min)
		}
	}
}

// TestCorpusForcedFormat parses every hostile document with its folder's
// format forced: it must still be rejected, never panic.
func TestCorpusForcedFormat(t *testing.T) {
	forced := map[string]handoff.Format{"governed": handoff.Governed, "swarm": handoff.Swarm, "skill": handoff.Skill, "vbw": handoff.VBW, "task": handoff.Task, "a2a": handoff.A2A}
	for _, f := range allFormats {
		dir := filepath.Join(corpusRoot, f, "hostile")
		e := loadExpect(t, dir)
		for name, want := range e.Files {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(want.Codes, []string{"UNKNOWN_FORMAT"}) {
				continue // ambiguity is a detection matter; the format alone may accept it
			}
			o := corpusOptions(t, e, want, rootEnv(t))
			o.Format = forced[f]
			o.Strict = true
			rec := handoff.Parse(data, o)
			if reason.Decide(rec.Findings) != reason.Rejected {
				t.Errorf("%s/%s forced to %s: accepted: %s", f, name, o.Format, dump(rec.Findings))
			}
			if rec.Format != o.Format {
				t.Errorf("%s/%s: format = %q, want %q", f, name, rec.Format, o.Format)
			}
		}
	}
}

func dump(rs []reason.Reason) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("\n  " + string(r.Code) + " " + string(r.Severity) + " [" + r.Field + "] " + r.Message)
	}
	return b.String()
}

var knownCodes = map[reason.Code]bool{
	reason.SchemaInvalid: true, reason.InvalidRequestType: true, reason.InvalidTimestamp: true,
	reason.Expired: true, reason.InvalidID: true, reason.HandoffLoop: true, reason.ChecksumMismatch: true,
	reason.DeliverableMissing: true, reason.PathEscape: true, reason.PayloadTooLarge: true,
	reason.Unparseable: true, reason.UnknownFormat: true, reason.MarkdownFallback: true,
	reason.SessionUnreadable: true, reason.PerspectiveCount: true, reason.PayloadSize: true,
	reason.CountsInconsistent: true, reason.AgentsRequired: true, reason.NewerVersion: true,
}

// checkRecordInvariants holds for every Record Parse returns.
func checkRecordInvariants(t *testing.T, data []byte, rec *handoff.Record) {
	t.Helper()
	if rec == nil {
		t.Fatal("Parse returned nil")
	}
	if string(rec.Raw) != string(data) || len(rec.Raw) != len(data) {
		t.Errorf("Raw differs from the input")
	}
	for _, r := range rec.Findings {
		if !knownCodes[r.Code] {
			t.Errorf("unknown code %q", r.Code)
		}
		if r.Severity != reason.Error && r.Severity != reason.Warning && r.Severity != reason.Critical {
			t.Errorf("bad severity %q", r.Severity)
		}
		if r.Message == "" {
			t.Errorf("%s: empty message", r.Code)
		}
		for _, s := range []string{r.Message, r.Field} {
			if !utf8Valid(s) {
				t.Errorf("%s: invalid UTF-8 in %q", r.Code, s)
			}
		}
	}
	for _, s := range []string{rec.HandoffID, rec.Source.ID, rec.Source.Type, rec.Source.Version, rec.Source.PromptHash,
		rec.Target.ID, rec.Target.Type, rec.Target.Version, rec.Target.PromptHash, rec.WorkflowID, rec.Timestamp, rec.RequestType, rec.SessionPath} {
		if !utf8Valid(s) || len(s) > handoff.MaxFieldLen {
			t.Errorf("normalized field %q is invalid UTF-8 or too long", s)
		}
	}
	if rec.Format == "" && len(rec.Findings) == 0 {
		t.Errorf("no format and no finding")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestSwarmPreimageRecipe checks the documented shell recipe against
// SwarmPreimage on the corpus's sealed documents.
func TestSwarmPreimageRecipe(t *testing.T) {
	// The documented shell recipe must be run: without its programs the
	// test skips, or fails when CI is set.
	testenv.LookPath(t, "apt-get install coreutils", "sha256sum")
	testenv.LookPath(t, "apt-get install grep", "grep")
	testenv.LookPath(t, "apt-get install dash", "sh")
	for _, name := range []string{"seed-000-example.yaml", "loop-warning.yaml"} {
		p := filepath.Join(corpusRoot, "swarm", "valid", name)
		out, err := exec.Command("sh", "-c", `grep -Ev '^[[:blank:]]*(payload_hash|payload_size_bytes)[[:blank:]]*:' "$1" | sha256sum`, "sh", p).Output()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		want := "sha256:" + strings.Fields(string(out))[0]
		if !strings.Contains(string(data), `payload_hash: "`+want+`"`) {
			t.Errorf("%s: recipe gives %s, not the document's payload_hash", name, want)
		}
		size, err := exec.Command("sh", "-c", `grep -Ev '^[[:blank:]]*(payload_hash|payload_size_bytes)[[:blank:]]*:' "$1" | wc -c`, "sh", p).Output()
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.TrimSpace(string(size)); !strings.Contains(string(data), "payload_size_bytes: "+n+"\n") {
			t.Errorf("%s: recipe gives size %s, not the document's payload_size_bytes", name, n)
		}
	}
}

// TestReplay parses every corpus document with a RootEnv, then again with
// a ReplayEnv over the observations: the findings must be identical.
func TestReplay(t *testing.T) {
	for _, f := range allFormats {
		for _, kind := range []string{"valid", "hostile"} {
			dir := filepath.Join(corpusRoot, f, kind)
			e := loadExpect(t, dir)
			for name, want := range e.Files {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				env := rootEnv(t)
				live := handoff.Parse(data, corpusOptions(t, e, want, env))
				obs := env.Observations()
				replayed := handoff.Parse(data, corpusOptions(t, e, want, handoff.NewReplayEnv(obs)))
				if !reflect.DeepEqual(live, replayed) {
					t.Errorf("%s/%s/%s: replay differs:\nlive %s\nreplay %s", f, kind, name, dump(live.Findings), dump(replayed.Findings))
				}
				for _, o := range obs {
					if strings.Contains(o.Err, "/") {
						t.Errorf("%s: observation error names a path: %q", name, o.Err)
					}
				}
			}
		}
	}
}
