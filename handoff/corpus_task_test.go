package handoff_test

import (
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/handoff"
)

// taskSeedBare is seed 004's first example (the "YAML Format (in task
// files)" block: a "## Handoff" line then bare YAML), with each
// "a | b | c" placeholder resolved to one value.
var taskSeedBare = `## Handoff

outcome: completed

files_created:
  - path: src/auth/jwt.ts
    purpose: JWT token generation and validation
    lines: 1-150

files_modified:
  - path: src/config/database.ts
    lines: 45-67
    change_type: modify
    description: Added connection pool configuration

patterns_discovered:
  - id: pattern-XXX  # Auto-generated if not provided
    pattern: Use AuthContext.getCurrentUser() for user state
    location: src/context/AuthContext.tsx
    applies_to: [auth, user-state, react-context]

gotchas:
  - id: gotcha-XXX  # Auto-generated if not provided
    issue: API rate limit is 100/min, not 1000/min as documented
    discovered_in: External payment API integration
    mitigation: Added retry logic with exponential backoff
    severity: high

dependencies_for_next:
  - file: src/auth/jwt.ts
    reason: Contains token validation logic needed for protected routes
  - file: src/types/auth.ts
    reason: Type definitions for auth payloads

open_questions:
  - question: Should refresh tokens be stored in httpOnly cookies or localStorage?
    context: Security vs UX tradeoff
    recommendation: httpOnly cookies for better security
    blocking: false

suggested_next_steps:
  - step: Implement protected route middleware
    priority: high
    depends_on: [jwt.ts, AuthContext.tsx]
  - step: Add token refresh logic
    priority: medium
    depends_on: []

blockers:
  - blocker: Missing API credentials for payment service
    impact: Cannot complete payment integration
    suggested_resolution: Request credentials from user
    blocking_tasks: [task-005, task-006]
`

// taskTemplate is seed 004's "Updated Task File Template" with its
// bracketed placeholders filled in.
var taskTemplate = "# Task 007: Add JWT authentication\n\n## Metadata\nowner: dev\n\n## Objective\nProtect the API.\n\n## Acceptance Criteria\n- tokens verified\n\n## Context Provided\nNone.\n\n---\n\n## Execution Log\n- started\n\n---\n\n## Handoff\n\n```yaml\n" + `outcome: partial

files_created:
  - path: src/auth/jwt.ts
    purpose: JWT token generation and validation
    lines: all

files_modified:
  - path: src/server.ts
    lines: 10-12
    change_type: add
    description: Registered the auth middleware

patterns_discovered:
  - pattern: Wrap handlers with requireAuth()
    location: src/auth/middleware.ts
    applies_to: [auth]

gotchas:
  - issue: Clock skew breaks token expiry checks
    discovered_in: Integration tests
    mitigation: Allow 30 seconds of leeway
    severity: medium

dependencies_for_next:
  - file: src/auth/jwt.ts
    reason: Token helpers

suggested_next_steps:
  - step: Add refresh tokens
    priority: high
    depends_on: [src/auth/jwt.ts]

blockers:
  - blocker: Key rotation policy undecided
    impact: Keys are static for now
` + "```\n\n---\n\n*Task completed: 2026-02-04T19:00:00Z*\n"

