package handoff_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
)

// Seed conformance: one case per rule a seed states, each quoting the
// seed's sentence. The rules that need the registry or the lock are in
// package policy (TestSeedGovernance), the skill metadata rules in package
// manifest (TestSeed000SkillMetadata). README.md, "Format conformance", lists
// them all.

// seedRule is one rule of a seed, checked on one document.
type seedRule struct {
	id   string // the subtest name
	seed string // the seed's sentence the rule comes from
	doc  string
	// want is the set of distinct finding codes (nil: none at all).
	want []reason.Code
	// field, when set, must be the Field of a finding.
	field string
	// format is the expected Record.Format ("" means the test's format).
	format handoff.Format
	opts   func(*handoff.Options)
}

func runSeedRules(t *testing.T, format handoff.Format, base handoff.Options, rules []seedRule) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.id, func(t *testing.T) {
			if r.seed == "" {
				t.Fatal("a seed rule must quote its seed")
			}
			o := base
			if o.Env == nil {
				o.Env = rootEnv(t)
			}
			if r.opts != nil {
				r.opts(&o)
			}
			rec := handoff.Parse([]byte(r.doc), o)
			want := slices.Clone(r.want)
			slices.Sort(want)
			got := slices.Compact(slices.Sorted(slices.Values(codesOf(rec))))
			if !slices.Equal(got, want) {
				t.Errorf("codes = %v, want %v (seed: %q)%s", got, want, r.seed, dump(rec.Findings))
			}
			wantFormat := format
			if r.format != "" {
				wantFormat = r.format
			}
			if r.format == "none" {
				wantFormat = ""
			}
			if rec.Format != wantFormat {
				t.Errorf("format = %q, want %q", rec.Format, wantFormat)
			}
			if r.field != "" && !slices.ContainsFunc(rec.Findings, func(x reason.Reason) bool { return x.Field == r.field }) {
				t.Errorf("no finding names field %q:%s", r.field, dump(rec.Findings))
			}
			checkRecordInvariants(t, []byte(r.doc), rec)
		})
	}
}

