package handoff

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/govledger/govledger/reason"
)

// Enumerations and limits of skill/1 (seed 002).
var (
	deliverableTypes   = []string{"document", "data", "analysis"}
	deliverableFormats = []string{"markdown", "json", "yaml"}
	completionStatuses = []string{"complete", "partial", "failed"}
	confidenceLevels   = []string{"high", "medium", "low"}
	skillVersionRE     = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$`)
)

// MinSummaryRunes is the shortest skill/1 deliverable.summary, in runes.
const MinSummaryRunes = 50

func parseSkill(c *checker, rec *Record, data []byte, opts Options) {
	root, ok := c.yamlObject(bytes.TrimPrefix(data, bom))
	if !ok {
		return
	}
	// Version first: it decides whether unknown fields are errors.
	closed := true
	h := c.object(root, "", "handoff", true)
	if h != nil {
		if s, v, ok := c.str(h, "handoff", "version", true, false); ok {
			m := skillVersionRE.FindStringSubmatch(s)
			switch {
			case m == nil:
				c.schema("handoff.version", v, "is not a version of the form MAJOR.MINOR (current: \"1.0\")")
			case s == "1.0":
			default:
				major, _ := strconv.Atoi(m[1])
				minor, _ := strconv.Atoi(m[2])
				if major > 1 || (major == 1 && minor > 0) {
					closed = false
					c.add(reason.NewerVersion, reason.Warning, "handoff.version", v,
						"is newer than 1.0: known fields are checked, unknown fields ignored")
				} else {
					c.schema("handoff.version", v, "is older than the current \"1.0\" (seed 002 knows no earlier version)")
				}
			}
		}
	}
	known := func(n *node, path string, names ...string) {
		if closed {
			c.known(n, path, "seed 002 version \"1.0\" defines no such field", names...)
		}
	}
	known(root, "", "handoff", "deliverable", "context", "quality")
	if h != nil {
		const p = "handoff"
		known(h, p, "version", "source_skill", "target_skill", "timestamp", "workflow_id")
		if s, v, ok := c.str(h, p, "source_skill", true, true); ok && c.agentID(p+".source_skill", v, s) {
			rec.Source.ID = s
		}
		if s, v, ok := c.str(h, p, "target_skill", true, true); ok && c.agentID(p+".target_skill", v, s) {
			rec.Target.ID = s
		}
		if s, _, ok := c.timestamp(h, p, "timestamp", true); ok && fits(s) {
			rec.Timestamp = s
		}
		if s, _, ok := c.str(h, p, "workflow_id", true, true); ok && fits(s) {
			rec.WorkflowID = s
		}
	}
	// Seed 002 marks only the handoff block "Required fields"; its
	// validation rules need deliverable.summary, location and checksum and
	// a non-empty context.completed_skills, and its generation protocol sets
	// the deliverable, the original goal and the quality indicators. The
	// lists focus_areas, known_gaps, open_questions and warnings are
	// optional (type-checked when present).
	if d := c.object(root, "", "deliverable", true); d != nil {
		const p = "deliverable"
		known(d, p, "type", "location", "format", "summary", "checksum")
		c.enum(d, p, "type", true, reason.SchemaInvalid, deliverableTypes...)
		c.enum(d, p, "format", true, reason.SchemaInvalid, deliverableFormats...)
		if s, v, ok := c.str(d, p, "summary", true, false); ok && utf8.RuneCountInString(s) < MinSummaryRunes {
			c.schema(p+".summary", v, "has %d characters, at least %d are required", utf8.RuneCountInString(s), MinSummaryRunes)
		}
		want := ""
		if s, v, ok := c.str(d, p, "checksum", true, false); ok {
			// "checksum: sha256" computed with "sha256sum deliverable.location":
			// the digest bare (as sha256sum prints it) or "sha256:"-prefixed
			// (the seed's example).
			if h := strings.TrimPrefix(s, "sha256:"); isSHA256Hex(h) {
				want = h
			} else {
				c.schema(p+".checksum", v, "is not a SHA-256 digest: 64 lower-case hex digits, bare or after \"sha256:\"")
			}
		}
		if s, v, ok := c.str(d, p, "location", true, true); ok && c.lexicalPath(p+".location", v, s, false) && opts.Env != nil {
			o := opts.Env.Observe(OpFile, s)
			switch {
			case o.Escapes:
				c.add(reason.PathEscape, reason.Error, p+".location", v, "path leaves the root")
			case !o.Exists:
				c.add(reason.DeliverableMissing, reason.Error, p+".location", v, "the deliverable does not exist")
			case o.IsDir:
				c.add(reason.DeliverableMissing, reason.Error, p+".location", v, "the deliverable is a directory, not a file")
			case o.Err != "":
				c.add(reason.DeliverableMissing, reason.Error, p+".location", v, "the deliverable is not readable: %s", o.Err)
			case want != "" && o.SHA256 != want:
				cv, _ := d.member("checksum")
				c.add(reason.ChecksumMismatch, reason.Error, p+".checksum", cv,
					"does not match the deliverable, which hashes to sha256:%s", o.SHA256)
			}
		}
	}
	if cx := c.object(root, "", "context", true); cx != nil {
		const p = "context"
		known(cx, p, "original_goal", "completed_skills", "focus_areas", "known_gaps", "open_questions")
		c.str(cx, p, "original_goal", true, true)
		if l, ok := c.strList(cx, p, "completed_skills", true); ok && len(l) == 0 {
			v, _ := cx.member("completed_skills")
			c.schema(p+".completed_skills", v, "must list at least one skill")
		}
		c.strList(cx, p, "focus_areas", false)
		c.strList(cx, p, "known_gaps", false)
		c.strList(cx, p, "open_questions", false)
	}
	if q := c.object(root, "", "quality", true); q != nil {
		const p = "quality"
		known(q, p, "completion_status", "confidence", "warnings")
		c.enum(q, p, "completion_status", true, reason.SchemaInvalid, completionStatuses...)
		c.enum(q, p, "confidence", true, reason.SchemaInvalid, confidenceLevels...)
		c.strList(q, p, "warnings", false)
	}
}
