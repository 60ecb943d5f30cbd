package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
)

// MaxClockSkew is how far a document's timestamp may lie after the entry
// time before the handoff is rejected with CLOCK_SKEW.
const MaxClockSkew = 5 * time.Minute

// Input is everything a decision depends on. Decide reads it and never
// changes it.
type Input struct {
	// Payload is the submitted bytes; nil when they were not kept (larger
	// than Params.MaxPayload). A nil Payload whose size is within the
	// limit (a redacted payload) is decided as the empty document, so a
	// redacted entry cannot be re-decided.
	Payload []byte
	// PayloadSize and PayloadSHA256 describe every submitted byte, kept or
	// not.
	PayloadSize   int64
	PayloadSHA256 entry.Hash
	// Registry and Lock are the manifest and lock in force. A nil Registry
	// knows no agent; a nil Lock locks no agent.
	Registry *manifest.Registry
	Lock     *lockfile.Lock
	// Now is the entry's time: the reference for CLOCK_SKEW, STALE and the
	// formats' own expiry rules. The zero time skips the first two.
	Now time.Time
	// State is the ledger as of just before the entry; nil is an empty
	// ledger (nothing accepted, nobody blocked).
	State State
	// Inputs are the recorded parameters and observations.
	Inputs Inputs
	// Detection, when not nil, is handoff.NewDetection(Payload), run once
	// by a caller that decides the same document again (govern, after a
	// conflicting commit); nil detects here. It is not an input of the
	// decision: the same bytes give the same detection.
	Detection *handoff.Detection
}

// Decision is the outcome of Decide.
type Decision struct {
	// Decision is reason.Accepted or reason.Rejected (reason.Decide of
	// Reasons).
	Decision string `json:"decision"`
	// Reasons are ordered by severity, then by rule (see the package
	// documentation). Never nil.
	Reasons []reason.Reason `json:"reasons"`
	// Record is the parsed document; nil only when the payload was too
	// large to parse.
	Record *handoff.Record `json:"-"`
	// Blocks lists, sorted and without duplicates, the agents this decision
	// blocks (each with a critical HASH_MISMATCH).
	Blocks []string `json:"blocks,omitzero"`
}

// Decide takes the governance decision on in. It is pure: no I/O, no
// clock, no map iteration; the same Input gives a deep-equal Decision.
// It never panics on any payload.
func Decide(in Input) *Decision {
	p := in.Inputs.Params
	size := max(in.PayloadSize, int64(len(in.Payload)))
	if p.MaxPayload > 0 && size > p.MaxPayload {
		rs := []reason.Reason{{
			Code: reason.PayloadTooLarge, Severity: reason.Error,
			Message: fmt.Sprintf("payload is %d bytes, more than the limit of %d (--max-payload); it is recorded by hash and size only", size, p.MaxPayload),
		}}
		return &Decision{Decision: reason.Decide(rs), Reasons: rs}
	}
	// File-system rules are answered from the recorded observations only.
	// No observations means the rules asked nothing, or ran without a root
	// (validate without one): both are replayed by skipping them (nil Env).
	var env handoff.Env
	if len(in.Inputs.Observations) > 0 {
		env = handoff.NewReplayEnv(in.Inputs.Observations)
	}
	rec := handoff.Parse(in.Payload, handoff.Options{
		Format: p.Format, From: p.From, To: p.To, Strict: p.Strict,
		Now: in.Now, Env: env, Detection: in.Detection, Rules: in.Inputs.Rules,
	})
	c := &checker{in: in, rec: rec}
	c.reasons = append(c.reasons, rec.Findings...)
	c.src = side{role: "source", ref: rec.Source}
	c.dst = side{role: "target", ref: rec.Target}
	c.agent(&c.src)
	c.agent(&c.dst)
	c.composition()
	c.boundaries()
	c.swarmTarget()
	c.vbwRoles()
	c.requestType()
	c.replay()
	c.timestamp()
	c.attestation()

	rs := c.reasons
	if rs == nil {
		rs = []reason.Reason{}
	}
	for i := range rs {
		rs[i].Field = strings.ToValidUTF8(rs[i].Field, "\uFFFD")
		rs[i].Message = strings.ToValidUTF8(rs[i].Message, "\uFFFD")
	}
	slices.SortStableFunc(rs, func(a, b reason.Reason) int { return rank(a.Severity) - rank(b.Severity) })
	slices.Sort(c.blocks)
	c.blocks = slices.Compact(c.blocks)
	rs = compact(rs, in.Inputs.Params.MaxReasonsBytes)
	return &Decision{Decision: reason.Decide(rs), Reasons: rs, Record: rec, Blocks: c.blocks}
}

