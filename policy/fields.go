package policy

import "github.com/govledger/govledger/handoff"

// agentField returns the dotted path, in format f, of attribute attr
// ("agent_id", "agent_type", "agent_version", "prompt_hash") of the agent
// in role ("source" or "target"); "" where the format does not carry it
// (vbw/1 and task/1 take agents from --from/--to). a2a/1 paths are the
// message's (inside params.message for a SendMessageRequest); its agents
// may also come from --from/--to.
func agentField(f handoff.Format, role, attr string) string {
	switch f {
	case handoff.Governed:
		return role + "_agent." + attr
	case handoff.Swarm:
		if attr == "agent_id" {
			return "handoff." + role + ".skill"
		}
	case handoff.Skill:
		if attr == "agent_id" {
			return "handoff." + role + "_skill"
		}
	case handoff.A2A:
		switch attr {
		case "agent_id":
			return "metadata." + handoff.A2AMetadataKey + "." + role
		case "prompt_hash":
			return "metadata." + handoff.A2AMetadataKey + "." + role + "_prompt_hash"
		}
	}
	return ""
}

// idField returns the path of the field Record.HandoffID comes from.
func idField(f handoff.Format) string {
	switch f {
	case handoff.Governed:
		return "handoff_id"
	case handoff.A2A:
		return "messageId"
	}
	return ""
}

// timeField returns the path of the field Record.Timestamp comes from.
func timeField(f handoff.Format) string {
	switch f {
	case handoff.Governed:
		return "timestamp"
	case handoff.Swarm, handoff.Skill:
		return "handoff.timestamp"
	}
	return ""
}
