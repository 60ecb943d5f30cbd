package manifest

import "sync"

// Agent types.
const (
	TypeDomain       = "domain"
	TypeArchetype    = "archetype"
	TypeOrchestrator = "orchestrator"
)

// VBW roles (seed 001): the senders of its five message types and the
// leads that receive them. Seed 001 names each message type's receiver: the
// Map Lead (scout findings), the Execute Lead (dev progress and blockers),
// the Execute or QA Lead (QA results) and the Debug Lead (debugger
// reports). RoleLead is any lead: it receives every type, for registries
// that do not tell their leads apart.
const (
	RoleScout       = "scout"
	RoleDev         = "dev"
	RoleQA          = "qa"
	RoleDebugger    = "debugger"
	RoleLead        = "lead"
	RoleMapLead     = "map-lead"
	RoleExecuteLead = "execute-lead"
	RoleQALead      = "qa-lead"
	RoleDebugLead   = "debug-lead"
)

// VBWRoles lists the values Agent.VBWRole may take.
var VBWRoles = []string{RoleScout, RoleDev, RoleQA, RoleDebugger, RoleLead, RoleMapLead, RoleExecuteLead, RoleQALead, RoleDebugLead}

// DeclaresVBWRoles reports whether any agent of r declares a vbw_role: the
// registry then opts in to seed 001's sender and receiver roles.
func (r *Registry) DeclaresVBWRoles() bool {
	if r == nil {
		return false
	}
	for _, a := range r.Agents {
		if a.VBWRole != "" {
			return true
		}
	}
	return false
}

// Component is one domain share of an archetype's composition.
type Component struct {
	AgentID string `json:"agent_id"`
	Percent int    `json:"percent"`
}

// Agent is one registered agent.
type Agent struct {
	ID           string      `json:"agent_id"`
	Type         string      `json:"agent_type"`
	Version      string      `json:"agent_version"`
	PromptPath   string      `json:"prompt_path"` // slash-separated, relative to Registry.Dir
	HandoffTo    []string    `json:"handoff_to,omitempty"`
	RequestTypes []string    `json:"request_types,omitempty"`
	Composition  []Component `json:"composition,omitempty"`
	// VBWRole is the agent's role in vbw/1 messages (seed 001: Scout, Dev,
	// QA, Debugger send; the Map, Execute, QA and Debug Leads receive), one
	// of VBWRoles; "" for an agent that declares none. A manifest, a skills
	// folder (top-level vbw_role in the front matter) and a subagents
	// folder can declare it.
	VBWRole string `json:"vbw_role,omitempty"`

	// Skills registries (seed 000) only.
	AcceptsHandoff     bool     `json:"accepts_handoff,omitzero"`
	HandoffCategories  []string `json:"handoff_categories,omitempty"`
	HandoffDescription string   `json:"handoff_description,omitempty"`
	HandoffTrigger     string   `json:"handoff_trigger,omitempty"`
	ProtocolVersion    string   `json:"protocol_version,omitempty"`
	HealthCheck        string   `json:"health_check,omitempty"`
	Requires           []string `json:"requires,omitempty"`
	OptionalConsumes   []string `json:"optional_consumes,omitempty"`
}

// Registry is a loaded, validated agent registry.
type Registry struct {
	// Agents in the order they were declared (a skills folder: sorted by path).
	Agents []Agent
	// Dir is the folder prompt paths are relative to (OS path).
	Dir string
	// FromSkills is true when the registry was loaded from a folder of
	// SKILL.md files or of Claude Code subagent files: agents then receive
	// handoffs only if they accept them (seed 000's accepts_handoff).
	FromSkills bool
	// FromSubagents is true when the registry was loaded from a Claude Code
	// subagents folder (.claude/agents/); FromSkills is then true too.
	FromSubagents bool
	// FromAgentCards is true when the registry was loaded from a folder of
	// A2A Agent Cards (ParseAgentCards); FromSkills is then true too.
	FromAgentCards bool
	// Snapshot is the bytes recorded in the ledger as this registry's
	// snapshot: the manifest file's bytes, or for a skills folder the
	// canonical JSON of the registry as loaded. ParseSnapshot reads it back.
	Snapshot []byte

	once sync.Once
	byID map[string]int
}

// Agent returns the agent with id, exactly (case-sensitive).
func (r *Registry) Agent(id string) (*Agent, bool) {
	if r == nil {
		return nil, false
	}
	r.once.Do(r.index)
	i, ok := r.byID[id]
	if !ok {
		return nil, false
	}
	return &r.Agents[i], true
}

func (r *Registry) index() {
	r.byID = make(map[string]int, len(r.Agents))
	for i, a := range r.Agents {
		r.byID[a.ID] = i
	}
}

// Allows reports whether a handoff from src to dst is inside the collaboration
// boundaries (deny by default): dst is in src's handoff_to; or src is an
// archetype and dst one of its composition domains; or src is an orchestrator;
// or, in a skills registry, dst accepts handoffs and src declares no
// handoff_to list of its own. Unknown agents are never allowed. Grounds says
// which of these hold; Matrix lists every allowed pair.
func (r *Registry) Allows(src, dst string) bool {
	return len(r.Grounds(src, dst)) > 0
}