// compact returns rs, or, when their JSON takes more than limit bytes (a
// limit above 0), their compact form: the critical reasons (they carry
// the blocks, at most one per agent), then one ENTRY_TOO_LARGE error that
// counts the reasons by code. The decision is then rejected, and the
// entry records the document by hash and size as PAYLOAD_TOO_LARGE does;
// "govledger validate" on the payload lists every reason.
func compact(rs []reason.Reason, limit int64) []reason.Reason {
	if limit <= 0 {
		return rs
	}
	size := ReasonsSize(rs)
	if size <= limit {
		return rs
	}
	var out []reason.Reason
	counts := map[reason.Code]int{}
	var order []reason.Code
	for _, r := range rs {
		if r.Severity == reason.Critical {
			out = append(out, r)
		}
		if counts[r.Code] == 0 {
			order = append(order, r.Code)
		}
		counts[r.Code]++
	}
	var by strings.Builder
	for i, code := range order {
		if i == 20 {
			fmt.Fprintf(&by, ", and %d more codes", len(order)-i)
			break
		}
		if i > 0 {
			by.WriteString(", ")
		}
		fmt.Fprintf(&by, "%s ×%d", code, counts[code])
	}
	return append(out, reason.Reason{Code: reason.EntryTooLarge, Severity: reason.Error,
		Message: fmt.Sprintf("the decision has %d reasons (%d bytes of JSON, more than the %d an entry keeps, so that it fits the 65,535 bytes of a tlog-tiles entry): %s; the document is recorded by hash and size, and \"govledger validate\" on it lists every reason",
			len(rs), size, limit, by.String())})
}

// ReasonsSize returns the length of the JSON array of rs in an entry.
func ReasonsSize(rs []reason.Reason) int64 {
	size := int64(2)
	for _, r := range rs {
		// Four members (the quotes of field and message come with them),
		// and a comma.
		size += int64(len(`{"code":"","field":,"message":,"severity":""},`)+len(r.Code)+len(r.Severity)) +
			int64(len(jsonString(r.Field))+len(jsonString(r.Message)))
	}
	if len(rs) > 0 {
		size-- // no comma after the last
	}
	return size
}

// jsonString returns s as a JSON string, escaped as the entry encoding
// escapes it.
func jsonString(s string) []byte {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}

func rank(s reason.Severity) int {
	switch s {
	case reason.Critical:
		return 0
	case reason.Error:
		return 1
	case reason.Warning:
		return 2
	}
	return 3
}

// side is what the checks learned about one agent of the handoff.
type side struct {
	role   string           // "source" or "target"
	ref    handoff.AgentRef // as the document names it
	agent  *manifest.Agent  // nil when not named or not registered
	failed []reason.Code    // the agent checks that failed
	// unverifiable is set when a governed/1 agent lacks a valid agent_type,
	// agent_version or prompt_hash (a SCHEMA_INVALID finding).
	unverifiable bool
}

func (s *side) named() bool { return s.ref.ID != "" }

type checker struct {
	in       Input
	rec      *handoff.Record
	src, dst side
	reasons  []reason.Reason
	blocks   []string
	// rule outcomes the attestation is compared with
	compositionBad bool
	boundaryBad    []reason.Code // the boundary rules that failed
}

// add records a reason; like handoff's findings, its message starts with
// the field it concerns.
func (c *checker) add(code reason.Code, sev reason.Severity, field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	c.reasons = append(c.reasons, reason.Reason{Code: code, Severity: sev, Field: field, Message: msg})
}

func (c *checker) governed() bool { return c.rec.Format == handoff.Governed }