const swarmMinimal = `handoff:
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

func TestSeed000Swarm(t *testing.T) {
	now, _ := time.Parse(time.RFC3339, corpusNow)
	b, m := sealSwarm(swarmSeed), swarmMinimal
	S, TS := reason.SchemaInvalid, reason.InvalidTimestamp
	drop := func(doc, line string) string { return rep(doc, line, "") }
	runSeedRules(t, handoff.Swarm, handoff.Options{Now: now}, []seedRule{
		{id: "seed-example", seed: "## Example Handoff Payload", doc: b},
		{id: "version-must-be-2.0", seed: "`handoff.version` | string | Must be \"2.0\"", doc: rep(m, `version: "2.0"`, `version: "2.1"`), want: []reason.Code{S}, field: "handoff.version"},
		{id: "version-is-a-string", seed: "`handoff.version` | string", doc: rep(m, `version: "2.0"`, `version: 2.0`), want: []reason.Code{S}, field: "handoff.version"},
		{id: "version-1.0-still-valid", seed: "v1.0 payloads are still valid (v2.0 is a superset)", doc: rep(rep(m, `version: "2.0"`, `version: "1.0"`), "skill: statistician", "skill: lit-pm")},
		{id: "version-1.0-targets-lit-pm", seed: "`target.skill` is now dynamic (not hardcoded to lit-pm)", doc: rep(m, `version: "2.0"`, `version: "1.0"`), want: []reason.Code{S}, field: "handoff.target.skill"},
		{id: "required-version", seed: "Required Fields (Handoff MUST fail if missing): handoff.version", doc: drop(m, "  version: \"2.0\"\n"), want: []reason.Code{S}, field: "handoff.version"},
		{id: "required-timestamp", seed: "Required Fields (Handoff MUST fail if missing): handoff.timestamp", doc: drop(m, "  timestamp: \"2026-02-04T19:45:00Z\"\n"), want: []reason.Code{S}, field: "handoff.timestamp"},
		{id: "timestamp-iso8601", seed: "`handoff.timestamp` | ISO8601 | Must be valid ISO8601", doc: rep(m, `"2026-02-04T19:45:00Z"`, `"04/02/2026 19:45"`), want: []reason.Code{TS}, field: "handoff.timestamp"},
		{id: "required-source-skill", seed: "Required Fields (Handoff MUST fail if missing): handoff.source.skill", doc: drop(m, "    skill: perspective-swarm\n"), want: []reason.Code{S}, field: "handoff.source.skill"},
		{id: "source-skill-perspective-swarm", seed: "`handoff.source.skill` | string | Must be \"perspective-swarm\"", doc: rep(m, "skill: perspective-swarm", "skill: lit-pm"), want: []reason.Code{S}, field: "handoff.source.skill"},
		{id: "required-session-path", seed: "Required Fields (Handoff MUST fail if missing): handoff.source.session_path", doc: drop(m, "    session_path: "+swarmSession+"\n"), want: []reason.Code{S}, field: "handoff.source.session_path"},
		{id: "session-path-exists", seed: "`handoff.source.session_path` | string | Must exist and be readable", doc: rep(m, swarmSession, "swarm/no-such-session/"), want: []reason.Code{reason.SessionUnreadable}},
		{id: "session-path-is-a-directory", seed: "`handoff.source.session_path` | string | Must exist and be readable", doc: rep(m, swarmSession, swarmSession+"synthesis.md"), want: []reason.Code{reason.SessionUnreadable}},
		{id: "session-path-inside-root", seed: "Verify session_path is accessible", doc: rep(m, swarmSession, "../../etc/"), want: []reason.Code{reason.PathEscape}},
		{id: "required-target-skill", seed: "Required Fields (Handoff MUST fail if missing): handoff.target.skill", doc: rep(m, "    skill: statistician\n", "    invocation: /statistician\n"), want: []reason.Code{S}, field: "handoff.target.skill"},
		{id: "target-skill-non-empty", seed: "`handoff.target.skill` | string | Must be non-empty", doc: rep(m, "skill: statistician", `skill: ""`), want: []reason.Code{S}, field: "handoff.target.skill"},
		{id: "required-original-prompt", seed: "Required Fields (Handoff MUST fail if missing): handoff.context.original_prompt", doc: drop(m, "    original_prompt: \"Is the churn increase significant?\"\n"), want: []reason.Code{S}, field: "handoff.context.original_prompt"},
		{id: "original-prompt-non-empty", seed: "`handoff.context.original_prompt` | string | Must be non-empty", doc: rep(m, `"Is the churn increase significant?"`, `" "`), want: []reason.Code{S}, field: "handoff.context.original_prompt"},
		{id: "required-problem-type", seed: "Required Fields (Handoff MUST fail if missing): handoff.context.problem_type", doc: drop(m, "    problem_type: analytical\n"), want: []reason.Code{S}, field: "handoff.context.problem_type"},
		{id: "problem-type-enum", seed: "`handoff.context.problem_type` | enum | Must be one of: decision, creative, analytical, strategic", doc: rep(m, "problem_type: analytical", "problem_type: tactical"), want: []reason.Code{S}, field: "handoff.context.problem_type"},
		{id: "optional-fields-default", seed: "Optional Fields (Default values): expires_at, synthesis_summary, insights.*, research_seeds.*, handoff_chain", doc: m},
		{id: "expires-at-iso8601", seed: "expires_at: ISO8601 # Payload expiration", doc: rep(m, "  source:", "  expires_at: tomorrow\n  source:"), want: []reason.Code{TS}, field: "handoff.expires_at"},
		{id: "expires-at-enforced", seed: "expires_at: ISO8601 # Payload expiration (default: +1 hour)", doc: rep(rep(m, `"2026-02-04T19:45:00Z"`, `"2026-02-04T18:00:00Z"`), "  source:", "  expires_at: \"2026-02-04T19:00:00Z\"\n  source:"), want: []reason.Code{reason.Expired}},
		{id: "expires-at-default-one-hour", seed: "`handoff.expires_at` | `timestamp + 1 hour`", doc: rep(m, `"2026-02-04T19:45:00Z"`, `"2026-02-04T18:59:59Z"`), want: []reason.Code{reason.Expired}},
		{id: "perspectives-match-session", seed: "`handoff.meta.perspectives_completed` must match number of perspective files in session", doc: sealSwarm(rep(swarmSeed, "perspectives_completed: 5", "perspectives_completed: 4")), want: []reason.Code{reason.PerspectiveCount}},
		{id: "perspectives-integer", seed: "perspectives_completed: integer", doc: sealSwarm(rep(swarmSeed, "perspectives_completed: 5", "perspectives_completed: \"5\"")), want: []reason.Code{S}},
		{id: "convergence-level-enum", seed: "`handoff.meta.convergence_level` must be one of: high, medium, low, none", doc: sealSwarm(rep(swarmSeed, "convergence_level: medium", "convergence_level: moderate")), want: []reason.Code{S}, field: "handoff.meta.convergence_level"},
		{id: "loop-warning", seed: "If `handoff.target.skill` appears in `handoff.meta.handoff_chain`, warn about potential loop", doc: sealSwarm(rep(rep(swarmSeed, "skill: lit-pm", "skill: fact-checker"), `handoff_chain: ["perspective-swarm"]`, `handoff_chain: ["perspective-swarm", "fact-checker"]`)), want: []reason.Code{reason.HandoffLoop}},
		{id: "loop-warning-default-chain", seed: "`handoff.meta.handoff_chain` | `[\"perspective-swarm\"]`", doc: rep(m, "skill: statistician", "skill: perspective-swarm"), want: []reason.Code{reason.HandoffLoop}},
		{id: "payload-hash", seed: "Calculate payload_hash (sha256)", doc: rep(b, "Should we expand", "Sh0uld we expand"), want: []reason.Code{reason.ChecksumMismatch}, field: "handoff.meta.payload_hash"},
		{id: "payload-hash-bare", seed: "payload_hash: string # sha256 for integrity verification", doc: rep(b, `payload_hash: "sha256:`, `payload_hash: "`)},
		{id: "payload-hash-form", seed: "payload_hash: string # sha256 for integrity verification", doc: rep(b, `payload_hash: "sha256:`, `payload_hash: "md5:`), want: []reason.Code{S}},
		{id: "payload-size", seed: "payload_size_bytes: integer", doc: strings.Replace(b, "payload_size_bytes: ", "payload_size_bytes: 9", 1), want: []reason.Code{reason.PayloadSize}},
		{id: "confidence-score-float", seed: "confidence_score: float", doc: sealSwarm(rep(swarmSeed, "confidence_score: 7.2", "confidence_score: high")), want: []reason.Code{S}},
		{id: "divergent-confidence-integer", seed: "confidence: integer", doc: sealSwarm(rep(swarmSeed, "confidence: 5", "confidence: 5.5")), want: []reason.Code{S}},
		{id: "unknown-fields-ignored", seed: "Target skills MUST ignore unknown fields (graceful handling)", doc: rep(m, "  context:", "  priority: high\n  context:")},
		{id: "bom", seed: "## Handoff Payload Schema (v2.0) (YAML: a byte order mark may start the stream)", doc: "\xef\xbb\xbf" + m},
		{id: "no-source-still-swarm", seed: "Required Fields (Handoff MUST fail if missing): handoff.source.skill", doc: drop(drop(m, "  version: \"2.0\"\n"), "  source:\n    skill: perspective-swarm\n    session_path: "+swarmSession+"\n"), want: []reason.Code{S}, field: "handoff.source"},
	})
}

