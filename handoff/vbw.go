package handoff

import (
	"bytes"
	"regexp"

	"github.com/govledger/govledger/reason"
)

// Enumerations of vbw/1 (seed 001).
var (
	scoutDomains = []string{"tech-stack", "architecture", "quality", "concerns"}
	devStatuses  = []string{"complete", "partial", "failed"}
	qaTiers      = []string{"quick", "standard", "deep"}
	qaResults    = []string{"PASS", "FAIL", "PARTIAL"}
	shortHashRE  = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
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
		if len(a.id) > MaxFieldLen || !agentIDRE.MatchString(a.id) {
			c.schema("", nil, "%s %s is not a canonical agent id ([a-z0-9][a-z0-9-]*)", a.flag, quote(a.id))
			continue
		}
		a.ref.ID = a.id
	}
}

func parseVBW(c *checker, rec *Record, data []byte, opts Options) {
	agentsFromOptions(c, rec, opts)
	if !looksJSON(data) {
		// Seed 001: content that is not JSON is read as plain markdown.
		if len(bytes.TrimSpace(data)) == 0 || bytes.ContainsFunc(data, isControl) {
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
	root, err := jsonTree(data)
	if err != nil {
		c.add(reason.Unparseable, reason.Error, "", nil, "%v", err)
		return
	}
	if !c.want("", root, kObject) {
		return
	}
	typ, ok := c.enum(root, "", "type", true, reason.SchemaInvalid, vbwTypes...)
	if !ok {
		return
	}
	switch typ {
	case "scout_findings":
		c.known(root, "", "type", "domain", "documents", "cross_cutting", "confidence", "confidence_rationale")
		c.enum(root, "", "domain", true, reason.SchemaInvalid, scoutDomains...)
		for i, d := range c.objects(root, "", "documents", true) {
			if d != nil {
				p := index("documents", i)
				c.known(d, p, "name", "content")
				c.str(d, p, "name", true, true)
				c.str(d, p, "content", true, false)
			}
		}
		for i, x := range c.objects(root, "", "cross_cutting", false) {
			if x != nil {
				p := index("cross_cutting", i)
				c.known(x, p, "target_domain", "finding", "relevance")
				c.enum(x, p, "target_domain", true, reason.SchemaInvalid, scoutDomains...)
				c.str(x, p, "finding", true, true)
				c.enum(x, p, "relevance", true, reason.SchemaInvalid, confidenceLevels...)
			}
		}
		c.enum(root, "", "confidence", true, reason.SchemaInvalid, confidenceLevels...)
		c.str(root, "", "confidence_rationale", true, true)
	case "dev_progress":
		c.known(root, "", "type", "task", "plan_id", "commit", "status", "concerns")
		c.str(root, "", "task", true, true)
		if s, _, ok := c.str(root, "", "plan_id", true, true); ok && fits(s) {
			rec.WorkflowID = s
		}
		if s, v, ok := c.str(root, "", "commit", true, false); ok && !shortHashRE.MatchString(s) {
			c.schema("commit", v, "%s is not a git commit hash (7 to 40 lower-case hex digits)", quote(s))
		}
		c.enum(root, "", "status", true, reason.SchemaInvalid, devStatuses...)
		c.strList(root, "", "concerns", false)
	case "dev_blocker":
		c.known(root, "", "type", "task", "plan_id", "blocker", "needs", "attempted")
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
		c.known(root, "", "type", "hypothesis", "evidence_for", "evidence_against", "confidence", "recommended_fix")
		c.str(root, "", "hypothesis", true, true)
		c.strList(root, "", "evidence_for", true)
		c.strList(root, "", "evidence_against", true)
		c.enum(root, "", "confidence", true, reason.SchemaInvalid, confidenceLevels...)
		c.str(root, "", "recommended_fix", true, true)
	}
}

// vbwQA checks a qa_result: counts are non-negative integers with
// passed+failed == total; PASS has no failed check and no failure
// details; FAIL has at least one failed check; more failure details than
// failed checks is an error; failed checks without details is a warning.
func vbwQA(c *checker, root *node) {
	c.known(root, "", "type", "tier", "result", "checks", "failures", "body")
	c.enum(root, "", "tier", true, reason.SchemaInvalid, qaTiers...)
	result, _ := c.enum(root, "", "result", true, reason.SchemaInvalid, qaResults...)
	c.str(root, "", "body", true, false)
	failures := c.objects(root, "", "failures", false)
	for i, f := range failures {
		if f != nil {
			p := index("failures", i)
			c.known(f, p, "check", "expected", "actual", "evidence")
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
	c.known(checks, "checks", "passed", "failed", "total")
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
			c.add(reason.CountsInconsistent, reason.Error, "checks."+k, v, "%s is not a non-negative integer", quote(v.text))
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
		c.add(reason.CountsInconsistent, reason.Error, "checks", checks, "passed %d + failed %d != total %d", passed, failed, total)
	}
	switch {
	case result == "PASS" && failed > 0:
		c.add(reason.CountsInconsistent, reason.Error, "result", resultNode, "result PASS with %d failed checks", failed)
	case result == "PASS" && len(failures) > 0:
		c.add(reason.CountsInconsistent, reason.Error, "failures", failuresNode, "result PASS with %d failure details", len(failures))
	case result == "FAIL" && failed == 0:
		c.add(reason.CountsInconsistent, reason.Error, "result", resultNode, "result FAIL with no failed check")
	case int64(len(failures)) > failed:
		c.add(reason.CountsInconsistent, reason.Error, "failures", failuresNode, "%d failure details for %d failed checks", len(failures), failed)
	case failed > 0 && len(failures) == 0:
		c.add(reason.CountsInconsistent, reason.Warning, "failures", failuresNode, "%d failed checks without failure details", failed)
	}
}
