package handoff

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/reason"
)

// Enumerations of vbw/1 (seed 001).
var (
	scoutDomains = []string{"tech-stack", "architecture", "quality", "concerns"}
	devStatuses  = []string{"complete", "partial", "failed"}
	qaTiers      = []string{"quick", "standard", "deep"}
	qaResults    = []string{"PASS", "FAIL", "PARTIAL"}
)

// agentsFromOptions fills Source and Target of formats that do not name
// their agents (vbw/1, task/1) from Options.From and Options.To.
func agentsFromOptions(c *checker, rec *Record, opts Options) {
	if opts.From == "" || opts.To == "" {
		c.add(reason.AgentsRequired, reason.Error, "", nil,
			"%s documents do not name their agents: give the source and target (--from, --to)", rec.Format)
	}
	for _, a := range []struct {
		flag, id string
		ref      *AgentRef
	}{{"--from", opts.From, &rec.Source}, {"--to", opts.To, &rec.Target}} {
		if a.id == "" {
			continue
		}
		if len(a.id) > MaxFieldLen || !isAgentID(a.id) {
			c.schema("", nil, "the agent given by %s is not a canonical agent id ([a-z0-9][a-z0-9-]*, at most %d bytes)", a.flag, MaxFieldLen)
			continue
		}
		a.ref.ID = a.id
	}
}

// vbwClosed is why an unknown vbw/1 member is an error.
const vbwClosed = "seed 001 lists every field of each message type"

// VBWSenders maps each vbw/1 message type to the role seed 001 names as
// its sender ("Sender: Scout | Receiver: Map Lead", ...). VBWReceivers
// names its receivers.
var VBWSenders = map[string]string{
	"scout_findings":  "scout",
	"dev_progress":    "dev",
	"dev_blocker":     "dev",
	"qa_result":       "qa",
	"debugger_report": "debugger",
}

// VBWReceivers maps each vbw/1 message type to the lead roles seed 001
// names as its receiver: "Receiver: Map Lead" (scout_findings), "Execute
// Lead" (dev_progress, dev_blocker), "Lead (Execute or QA skill)"
// (qa_result), "Debug Lead" (debugger_report). VBWReceiver, any lead,
// receives every type besides these.
var VBWReceivers = map[string][]string{
	"scout_findings":  {"map-lead"},
	"dev_progress":    {"execute-lead"},
	"dev_blocker":     {"execute-lead"},
	"qa_result":       {"execute-lead", "qa-lead"},
	"debugger_report": {"debug-lead"},
}

// VBWReceiver is the role of any lead: a registry that does not tell its
// leads apart gives them all this role, and it receives every vbw/1
// message type.
const VBWReceiver = "lead"

// insufficientEvidence is seed 001's recommended_fix when the debugger's
// confidence is not high enough for a fix.
const insufficientEvidence = "Insufficient evidence"

func parseVBW(c *checker, rec *Record, data []byte, opts Options, tree *node) {
	agentsFromOptions(c, rec, opts)
	if !vbwJSON(data) {
		// Seed 001: "If parsing fails, fall back to treating the content as
		// plain markdown."
		text := bytes.TrimPrefix(data, bom)
		if len(bytes.TrimSpace(text)) == 0 || bytes.ContainsFunc(text, isControl) {
			c.add(reason.Unparseable, reason.Error, "", nil, "%s", notTextReason(data))
			return
		}
		sev := reason.Warning
		if opts.Strict {
			sev = reason.Error
		}
		c.add(reason.MarkdownFallback, sev, "", nil, "message is not JSON: read as plain markdown, no structured fields checked")
		return
	}
	root, ok := c.jsonRoot(data, tree)
	if !ok || !c.want("", root, kObject) {
		return
	}
	typ, ok := c.enum(root, "", "type", true, reason.SchemaInvalid, vbwTypes...)
	if !ok {
		return
	}
	rec.MessageType = typ
	switch typ {
	case "scout_findings":
		c.known(root, "", vbwClosed, "type", "domain", "documents", "cross_cutting", "confidence", "confidence_rationale")
		c.enum(root, "", "domain", true, reason.SchemaInvalid, scoutDomains...)
		for i, d := range c.objects(root, "", "documents", true) {
			if d != nil {
				p := index("documents", i)
				c.known(d, p, vbwClosed, "name", "content")
				c.str(d, p, "name", true, true)
				c.str(d, p, "content", true, false)
			}
		}
		for i, x := range c.objects(root, "", "cross_cutting", false) {
			if x != nil {
				p := index("cross_cutting", i)
				c.known(x, p, vbwClosed, "target_domain", "finding", "relevance")
				c.enum(x, p, "target_domain", true, reason.SchemaInvalid, scoutDomains...)
				c.str(x, p, "finding", true, true)
				c.enum(x, p, "relevance", true, reason.SchemaInvalid, confidenceLevels...)
			}
		}
		c.enum(root, "", "confidence", true, reason.SchemaInvalid, confidenceLevels...)
		c.str(root, "", "confidence_rationale", true, true)
	case "dev_progress":
		c.known(root, "", vbwClosed, "type", "task", "plan_id", "commit", "status", "concerns")
		task, taskNode, taskOK := c.str(root, "", "task", true, true)
		plan, _, planOK := c.str(root, "", "plan_id", true, true)
		if planOK && fits(plan) {
			rec.WorkflowID = plan
		}
		// "task: Task identifier (plan-id/task-name)"; "plan_id: Plan this
		// task belongs to".
		if taskOK {
			p, name, found := strings.Cut(task, "/")
			switch {
			case !found || strings.TrimSpace(p) == "" || strings.TrimSpace(name) == "" || strings.Contains(name, "/"):
				c.schema("task", taskNode, "is not a task identifier of the form plan-id/task-name")
			case planOK && p != plan:
				c.schema("task", taskNode, "names another plan than plan_id: the task identifier is plan-id/task-name")
			}
		}
		if _, v, ok := c.str(root, "", "commit", true, false); ok && !isLowerHexN(v.text, 7, 40) {
			c.schema("commit", v, "is not a git commit hash (7 to 40 lower-case hex digits)")
		}
		c.enum(root, "", "status", true, reason.SchemaInvalid, devStatuses...)
		c.strList(root, "", "concerns", false)
	case "dev_blocker":
		c.known(root, "", vbwClosed, "type", "task", "plan_id", "blocker", "needs", "attempted")
		c.str(root, "", "task", true, true)
		if s, _, ok := c.str(root, "", "plan_id", true, true); ok && fits(s) {
			rec.WorkflowID = s
		}
		c.str(root, "", "blocker", true, true)
		c.str(root, "", "needs", true, true)
		c.strList(root, "", "attempted", false)
	case "qa_result":
		vbwQA(c, root)
	case "debugger_report":
		c.known(root, "", vbwClosed, "type", "hypothesis", "evidence_for", "evidence_against", "confidence", "recommended_fix")
		c.str(root, "", "hypothesis", true, true)
		c.strList(root, "", "evidence_for", true)
		c.strList(root, "", "evidence_against", true)
		conf, _ := c.enum(root, "", "confidence", true, reason.SchemaInvalid, confidenceLevels...)
		// "recommended_fix: Minimal fix description if high confidence, or
		// "Insufficient evidence"" ("... if confidence is low").
		if fix, v, ok := c.str(root, "", "recommended_fix", true, true); ok {
			insufficient := strings.EqualFold(strings.TrimSuffix(strings.TrimSpace(fix), "."), insufficientEvidence)
			switch {
			case conf == "low" && !insufficient:
				c.schema("recommended_fix", v, "confidence low requires %q, not a fix", insufficientEvidence)
			case conf == "high" && insufficient:
				c.schema("recommended_fix", v, "confidence high requires a minimal fix description, not %q", insufficientEvidence)
			}
		}
	}
}

