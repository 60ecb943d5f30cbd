package handoff

import (
	"strings"

	"github.com/google/uuid"
	"golang.org/x/mod/semver"

	"github.com/govledger/govledger/reason"
)

// Enumerations of governed/1 (seed 003).
var (
	agentTypes   = []string{"domain", "archetype", "orchestrator"}
	requestTypes = []string{"query", "task", "analysis", "decision"}
)

func parseGoverned(c *checker, rec *Record, data []byte) {
	root, err := jsonTree(data)
	if err != nil {
		c.add(reason.Unparseable, reason.Error, "", nil, "%v", err)
		return
	}
	if !c.want("", root, kObject) {
		return
	}
	c.known(root, "", "handoff_id", "timestamp", "protocol_version", "source_agent", "target_agent", "context", "governance")

	if s, v, ok := c.str(root, "", "handoff_id", true, false); ok {
		if validUUIDv4(s) {
			rec.HandoffID = s
		} else {
			c.add(reason.InvalidID, reason.Error, "handoff_id", v,
				"%s is not a UUID v4 in canonical lower-case form (xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx)", quote(s))
		}
	}
	if s, _, ok := c.timestamp(root, "", "timestamp", true); ok && fits(s) {
		rec.Timestamp = s
	}
	if s, v, ok := c.str(root, "", "protocol_version", true, false); ok && s != "1.0.0" {
		c.schema("protocol_version", v, "%s is not the supported protocol version \"1.0.0\"", quote(s))
	}
	rec.Source = governedAgent(c, root, "source_agent")
	rec.Target = governedAgent(c, root, "target_agent")

	if ctx := c.object(root, "", "context", true); ctx != nil {
		c.known(ctx, "context", "request", "state")
		if req := c.object(ctx, "context", "request", true); req != nil {
			const p = "context.request"
			c.known(req, p, "type", "description", "input_data", "constraints", "expected_output")
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
			c.known(st, p, "conversation_history", "accumulated_context", "decisions_made")
			c.objects(st, p, "conversation_history", true)
			c.object(st, p, "accumulated_context", true)
			c.objects(st, p, "decisions_made", true)
		}
	}

	if g := c.object(root, "", "governance", true); g != nil {
		const p = "governance"
		c.known(g, p, "source_agent_verified", "target_agent_verified", "composition_valid", "boundaries_respected", "audit_trail")
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
	c.known(a, key, "agent_type", "agent_id", "agent_version", "prompt_hash")
	if s, ok := c.enum(a, key, "agent_type", true, reason.SchemaInvalid, agentTypes...); ok {
		ref.Type = s
	}
	if s, v, ok := c.str(a, key, "agent_id", true, false); ok && c.agentID(key+".agent_id", v, s) {
		ref.ID = s
	}
	if s, v, ok := c.str(a, key, "agent_version", true, false); ok {
		if strictSemver(s) {
			ref.Version = s
		} else {
			c.schema(key+".agent_version", v, "%s is not a semantic version of the form MAJOR.MINOR.PATCH", quote(s))
		}
	}
	if s, v, ok := c.str(a, key, "prompt_hash", true, false); ok {
		if validPromptHash(s) {
			ref.PromptHash = s
		} else {
			c.schema(key+".prompt_hash", v, "%s is not 64 lower-case hex digits, bare or after \"sha256:\"", quote(s))
		}
	}
	return ref
}

// validUUIDv4 accepts only the canonical 36-character lower-case form of
// an RFC 4122 version 4 UUID.
func validUUIDv4(s string) bool {
	if len(s) != 36 {
		return false
	}
	u, err := uuid.Parse(s)
	return err == nil && u.Version() == 4 && u.Variant() == uuid.RFC4122 && u.String() == s
}

// strictSemver accepts exactly MAJOR.MINOR.PATCH (no "v", pre-release or
// build metadata, no leading zeros).
func strictSemver(s string) bool {
	v := "v" + s
	return semver.IsValid(v) && semver.Canonical(v) == v && semver.Prerelease(v) == "" && !strings.Contains(s, "+")
}

// validPromptHash accepts a SHA-256 in lower-case hex, bare or with the
// "sha256:" prefix (both compare equal).
func validPromptHash(s string) bool {
	return sha256HexRE.MatchString(strings.TrimPrefix(s, "sha256:"))
}