func TestSeed001VBW(t *testing.T) {
	S, C := reason.SchemaInvalid, reason.CountsInconsistent
	agents := handoff.Options{From: "domain-03-technical", To: "domain-02-analysis"}
	runSeedRules(t, handoff.VBW, agents, []seedRule{
		{id: "scout-example", seed: "### `scout_findings`", doc: vbwScout},
		{id: "progress-example", seed: "### `dev_progress`", doc: vbwProgress},
		{id: "blocker-example", seed: "### `dev_blocker`", doc: vbwBlocker},
		{id: "qa-example", seed: "### `qa_result`", doc: vbwQA},
		{id: "debugger-example", seed: "### `debugger_report`", doc: vbwDebugger},
		{id: "markdown-fallback", seed: "If parsing fails, fall back to treating the content as plain markdown.", doc: "Scout: the stack is Go.\n", want: []reason.Code{reason.MarkdownFallback}},
		{id: "markdown-fallback-strict", seed: "If parsing fails, fall back to treating the content as plain markdown.", doc: "Scout: the stack is Go.\n", want: []reason.Code{reason.MarkdownFallback}, opts: func(o *handoff.Options) { o.Strict = true }},
		{id: "markdown-starting-with-bracket", seed: "fall back to treating the content as plain markdown", doc: "[x] scouted the stack, see [STACK.md](STACK.md)\n", want: []reason.Code{reason.MarkdownFallback}},
		{id: "markdown-with-bom", seed: "fall back to treating the content as plain markdown", doc: "\xef\xbb\xbfScout: the stack is Go.\n", want: []reason.Code{reason.MarkdownFallback}},
		{id: "broken-json-is-not-markdown", seed: "Receiving agents should `JSON.parse` the message content first.", doc: vbwProgress[:40], want: []reason.Code{reason.Unparseable}},
		{id: "agents-from-options", seed: "Sender: Dev | Receiver: Execute Lead (the message does not name its agents)", doc: vbwProgress, want: []reason.Code{reason.AgentsRequired}, opts: func(o *handoff.Options) { o.From, o.To = "", "" }},
		{id: "type-required", seed: "`type` | yes | Always \"dev_progress\"", doc: rep(vbwProgress, `"type": "dev_progress",`, ""), want: []reason.Code{S}, field: "type", opts: func(o *handoff.Options) { o.Format = handoff.VBW }},
		{id: "scout-domain-enum", seed: "\"domain\": \"tech-stack | architecture | quality | concerns\"", doc: rep(vbwScout, `"domain": "tech-stack"`, `"domain": "security"`), want: []reason.Code{S}, field: "domain"},
		{id: "scout-documents-required", seed: "`documents` | yes | Array of document objects with `name` and `content`", doc: rep(vbwScout, `"content": "## Tech Stack\n..."`, `"body": "x"`), want: []reason.Code{S}},
		{id: "scout-cross-cutting-optional", seed: "`cross_cutting` | no | Findings relevant to other Scouts' domains", doc: rep(vbwScout, `"cross_cutting": [
    {
      "target_domain": "architecture",
      "finding": "Monorepo workspace config affects architecture mapping",
      "relevance": "high"
    }
  ],`, "")},
		{id: "scout-relevance-enum", seed: "\"relevance\": \"high | medium | low\"", doc: rep(vbwScout, `"relevance": "high"`, `"relevance": "urgent"`), want: []reason.Code{S}},
		{id: "scout-confidence-enum", seed: "\"confidence\": \"high | medium | low\"", doc: rep(vbwScout, `"confidence": "high",`, `"confidence": "sure",`), want: []reason.Code{S}, field: "confidence"},
		{id: "scout-rationale-required", seed: "`confidence_rationale` | yes | Brief justification", doc: rep(vbwScout, `,
  "confidence_rationale": "Brief justification for confidence level"`, ""), want: []reason.Code{S}, field: "confidence_rationale"},
		{id: "progress-task-plan-id-task-name", seed: "`task` | yes | Task identifier (plan-id/task-name)", doc: rep(vbwProgress, `"task": "03-01/task-3"`, `"task": "task-3"`), want: []reason.Code{S}, field: "task"},
		{id: "progress-task-of-its-plan", seed: "`plan_id` | yes | Plan this task belongs to", doc: rep(vbwProgress, `"task": "03-01/task-3"`, `"task": "03-02/task-3"`), want: []reason.Code{S}, field: "task"},
		{id: "progress-commit-short-hash", seed: "`commit` | yes | Git commit hash (short form)", doc: rep(vbwProgress, `"abc1234"`, `"HEAD~1"`), want: []reason.Code{S}, field: "commit"},
		{id: "progress-status-enum", seed: "\"status\": \"complete | partial | failed\"", doc: rep(vbwProgress, `"status": "complete"`, `"status": "done"`), want: []reason.Code{S}, field: "status"},
		{id: "progress-concerns-optional", seed: "`concerns` | no | Array of concerns affecting other plans or the phase", doc: rep(vbwProgress, `,
  "concerns": [
    "Interface changed from plan — downstream plans may need update"
  ]`, "")},
		{id: "blocker-needs-required", seed: "`needs` | yes | What is needed to unblock", doc: rep(vbwBlocker, `"needs": "03-01 to complete first",`, ""), want: []reason.Code{S}, field: "needs"},
		{id: "blocker-attempted-optional", seed: "`attempted` | no | Array of steps already tried to resolve", doc: rep(vbwBlocker, `,
  "attempted": [
    "Checked git log for 03-01 commits — none found"
  ]`, "")},
		{id: "qa-tier-enum", seed: "\"tier\": \"quick | standard | deep\"", doc: rep(vbwQA, `"tier": "standard"`, `"tier": "full"`), want: []reason.Code{S}, field: "tier"},
		{id: "qa-result-enum", seed: "\"result\": \"PASS | FAIL | PARTIAL\"", doc: rep(vbwQA, `"result": "FAIL"`, `"result": "Fail"`), want: []reason.Code{S}, field: "result"},
		{id: "qa-counts-add-up", seed: "`checks` | yes | Object with `passed`, `failed`, `total` counts", doc: rep(vbwQA, `"total": 20`, `"total": 19`), want: []reason.Code{C}, field: "checks"},
		{id: "qa-failures-empty-if-pass", seed: "`failures` | no | Array of failure detail objects (empty if PASS)", doc: rep(rep(rep(vbwQA, `"result": "FAIL"`, `"result": "PASS"`), `"passed": 18`, `"passed": 20`), `"failed": 2`, `"failed": 0`), want: []reason.Code{C}, field: "failures"},
		{id: "qa-body-required", seed: "`body` | yes | Full markdown verification report", doc: rep(vbwQA, `,
  "body": "## Must-Have Checks\n| # | Truth | Status | Evidence |\n..."`, ""), want: []reason.Code{S}, field: "body"},
		{id: "debugger-evidence-arrays", seed: "`evidence_for` | yes | Specific findings supporting the hypothesis", doc: rep(vbwDebugger, `"evidence_for": [`, `"evidence_for": "x", "x": [`), want: []reason.Code{S}},
		{id: "debugger-low-insufficient-evidence", seed: "`recommended_fix` | yes | Minimal fix description if high confidence, or \"Insufficient evidence\"", doc: rep(vbwDebugger, `"confidence": "high"`, `"confidence": "low"`), want: []reason.Code{S}, field: "recommended_fix"},
		{id: "debugger-high-needs-a-fix", seed: "`recommended_fix` | yes | Minimal fix description if high confidence, or \"Insufficient evidence\"", doc: rep(vbwDebugger, `"Add mutex lock around token refresh in auth middleware, or 'Insufficient evidence' if confidence is low"`, `"Insufficient evidence"`), want: []reason.Code{S}, field: "recommended_fix"},
		{id: "debugger-low-accepted", seed: "\"recommended_fix\": \"..., or 'Insufficient evidence' if confidence is low\"", doc: rep(rep(vbwDebugger, `"confidence": "high"`, `"confidence": "low"`), `"Add mutex lock around token refresh in auth middleware, or 'Insufficient evidence' if confidence is low"`, `"Insufficient evidence"`)},
		{id: "closed-fields", seed: "| Field | Required | Description | (every field of each type is listed)", doc: rep(vbwProgress, `"status": "complete",`, `"status": "complete", "approved": true,`), want: []reason.Code{S}, field: "approved"},
		// With --from/--to, what is not prose is judged as what it is.
		{id: "yaml-handoff-is-not-markdown", seed: "If parsing fails, fall back to treating the content as plain markdown. (only prose)", doc: "handoff:\n  foo: bar\n", want: []reason.Code{reason.UnknownFormat}, format: "none"},
		{id: "json-array-is-not-markdown", seed: "Receiving agents should `JSON.parse` the message content first.", doc: `["type", "dev_progress"]`, want: []reason.Code{reason.UnknownFormat}, format: "none"},
		{id: "broken-skill-is-not-markdown", seed: "If parsing fails, fall back to treating the content as plain markdown. (only prose)", doc: "handoff:\n  target_skill: synthesizer\n\t bad\n", want: []reason.Code{reason.Unparseable}, format: handoff.Skill},
		{id: "task-heading-is-not-markdown", seed: "If parsing fails, fall back to treating the content as plain markdown. (only prose)", doc: "## handoff\n\noutcome: completed\n", want: []reason.Code{S}, format: handoff.Task},
	})
}

