package handoff

import (
	"strings"

	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
)

// Enumerations of governed/1 (seed 003).
var (
	agentTypes   = []string{"domain", "archetype", "orchestrator"}
	requestTypes = []string{"query", "task", "analysis", "decision"}
)

// governedClosed is why an unknown governed/1 member is an error.
const governedClosed = "seed 003 defines the canonical structure of a governed/1 handoff and no other field (no trace_id or workflow_id)"

func parseGoverned(c *checker, rec *Record, data []byte, tree *node) {
	root, ok := c.jsonRoot(data, tree)
	if !ok || !c.want("", root, kObject) {
		return
	}
	c.known(root, "", governedClosed, "handoff_id", "timestamp", "protocol_version", "source_agent", "target_agent", "context", "governance")

	if s, v, ok := c.str(root, "", "handoff_id", true, false); ok {
		if id, ok := canonicalUUIDv4(s); ok {
			rec.HandoffID = id
		} else {
			c.add(reason.InvalidID, reason.Error, "handoff_id", v,
				"is not a UUID version 4 in its 36-character form (xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx, hex digits in either case)")
		}
	}
	if s, _, ok := c.timestamp(root, "", "timestamp", true); ok && fits(s) {
		rec.Timestamp = s
	}
	if s, v, ok := c.str(root, "", "protocol_version", true, false); ok && s != "1.0.0" {
		c.schema("protocol_version", v, "is not the protocol version of seed 003, \"1.0.0\"")
	}
	rec.Source = governedAgent(c, root, "source_agent")
	rec.Target = governedAgent(c, root, "target_agent")

	if ctx := c.object(root, "", "context", true); ctx != nil {
		c.known(ctx, "context", governedClosed, "request", "state")
		if req := c.object(ctx, "context", "request", true); req != nil {
			const p = "context.request"
			c.known(req, p, governedClosed, "type", "description", "input_data", "constraints", "expected_output")
			if s, ok := c.enum(req, p, "type", true, reason.InvalidRequestType, requestTypes...); ok {
				rec.RequestType = s
			}
			c.str(req, p, "description", true, false)
			c.str(req, p, "expected_output", true, false)
			c.strList(req, p, "constraints", true)
			if v := c.get(req, p, "input_data", true); v != nil && v.kind != kObject && v.kind != kString {
				c.schema(p+".input_data", v, "must be a mapping or a string, not a %s", v.kind)
			}
		}
		if st := c.object(ctx, "context", "state", true); st != nil {
			const p = "context.state"
			c.known(st, p, governedClosed, "conversation_history", "accumulated_context", "decisions_made")
			c.objects(st, p, "conversation_history", true)
			c.object(st, p, "accumulated_context", true)
			c.objects(st, p, "decisions_made", true)
		}
	}

	if g := c.object(root, "", "governance", true); g != nil {
		const p = "governance"
		c.known(g, p, governedClosed, "source_agent_verified", "target_agent_verified", "composition_valid", "boundaries_respected", "audit_trail")
		a := &Attestation{
			SourceAgentVerified: c.boolean(g, p, "source_agent_verified", true),
			TargetAgentVerified: c.boolean(g, p, "target_agent_verified", true),
			CompositionValid:    c.boolean(g, p, "composition_valid", true),
			BoundariesRespected: c.boolean(g, p, "boundaries_respected", true),
		}
		if s, _, ok := c.str(g, p, "audit_trail", true, false); ok && fits(s) {
			a.AuditTrail = s
		}
		rec.Attestation = a
	}
}

func governedAgent(c *checker, root *node, key string) AgentRef {
	var ref AgentRef
	a := c.object(root, "", key, true)
	if a == nil {
		return ref
	}
	c.known(a, key, governedClosed, "agent_type", "agent_id", "agent_version", "prompt_hash")
	if s, ok := c.enum(a, key, "agent_type", true, reason.SchemaInvalid, agentTypes...); ok {
		ref.Type = s
	}
	if s, v, ok := c.str(a, key, "agent_id", true, false); ok && c.agentID(key+".agent_id", v, s) {
		ref.ID = s
	}
	if s, v, ok := c.str(a, key, "agent_version", true, false); ok {
		if manifest.CheckVersion(s) == nil && fits(s) {
			ref.Version = s
		} else {
			c.schema(key+".agent_version", v, "is not a semantic version (MAJOR.MINOR.PATCH, optional -prerelease and +build, no \"v\" prefix or leading zeros, at most %d bytes)", manifest.MaxVersionLength)
		}
	}
	if s, v, ok := c.str(a, key, "prompt_hash", true, false); ok {
		if validPromptHash(s) {
			ref.PromptHash = s
		} else {
			c.schema(key+".prompt_hash", v, "is not a SHA-256 digest: 64 lower-case hex digits, bare or after \"sha256:\"")
		}
	}
	return ref
}

// canonicalUUIDv4 accepts the 36-character form of an RFC 4122 version 4
// UUID, hex digits in either case (RFC 4122 section 3: "case insensitive
// on input"), and returns it in lower case, so that one UUID is one
// handoff id for replay detection.
func canonicalUUIDv4(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	for i, c := range []byte(s) {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
		default:
			if !isLowerHex(c) && (c < 'A' || c > 'F') {
				return "", false
			}
		}
	}
	// Version 4; variant RFC 4122 (10xx).
	if s[14] != '4' || !strings.ContainsRune("89abAB", rune(s[19])) {
		return "", false
	}
	return strings.ToLower(s), true
}

// validPromptHash accepts a SHA-256 in lower-case hex, bare or with the
// "sha256:" prefix (both compare equal).
func validPromptHash(s string) bool {
	return isSHA256Hex(strings.TrimPrefix(s, "sha256:"))
}
