package handoff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/govledger/govledger/reason"
)

// Enumerations of swarm/2 (seed 000).
var (
	problemTypes      = []string{"decision", "creative", "analytical", "strategic"}
	convergenceLevels = []string{"high", "medium", "low", "none"}
)

// SwarmSource is the only source skill swarm/2 allows.
const SwarmSource = "perspective-swarm"

// PerspectivePattern matches the names of perspective files in a swarm/2
// session directory (path.Match syntax, top level of the directory only).
const PerspectivePattern = "perspective-*.md"

// DefaultExpiry is how long after its timestamp a swarm/2 payload without
// expires_at stays valid (seed 000).
const DefaultExpiry = time.Hour

// payloadMetaLineRE matches the lines left out of the swarm/2 payload hash
// and size preimage.
var payloadMetaLineRE = regexp.MustCompile(`^[ \t]*(payload_hash|payload_size_bytes)[ \t]*:`)

// SwarmPreimage returns the bytes that swarm/2 meta.payload_hash and
// meta.payload_size_bytes describe: the document's lines (split at "\n")
// without every line whose first non-blank text is "payload_hash:" or
// "payload_size_bytes:", each kept line followed by "\n". A producer
// computes the same with
//
//	grep -Ev '^[[:blank:]]*(payload_hash|payload_size_bytes)[[:blank:]]*:' handoff-payload.yaml | sha256sum
//	grep -Ev '^[[:blank:]]*(payload_hash|payload_size_bytes)[[:blank:]]*:' handoff-payload.yaml | wc -c
//
// and writes payload_hash as "sha256:" followed by the hex digest.
func SwarmPreimage(doc []byte) []byte {
	out := make([]byte, 0, len(doc)+1)
	for l := range bytes.Lines(doc) {
		l = bytes.TrimSuffix(l, []byte("\n"))
		if payloadMetaLineRE.Match(l) {
			continue
		}
		out = append(append(out, l...), '\n')
	}
	return out
}

// SwarmVersions are the handoff.version values swarm/2 reads: "2.0", and
// "1.0" because seed 000 keeps v1.0 payloads valid ("v2.0 is a
// superset"). A v1.0 payload's target is lit-pm, the skill v1.0 was
// hard-coded to.
var SwarmVersions = []string{"2.0", "1.0"}

// swarmV1Target is the only target of a swarm v1.0 payload.
const swarmV1Target = "lit-pm"

