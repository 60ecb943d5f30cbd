package handoff_test

import (
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/handoff"
)

// Seed 001's five examples, with each "a | b | c" enum placeholder
// resolved to one of its values.
var (
	vbwScout = `{
  "type": "scout_findings",
  "domain": "tech-stack",
  "documents": [
    {
      "name": "STACK.md",
      "content": "## Tech Stack\n..."
    }
  ],
  "cross_cutting": [
    {
      "target_domain": "architecture",
      "finding": "Monorepo workspace config affects architecture mapping",
      "relevance": "high"
    }
  ],
  "confidence": "high",
  "confidence_rationale": "Brief justification for confidence level"
}
`
	vbwProgress = `{
  "type": "dev_progress",
  "task": "03-01/task-3",
  "plan_id": "03-01",
  "commit": "abc1234",
  "status": "complete",
  "concerns": [
    "Interface changed from plan — downstream plans may need update"
  ]
}
`
	vbwBlocker = `{
  "type": "dev_blocker",
  "task": "03-02/task-1",
  "plan_id": "03-02",
  "blocker": "Dependency module from plan 03-01 not yet committed",
  "needs": "03-01 to complete first",
  "attempted": [
    "Checked git log for 03-01 commits — none found"
  ]
}
`
	vbwQA = `{
  "type": "qa_result",
  "tier": "standard",
  "result": "FAIL",
  "checks": {
    "passed": 18,
    "failed": 2,
    "total": 20
  },
  "failures": [
    {
      "check": "CONVENTIONS.md link integrity",
      "expected": "All cross-references resolve",
      "actual": "references/missing-file.md not found",
      "evidence": "grep output showing broken link at line 42"
    }
  ],
  "body": "## Must-Have Checks\n| # | Truth | Status | Evidence |\n..."
}
`
	vbwDebugger = `{
  "type": "debugger_report",
  "hypothesis": "Race condition in session middleware causes intermittent 401s",
  "evidence_for": [
    "Mutex not held during token refresh (src/middleware/auth.ts:45)",
    "Reproduction shows 401s only under concurrent requests"
  ],
  "evidence_against": [
    "Token TTL is 30min — unlikely to expire mid-request in normal flow"
  ],
  "confidence": "high",
  "recommended_fix": "Add mutex lock around token refresh in auth middleware, or 'Insufficient evidence' if confidence is low"
}
`
)