// agent runs the per-agent rules (registry, lock, block list) for s.
func (c *checker) agent(s *side) {
	if !s.named() {
		return
	}
	id := s.ref.ID
	// The field paths are built only for a finding.
	idField := func() string { return agentField(c.rec.Format, s.role, "agent_id") }
	fail := func(code reason.Code, sev reason.Severity, field, format string, args ...any) {
		c.add(code, sev, field, format, args...)
		s.failed = append(s.failed, code)
	}
	a, ok := c.in.Registry.Agent(id)
	if !ok {
		// The id is the document's (or --from/--to's): not named.
		hint := ""
		if c.in.Registry != nil {
			for _, r := range c.in.Registry.Agents {
				if strings.EqualFold(r.ID, id) {
					hint = fmt.Sprintf(" (did you mean %s? agent IDs are canonical and case-sensitive, there are no aliases)", q(r.ID))
					break
				}
			}
		}
		fail(reason.UnknownAgent, reason.Error, idField(), "the %s agent is not in the registry%s", s.role, hint)
		return
	}
	s.agent = a
	if s.ref.Type != "" && s.ref.Type != a.Type {
		fail(reason.TypeMismatch, reason.Error, agentField(c.rec.Format, s.role, "agent_type"),
			"differs from the registry: %s agent %s is a %s", s.role, q(id), a.Type)
	}
	le, locked := lookup(c.in.Lock, id)
	if s.ref.Version != "" && s.ref.Version != a.Version {
		fail(reason.VersionMismatch, reason.Error, agentField(c.rec.Format, s.role, "agent_version"),
			"differs from the registry: %s agent %s is at version %s", s.role, q(id), q(a.Version))
	}
	if locked && le.AgentVersion != a.Version {
		fail(reason.VersionMismatch, reason.Error, agentField(c.rec.Format, s.role, "agent_version"),
			"%s agent %s is locked at agent_version %s, but the registry says %s: the lock is stale (run govledger lock)",
			s.role, q(id), q(le.AgentVersion), q(a.Version))
	}
	hashField := func() string { return agentField(c.rec.Format, s.role, "prompt_hash") }
	switch {
	case !locked:
		if !c.governed() {
			hashField = idField
		}
		fail(reason.HashMismatch, reason.Error, hashField(),
			"%s agent %s is not in the lock, so its prompt was never reviewed (run govledger lock)", s.role, q(id))
	case s.ref.PromptHash != "":
		if sameDigest(s.ref.PromptHash, le.PromptHash) {
			break
		}
		// A source's wrong hash for itself blocks it. A wrong hash quoted
		// for the target blocks the target only when the handoff is
		// attributable (see unattributable); otherwise anyone who can
		// submit a document could block any agent.
		if why := c.unattributable(s); len(why) > 0 {
			fail(reason.HashMismatch, reason.Error, hashField(),
				"differs from the lock, which pins %s agent %s at %s: the mismatch is not attributable (%s), so no block is applied",
				s.role, q(id), q(le.PromptHash), strings.Join(why, "; "))
			break
		}
		fail(reason.HashMismatch, reason.Critical, hashField(),
			"differs from the lock, which pins %s agent %s at %s: potential tampering; the agent is blocked until an operator runs govledger unblock or a new lock is in force",
			s.role, q(id), q(le.PromptHash))
		c.blocks = append(c.blocks, id)
	}
	if c.governed() && (s.ref.Type == "" || s.ref.Version == "" || s.ref.PromptHash == "") {
		// governed/1 requires all three; handoff reported the one missing
		// or malformed (SCHEMA_INVALID), so the agent's verification is
		// neither passed nor refuted.
		s.unverifiable = true
	}
	if c.in.State != nil {
		if seq, blocked := c.in.State.Blocked(id); blocked {
			fail(reason.AgentBlocked, reason.Error, idField(),
				"%s agent %s is blocked by entry seq %d (a prompt hash mismatch); lift it with govledger unblock --reason \"...\" %s, or bring a new lock into force",
				s.role, q(id), seq, id)
		}
	}
}

// unattributable says why a prompt hash mismatch found on side s may not
// block that agent; nil when it may. The source's own mismatch always may
// (it blocks itself). The target's may only when the handoff is
// attributable to its source: the source is registered, the registry
// allows it to hand off to the target (and, for swarm/2, the target is an
// eligible skill), it is not blocked, and its own prompt_hash is present
// and matches the lock. A format that carries no source prompt hash is
// therefore never attributable.
func (c *checker) unattributable(s *side) []string {
	if s != &c.dst {
		return nil
	}
	src := &c.src
	if !src.named() {
		return []string{"the document names no source agent"}
	}
	a := src.agent
	if a == nil {
		return []string{"the source agent is not in the registry"}
	}
	var why []string
	le, locked := lookup(c.in.Lock, a.ID)
	switch {
	case !locked:
		why = append(why, fmt.Sprintf("source agent %s is not in the lock", q(a.ID)))
	case src.ref.PromptHash == "":
		why = append(why, fmt.Sprintf("source agent %s quotes no valid prompt_hash of its own", q(a.ID)))
	case !sameDigest(src.ref.PromptHash, le.PromptHash):
		why = append(why, fmt.Sprintf("source agent %s quotes a wrong prompt_hash of its own", q(a.ID)))
	}
	d := s.agent
	if (c.rec.Format == handoff.Swarm && !d.AcceptsHandoff) || !c.in.Registry.Allows(a.ID, d.ID) {
		why = append(why, fmt.Sprintf("source agent %s may not hand off to %s", q(a.ID), q(d.ID)))
	}
	if c.in.State != nil {
		if seq, blocked := c.in.State.Blocked(a.ID); blocked {
			why = append(why, fmt.Sprintf("source agent %s is blocked by entry seq %d", q(a.ID), seq))
		}
	}
	return why
}