func generateTask(t *testing.T) {
	T := handoff.Task
	blocked := "# Task task-012: Payments\n\n## Handoff\n\noutcome: blocked\nblockers:\n  - blocker: Missing API credentials\n    impact: Cannot call the payment API\n    blocking_tasks: [task-013]\n\n## Notes\nfree text after the handoff\n"
	failed := "# Task 3\n\n## Handoff\n\n```yml\noutcome: failed\nblockers:\n  - blocker: Upstream schema changed\n    impact: Migration cannot run\n    suggested_resolution: Regenerate the schema from prod\n```\n"
	valid := []doc{
		{name: "seed-004-yaml-format.md", body: taskSeedBare, format: T},
		{name: "seed-004-task-template.md", body: taskTemplate, format: T},
		{name: "blocked.md", body: blocked, format: T},
		{name: "failed-fenced-yml.md", body: failed, format: T},
		{name: "crlf-line-endings.md", body: crlf(blocked), format: T},
		// Prose between the heading and the fence; a ~~~ fence (CommonMark).
		{name: "prose-before-fence.md", format: T, body: "# Task 8: Docs\n\n## Handoff\n\nThe handoff block follows.\n\n```yaml\noutcome: completed\n```\n"},
		{name: "tilde-fence.md", format: T, body: "## Handoff\n\n~~~yaml\noutcome: completed\nfiles_created:\n  - path: docs/a.md\n    purpose: Notes with a ``` fence inside\n    lines: all\n~~~\n"},
		{name: "bom.md", format: T, body: "\xef\xbb\xbf" + blocked},
	}
	writeCorpus(t, filepath.Join(genRoot, "task", "valid"), expectFile{From: "orchestrator", To: "domain-03-technical"}, valid)

	S, U, E := "SCHEMA_INVALID", "UNPARSEABLE", "PATH_ESCAPE"
	b := taskSeedBare
	var h []doc
	add := func(name, body string, codes ...string) {
		h = append(h, doc{name: name + ".md", body: body, format: T, codes: codes})
	}
	add("outcome-invalid", rep(b, "outcome: completed", "outcome: done"), S)
	add("outcome-missing", rep(b, "outcome: completed\n", ""), S)
	add("partial-without-steps", rep(taskTemplate, "suggested_next_steps:\n  - step: Add refresh tokens\n    priority: high\n    depends_on: [src/auth/jwt.ts]\n", ""), S)
	add("partial-without-blockers", rep(taskTemplate, "blockers:\n  - blocker: Key rotation policy undecided\n    impact: Keys are static for now\n", ""), S)
	add("failed-without-resolution", rep(failed, "    suggested_resolution: Regenerate the schema from prod\n", ""), S)
	add("blocked-without-tasks", rep(blocked, "    blocking_tasks: [task-013]\n", ""), S)
	add("blocked-empty-tasks", rep(blocked, "[task-013]", "[]"), S)
	add("blocked-empty-blockers", "## Handoff\n\noutcome: blocked\nblockers: []\n", S)
	add("path-absolute", rep(b, "path: src/auth/jwt.ts", "path: /etc/passwd"), E)
	add("path-dotdot", rep(b, "path: src/config/database.ts", "path: src/../../secrets.env"), E)
	add("path-backslash", rep(b, "path: src/config/database.ts", `path: "src\\config\\database.ts"`), E)
	add("path-url", rep(b, "file: src/types/auth.ts", "file: https://example.com/auth.ts"), E)
	add("path-nul", rep(b, "file: src/types/auth.ts", `file: "src/types/auth.ts\0.png"`), E)
	add("lines-reversed", rep(b, "lines: 1-150", "lines: 150-1"), S)
	add("lines-zero", rep(b, "lines: 1-150", "lines: 0-5"), S)
	add("lines-open", rep(b, "lines: 1-150", "lines: 1-"), S)
	add("lines-integer", rep(b, "lines: 1-150", "lines: 150"), S)
	add("lines-leading-zero", rep(b, "lines: 45-67", "lines: 045-67"), S)
	add("tag-not-lower-hyphenated", rep(b, "[auth, user-state, react-context]", "[auth, User_State]"), S)
	add("severity-invalid", rep(b, "severity: high", "severity: critical"), S)
	add("priority-invalid", rep(b, "priority: medium", "priority: urgent"), S)
	add("change-type-invalid", rep(b, "change_type: modify", "change_type: rewrite"), S)
	add("blocking-as-string", rep(b, "blocking: false", "blocking: \"no\""), S)
	add("blocking-yaml11-no", rep(b, "blocking: false", "blocking: no"), S)
	add("unknown-field", rep(b, "gotchas:", "approved: true\n\ngotchas:"), S)
	add("two-handoff-headings", b+"\n## Handoff\n\noutcome: failed\n", S)
	add("fence-not-closed", "## Handoff\n\n```yaml\noutcome: completed\n", U)
	add("fenced-as-json", "## Handoff\n\n```json\n{\"outcome\": \"completed\"}\n```\n", S)
	add("empty-section", "# Task 9\n\n## Handoff\n\n## Next\n", S)
	add("i8-anchor", rep(b, "severity: high", "severity: &s high"), U)
	add("i3-two-documents-in-fence", "## Handoff\n\n```yaml\noutcome: completed\n---\noutcome: failed\n```\n", U)
	add("i1-duplicate-outcome", rep(b, "outcome: completed", "outcome: completed\noutcome: blocked"), U)
	add("scalar-not-mapping", "## Handoff\n\njust some prose\n", S)
	add("heading-level-3", rep(blocked, "## Handoff", "### Handoff"), S)
	add("yaml-without-heading", "outcome: completed\n", S)
	add("tilde-fence-not-closed-by-backticks", "## Handoff\n\n~~~yaml\noutcome: completed\n```\n", U)
	h = append(h, doc{name: "no-agents.md", body: blocked, format: T, codes: []string{"AGENTS_REQUIRED"}, noAgents: true})
	writeCorpus(t, filepath.Join(genRoot, "task", "hostile"), expectFile{From: "orchestrator", To: "domain-03-technical"}, h)
}

func crlf(s string) string {
	out := make([]byte, 0, len(s)+64)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, '\r')
		}
		out = append(out, s[i])
	}
	return string(out)
}