func generateVBW(t *testing.T) {
	V := handoff.VBW
	qaPass := rep(rep(rep(rep(vbwQA, `"result": "FAIL"`, `"result": "PASS"`), `"passed": 18`, `"passed": 20`), `"failed": 2`, `"failed": 0`), `"failures": [
    {
      "check": "CONVENTIONS.md link integrity",
      "expected": "All cross-references resolve",
      "actual": "references/missing-file.md not found",
      "evidence": "grep output showing broken link at line 42"
    }
  ]`, `"failures": []`)
	valid := []doc{
		{name: "seed-001-scout_findings.json", body: vbwScout, format: V},
		{name: "seed-001-dev_progress.json", body: vbwProgress, format: V},
		{name: "seed-001-dev_blocker.json", body: vbwBlocker, format: V},
		{name: "seed-001-qa_result.json", body: vbwQA, format: V},
		{name: "seed-001-debugger_report.json", body: vbwDebugger, format: V},
		{name: "qa-pass.json", body: qaPass, format: V},
	}
	valid = append(valid,
		doc{name: "qa-fail-without-details.json", format: V, codes: []string{"COUNTS_INCONSISTENT"}, body: `{"type": "qa_result", "tier": "deep", "result": "FAIL", "checks": {"passed": 1, "failed": 1, "total": 2}, "body": "one check failed"}`},
		doc{name: "markdown-fallback.md", format: V, codes: []string{"MARKDOWN_FALLBACK"}, body: "## Scout findings\n\nThe stack is Go 1.26 with bbolt; see STACK.md.\n"},
		// Markdown often starts with "[": not JSON, so prose.
		doc{name: "markdown-starts-with-bracket.md", format: V, codes: []string{"MARKDOWN_FALLBACK"}, body: "[STACK.md](STACK.md) lists the stack: Go 1.26, bbolt.\n\n- [x] scouted\n"},
		doc{name: "debugger-low-insufficient-evidence.json", format: V, body: rep(rep(vbwDebugger, `"confidence": "high"`, `"confidence": "low"`),
			`"Add mutex lock around token refresh in auth middleware, or 'Insufficient evidence' if confidence is low"`, `"Insufficient evidence"`)},
	)
	writeCorpus(t, filepath.Join(genRoot, "vbw", "valid"), expectFile{From: "domain-03-technical", To: "domain-02-analysis"}, valid)

	S, U, P, C := "SCHEMA_INVALID", "UNPARSEABLE", "UNKNOWN_FORMAT", "COUNTS_INCONSISTENT"
	var h []doc
	add := func(name, body string, format handoff.Format, codes ...string) {
		h = append(h, doc{name: name + ".json", body: body, format: format, codes: codes})
	}
	add("unknown-type", rep(vbwScout, `"scout_findings"`, `"scout_report"`), "", P)
	add("type-case-variant", rep(vbwScout, `"scout_findings"`, `"Scout_Findings"`), "", P)
	add("qa-sum-mismatch", rep(vbwQA, `"total": 20`, `"total": 21`), V, C)
	add("qa-pass-with-failed", rep(vbwQA, `"result": "FAIL"`, `"result": "PASS"`), V, C)
	add("qa-pass-with-failure-details", rep(qaPass, `"failures": []`, `"failures": [{"check": "x"}]`), V, C)
	add("qa-fail-with-zero-failed", rep(rep(rep(vbwQA, `"passed": 18`, `"passed": 20`), `"failed": 2`, `"failed": 0`), `"failures": [`, `"failures": [`), V, C)
	add("qa-negative-count", rep(rep(vbwQA, `"passed": 18`, `"passed": 22`), `"failed": 2`, `"failed": -2`), V, C)
	add("qa-fractional-count", rep(rep(vbwQA, `"passed": 18`, `"passed": 17.5`), `"failed": 2`, `"failed": 2.5`), V, C)
	add("qa-count-as-string", rep(vbwQA, `"passed": 18`, `"passed": "18"`), V, S)
	add("qa-tier-invalid", rep(vbwQA, `"tier": "standard"`, `"tier": "exhaustive"`), V, S)
	add("qa-result-lower-case", rep(vbwQA, `"result": "FAIL"`, `"result": "fail"`), V, S)
	add("qa-missing-body", rep(vbwQA, `,
  "body": "## Must-Have Checks\n| # | Truth | Status | Evidence |\n..."`, ""), V, S)
	add("scout-domain-invalid", rep(vbwScout, `"domain": "tech-stack"`, `"domain": "security"`), V, S)
	add("scout-document-missing-name", rep(vbwScout, `"name": "STACK.md",`, ``), V, S)
	add("scout-document-as-string", rep(vbwScout, `{
      "name": "STACK.md",
      "content": "## Tech Stack\n..."
    }`, `"STACK.md"`), V, S)
	add("scout-relevance-invalid", rep(vbwScout, `"relevance": "high"`, `"relevance": "critical"`), V, S)
	add("scout-confidence-invalid", rep(vbwScout, `"confidence": "high"`, `"confidence": "100%"`), V, S)
	add("scout-unknown-member", rep(vbwScout, `"confidence": "high",`, `"confidence": "high", "approved_by": "lead",`), V, S)
	add("progress-commit-upper-case", rep(vbwProgress, `"abc1234"`, `"ABC1234"`), V, S)
	add("progress-commit-too-short", rep(vbwProgress, `"abc1234"`, `"abc12"`), V, S)
	add("progress-status-invalid", rep(vbwProgress, `"status": "complete"`, `"status": "done"`), V, S)
	// "task: Task identifier (plan-id/task-name)".
	add("progress-task-without-plan", rep(vbwProgress, `"task": "03-01/task-3"`, `"task": "task-3"`), V, S)
	add("progress-task-of-other-plan", rep(vbwProgress, `"task": "03-01/task-3"`, `"task": "03-02/task-3"`), V, S)
	// "recommended_fix: Minimal fix description if high confidence, or "Insufficient evidence"".
	add("debugger-low-with-fix", rep(vbwDebugger, `"confidence": "high"`, `"confidence": "low"`), V, S)
	add("debugger-high-insufficient-evidence", rep(vbwDebugger, `"Add mutex lock around token refresh in auth middleware, or 'Insufficient evidence' if confidence is low"`, `"Insufficient evidence"`), V, S)
	// With --from/--to, only prose falls back to markdown.
	add("json-array-not-markdown", `[{"type": "dev_progress"}]`, "", P)
	h = append(h, doc{name: "yaml-handoff-not-markdown.yaml", body: "handoff:\n  note: not swarm/2, not skill/1\n", codes: []string{P}})
	h = append(h, doc{name: "task-heading-not-markdown.md", format: handoff.Task, body: "# Task 4\n\n### Handoff\n\noutcome: completed\n", codes: []string{S}})
	add("blocker-missing-needs", rep(vbwBlocker, `"needs": "03-01 to complete first",`, ``), V, S)
	add("debugger-evidence-as-string", rep(vbwDebugger, `"evidence_against": [
    "Token TTL is 30min — unlikely to expire mid-request in normal flow"
  ]`, `"evidence_against": "none"`), V, S)
	add("debugger-missing-fix", rep(vbwDebugger, `,
  "recommended_fix": "Add mutex lock around token refresh in auth middleware, or 'Insufficient evidence' if confidence is low"`, ""), V, S)
	add("i1-duplicate-type", rep(vbwProgress, `"task"`, `"type": "dev_blocker", "task"`), V, U)
	add("i3-trailing-data", vbwProgress+`{"type": "dev_progress"}`, V, U)
	add("i3-truncated-json", vbwQA[:60], V, U)
	add("i3-bom", "\xef\xbb\xbf"+vbwProgress, V, U)
	add("i4-invalid-utf8", rep(vbwBlocker, "Dependency", "Dep\xffendency"), V, U)
	add("i5-huge-count", rep(rep(vbwQA, `"passed": 18`, `"passed": 9007199254740993`), `"total": 20`, `"total": 9007199254740995`), V, U)
	h = append(h, doc{name: "no-agents.json", body: vbwProgress, format: V, codes: []string{"AGENTS_REQUIRED"}, noAgents: true})
	add("markdown-control-chars", "## notes\x1b[2J\x07 cleared your terminal\n", "", U)
	writeCorpus(t, filepath.Join(genRoot, "vbw", "hostile"), expectFile{From: "domain-03-technical", To: "domain-02-analysis"}, h)
}