func lookup(l *lockfile.Lock, id string) (lockfile.Entry, bool) {
	if l == nil {
		return lockfile.Entry{}, false
	}
	return l.Lookup(id)
}

// sameDigest reports whether two prompt hashes, each bare hex or
// "sha256:hex", name the same SHA-256 digest. A malformed one never does.
func sameDigest(a, b string) bool {
	da, err := lockfile.ParseDigest(a)
	if err != nil {
		return false
	}
	db, err := lockfile.ParseDigest(b)
	if err != nil {
		return false
	}
	return da == db
}

// composition checks every archetype among the handoff's agents.
func (c *checker) composition() {
	for _, s := range []*side{&c.src, &c.dst} {
		a := s.agent
		if a == nil || a.Type != manifest.TypeArchetype {
			continue
		}
		if s == &c.dst && c.src.agent != nil && c.src.agent.ID == a.ID {
			continue // one archetype handing off to itself: checked once
		}
		if probs := c.compositionProblems(a); len(probs) > 0 {
			c.compositionBad = true
			c.add(reason.CompositionInvalid, reason.Error, agentField(c.rec.Format, s.role, "agent_id"),
				"%s archetype %s has an invalid composition: %s", s.role, q(a.ID), strings.Join(probs, "; "))
		}
	}
}

func (c *checker) compositionProblems(a *manifest.Agent) []string {
	if len(a.Composition) == 0 {
		return []string{"it names no domain"}
	}
	var probs []string
	sum, inRange := 0, true
	seen := make(map[string]bool, len(a.Composition))
	for _, comp := range a.Composition {
		d, ok := c.in.Registry.Agent(comp.AgentID)
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("%s is not in the registry", q(comp.AgentID)))
		case d.Type != manifest.TypeDomain:
			probs = append(probs, fmt.Sprintf("%s is a %s, not a domain", q(comp.AgentID), d.Type))
		}
		if seen[comp.AgentID] {
			probs = append(probs, fmt.Sprintf("%s is named twice", q(comp.AgentID)))
		}
		seen[comp.AgentID] = true
		if comp.Percent < 1 || comp.Percent > 100 {
			probs = append(probs, fmt.Sprintf("%s has percent %d, outside 1..100", q(comp.AgentID), comp.Percent))
			inRange = false
		} else {
			sum += comp.Percent
		}
	}
	if inRange && sum != 100 {
		probs = append(probs, fmt.Sprintf("percents sum to %d, not 100", sum))
	}
	return probs
}

// boundaries applies the collaboration boundaries and, for swarm/2, skill
// eligibility.
func (c *checker) boundaries() {
	s, d := c.src.agent, c.dst.agent
	if s == nil || d == nil {
		return
	}
	field := agentField(c.rec.Format, "target", "agent_id")
	// Seed 000: a skill is a handoff option only with accepts_handoff:
	// true. That holds for swarm/2 in any registry, and for every format
	// in a registry loaded from skills, where it is the skill's own word.
	if (c.rec.Format == handoff.Swarm || c.in.Registry.FromSkills) && !d.AcceptsHandoff {
		c.boundaryBad = append(c.boundaryBad, reason.IneligibleTarget)
		var eligible []string
		for _, a := range c.in.Registry.Agents {
			if a.AcceptsHandoff {
				eligible = append(eligible, a.ID)
			}
		}
		c.add(reason.IneligibleTarget, reason.Error, field,
			"target skill %s does not declare accepts_handoff: true in its handoff front matter; eligible skills: %s", q(d.ID), list(eligible))
		return
	}
	if !c.in.Registry.Allows(s.ID, d.ID) {
		c.boundaryBad = append(c.boundaryBad, reason.BoundaryViolation)
		c.add(reason.BoundaryViolation, reason.Error, field,
			"%s %s may not hand off to %s (deny by default: not in its handoff_to%s); allowed targets: %s",
			s.Type, q(s.ID), q(d.ID), via(s), list(c.allowedTargets(s.ID, "")))
	}
}

