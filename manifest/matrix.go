package manifest

import (
	"cmp"
	"slices"
)

// Ground is one reason the collaboration boundaries allow a handoff.
type Ground string

// The grounds, in the order Grounds reports them.
const (
	// GroundHandoffTo: the target is in the source's handoff_to.
	GroundHandoffTo Ground = "handoff_to"
	// GroundComposition: the source is an archetype and the target one of
	// the domains of its composition.
	GroundComposition Ground = "composition"
	// GroundOrchestrator: the source is an orchestrator, which may hand off
	// to any agent of the registry.
	GroundOrchestrator Ground = "orchestrator"
	// GroundEligibleSkill: in a skills registry, the target declares
	// accepts_handoff: true and the source declares no handoff_to of its
	// own (a handoff_to list only narrows; seed 000 eligibility).
	GroundEligibleSkill Ground = "eligible_skill"
)

// Grounds lists why the collaboration boundaries allow a handoff from src
// to dst, in the order of the Ground constants; nil means the handoff is
// refused (deny by default). Unknown agents have no grounds. Allows is
// Grounds non-empty.
func (r *Registry) Grounds(src, dst string) []Ground {
	s, ok := r.Agent(src)
	if !ok {
		return nil
	}
	d, ok := r.Agent(dst)
	if !ok {
		return nil
	}
	var gs []Ground
	if slices.Contains(s.HandoffTo, d.ID) {
		gs = append(gs, GroundHandoffTo)
	}
	if s.Type == TypeArchetype && slices.ContainsFunc(s.Composition, func(c Component) bool { return c.AgentID == d.ID }) {
		gs = append(gs, GroundComposition)
	}
	if s.Type == TypeOrchestrator {
		gs = append(gs, GroundOrchestrator)
	}
	if r.FromSkills && d.AcceptsHandoff && len(s.HandoffTo) == 0 {
		gs = append(gs, GroundEligibleSkill)
	}
	return gs
}

// Matrix is the whole of a registry's collaboration boundaries: for every
// agent as a source, the targets it may hand off to and why. It is what
// Allows answers pair by pair; everything it does not list is refused.
type Matrix struct {
	// Kind is "manifest" for a prompt-manifest.json, "skills" for a
	// folder of SKILL.md files, "subagents" for a Claude Code subagents
	// folder, "a2a-cards" for a folder of A2A Agent Cards.
	Kind string `json:"kind"`
	// Agents is the number of registered agents; Allowed the number of
	// allowed (source, target) pairs, of Agents*Agents.
	Agents  int `json:"agents"`
	Allowed int `json:"allowed"`
	// Sources has one row per agent, sorted by agent ID.
	Sources []MatrixSource `json:"sources"`
}

// MatrixSource is one agent as a source.
type MatrixSource struct {
	ID   string `json:"agent_id"`
	Type string `json:"agent_type"`
	// HandoffTo is the agent's own handoff_to list, as declared.
	HandoffTo []string `json:"handoff_to,omitempty"`
	// Targets are the agents it may hand off to, sorted by agent ID;
	// empty when it may hand off to none.
	Targets []MatrixTarget `json:"targets"`
}

// MatrixTarget is one allowed target of a source.
type MatrixTarget struct {
	ID      string   `json:"agent_id"`
	Grounds []Ground `json:"why"`
	// AcceptsHandoff and Categories are the target's seed 000 eligibility
	// metadata (skills registries only).
	AcceptsHandoff bool     `json:"accepts_handoff,omitzero"`
	Categories     []string `json:"handoff_categories,omitempty"`
	// RequestTypes are the request types the target accepts (governed/1
	// checks them as well: INVALID_REQUEST_TYPE); empty means any.
	RequestTypes []string `json:"request_types,omitempty"`
}

// Matrix computes the registry's collaboration boundaries for every pair
// of agents (Grounds). It costs O(n²) in the number of agents; a nil
// registry has no agents. Slices in the result are copies.
func (r *Registry) Matrix() *Matrix {
	m := &Matrix{Kind: "manifest", Sources: []MatrixSource{}}
	if r == nil {
		return m
	}
	if r.FromSkills {
		m.Kind = "skills"
	}
	if r.FromSubagents {
		m.Kind = "subagents"
	}
	if r.FromAgentCards {
		m.Kind = CardsRegistry
	}
	ids := make([]*Agent, len(r.Agents))
	for i := range r.Agents {
		ids[i] = &r.Agents[i]
	}
	slices.SortFunc(ids, func(a, b *Agent) int { return cmp.Compare(a.ID, b.ID) })
	m.Agents = len(ids)
	for _, s := range ids {
		row := MatrixSource{ID: s.ID, Type: s.Type, HandoffTo: slices.Clone(s.HandoffTo), Targets: []MatrixTarget{}}
		for _, d := range ids {
			gs := r.Grounds(s.ID, d.ID)
			if len(gs) == 0 {
				continue
			}
			row.Targets = append(row.Targets, MatrixTarget{ID: d.ID, Grounds: gs, AcceptsHandoff: d.AcceptsHandoff,
				Categories: slices.Clone(d.HandoffCategories), RequestTypes: slices.Clone(d.RequestTypes)})
		}
		m.Allowed += len(row.Targets)
		m.Sources = append(m.Sources, row)
	}
	return m
}
