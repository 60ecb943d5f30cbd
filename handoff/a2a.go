package handoff

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/govledger/govledger/reason"
)

// A2AVersion is the version of the A2A specification whose Message and
// SendMessageRequest a2a/1 reads (a2aproject/A2A, tag v0.3.0:
// specification/json/a2a.json and types/src/types.ts).
const A2AVersion = "0.3.0"

// A2AMetadataKey is the member of an A2A message's metadata (an
// "extension-specific identifier", as the specification keys metadata)
// in which a message names its agents for govledger: {"source": ...,
// "target": ..., "source_prompt_hash": ..., "target_prompt_hash": ...}.
const A2AMetadataKey = "govledger"

// a2aClosed is why an unknown a2a/1 member is an error.
const a2aClosed = "A2A " + A2AVersion + " defines every member of this object (extensions go in metadata)"

// Enumerations of A2A 0.3.0.
var (
	a2aRoles     = []string{"user", "agent"}
	a2aPartKinds = []string{"text", "file", "data"}
	// a2aMethods are the JSON-RPC methods whose params are
	// MessageSendParams: both send one message to an agent.
	a2aMethods = []string{"message/send", "message/stream"}
)

// a2aDetectKeys are the top-level members that mark an a2a/1 document
// besides "kind": "message" (compared case-insensitively, like
// governed/1's): a JSON-RPC envelope, or a message without its kind (an
// A2A 1.0 message is one), so that it is refused naming what it lacks.
var a2aDetectKeys = []string{"jsonrpc", "messageId"}

// a2aV1Hint is added to a finding of a document in A2A 1.0's shape.
const a2aV1Hint = "; A2A 1.0 (ProtoJSON: role ROLE_USER, parts without kind, method SendMessage) is not read by a2a/1, which is A2A " + A2AVersion

func parseA2A(c *checker, rec *Record, data []byte, opts Options, tree *node) {
	root, ok := c.jsonRoot(data, tree)
	if !ok || !c.want("", root, kObject) {
		a2aAgents(c, rec, opts, nil, "")
		return
	}
	msg, path := root, ""
	if _, env := root.member("jsonrpc"); env || !hasMember(root, "kind") && (hasMember(root, "method") || hasMember(root, "params")) {
		msg, path = a2aRequest(c, root)
	}
	var meta *node
	if msg != nil {
		meta = a2aMessage(c, rec, msg, path)
	}
	a2aAgents(c, rec, opts, meta, join(path, "metadata."+A2AMetadataKey))
}

func hasMember(n *node, key string) bool {
	_, ok := n.member(key)
	return ok
}

// a2aRequest checks a SendMessageRequest (JSON-RPC 2.0, method
// message/send or message/stream, params MessageSendParams) and returns
// its message and the message's path.
func a2aRequest(c *checker, root *node) (*node, string) {
	c.known(root, "", a2aClosed, "jsonrpc", "id", "method", "params")
	if s, v, ok := c.str(root, "", "jsonrpc", true, false); ok && s != "2.0" {
		c.schema("jsonrpc", v, `is not "2.0" (JSON-RPC 2.0: "MUST be exactly \"2.0\"")`)
	}
	// SendMessageRequest: "id: number | string" (required, not null).
	if v := c.get(root, "", "id", true); v != nil && !v.big && v.kind != kString && v.kind != kNumber {
		c.schema("id", v, "must be a string or a number, not a %s", v.kind)
	}
	if s, v, ok := c.str(root, "", "method", true, false); ok && !slices.Contains(a2aMethods, s) {
		hint := ""
		if s == "SendMessage" || s == "SendStreamingMessage" {
			hint = a2aV1Hint
		}
		c.schema("method", v, "is not one of %s (the methods whose params are MessageSendParams)%s", strings.Join(a2aMethods, ", "), hint)
	}
	params := c.object(root, "", "params", true)
	if params == nil {
		return nil, ""
	}
	const p = "params"
	c.known(params, p, a2aClosed, "message", "configuration", "metadata")
	if pm := c.object(params, p, "metadata", false); pm != nil {
		if v, ok := pm.member(A2AMetadataKey); ok {
			// Not silently ignored: the agents would then come from nowhere.
			c.schema(p+".metadata."+A2AMetadataKey, v, "govledger reads the agents from the message's own metadata, params.message.metadata.%s, not the request's", A2AMetadataKey)
		}
	}
	if cfg := c.object(params, p, "configuration", false); cfg != nil {
		const q = "params.configuration"
		c.known(cfg, q, a2aClosed, "acceptedOutputModes", "historyLength", "pushNotificationConfig", "blocking")
		c.strList(cfg, q, "acceptedOutputModes", false)
		c.integer(cfg, q, "historyLength", false, 0)
		c.boolean(cfg, q, "blocking", false)
		if pn := c.object(cfg, q, "pushNotificationConfig", false); pn != nil {
			const r = q + ".pushNotificationConfig"
			c.known(pn, r, a2aClosed, "id", "url", "token", "authentication")
			c.str(pn, r, "id", false, false)
			c.str(pn, r, "url", true, true)
			c.str(pn, r, "token", false, false)
			if au := c.object(pn, r, "authentication", false); au != nil {
				const s = r + ".authentication"
				c.known(au, s, a2aClosed, "schemes", "credentials")
				c.strList(au, s, "schemes", true)
				c.str(au, s, "credentials", false, false)
			}
		}
	}
	return c.object(params, p, "message", true), "params.message"
}