// swarmTarget applies the target skill's own declarations to a swarm/2
// payload (seed 000): every field its requires: names must hold a value
// (REQUIRES_MISSING), and target.category, when given, must be one of its
// handoff_categories, compared as exact strings (CATEGORY_MISMATCH). It is
// skipped for an ineligible target (already refused).
func (c *checker) swarmTarget() {
	d := c.dst.agent
	if c.rec.Format != handoff.Swarm || d == nil || !d.AcceptsHandoff {
		return
	}
	if cat, ok := c.rec.Text("handoff.target.category"); ok && !slices.Contains(d.HandoffCategories, cat) {
		c.add(reason.CategoryMismatch, reason.Error, "handoff.target.category",
			"is not one of the handoff_categories of target skill %s: %s", q(d.ID), list(d.HandoffCategories))
	}
	for _, r := range d.Requires {
		if !c.rec.HasValue("handoff." + r) {
			c.add(reason.RequiresMissing, reason.Error, "handoff."+r,
				"target skill %s requires this field (its requires: list), and the payload has no value for it", q(d.ID))
		}
	}
}

// vbwRoles applies seed 001's roles to a typed vbw/1 message when the
// registry declares vbw_role for any agent: the source must have the
// sender role of the message type, the target one of the lead roles that
// receive it (handoff.VBWReceivers) or "lead", any lead.
func (c *checker) vbwRoles() {
	typ := c.rec.MessageType
	if c.rec.Format != handoff.VBW || typ == "" || !c.in.Registry.DeclaresVBWRoles() {
		return
	}
	want := handoff.VBWSenders[typ]
	if s := c.src.agent; s != nil && s.VBWRole != want {
		c.add(reason.RoleMismatch, reason.Error, "type",
			"source agent %s has vbw_role %s, but seed 001's sender of %s is %s", q(s.ID), roleName(s.VBWRole), typ, want)
	}
	leads := handoff.VBWReceivers[typ]
	if d := c.dst.agent; d != nil && d.VBWRole != handoff.VBWReceiver && !slices.Contains(leads, d.VBWRole) {
		c.add(reason.RoleMismatch, reason.Error, "type",
			"target agent %s has vbw_role %s, but seed 001's receiver of %s is %s (or %s, any lead)",
			q(d.ID), roleName(d.VBWRole), typ, strings.Join(leads, " or "), handoff.VBWReceiver)
	}
}

func roleName(r string) string {
	if r == "" {
		return "(none)"
	}
	return r
}

func via(s *manifest.Agent) string {
	if s.Type == manifest.TypeArchetype {
		return " nor its composition"
	}
	return ""
}

// allowedTargets lists, sorted, the agents src may hand off to that accept
// requestType ("" for any).
func (c *checker) allowedTargets(src, requestType string) []string {
	var out []string
	for _, a := range c.in.Registry.Agents {
		if !c.in.Registry.Allows(src, a.ID) {
			continue
		}
		if requestType != "" && len(a.RequestTypes) > 0 && !slices.Contains(a.RequestTypes, requestType) {
			continue
		}
		out = append(out, a.ID)
	}
	slices.Sort(out)
	return out
}

// list renders registry strings (agent IDs, categories) for a message, at
// most 20 of them.
func list(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	const maxIDs = 20
	var b strings.Builder
	for i, id := range ids {
		if i == maxIDs {
			fmt.Fprintf(&b, " and %d more", len(ids)-maxIDs)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q(id))
	}
	return b.String()
}

// requestType checks that a governed/1 request is within the target's scope.
func (c *checker) requestType() {
	d := c.dst.agent
	rt := c.rec.RequestType
	if !c.governed() || d == nil || rt == "" || len(d.RequestTypes) == 0 || slices.Contains(d.RequestTypes, rt) {
		return
	}
	c.boundaryBad = append(c.boundaryBad, reason.InvalidRequestType)
	msg := fmt.Sprintf("is outside the scope of target agent %s, which accepts %s",
		q(d.ID), strings.Join(d.RequestTypes, ", "))
	if s := c.src.agent; s != nil {
		msg += fmt.Sprintf("; targets %s may hand off to that accept this request type: %s", q(s.ID), list(c.allowedTargets(s.ID, rt)))
	}
	c.add(reason.InvalidRequestType, reason.Error, "context.request.type", "%s", msg)
}