func TestSeed002Skill(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusRoot, skillDeliverable))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha(data)
	b := skillSeed(sum)
	S := reason.SchemaInvalid
	drop := func(line string) string { return rep(b, line, "") }
	runSeedRules(t, handoff.Skill, handoff.Options{}, []seedRule{
		{id: "seed-example", seed: "## Example Handoff", doc: b},
		{id: "required-version", seed: "# Required fields: handoff.version", doc: drop("  version: \"1.0\"\n"), want: []reason.Code{S}, field: "handoff.version"},
		{id: "required-source-skill", seed: "# Required fields: handoff.source_skill", doc: drop("  source_skill: researcher\n"), want: []reason.Code{S}, field: "handoff.source_skill"},
		{id: "required-target-skill", seed: "# Required fields: handoff.target_skill", doc: drop("  target_skill: synthesizer\n"), want: []reason.Code{S}, field: "handoff.target_skill"},
		{id: "required-timestamp", seed: "# Required fields: handoff.timestamp", doc: drop("  timestamp: \"2026-02-03T14:30:00Z\"\n"), want: []reason.Code{S}, field: "handoff.timestamp"},
		{id: "timestamp-iso8601", seed: "timestamp: ISO8601 # When handoff was created", doc: rep(b, `"2026-02-03T14:30:00Z"`, `"Feb 3rd"`), want: []reason.Code{reason.InvalidTimestamp}, field: "handoff.timestamp"},
		{id: "required-workflow-id", seed: "# Required fields: handoff.workflow_id", doc: drop("  workflow_id: \"workflow-abc123\"\n"), want: []reason.Code{S}, field: "handoff.workflow_id"},
		{id: "deliverable-type-enum", seed: "type: document | data | analysis", doc: rep(b, "type: document", "type: slides"), want: []reason.Code{S}, field: "deliverable.type"},
		{id: "deliverable-format-enum", seed: "format: markdown | json | yaml", doc: rep(b, "format: markdown", "format: html"), want: []reason.Code{S}, field: "deliverable.format"},
		{id: "summary-50-chars", seed: "`deliverable.summary` >= 50 characters", doc: rep(b, `"Literature review covering 8 key papers on hepatocyte oxygen consumption rates in various culture formats"`, `"Short summary"`), want: []reason.Code{S}, field: "deliverable.summary"},
		{id: "location-exists", seed: "`deliverable.location` file exists", doc: rep(b, skillDeliverable, "skill/docs/missing.md"), want: []reason.Code{reason.DeliverableMissing}, field: "deliverable.location"},
		{id: "location-is-a-file", seed: "Cross-reference: Deliverable file actually exists", doc: rep(b, skillDeliverable, "skill/docs"), want: []reason.Code{reason.DeliverableMissing}},
		{id: "location-inside-root", seed: "location: string # File path to output", doc: rep(b, skillDeliverable, "../../../etc/passwd"), want: []reason.Code{reason.PathEscape}},
		{id: "completed-skills-non-empty", seed: "`context.completed_skills` is non-empty", doc: rep(b, `completed_skills: ["researcher"]`, `completed_skills: []`), want: []reason.Code{S}, field: "context.completed_skills"},
		{id: "checksum-recompute", seed: "Checksum validation: Recompute and compare", doc: rep(b, sum, strings.Repeat("0", 64)), want: []reason.Code{reason.ChecksumMismatch}, field: "deliverable.checksum"},
		{id: "checksum-sha256sum-bare", seed: "Compute checksum: `sha256sum deliverable.location`", doc: rep(b, "sha256:"+sum, sum)},
		{id: "checksum-prefixed", seed: "checksum: \"sha256:abc123...\"", doc: b},
		{id: "checksum-form", seed: "checksum: sha256 # For corruption detection", doc: rep(b, "sha256:"+sum, "abc123..."), want: []reason.Code{S}, field: "deliverable.checksum"},
		{id: "completion-status-enum", seed: "completion_status: complete | partial | failed", doc: rep(b, "completion_status: complete", "completion_status: done"), want: []reason.Code{S}},
		{id: "confidence-enum", seed: "confidence: high | medium | low", doc: rep(b, "confidence: high", "confidence: certain"), want: []reason.Code{S}},
		{id: "optional-focus-areas", seed: "focus_areas: list[string] # What to pay attention to (not among the required fields)", doc: drop("  focus_areas: [\"oxygen consumption rates\", \"culture format comparison\", \"measurement methods\"]\n")},
		{id: "optional-known-gaps", seed: "known_gaps: list[string] # Identified gaps or limitations (not among the required fields)", doc: drop("  known_gaps: [\"Limited data on 3D spheroid formats\", \"No papers after 2024\"]\n")},
		{id: "optional-open-questions", seed: "open_questions: list[string] # Unresolved items (not among the required fields)", doc: drop("  open_questions: [\"Should we include non-mammalian hepatocytes?\"]\n")},
		{id: "optional-warnings", seed: "warnings: list[string] # Any concerns for downstream (not among the required fields)", doc: drop("  warnings: [\"Some older papers (pre-2020) may have outdated methods\"]\n")},
		{id: "lists-are-lists", seed: "known_gaps: list[string]", doc: rep(b, `known_gaps: ["Limited data on 3D spheroid formats", "No papers after 2024"]`, `known_gaps: "none"`), want: []reason.Code{S}},
		{id: "newer-version-warns", seed: "If you receive a handoff with higher version number: Process known fields normally, Ignore unknown fields, Log warning", doc: rep(rep(b, `version: "1.0"`, `version: "1.2"`), "quality:", "extra: 1\nquality:"), want: []reason.Code{reason.NewerVersion}},
		{id: "version-1.0-closed", seed: "Schema version \"1.0\" is current. (its fields are the schema)", doc: rep(b, "quality:", "extra: 1\nquality:"), want: []reason.Code{S}, field: "extra"},
		{id: "bom", seed: "## Schema (YAML) (a byte order mark may start the stream)", doc: "\xef\xbb\xbf" + b},
		{id: "no-source-skill-still-skill", seed: "# Required fields: handoff.source_skill", doc: drop("  source_skill: researcher\n"), want: []reason.Code{S}, field: "handoff.source_skill"},
	})
}