// a2aMessage checks a Message at path and fills the record's handoff id
// (messageId) and workflow (contextId). It returns the message's metadata
// object, or nil.
func a2aMessage(c *checker, rec *Record, msg *node, path string) *node {
	c.known(msg, path, a2aClosed, "role", "parts", "metadata", "extensions", "referenceTaskIds", "messageId", "taskId", "contextId", "kind")
	if s, v, ok := c.str(msg, path, "kind", true, false); ok && s != "message" {
		c.schema(join(path, "kind"), v, `is not "message" (a Message's discriminator)`)
	}
	if s, v, ok := c.str(msg, path, "role", true, false); ok && !slices.Contains(a2aRoles, s) {
		hint := ""
		if strings.HasPrefix(s, "ROLE_") {
			hint = a2aV1Hint
		}
		c.schema(join(path, "role"), v, "is not one of %s%s", strings.Join(a2aRoles, ", "), hint)
	}
	if s, v, ok := c.str(msg, path, "messageId", true, false); ok {
		if a2aIdentifier(s) {
			rec.HandoffID = s
		} else {
			c.add(reason.InvalidID, reason.Error, join(path, "messageId"), v,
				"is not a message identifier govledger can index: 1 to %d bytes of UTF-8, not blank, no control characters", MaxFieldLen)
		}
	}
	if s, v, ok := c.str(msg, path, "contextId", false, false); ok {
		if a2aIdentifier(s) {
			rec.WorkflowID = s
		} else {
			c.schema(join(path, "contextId"), v, "is not a context identifier govledger can keep as the workflow id: 1 to %d bytes of UTF-8, not blank, no control characters", MaxFieldLen)
		}
	}
	c.str(msg, path, "taskId", false, false)
	c.strList(msg, path, "referenceTaskIds", false)
	c.strList(msg, path, "extensions", false)
	for i, part := range c.objects(msg, path, "parts", true) {
		if part != nil {
			a2aPart(c, part, index(join(path, "parts"), i))
		}
	}
	return c.object(msg, path, "metadata", false)
}