// replay rejects a handoff_id that the ledger already accepted.
func (c *checker) replay() {
	id := c.rec.HandoffID
	if id == "" || c.in.State == nil {
		return
	}
	seq, h, ok := c.in.State.Accepted(id)
	if !ok {
		return
	}
	if h == c.in.PayloadSHA256 {
		c.add(reason.Replay, reason.Error, idField(c.rec.Format),
			"this handoff_id was already accepted at seq %d with the same payload: this is a replay", seq)
		return
	}
	c.add(reason.IDConflict, reason.Error, idField(c.rec.Format),
		"this handoff_id was already accepted at seq %d with payload sha256 %s; this payload's sha256 is %s",
		seq, h, c.in.PayloadSHA256)
}

// timestamp checks the document's own time against the entry time.
func (c *checker) timestamp() {
	ts := c.rec.Timestamp
	if ts == "" || c.in.Now.IsZero() {
		return
	}
	field := timeField(c.rec.Format)
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		for _, r := range c.rec.Findings {
			if r.Code == reason.InvalidTimestamp {
				return
			}
		}
		c.add(reason.InvalidTimestamp, reason.Error, field,
			"is not an RFC 3339 date-time with a time zone, so its freshness cannot be checked")
		return
	}
	now := c.in.Now
	if ahead := t.Sub(now); ahead > MaxClockSkew {
		c.add(reason.ClockSkew, reason.Error, field,
			"is %s after the ledger time %s (at most %s allowed)",
			ahead.Round(time.Second), now.UTC().Format(time.RFC3339Nano), MaxClockSkew)
	}
	if maxAge := time.Duration(c.in.Inputs.Params.MaxAge); maxAge > 0 {
		if age := now.Sub(t); age > maxAge {
			c.add(reason.Stale, reason.Error, field,
				"is %s before the ledger time %s, older than --max-age %s",
				age.Round(time.Second), now.UTC().Format(time.RFC3339Nano), maxAge)
		}
	}
}

// attestation compares governed/1's governance claims with the checks.
func (c *checker) attestation() {
	at := c.rec.Attestation
	if !c.governed() || at == nil {
		return
	}
	bothKnown := c.src.agent != nil && c.dst.agent != nil
	agentClaim := func(claim *bool, s *side) {
		if !s.named() {
			return
		}
		c.claim(claim, "governance."+s.role+"_agent_verified", len(s.failed) == 0 && !s.unverifiable, len(s.failed) > 0,
			func() string {
				who := "the " + s.role + " agent"
				if s.agent != nil {
					who = fmt.Sprintf("%s agent %s", s.role, q(s.agent.ID))
				}
				return fmt.Sprintf("%s failed %s", who, codes(s.failed))
			})
	}
	agentClaim(at.SourceAgentVerified, &c.src)
	agentClaim(at.TargetAgentVerified, &c.dst)
	c.claim(at.CompositionValid, "governance.composition_valid", bothKnown && !c.compositionBad, c.compositionBad,
		func() string { return "an archetype's composition is invalid (COMPOSITION_INVALID)" })
	c.claim(at.BoundariesRespected, "governance.boundaries_respected", bothKnown && len(c.boundaryBad) == 0, len(c.boundaryBad) > 0,
		func() string {
			return fmt.Sprintf("the collaboration boundaries refuse this handoff (%s)", codes(c.boundaryBad))
		})
}

// claim compares one attestation claim with a check that passed or was
// refuted (both false: the check could not run); why words the refutation
// (built only for a finding).
func (c *checker) claim(claim *bool, field string, passed, refuted bool, why func() string) {
	if claim == nil {
		return
	}
	switch {
	case *claim && refuted:
		c.add(reason.AttestationMismatch, reason.Error, field, "claims true, but %s", why())
	case !*claim && passed:
		c.add(reason.AttestationMismatch, reason.Warning, field,
			"claims false, but the ledger's checks passed (the sender's registry or lock may differ)")
	}
}

func codes(cs []reason.Code) string {
	ss := make([]string, len(cs))
	for i, c := range cs {
		ss[i] = string(c)
	}
	return strings.Join(slices.Compact(ss), ", ")
}

// q quotes a value for a message: Go syntax with only ASCII (so control,
// zero-width and bidi characters and invalid UTF-8 are escaped) and at
// most 128 bytes of the value. It is used only for values of the registry
// and the lock (agent ids, versions, hashes, categories): a value taken
// from the document is never put into a message.
func q(s string) string {
	return strconv.QuoteToASCII(truncate(s, 128))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