func TestSeed003Governed(t *testing.T) {
	b := governedSeed
	S := reason.SchemaInvalid
	runSeedRules(t, handoff.Governed, handoff.Options{}, []seedRule{
		{id: "seed-example", seed: "## Complete Handoff Example", doc: b},
		{id: "handoff-id-uuid-v4", seed: "\"handoff_id\": \"string (UUID v4)\"", doc: rep(b, `"550e8400-e29b-41d4-a716-446655440000"`, `"550e8400-e29b-11d4-a716-446655440000"`), want: []reason.Code{reason.InvalidID}, field: "handoff_id"},
		{id: "handoff-id-upper-case", seed: "\"handoff_id\": \"string (UUID v4)\" (RFC 4122: case insensitive on input)", doc: rep(b, `"550e8400-e29b-41d4-a716-446655440000"`, `"550E8400-E29B-41D4-A716-446655440000"`)},
		{id: "timestamp-iso8601", seed: "Timestamps must be valid ISO 8601", doc: rep(b, `"2026-02-11T00:45:02Z"`, `"2026-02-11 00:45"`), want: []reason.Code{reason.InvalidTimestamp}, field: "timestamp"},
		{id: "protocol-version", seed: "\"protocol_version\": \"1.0.0\"", doc: rep(b, `"protocol_version": "1.0.0"`, `"protocol_version": "2.0.0"`), want: []reason.Code{S}, field: "protocol_version"},
		{id: "agent-type-enum", seed: "\"agent_type\": \"domain | archetype | orchestrator\"", doc: rep(b, `"agent_type": "domain"`, `"agent_type": "expert"`), want: []reason.Code{S}, field: "source_agent.agent_type"},
		{id: "agent-id-canonical", seed: "Agent IDs must be canonical - no aliases or shortcuts", doc: rep(b, `"agent_id": "domain-05-product"`, `"agent_id": "Product"`), want: []reason.Code{S}, field: "source_agent.agent_id"},
		{id: "agent-version-semver", seed: "Agent versions must be valid semver", doc: rep(b, `"agent_version": "1.0.0"`, `"agent_version": "1.0"`), want: []reason.Code{S}, field: "source_agent.agent_version"},
		{id: "agent-version-prerelease", seed: "Agent versions must be valid semver", doc: rep(b, `"agent_version": "1.0.0"`, `"agent_version": "1.1.0-rc.1"`)},
		{id: "agent-version-build", seed: "Agent versions must be valid semver", doc: rep(b, `"agent_version": "1.0.0"`, `"agent_version": "1.0.0+build.7"`)},
		{id: "prompt-hash-sha256", seed: "\"prompt_hash\": \"SHA-256 hash from lock file\"", doc: rep(b, hashProduct, hashProduct[:40]), want: []reason.Code{S}, field: "source_agent.prompt_hash"},
		{id: "prompt-hash-prefixed", seed: "\"prompt_hash\": \"SHA-256 hash from lock file\" (the lock writes sha256:<hex>)", doc: rep(b, `"`+hashProduct+`"`, `"sha256:`+hashProduct+`"`)},
		{id: "request-type-enum", seed: "Request type must be valid: `query`, `task`, `analysis`, `decision`", doc: rep(b, `"type": "analysis"`, `"type": "review"`), want: []reason.Code{reason.InvalidRequestType}, field: "context.request.type"},
		{id: "input-data-object-or-string", seed: "\"input_data\": \"object | string\"", doc: rep(b, `"input_data": {`, `"input_data": 7, "x": {`), want: []reason.Code{S}},
		{id: "constraints-array", seed: "\"constraints\": [\"array of constraint strings\"]", doc: rep(b, `"Provide confidence intervals"`, `3`), want: []reason.Code{S}},
		{id: "history-array-of-objects", seed: "\"conversation_history\": [\"array of message objects\"]", doc: rep(b, `"conversation_history": []`, `"conversation_history": ["hi"]`), want: []reason.Code{S}},
		{id: "accumulated-context-object", seed: "\"accumulated_context\": \"object\"", doc: rep(b, `"accumulated_context": {`, `"accumulated_context": "x", "y": {`), want: []reason.Code{S}},
		{id: "attestation-booleans", seed: "\"source_agent_verified\": true", doc: rep(b, `"source_agent_verified": true`, `"source_agent_verified": "yes"`), want: []reason.Code{S}, field: "governance.source_agent_verified"},
		{id: "all-required-fields", seed: "All required fields must be present", doc: rep(b, `"audit_trail": "handoff-log-2026-02-11-001.json"`, `"audit": "x"`), want: []reason.Code{S}, field: "governance.audit_trail"},
		{id: "no-trace-id", seed: "This schema defines the canonical structure for handoff between AI agents", doc: rep(b, `"protocol_version"`, `"trace_id": "t-1", "protocol_version"`), want: []reason.Code{S}, field: "trace_id"},
		{id: "no-workflow-id", seed: "This schema defines the canonical structure for handoff between AI agents", doc: rep(b, `"protocol_version"`, `"workflow_id": "wf-1", "protocol_version"`), want: []reason.Code{S}, field: "workflow_id"},
		{id: "big-number-keeps-agents", seed: "Record timestamp and handoff ID (a number beyond 2^53 is refused, the ids still recorded)", doc: rep(b, `"hypothesis": "Users want feature X",`, `"n": 9007199254740993,`), want: []reason.Code{reason.Unparseable}, field: "context.request.input_data.n"},
	})
	// A version the manifest accepts is a version a handoff may name, and
	// the other way round: otherwise a registered agent could never be
	// named (1.1.0-rc.1 was accepted by the manifest and refused here).
	for _, v := range []string{"1.0.0", "1.1.0-rc.1", "1.0.0+build.7", "2.0.0-alpha.1+x", "1.0", "v1.0.0", "01.0.0", "1.0.0-01", "1.0.0-", "1.0.0.0", strings.Repeat("1", 70) + ".0.0"} {
		rec := handoff.Parse([]byte(rep(b, `"agent_version": "1.0.0"`, `"agent_version": "`+v+`"`)), handoff.Options{})
		if accepted := rec.Source.Version == v; accepted != (manifest.CheckVersion(v) == nil) {
			t.Errorf("agent_version %q: handoff accepts it = %v, manifest.CheckVersion = %v", v, accepted, manifest.CheckVersion(v))
		}
	}
	// The record of a document refused only for a big number still names
	// its agents and handoff id, so log --agent and trace find it.
	rec := handoff.Parse([]byte(rep(b, `"hypothesis": "Users want feature X",`, `"n": 9007199254740993,`)), handoff.Options{})
	if rec.Source.ID != "domain-05-product" || rec.Target.ID != "domain-02-analysis" || rec.HandoffID != "550e8400-e29b-41d4-a716-446655440000" {
		t.Errorf("big number: record = %+v, want its agents and handoff id", rec)
	}
	rec = handoff.Parse([]byte(rep(b, `"550e8400-e29b-41d4-a716-446655440000"`, `"550E8400-E29B-41D4-A716-446655440000"`)), handoff.Options{})
	if rec.HandoffID != "550e8400-e29b-41d4-a716-446655440000" {
		t.Errorf("upper-case UUID recorded as %q, want lower case (one UUID, one handoff id)", rec.HandoffID)
	}
	rec = handoff.Parse([]byte(vbwProgress), handoff.Options{From: "a", To: "b"})
	big := handoff.Parse([]byte(rep(vbwProgress, `"status": "complete",`, `"status": "complete", "n": 1e400,`)), handoff.Options{From: "a", To: "b"})
	if big.WorkflowID != rec.WorkflowID || big.WorkflowID == "" || !slices.Contains(codesOf(big), reason.Unparseable) {
		t.Errorf("vbw/1 with a big number: workflow %q, codes %v; want %q and UNPARSEABLE", big.WorkflowID, codesOf(big), rec.WorkflowID)
	}
}

