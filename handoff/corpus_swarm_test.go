package handoff_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govledger/govledger/handoff"
)

const swarmSession = "swarm/session-20260204-183000-a1b2c3d4/"

// swarmSeed is seed 000's example payload. Adapted: session_path is
// relative to the corpus root (the seed's /tmp path does not exist here),
// the timestamps are within an hour of corpusNow, and payload_hash and
// payload_size_bytes (the seed shows the hash of empty input and a made-up
// size) are computed by sealSwarm.
var swarmSeed = `handoff:
  version: "2.0"
  timestamp: "2026-02-04T19:30:00Z"
  expires_at: "2026-02-04T20:30:00Z"

  source:
    skill: perspective-swarm
    workflow_id: swarm-session-20260204-183000-a1b2c3d4
    session_path: ` + swarmSession + `

  target:
    skill: lit-pm
    invocation: "/lit-pm --handoff {payload_path}"
    category: research

  context:
    original_prompt: "Should we expand into the European market?"
    reframed_challenge: "Evaluate market expansion opportunity: European market entry for B2B SaaS product"
    problem_type: strategic
    synthesis_summary: |
      European market expansion presents a significant growth opportunity with
      regulatory complexity as the primary risk factor. Market data supports
      demand, but implementation feasibility requires careful planning around
      GDPR compliance and local market adaptation.

  insights:
    convergent:
      - theme: "Growth opportunity in EU market"
        confidence_score: 7.2
        contributing_archetypes: [optimist, pragmatist]
        key_evidence:
          - "EU B2B SaaS market growing at 12% CAGR"
          - "Low competition in specific vertical"

    divergent:
      - archetype: critic
        insight: "GDPR compliance costs underestimated in most expansion plans"
        confidence: 5
      - archetype: innovator
        insight: "Partnership model may be better than direct entry"
        confidence: 3

    uncertainties:
      - "True cost of GDPR compliance for our data model"
      - "Local competitor response timeline"
      - "Currency fluctuation impact on pricing"

    blind_spots:
      - "May underweight execution complexity (Optimist)"
      - "May miss partnership opportunities (Pragmatist)"

  research_seeds:
    suggested_terms:
      - term: "B2B SaaS GDPR compliance cost studies"
        rationale: "Address critic's concern about underestimated compliance"
      - term: "European market entry partnership vs direct"
        rationale: "Explore innovator's partnership suggestion"
    open_questions:
      - "What is the average GDPR compliance cost for similar SaaS products?"
      - "What partnership models have succeeded for US B2B SaaS in EU?"

  meta:
    perspectives_completed: 5
    convergence_level: medium
    user_feedback: "Particularly interested in GDPR compliance depth"
    handoff_reason: "User selected deep literature research for regulatory clarity"
    handoff_chain: ["perspective-swarm"]
    payload_hash: "HASH"
    payload_size_bytes: SIZE
`

// sealSwarm fills the HASH and SIZE placeholders with the document's own
// payload hash and size.
func sealSwarm(doc string) string {
	pre := handoff.SwarmPreimage([]byte(doc))
	doc = strings.Replace(doc, `"HASH"`, fmt.Sprintf(`"sha256:%x"`, sha256.Sum256(pre)), 1)
	return strings.Replace(doc, "SIZE", fmt.Sprint(len(pre)), 1)
}