// a2aPart checks one Part: a TextPart, FilePart or DataPart by its kind.
func a2aPart(c *checker, part *node, p string) {
	if !hasMember(part, "kind") {
		c.missing = append(c.missing, join(p, "kind"))
		c.schema(join(p, "kind"), part, "required field is missing: a part is a TextPart, FilePart or DataPart by its kind (text, file, data)%s", a2aV1Hint)
		return
	}
	kind, _, ok := c.str(part, p, "kind", true, false)
	if !ok {
		return
	}
	c.object(part, p, "metadata", false)
	switch kind {
	case "text":
		c.known(part, p, a2aClosed, "kind", "text", "metadata")
		c.str(part, p, "text", true, false)
	case "data":
		c.known(part, p, a2aClosed, "kind", "data", "metadata")
		c.object(part, p, "data", true)
	case "file":
		c.known(part, p, a2aClosed, "kind", "file", "metadata")
		f := c.object(part, p, "file", true)
		if f == nil {
			return
		}
		fp := join(p, "file")
		c.known(f, fp, a2aClosed, "bytes", "uri", "name", "mimeType")
		c.str(f, fp, "name", false, false)
		c.str(f, fp, "mimeType", false, false)
		_, hasBytes := f.member("bytes")
		_, hasURI := f.member("uri")
		switch {
		case hasBytes && hasURI:
			c.schema(fp, f, "holds both bytes and uri; a file is FileWithBytes or FileWithUri, not both")
		case hasURI:
			c.str(f, fp, "uri", true, true) // never fetched
		default:
			if s, v, ok := c.str(f, fp, "bytes", true, false); ok {
				if _, err := base64.StdEncoding.DecodeString(s); err != nil {
					c.schema(join(fp, "bytes"), v, "is not base64 (RFC 4648 section 4, with padding)")
				}
			}
		}
	default:
		v, _ := part.member("kind")
		c.schema(join(p, "kind"), v, "is not one of %s", strings.Join(a2aPartKinds, ", "))
	}
}

// a2aIdentifier reports whether an A2A identifier (messageId, contextId)
// can be kept as a handoff or workflow id: 1 to MaxFieldLen bytes of
// UTF-8, not blank, without control characters.
func a2aIdentifier(s string) bool {
	return s != "" && fits(s) && strings.TrimSpace(s) != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) })
}

// a2aAgents names the record's agents: from the message's metadata
// (member A2AMetadataKey, at path) and from Options.From/To (the adapter's
// request); the two must agree where both name one, and each agent must be
// named by one of them.
func a2aAgents(c *checker, rec *Record, opts Options, meta *node, path string) {
	var g *node
	if meta != nil {
		if v := c.get(meta, "", A2AMetadataKey, false); v != nil {
			if c.want(path, v, kObject) {
				g = v
			}
		}
	}
	if g != nil {
		c.known(g, path, "govledger reads only these members", "source", "target", "source_prompt_hash", "target_prompt_hash")
	}
	missing := false
	for _, a := range []struct {
		role, flag, given string
		ref               *AgentRef
	}{{"source", "--from", opts.From, &rec.Source}, {"target", "--to", opts.To, &rec.Target}} {
		id, named := "", a.given != ""
		if a.given != "" {
			if len(a.given) > MaxFieldLen || !isAgentID(a.given) {
				c.schema("", nil, "the agent given by %s is not a canonical agent id ([a-z0-9][a-z0-9-]*, at most %d bytes)", a.flag, MaxFieldLen)
			} else {
				id = a.given
			}
		}
		if g != nil {
			if v, ok := g.member(a.role); ok && v.kind != kNull {
				named = true
			}
			if s, v, ok := c.str(g, path, a.role, false, false); ok {
				switch {
				case !c.agentID(join(path, a.role), v, s):
				case id != "" && s != id:
					c.schema(join(path, a.role), v, "names another %s agent than the request's %s; the two must agree", a.role, a.flag)
					id = ""
				default:
					id = s
				}
			} else if v != nil {
				id = "" // a wrong type was reported
			}
			if s, v, ok := c.str(g, path, a.role+"_prompt_hash", false, false); ok {
				if validPromptHash(s) {
					a.ref.PromptHash = s
				} else {
					c.schema(join(path, a.role+"_prompt_hash"), v, "is not a SHA-256 digest: 64 lower-case hex digits, bare or after \"sha256:\"")
				}
			}
		}
		if !named {
			missing = true
		}
		a.ref.ID = id
	}
	if missing {
		c.add(reason.AgentsRequired, reason.Error, "", nil,
			"a2a/1 messages name their agents in metadata.%s.source and .target, or the request names them (--from, --to; ?from=&to=)", A2AMetadataKey)
	}
}
