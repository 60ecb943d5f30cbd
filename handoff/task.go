package handoff

import (
	"bytes"
	"regexp"
	"slices"
	"strings"

	"github.com/govledger/govledger/reason"
)

// Enumerations and grammars of task/1 (seed 004).
var (
	outcomes     = []string{"completed", "partial", "failed", "blocked"}
	changeTypes  = []string{"add", "modify", "delete", "refactor"}
	levels       = []string{"high", "medium", "low"}
	lineRangeRE  = regexp.MustCompile(`^([1-9][0-9]{0,8})-([1-9][0-9]{0,8})$`)
	tagRE        = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	taskTitleRE  = regexp.MustCompile(`^#[ \t]+Task[ \t]+([A-Za-z0-9][A-Za-z0-9._-]*)(:|[ \t]|$)`)
	mdHeadingRE  = regexp.MustCompile(`^#{1,6}([ \t]|$)`)
	thematicRE   = regexp.MustCompile(`^---+[ \t]*$`)
	fenceInfoSet = []string{"", "yaml", "yml"}
)

// taskClosed is why an unknown task/1 member is an error.
const taskClosed = "seed 004 lists every field of the handoff schema"

// taskBlock finds the YAML of a task/1 file. Its section starts after the
// first "## Handoff" heading outside code fences and ends at the next
// heading ("#" to "######") or "---" line outside code fences. The YAML is
// the section's first fenced code block (``` or ~~~, marked yaml, yml or
// unmarked; prose before it is allowed), or, when the section has no
// fence, the whole section as bare YAML. It returns the YAML text and the
// 0-based line index where it starts.
func taskBlock(c *checker, lines []string) (string, int, bool) {
	hi := findHandoffHeading(lines)
	if hi < 0 {
		near := -1
		outsideFences(lines, func(i int) bool {
			if nearHeadingRE.MatchString(lines[i]) {
				near = i
			}
			return near < 0
		})
		if near >= 0 {
			c.schema("", nil, "%d:1: the heading is not seed 004's \"## Handoff\" (level 2, that exact word)", near+1)
		} else {
			c.schema("", nil, "no \"## Handoff\" heading outside code fences")
		}
		c.missing = append(c.missing, "outcome")
		return "", 0, false
	}
	if next := findHandoffHeading(lines[hi+1:]); next >= 0 {
		c.schema("", nil, "%d:1: a second \"## Handoff\" heading (first at line %d)", hi+next+2, hi+1)
		return "", 0, false
	}
	end := len(lines)
	fenceAt := -1
	outsideFences(lines[hi+1:], func(i int) bool {
		if l := lines[hi+1+i]; mdHeadingRE.MatchString(strings.TrimLeft(l, " ")) || thematicRE.MatchString(l) {
			end = hi + 1 + i
			return false
		}
		return true
	})
	for j := hi + 1; j < end; j++ {
		if _, _, ok := openFence(lines[j]); ok {
			fenceAt = j
			break
		}
	}
	if fenceAt >= 0 {
		f, info, _ := openFence(lines[fenceAt])
		if !slices.Contains(fenceInfoSet, info) {
			c.schema("", nil, "%d:1: the handoff block's code fence is marked as another language than yaml (yaml, yml or unmarked)", fenceAt+1)
			return "", 0, false
		}
		for j := fenceAt + 1; j < len(lines); j++ {
			if f.closes(lines[j]) {
				return strings.Join(lines[fenceAt+1:j], "\n") + "\n", fenceAt + 1, true
			}
		}
		c.add(reason.Unparseable, reason.Error, "", nil, "%d:1: the handoff code fence is never closed", fenceAt+1)
		return "", 0, false
	}
	i := hi + 1
	for i < end && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	block := strings.Join(lines[i:end], "\n")
	if strings.TrimSpace(block) == "" {
		c.schema("", nil, "%d:1: the handoff section is empty (outcome is required)", hi+1)
		c.missing = append(c.missing, "outcome")
		return "", 0, false
	}
	return block + "\n", i, true
}

// taskTitle returns the ID of the first "# Task ID: Name" line outside
// code fences.
func taskTitle(lines []string) string {
	id := ""
	outsideFences(lines, func(i int) bool {
		if m := taskTitleRE.FindStringSubmatch(lines[i]); m != nil {
			id = m[1]
			return false
		}
		return true
	})
	return id
}