func TestSeed004Task(t *testing.T) {
	S, E := reason.SchemaInvalid, reason.PathEscape
	b := taskSeedBare
	blocked := "## Handoff\n\noutcome: blocked\nblockers:\n  - blocker: Missing API credentials\n    impact: Cannot call the payment API\n    blocking_tasks: [task-013]\n"
	agents := handoff.Options{From: "orchestrator", To: "domain-03-technical"}
	runSeedRules(t, handoff.Task, agents, []seedRule{
		{id: "yaml-format", seed: "### YAML Format (in task files)", doc: b},
		{id: "task-file-template", seed: "## Updated Task File Template", doc: taskTemplate},
		{id: "prose-before-fence", seed: "## Handoff ... ```yaml (the block may follow prose)", doc: "## Handoff\n\nThe structured handoff:\n\n```yaml\noutcome: completed\n```\n"},
		{id: "tilde-fence", seed: "PARSE handoff section as YAML (a ~~~ fence is a markdown code fence)", doc: "## Handoff\n\n~~~yaml\noutcome: completed\n~~~\n"},
		{id: "long-fence", seed: "PARSE handoff section as YAML (a fence of four backticks holds one of three)", doc: "## Handoff\n\n````yaml\noutcome: completed\nfiles_created:\n  - path: a.md\n    purpose: \"```\"\n    lines: all\n````\n"},
		{id: "bom", seed: "READ task file (a byte order mark may start it)", doc: "\xef\xbb\xbf" + b},
		{id: "heading-required", seed: "## Handoff", doc: "# Task 1\n\n### Handoff\n\noutcome: completed\n", want: []reason.Code{S}},
		{id: "outcome-required", seed: "`outcome` - Always required", doc: rep(b, "outcome: completed\n", ""), want: []reason.Code{S}, field: "outcome"},
		{id: "outcome-enum", seed: "outcome: completed | partial | failed | blocked", doc: rep(b, "outcome: completed", "outcome: done"), want: []reason.Code{S}, field: "outcome"},
		{id: "partial-needs-blockers", seed: "outcome == partial | blockers, suggested_next_steps", doc: rep(rep(b, "outcome: completed", "outcome: partial"), "blockers:\n  - blocker: Missing API credentials for payment service\n    impact: Cannot complete payment integration\n    suggested_resolution: Request credentials from user\n    blocking_tasks: [task-005, task-006]\n", ""), want: []reason.Code{S}, field: "blockers"},
		{id: "partial-needs-next-steps", seed: "outcome == partial | blockers, suggested_next_steps", doc: "## Handoff\n\noutcome: partial\nblockers:\n  - blocker: b\n    impact: i\n", want: []reason.Code{S}, field: "suggested_next_steps"},
		{id: "failed-needs-resolution", seed: "outcome == failed | blockers with suggested_resolution", doc: rep(blocked, "outcome: blocked", "outcome: failed"), want: []reason.Code{S}, field: "blockers[0].suggested_resolution"},
		{id: "blocked-needs-blocking-tasks", seed: "outcome == blocked | blockers with blocking_tasks", doc: rep(blocked, "    blocking_tasks: [task-013]\n", ""), want: []reason.Code{S}, field: "blockers[0].blocking_tasks"},
		{id: "blocked-example", seed: "`blockers` - Required if outcome is `blocked` or `partial`", doc: blocked},
		{id: "paths-relative", seed: "All paths must be relative to project root", doc: rep(b, "path: src/auth/jwt.ts", "path: /etc/passwd"), want: []reason.Code{E}, field: "files_created[0].path"},
		{id: "paths-inside-root", seed: "All paths must be relative to project root", doc: rep(b, "file: src/types/auth.ts", "file: ../secrets.env"), want: []reason.Code{E}, field: "dependencies_for_next[1].file"},
		{id: "line-ranges", seed: "Line ranges must be \"N-M\" or \"all\"", doc: rep(b, "lines: 1-150", "lines: 1..150"), want: []reason.Code{S}, field: "files_created[0].lines"},
		{id: "line-range-all", seed: "Line ranges must be \"N-M\" or \"all\"", doc: rep(b, "lines: 1-150", "lines: all")},
		{id: "tags-lowercase-hyphenated", seed: "Tags in applies_to must be lowercase, hyphenated", doc: rep(b, "[auth, user-state, react-context]", "[Auth]"), want: []reason.Code{S}, field: "patterns_discovered[0].applies_to[0]"},
		{id: "severity-enum", seed: "severity must be high/medium/low", doc: rep(b, "severity: high", "severity: critical"), want: []reason.Code{S}, field: "gotchas[0].severity"},
		{id: "priority-enum", seed: "priority must be high/medium/low", doc: rep(b, "priority: high", "priority: p1"), want: []reason.Code{S}, field: "suggested_next_steps[0].priority"},
		{id: "change-type-enum", seed: "change_type: enum # add | modify | delete | refactor", doc: rep(b, "change_type: modify", "change_type: rename"), want: []reason.Code{S}, field: "files_modified[0].change_type"},
		{id: "blocking-boolean", seed: "blocking: boolean # Does this block next tasks?", doc: rep(b, "blocking: false", `blocking: "false"`), want: []reason.Code{S}, field: "open_questions[0].blocking"},
		{id: "pattern-id-optional", seed: "id: string # Optional, auto-generated if omitted", doc: rep(b, "  - id: pattern-XXX  # Auto-generated if not provided\n    pattern:", "  - pattern:")},
		{id: "closed-fields", seed: "## Field Specifications (every field is specified)", doc: rep(b, "gotchas:", "reviewer: alice\n\ngotchas:"), want: []reason.Code{S}, field: "reviewer"},
		{id: "agents-from-options", seed: "WHEN spawning next agent that depends on completed task (the file does not name its agents)", doc: b, want: []reason.Code{reason.AgentsRequired}, opts: func(o *handoff.Options) { o.From, o.To = "", "" }},
	})
}