func generateSwarm(t *testing.T) {
	for _, p := range []string{"optimist", "pragmatist", "critic", "innovator", "analyst"} {
		writeFixture(t, swarmSession+"perspective-"+p+".md", "# Perspective: "+p+"\n\nFindings of the "+p+" archetype.\n")
	}
	writeFixture(t, swarmSession+"synthesis.md", "# Synthesis\n\nNot a perspective file.\n")
	writeFixture(t, swarmSession+"notes/perspective-draft.md", "# Draft\n\nIn a subdirectory: not counted.\n")

	W := handoff.Swarm
	b := swarmSeed
	sealed := sealSwarm(b)
	minimal := `handoff:
  version: "2.0"
  timestamp: "2026-02-04T19:45:00Z"
  source:
    skill: perspective-swarm
    session_path: ` + swarmSession + `
  target:
    skill: statistician
  context:
    original_prompt: "Is the churn increase significant?"
    problem_type: analytical
`
	valid := []doc{
		{name: "seed-000-example.yaml", body: sealSwarm(b), format: W},
		{name: "minimal-required-only.yaml", body: minimal, format: W},
		{name: "flow-style.yaml", format: W, body: `{"handoff": {"version": "2.0", "timestamp": "2026-02-04T19:50:00+01:00", "expires_at": "2026-02-05T00:00:00Z",
  "source": {"skill": "perspective-swarm", "workflow_id": "wf-42", "session_path": "` + swarmSession + `"},
  "target": {"skill": "systems-architect", "category": "architecture"},
  "context": {"original_prompt": "Monolith or services?", "problem_type": "decision"},
  "meta": {"perspectives_completed": 5, "convergence_level": "none", "handoff_chain": []}}}
`},
		{name: "unknown-fields-ignored.yaml", format: W, body: rep(minimal, "  context:", "  priority: high\n  extra:\n    nested: [1, 2]\n  context:") + "other_top_level: ignored\n"},
		{name: "loop-warning.yaml", format: W, codes: []string{"HANDOFF_LOOP"}, body: sealSwarm(rep(rep(rep(b, "skill: lit-pm", "skill: fact-checker"), "category: research", "category: verification"),
			`handoff_chain: ["perspective-swarm"]`, `handoff_chain: ["perspective-swarm", "fact-checker"]`))},
		// YAML 1.2 allows a byte order mark at the start of the stream; the
		// payload hash covers it (grep keeps it on the first line).
		{name: "bom.yaml", format: W, body: sealSwarm("\xef\xbb\xbf" + b)},
		// "payload_hash: string # sha256": the digest bare or "sha256:"-prefixed.
		{name: "payload-hash-bare.yaml", format: W, body: rep(sealed, `"sha256:`, `"`)},
		// "v1.0 payloads are still valid (v2.0 is a superset)"; v1.0 was hard-coded to lit-pm.
		{name: "version-1-0.yaml", format: W, body: rep(rep(minimal, `version: "2.0"`, `version: "1.0"`), "skill: statistician", "skill: lit-pm")},
	}
	writeCorpus(t, filepath.Join(genRoot, "swarm", "valid"), expectFile{}, valid)

	S, U, P := "SCHEMA_INVALID", "UNPARSEABLE", "UNKNOWN_FORMAT"
	var h []doc
	add := func(name, body string, format handoff.Format, codes ...string) {
		h = append(h, doc{name: name + ".yaml", body: body, format: format, codes: codes})
	}
	add("missing-version", rep(minimal, "  version: \"2.0\"\n", ""), W, S)
	add("version-2-1", rep(minimal, `version: "2.0"`, `version: "2.1"`), W, S)
	add("version-unquoted-float", rep(minimal, `version: "2.0"`, `version: 2.0`), W, S)
	add("version-2-0-0", rep(minimal, `version: "2.0"`, `version: "2.0.0"`), W, S)
	add("version-1-0-other-target", rep(minimal, `version: "2.0"`, `version: "1.0"`), W, S)
	// No source and no version: the other members still say swarm/2, so the
	// document is refused naming what it lacks (not "unknown format").
	add("broken-no-source-no-version", rep(rep(minimal, "  version: \"2.0\"\n", ""), "  source:\n    skill: perspective-swarm\n    session_path: "+swarmSession+"\n", ""), W, S)
	add("timestamp-invalid", rep(minimal, `"2026-02-04T19:45:00Z"`, `"2026-02-04 19:45"`), W, "INVALID_TIMESTAMP")
	add("expired", rep(rep(minimal, `"2026-02-04T19:45:00Z"`, `"2026-02-04T18:00:00Z"`), "  source:", "  expires_at: \"2026-02-04T18:30:00Z\"\n  source:"), W, "EXPIRED")
	add("expired-by-default", rep(minimal, `"2026-02-04T19:45:00Z"`, `"2026-02-04T18:30:00Z"`), W, "EXPIRED")
	add("expires-at-invalid", rep(minimal, "  source:", "  expires_at: tomorrow\n  source:"), W, "INVALID_TIMESTAMP")
	add("source-skill-wrong", rep(minimal, "skill: perspective-swarm", "skill: lit-pm"), W, S)
	add("session-missing", rep(minimal, swarmSession, "swarm/session-does-not-exist/"), W, "SESSION_UNREADABLE")
	add("session-dotdot-escape", rep(minimal, swarmSession, "../../etc/"), W, "PATH_ESCAPE")
	add("session-absolute-outside", rep(minimal, swarmSession, "/etc/"), W, "PATH_ESCAPE")
	add("session-url", rep(minimal, swarmSession, "https://evil.example/session/"), W, "PATH_ESCAPE")
	add("session-is-a-file", rep(minimal, swarmSession, swarmSession+"synthesis.md"), W, "SESSION_UNREADABLE")
	add("session-missing-field", rep(minimal, "    session_path: "+swarmSession+"\n", ""), W, S)
	add("target-empty", rep(minimal, "skill: statistician", `skill: ""`), W, S)
	add("target-homoglyph", rep(minimal, "skill: statistician", "skill: \"st\u0430tistician\""), W, S)
	add("original-prompt-empty", rep(minimal, `"Is the churn increase significant?"`, `"  "`), W, S)
	add("problem-type-invalid", rep(minimal, "problem_type: analytical", "problem_type: tactical"), W, S)
	add("perspective-count-wrong", sealSwarm(rep(b, "perspectives_completed: 5", "perspectives_completed: 4")), W, "PERSPECTIVE_COUNT")
	add("perspective-count-negative", sealSwarm(rep(b, "perspectives_completed: 5", "perspectives_completed: -1")), W, S)
	add("perspective-count-hex", sealSwarm(rep(b, "perspectives_completed: 5", "perspectives_completed: 0x5")), W, U)
	add("perspective-count-1e400", sealSwarm(rep(b, "perspectives_completed: 5", "perspectives_completed: 1e400")), W, S)
	add("convergence-invalid", sealSwarm(rep(b, "convergence_level: medium", "convergence_level: very-high")), W, S)
	hashAt := strings.Index(sealed, `"sha256:`) + len(`"sha256:`)
	flipped := sealed[:hashAt] + strings.Repeat("0", 64) + sealed[hashAt+64:]
	add("checksum-mismatch", flipped, W, "CHECKSUM_MISMATCH")
	add("tampered-after-sealing", rep(sealed, "European market?", "Asian market, now?"), W, "CHECKSUM_MISMATCH", "PAYLOAD_SIZE")
	add("payload-size-wrong", strings.Replace(sealed, "payload_size_bytes: ", "payload_size_bytes: 1", 1), W, "PAYLOAD_SIZE")
	add("payload-hash-upper-case", rep(sealed, sealed[hashAt:hashAt+64], strings.ToUpper(sealed[hashAt:hashAt+64])), W, S)
	add("payload-hash-seed-placeholder", rep(sealed, sealed[hashAt-len(`"sha256:`):hashAt+65], `"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`), W, "CHECKSUM_MISMATCH")
	add("i8-anchor-alias", rep(minimal, "    skill: statistician", "    skill: &t statistician\n    category: *t"), W, U)
	add("i8-billion-laughs", rep(minimal, "  context:", `  bomb:
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  context:`), W, U)
	add("i9-merge-key", rep(minimal, "  target:\n", "  defaults: &d {skill: lit-pm}\n  target:\n    <<: *d\n"), W, U)
	add("i9-merge-key-no-alias", rep(minimal, "  target:\n", "  target:\n    <<: {category: research}\n"), W, U)
	add("i9-explicit-tag-binary", rep(minimal, "skill: statistician", "skill: !!binary c3RhdGlzdGljaWFu"), W, U)
	add("i9-explicit-tag-str", rep(minimal, "skill: statistician", "skill: !!str statistician"), W, U)
	add("i9-custom-tag", rep(minimal, "skill: statistician", "skill: !shell statistician"), W, U)
	add("i9-non-string-key", rep(minimal, "  context:", "  1: one\n  context:"), W, U)
	add("i9-bool-key", rep(minimal, "  context:", "  true: yes\n  context:"), W, U)
	add("i9-complex-key", rep(minimal, "  context:", "  ? [a, b]\n  : c\n  context:"), W, U)
	add("i9-unquoted-timestamp-as-text", rep(minimal, "    session_path:", "    workflow_id: 2026-02-04\n    session_path:"), W, S)
	add("i1-duplicate-key", rep(minimal, "    skill: statistician", "    skill: statistician\n    skill: lit-pm"), W, U)
	add("i1-duplicate-top-handoff", minimal+strings.Replace(minimal, "statistician", "lit-pm", 1), W, U)
	add("i3-two-documents", minimal+"---\n"+minimal, W, U)
	add("i5-huge-integer", sealSwarm(rep(b, "perspectives_completed: 5", "perspectives_completed: 9007199254740993")), W, U)
	add("i4-invalid-utf8", rep(minimal, "churn", "ch\xffurn"), "", U)
	add("i6-depth-33", rep(minimal, "  context:", "  deep: "+strings.Repeat("[", 31)+strings.Repeat("]", 31)+"\n  context:"), W, U)
	add("syntax-error-tab-indent", rep(minimal, "    skill: statistician", "\tskill: statistician"), W, U)
	add("detect-ambiguous-with-skill", rep(minimal, "  source:", "  source_skill: researcher\n  source:"), "", P)
	writeCorpus(t, filepath.Join(genRoot, "swarm", "hostile"), expectFile{}, h)
}