func parseTask(c *checker, rec *Record, data []byte, opts Options) {
	agentsFromOptions(c, rec, opts)
	lines := splitLines(bytes.TrimPrefix(data, bom))
	if id := taskTitle(lines); fits(id) {
		rec.WorkflowID = id
	}
	block, off, ok := taskBlock(c, lines)
	if !ok {
		return
	}
	root, ok := c.carrier([]byte(block), off, true, yamlTree, yamlTreeBig)
	if !ok || !c.want("", root, kObject) {
		return
	}
	c.known(root, "", taskClosed, "outcome", "files_created", "files_modified", "patterns_discovered", "gotchas",
		"dependencies_for_next", "open_questions", "suggested_next_steps", "blockers")
	outcome, _ := c.enum(root, "", "outcome", true, reason.SchemaInvalid, outcomes...)

	seen := map[string]bool{}
	checkPath := func(obj *node, path, key string) {
		s, v, ok := c.str(obj, path, key, true, true)
		if !ok || !c.lexicalPath(join(path, key), v, s, true) || opts.Env == nil || seen[s] {
			return
		}
		seen[s] = true
		if o := opts.Env.Observe(OpFile, s); o.Escapes {
			c.add(reason.PathEscape, reason.Error, join(path, key), v, "path leaves the root (through a symbolic link)")
		}
	}
	lineRange := func(obj *node, path string) {
		s, v, ok := c.str(obj, path, "lines", true, false)
		if !ok || s == "all" {
			return
		}
		m := lineRangeRE.FindStringSubmatch(s)
		if m == nil || len(m[1]) > len(m[2]) || (len(m[1]) == len(m[2]) && m[1] > m[2]) {
			c.schema(join(path, "lines"), v, "is not a line range \"N-M\" (1 <= N <= M) or \"all\"")
		}
	}
	for i, f := range c.objects(root, "", "files_created", false) {
		if f != nil {
			p := index("files_created", i)
			c.known(f, p, taskClosed, "path", "purpose", "lines")
			checkPath(f, p, "path")
			c.str(f, p, "purpose", true, true)
			lineRange(f, p)
		}
	}
	for i, f := range c.objects(root, "", "files_modified", false) {
		if f != nil {
			p := index("files_modified", i)
			c.known(f, p, taskClosed, "path", "lines", "change_type", "description")
			checkPath(f, p, "path")
			lineRange(f, p)
			c.enum(f, p, "change_type", true, reason.SchemaInvalid, changeTypes...)
			c.str(f, p, "description", true, true)
		}
	}
	for i, f := range c.objects(root, "", "patterns_discovered", false) {
		if f != nil {
			p := index("patterns_discovered", i)
			c.known(f, p, taskClosed, "id", "pattern", "location", "applies_to")
			c.str(f, p, "id", false, true)
			c.str(f, p, "pattern", true, true)
			c.str(f, p, "location", true, true)
			if tags, ok := c.list(f, p, "applies_to", true); ok {
				for j, t := range tags {
					tp := index(p+".applies_to", j)
					if c.want(tp, t, kString) && !tagRE.MatchString(t.text) {
						c.schema(tp, t, "is not a lower-case, hyphenated tag")
					}
				}
			}
		}
	}
	for i, f := range c.objects(root, "", "gotchas", false) {
		if f != nil {
			p := index("gotchas", i)
			c.known(f, p, taskClosed, "id", "issue", "discovered_in", "mitigation", "severity")
			c.str(f, p, "id", false, true)
			c.str(f, p, "issue", true, true)
			c.str(f, p, "discovered_in", true, true)
			c.str(f, p, "mitigation", true, true)
			c.enum(f, p, "severity", true, reason.SchemaInvalid, levels...)
		}
	}
	for i, f := range c.objects(root, "", "dependencies_for_next", false) {
		if f != nil {
			p := index("dependencies_for_next", i)
			c.known(f, p, taskClosed, "file", "reason")
			checkPath(f, p, "file")
			c.str(f, p, "reason", true, true)
		}
	}
	for i, f := range c.objects(root, "", "open_questions", false) {
		if f != nil {
			p := index("open_questions", i)
			c.known(f, p, taskClosed, "question", "context", "recommendation", "blocking")
			c.str(f, p, "question", true, true)
			c.str(f, p, "context", false, false)
			c.str(f, p, "recommendation", false, false)
			c.boolean(f, p, "blocking", true)
		}
	}
	steps := c.objects(root, "", "suggested_next_steps", false)
	for i, f := range steps {
		if f != nil {
			p := index("suggested_next_steps", i)
			c.known(f, p, taskClosed, "step", "priority", "depends_on")
			c.str(f, p, "step", true, true)
			c.enum(f, p, "priority", true, reason.SchemaInvalid, levels...)
			c.strList(f, p, "depends_on", false)
		}
	}
	needBlockers := outcome == "partial" || outcome == "failed" || outcome == "blocked"
	blockers := c.objects(root, "", "blockers", needBlockers)
	if _, present := root.member("blockers"); present && needBlockers && len(blockers) == 0 {
		v, _ := root.member("blockers")
		c.schema("blockers", v, "outcome %s requires at least one blocker", outcome)
	}
	if outcome == "partial" {
		if _, present := root.member("suggested_next_steps"); !present {
			c.missing = append(c.missing, "suggested_next_steps")
			c.schema("suggested_next_steps", root, "outcome partial requires suggested_next_steps")
		} else if len(steps) == 0 {
			v, _ := root.member("suggested_next_steps")
			c.schema("suggested_next_steps", v, "outcome partial requires at least one suggested next step")
		}
	}
	for i, b := range blockers {
		if b == nil {
			continue
		}
		p := index("blockers", i)
		c.known(b, p, taskClosed, "blocker", "impact", "suggested_resolution", "blocking_tasks")
		c.str(b, p, "blocker", true, true)
		c.str(b, p, "impact", true, true)
		c.str(b, p, "suggested_resolution", outcome == "failed", outcome == "failed")
		if l, ok := c.strList(b, p, "blocking_tasks", outcome == "blocked"); ok && outcome == "blocked" && len(l) == 0 {
			v, _ := b.member("blocking_tasks")
			c.schema(p+".blocking_tasks", v, "outcome blocked requires the blocked task ids")
		}
	}
}
