package policy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"go.yaml.in/yaml/v3"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// A reason is stored in its ledger entry forever, and redacting a payload
// removes the payload's bytes but not the entry. So no reason may copy a
// value of the document: TestReasonsNeverCopyValues puts a distinctive
// secret into every string field of a document of each format, one field
// at a time and all at once, decides it, and looks for the secret in every
// reason's field and message.
//
// Each field gets two secrets: "S3CR3T-<n>-X" (breaks every grammar: ids,
// hashes, enums, timestamps) and "s3cr3t-<n>" (a canonical agent id, so an
// agent field reaches the registry lookup as an unknown agent).

// secretMark is what every secret contains; matched case-insensitively.
const secretMark = "s3cr3t"

type secretCase struct {
	name   string
	format handoff.Format
	// docs returns the document with the i'th string field (in document
	// order; -1: every field) replaced by secret(i), and the number of
	// string fields.
	mutate func(t *testing.T, i int, secret func(int) string) ([]byte, int)
	in     func(t *testing.T, payload []byte) policy.Input
}

func TestReasonsNeverCopyValues(t *testing.T) {
	cases := []secretCase{
		{"governed seed 003", handoff.Governed, jsonMutator(corpusFile(t, "governed/valid/seed-003-example.json")), exampleInput(time.Date(2026, 2, 11, 7, 31, 0, 0, time.UTC), "", "")},
		{"swarm seed 000", handoff.Swarm, yamlMutator(corpusFile(t, "swarm/valid/seed-000-example.yaml"), "", ""), skillsInput(time.Date(2026, 2, 4, 20, 0, 0, 0, time.UTC))},
		{"skill seed 002", handoff.Skill, yamlMutator(corpusFile(t, "skill/valid/seed-002-example.yaml"), "", ""), skillsInput(time.Date(2026, 2, 3, 15, 0, 0, 0, time.UTC))},
		{"task seed 004", handoff.Task, taskMutator(corpusFile(t, "task/valid/seed-004-yaml-format.md")), exampleInput(time.Date(2026, 2, 4, 20, 0, 0, 0, time.UTC), "orchestrator", "domain-03-technical")},
	}
	for _, name := range []string{"scout_findings", "dev_progress", "dev_blocker", "qa_result", "debugger_report"} {
		cases = append(cases, secretCase{"vbw seed 001 " + name, handoff.VBW, jsonMutator(corpusFile(t, "vbw/valid/seed-001-"+name+".json")),
			exampleInput(time.Date(2026, 2, 4, 20, 0, 0, 0, time.UTC), "domain-01-research", "domain-02-analysis")})
	}
	for _, name := range []string{"message", "send-message-request"} {
		cases = append(cases, secretCase{"a2a " + name, handoff.A2A, jsonMutator(corpusFile(t, "a2a/valid/"+name+".json")),
			exampleInput(time.Date(2026, 2, 4, 20, 0, 0, 0, time.UTC), "", "")})
	}
	cases = append(cases, secretCase{"vbw markdown", handoff.VBW,
		func(t *testing.T, i int, secret func(int) string) ([]byte, int) {
			if i < 0 {
				i = 0
			}
			return []byte("## Notes\n\n" + secret(i) + " is the whole message.\n"), 1
		}, exampleInput(time.Date(2026, 2, 4, 20, 0, 0, 0, time.UTC), "domain-01-research", "domain-02-analysis")})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, n := tc.mutate(t, 0, func(int) string { return "x" })
			if n == 0 {
				t.Fatal("the document has no string field to put a secret in")
			}
			rejecting := 0
			checkOne := func(label string, in policy.Input, forced bool) {
				t.Helper()
				d := policy.Decide(in)
				for _, r := range d.Reasons {
					if strings.Contains(strings.ToLower(r.Message+" "+r.Field), secretMark) {
						t.Errorf("%s: reason %s copies a document value: field %q, message %q", label, r.Code, r.Field, r.Message)
					}
					if r.Rejects() {
						rejecting++
					}
				}
				for _, b := range d.Blocks {
					if strings.Contains(strings.ToLower(b), secretMark) {
						t.Errorf("%s: blocks %q", label, b)
					}
				}
				if forced && d.Record != nil && d.Record.Format != tc.format {
					t.Errorf("%s: decided as %q, want %q", label, d.Record.Format, tc.format)
				}
			}
			check := func(label string, in policy.Input) {
				t.Helper()
				// Detected, then forced to the format: a secret in a field
				// that detection reads (vbw/1's type) leaves the document
				// undetected, and forcing the format still runs its rules.
				checkOne(label+" (detected)", in, false)
				in.Inputs.Params.Format = tc.format
				checkOne(label+" (forced)", in, true)
			}
			for _, variant := range []struct {
				label  string
				secret func(int) string
			}{
				{"grammar-breaking", func(i int) string { return fmt.Sprintf("S3CR3T-%d-X", i) }},
				{"agent-id-shaped", func(i int) string { return fmt.Sprintf("s3cr3t-%d", i) }},
			} {
				for i := range n {
					payload, _ := tc.mutate(t, i, variant.secret)
					check(fmt.Sprintf("%s field %d", variant.label, i), tc.in(t, payload))
				}
				payload, _ := tc.mutate(t, -1, variant.secret)
				in := tc.in(t, payload)
				check(variant.label+" every field", in)
				if d := policy.Decide(in); tc.format != handoff.VBW && d.Decision != reason.Rejected {
					t.Errorf("%s every field: accepted; the secrets did not reach the checks", variant.label)
				}
			}
			// The agents given by --from/--to (vbw/1, task/1) are the
			// caller's, but no more registered than a document's.
			if tc.format == handoff.VBW || tc.format == handoff.Task {
				payload, _ := tc.mutate(t, 0, func(int) string { return "plain" })
				for _, agents := range [][2]string{{"s3cr3t-from", "s3cr3t-to"}, {"S3CR3T-FROM", "S3CR3T-TO"}} {
					in := tc.in(t, payload)
					in.Inputs.Params.From, in.Inputs.Params.To = agents[0], agents[1]
					check("--from/--to "+agents[0], in)
				}
			}
			// The test must be able to fail: the secrets have to reach rules
			// that reject (and once quoted the value).
			if rejecting < n {
				t.Errorf("only %d rejecting reasons over %d fields: the secrets did not reach the rules", rejecting, n)
			}
		})
	}
}

func corpusFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleInput decides with the example registry and lock at now, with
// observations that answer every path "not recorded" (so the file-system
// rules run on whatever path a document names).
func exampleInput(now time.Time, from, to string) func(*testing.T, []byte) policy.Input {
	return func(t *testing.T, payload []byte) policy.Input {
		in := input(t, payload)
		in.Now = now
		in.Inputs.Params.From, in.Inputs.Params.To = from, to
		in.Inputs.Observations = []handoff.Observation{{Op: handoff.OpFile, Path: "unrelated"}}
		return in
	}
}

// skillsInput decides with the registry of testdata/skills and a lock of
// every skill.
func skillsInput(now time.Time) func(*testing.T, []byte) policy.Input {
	return func(t *testing.T, payload []byte) policy.Input {
		reg, err := manifest.Load("../testdata/skills")
		if err != nil {
			t.Fatal(err)
		}
		l := &lockfile.Lock{Version: 1, Agents: map[string]lockfile.Entry{}}
		for _, a := range reg.Agents {
			l.Agents[a.ID] = lockfile.Entry{AgentVersion: a.Version, PromptPath: a.PromptPath, PromptHash: lockfile.FormatDigest(entry.Sum256([]byte(a.ID)))}
		}
		in := input(t, payload)
		in.Registry, in.Lock, in.Now = reg, l, now
		in.Inputs.Observations = []handoff.Observation{{Op: handoff.OpFile, Path: "unrelated"}}
		return in
	}
}

// jsonMutator replaces string members and items of a JSON document.
func jsonMutator(base []byte) func(*testing.T, int, func(int) string) ([]byte, int) {
	return func(t *testing.T, target int, secret func(int) string) ([]byte, int) {
		var v any
		if err := json.Unmarshal(base, &v); err != nil {
			t.Fatal(err)
		}
		n := 0
		var walk func(any) any
		walk = func(x any) any {
			switch x := x.(type) {
			case string:
				i := n
				n++
				if target < 0 || target == i {
					return secret(i)
				}
				return x
			case map[string]any:
				// Deterministic order: sorted keys.
				keys := make([]string, 0, len(x))
				for k := range x {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					x[k] = walk(x[k])
				}
			case []any:
				for i := range x {
					x[i] = walk(x[i])
				}
			}
			return x
		}
		v = walk(v)
		out, err := json.Marshal(v, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		return out, n
	}
}

// yamlMutator replaces the string (and timestamp) value scalars of a YAML
// document; the result is wrapped in prefix and suffix.
func yamlMutator(base []byte, prefix, suffix string) func(*testing.T, int, func(int) string) ([]byte, int) {
	return func(t *testing.T, target int, secret func(int) string) ([]byte, int) {
		var doc yaml.Node
		if err := yaml.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		n := 0
		var walk func(*yaml.Node)
		walk = func(y *yaml.Node) {
			switch y.Kind {
			case yaml.DocumentNode, yaml.SequenceNode:
				for _, c := range y.Content {
					walk(c)
				}
			case yaml.MappingNode:
				for k := 1; k < len(y.Content); k += 2 {
					walk(y.Content[k]) // values only: keys are field names
				}
			case yaml.ScalarNode:
				if tag := y.ShortTag(); tag != "!!str" && tag != "!!timestamp" {
					return
				}
				i := n
				n++
				if target < 0 || target == i {
					y.Value, y.Tag, y.Style = secret(i), "!!str", yaml.DoubleQuotedStyle
				}
			}
		}
		walk(&doc)
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "!!") {
			t.Fatalf("re-encoded YAML carries an explicit tag:\n%s", b.String())
		}
		return []byte(prefix + b.String() + suffix), n
	}
}

// taskMutator mutates the task title's id and the YAML under the heading
// of a seed 004 task file.
func taskMutator(base []byte) func(*testing.T, int, func(int) string) ([]byte, int) {
	const heading = "## Handoff\n\n"
	yml, ok := bytes.CutPrefix(base, []byte(heading))
	if !ok {
		panic("task base does not start with the heading")
	}
	return func(t *testing.T, target int, secret func(int) string) ([]byte, int) {
		shift := func(i int) string { return secret(i + 1) }
		tgt := target
		if target > 0 {
			tgt = target - 1
		} else if target == 0 {
			tgt = 1 << 30 // the title only
		}
		title := "007"
		if target <= 0 {
			title = secret(0)
		}
		out, n := yamlMutator(yml, "# Task "+title+": Add JWT authentication\n\n"+heading, "")(t, tgt, shift)
		return out, n + 1
	}
}