// vbwJSON reports whether a vbw/1 message is to be read as JSON rather
// than markdown: it starts (after a byte order mark and white space) with
// "{", or with "[" and is JSON. A broken JSON object is never prose, so a
// malformed structured message cannot pass as markdown; markdown often
// starts with "[" (a link, a task box, "[!NOTE]"), a vbw/1 message never
// does.
func vbwJSON(data []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(data, bom), " \t\r\n")
	switch {
	case len(t) == 0:
		return false
	case t[0] == '{':
		return true
	case t[0] == '[':
		return jsontext.Value(t).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	}
	return false
}

// vbwQA checks a qa_result: counts are non-negative integers with
// passed+failed == total; PASS has no failed check and no failure
// details; FAIL has at least one failed check; more failure details than
// failed checks is an error; failed checks without details is a warning.
func vbwQA(c *checker, root *node) {
	c.known(root, "", vbwClosed, "type", "tier", "result", "checks", "failures", "body")
	c.enum(root, "", "tier", true, reason.SchemaInvalid, qaTiers...)
	result, _ := c.enum(root, "", "result", true, reason.SchemaInvalid, qaResults...)
	c.str(root, "", "body", true, false)
	failures := c.objects(root, "", "failures", false)
	for i, f := range failures {
		if f != nil {
			p := index("failures", i)
			c.known(f, p, vbwClosed, "check", "expected", "actual", "evidence")
			c.str(f, p, "check", true, true)
			c.str(f, p, "expected", false, false)
			c.str(f, p, "actual", false, false)
			c.str(f, p, "evidence", false, false)
		}
	}
	checks := c.object(root, "", "checks", true)
	if checks == nil {
		return
	}
	c.known(checks, "checks", vbwClosed, "passed", "failed", "total")
	var n [3]int64
	all := true
	for i, k := range []string{"passed", "failed", "total"} {
		v := c.get(checks, "checks", k, true)
		if v == nil || !c.want("checks."+k, v, kNumber) {
			all = false
			continue
		}
		x, ok := c.integerValue(v)
		if !ok || x < 0 {
			c.add(reason.CountsInconsistent, reason.Error, "checks."+k, v, "is not a non-negative integer")
			all = false
			continue
		}
		n[i] = x
	}
	if !all {
		return
	}
	passed, failed, total := n[0], n[1], n[2]
	resultNode, _ := root.member("result")
	failuresNode, ok := root.member("failures")
	if !ok {
		failuresNode = checks
	}
	if passed+failed != total {
		c.add(reason.CountsInconsistent, reason.Error, "checks", checks, "checks.passed + checks.failed differs from checks.total")
	}
	switch {
	case result == "PASS" && failed > 0:
		c.add(reason.CountsInconsistent, reason.Error, "result", resultNode, "result PASS with a non-zero checks.failed")
	case result == "PASS" && len(failures) > 0:
		c.add(reason.CountsInconsistent, reason.Error, "failures", failuresNode, "result PASS with %d failure details (\"empty if PASS\")", len(failures))
	case result == "FAIL" && failed == 0:
		c.add(reason.CountsInconsistent, reason.Error, "result", resultNode, "result FAIL with checks.failed 0")
	case int64(len(failures)) > failed:
		c.add(reason.CountsInconsistent, reason.Error, "failures", failuresNode, "%d failure details, more than checks.failed", len(failures))
	case failed > 0 && len(failures) == 0:
		c.add(reason.CountsInconsistent, reason.Warning, "failures", failuresNode, "failed checks without failure details")
	}
}