func parseSwarm(c *checker, rec *Record, data []byte, opts Options) {
	root, ok := c.yamlObject(bytes.TrimPrefix(data, bom))
	if !ok {
		return
	}
	rec.root = root
	h := c.object(root, "", "handoff", true)
	if h == nil {
		return
	}
	const p = "handoff"
	version := ""
	if s, v, ok := c.str(h, p, "version", true, false); ok {
		if slices.Contains(SwarmVersions, s) {
			version = s
		} else {
			c.schema(p+".version", v, "is not \"2.0\" (or \"1.0\", whose payloads seed 000 keeps valid)")
		}
	}
	ts, t, tsOK := c.timestamp(h, p, "timestamp", true)
	if tsOK && fits(ts) {
		rec.Timestamp = ts
	}
	expires, expOK := t.Add(DefaultExpiry), tsOK
	if _, e, ok := c.timestamp(h, p, "expires_at", false); ok {
		expires, expOK = e, true
	} else if _, present := h.member("expires_at"); present {
		expOK = false
	}
	if expOK && !opts.Now.IsZero() && expires.Before(opts.Now) {
		v, ok := h.member("expires_at")
		if !ok {
			v, _ = h.member("timestamp")
		}
		c.add(reason.Expired, reason.Error, p+".expires_at", v, "the payload expired %s before the ledger time %s (expires_at defaults to timestamp + 1h)",
			opts.Now.Sub(expires).Round(time.Second), opts.Now.UTC().Format(time.RFC3339Nano))
	}

	var names []string // session directory entries, when observed
	if src := c.object(h, p, "source", true); src != nil {
		const sp = p + ".source"
		if s, v, ok := c.str(src, sp, "skill", true, false); ok {
			if s != SwarmSource {
				c.schema(sp+".skill", v, "is not %q, the only source seed 000 allows", SwarmSource)
			} else {
				rec.Source.ID = s
			}
		}
		if s, _, ok := c.str(src, sp, "workflow_id", false, false); ok && fits(s) {
			rec.WorkflowID = s
		}
		if s, v, ok := c.str(src, sp, "session_path", true, true); ok {
			if fits(s) {
				rec.SessionPath = s
			}
			if c.lexicalPath(sp+".session_path", v, s, false) && opts.Env != nil {
				o := opts.Env.Observe(OpDir, s)
				switch {
				case o.Escapes:
					c.add(reason.PathEscape, reason.Error, sp+".session_path", v, "path leaves the root")
				case !o.Exists:
					c.add(reason.SessionUnreadable, reason.Error, sp+".session_path", v, "the session directory does not exist")
				case o.Err != "":
					c.add(reason.SessionUnreadable, reason.Error, sp+".session_path", v, "the session directory is not readable: %s", o.Err)
				default:
					names = o.Names
				}
			}
		}
	}
	target := ""
	if tg := c.object(h, p, "target", true); tg != nil {
		const tp = p + ".target"
		if s, v, ok := c.str(tg, tp, "skill", true, true); ok && c.agentID(tp+".skill", v, s) {
			if version == "1.0" && s != swarmV1Target {
				c.schema(tp+".skill", v, "is not %q: a version \"1.0\" payload hands off to %s only (seed 000: in v1.0 the target was hardcoded)", swarmV1Target, swarmV1Target)
			} else {
				rec.Target.ID, target = s, s
			}
		}
		c.str(tg, tp, "invocation", false, false)
		c.str(tg, tp, "category", false, false)
	}
	if cx := c.object(h, p, "context", true); cx != nil {
		const cp = p + ".context"
		c.str(cx, cp, "original_prompt", true, true)
		c.str(cx, cp, "reframed_challenge", false, false)
		c.enum(cx, cp, "problem_type", true, reason.SchemaInvalid, problemTypes...)
		c.str(cx, cp, "synthesis_summary", false, false)
	}
	if in := c.object(h, p, "insights", false); in != nil {
		const ip = p + ".insights"
		for i, it := range c.objects(in, ip, "convergent", false) {
			if it == nil {
				continue
			}
			ep := index(ip+".convergent", i)
			c.str(it, ep, "theme", false, false)
			c.number(it, ep, "confidence_score", false)
			c.strList(it, ep, "contributing_archetypes", false)
			c.strList(it, ep, "key_evidence", false)
		}
		for i, it := range c.objects(in, ip, "divergent", false) {
			if it == nil {
				continue
			}
			ep := index(ip+".divergent", i)
			c.str(it, ep, "archetype", false, false)
			c.str(it, ep, "insight", false, false)
			c.integer(it, ep, "confidence", false, 0)
		}
		c.strList(in, ip, "uncertainties", false)
		c.strList(in, ip, "blind_spots", false)
	}
	if rs := c.object(h, p, "research_seeds", false); rs != nil {
		const rp = p + ".research_seeds"
		for i, it := range c.objects(rs, rp, "suggested_terms", false) {
			if it == nil {
				continue
			}
			ep := index(rp+".suggested_terms", i)
			c.str(it, ep, "term", false, false)
			c.str(it, ep, "rationale", false, false)
		}
		c.strList(rs, rp, "open_questions", false)
	}

	chain, chainNode := []string{SwarmSource}, (*node)(nil)
	if m := c.object(h, p, "meta", false); m != nil {
		const mp = p + ".meta"
		if n, ok := c.integer(m, mp, "perspectives_completed", false, 0); ok && names != nil {
			count := 0
			for _, name := range names {
				if ok, _ := path.Match(PerspectivePattern, name); ok {
					count++
				}
			}
			if int64(count) != n {
				v, _ := m.member("perspectives_completed")
				c.add(reason.PerspectiveCount, reason.Error, mp+".perspectives_completed", v,
					"differs from the number of files matching %s in the session directory, %d", PerspectivePattern, count)
			}
		}
		c.enum(m, mp, "convergence_level", false, reason.SchemaInvalid, convergenceLevels...)
		c.str(m, mp, "user_feedback", false, false)
		c.str(m, mp, "handoff_reason", false, false)
		if l, ok := c.strList(m, mp, "handoff_chain", false); ok {
			chain = l
			chainNode, _ = m.member("handoff_chain")
		}
		pre := SwarmPreimage(data)
		if s, v, ok := c.str(m, mp, "payload_hash", false, false); ok {
			hexPart := strings.TrimPrefix(s, "sha256:")
			sum := sha256.Sum256(pre)
			switch {
			case !isSHA256Hex(hexPart):
				c.schema(mp+".payload_hash", v, "is not a SHA-256 digest: 64 lower-case hex digits, bare or after \"sha256:\"")
			case hexPart != hex.EncodeToString(sum[:]):
				c.add(reason.ChecksumMismatch, reason.Error, mp+".payload_hash", v,
					"does not match the payload: the document without its payload_hash and payload_size_bytes lines hashes to sha256:%x", sum)
			}
		}
		if n, ok := c.integer(m, mp, "payload_size_bytes", false, 0); ok && n != int64(len(pre)) {
			v, _ := m.member("payload_size_bytes")
			c.add(reason.PayloadSize, reason.Error, mp+".payload_size_bytes", v,
				"does not match the payload: the document without its payload_hash and payload_size_bytes lines has %d bytes", len(pre))
		}
	}
	if target != "" && slices.Contains(chain, target) {
		c.add(reason.HandoffLoop, reason.Warning, "handoff.meta.handoff_chain", chainNode,
			"the target skill (handoff.target.skill) already appears in the handoff chain: potential loop")
	}
}
