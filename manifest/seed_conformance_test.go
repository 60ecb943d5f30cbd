package manifest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/govledger/govledger/manifest"
)

// TestSeed000SkillMetadata holds seed 000's "Skill Eligibility Metadata"
// rules for a SKILL.md, one case per rule, each quoting the seed.
func TestSeed000SkillMetadata(t *testing.T) {
	const head = "---\nname: x\nhandoff:\n"
	const tail = "---\n\n# x\n"
	for _, tc := range []struct {
		name, seed, block string
		prefix            string
		want              error  // nil: loads
		msg               string // in the error
		accepts           bool   // when it loads
	}{
		{name: "handoff-option", seed: "accepts_handoff: true # REQUIRED: Must be true",
			block: "  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: d\n", accepts: true},
		{name: "accepts-false-loads", seed: "For a skill to appear as a handoff option, its SKILL.md must include handoff: frontmatter (a skill that is no option still loads)",
			block: "  accepts_handoff: false\n  handoff_categories: [research]\n  handoff_description: d\n"},
		{name: "accepts-false-needs-no-option-fields", seed: "handoff_categories: # REQUIRED / handoff_description: # REQUIRED (for a handoff option)",
			block: "  accepts_handoff: false\n"},
		{name: "accepts-required", seed: "accepts_handoff: true # REQUIRED: Must be true",
			block: "  handoff_categories: [research]\n  handoff_description: d\n", want: manifest.ErrSkill, msg: "accepts_handoff is required"},
		{name: "accepts-boolean", seed: "accepts_handoff: true # REQUIRED: Must be true",
			block: "  accepts_handoff: \"true\"\n  handoff_categories: [research]\n  handoff_description: d\n", want: manifest.ErrSyntax, msg: "want true or false"},
		{name: "categories-required", seed: "handoff_categories: [research, analysis] # REQUIRED: At least one category",
			block: "  accepts_handoff: true\n  handoff_categories: []\n  handoff_description: d\n", want: manifest.ErrSkill, msg: "at least one category"},
		{name: "description-required", seed: "handoff_description: \"Brief description (shown in menu)\"  # REQUIRED",
			block: "  accepts_handoff: true\n  handoff_categories: [research]\n", want: manifest.ErrSkill, msg: "handoff_description must be non-empty"},
		{name: "free-form-category", seed: "Additional free-form categories are allowed",
			block: "  accepts_handoff: true\n  handoff_categories: [meta-analysis]\n  handoff_description: d\n", accepts: true},
		{name: "optional-keys", seed: "handoff_trigger, protocol_version, health_check, requires, optional_consumes # OPTIONAL",
			block: "  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: d\n  handoff_trigger: \"{payload_path}\"\n  protocol_version: \"2.0\"\n  health_check: \"x --health\"\n  requires: [context.original_prompt]\n  optional_consumes: [insights.uncertainties]\n", accepts: true},
		{name: "requires-entries", seed: "requires: # Fields this skill needs in payload",
			block: "  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: d\n  requires: [\"\"]\n", want: manifest.ErrSkill, msg: "empty requires entry"},
		{name: "bom", seed: "its SKILL.md must include handoff: frontmatter (a byte order mark before it is encoding, not content)", prefix: "\xef\xbb\xbf",
			block: "  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: d\n", accepts: true},
		{name: "unknown-key", seed: "For a skill to appear as a handoff option, its SKILL.md must include `handoff:` frontmatter: (the keys listed)",
			block: "  accepts_handoff: true\n  handoff_categories: [research]\n  handoff_description: d\n  priority: 1\n", want: manifest.ErrSkill, msg: "unknown handoff key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok, err := manifest.ParseSkill("x/SKILL.md", []byte(tc.prefix+head+tc.block+tail))
			if tc.want != nil {
				if ok || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("ParseSkill = %v, %v; want %v containing %q (seed: %q)", ok, err, tc.want, tc.msg, tc.seed)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("ParseSkill = %v, %v; want the skill (seed: %q)", ok, err, tc.seed)
			}
			if a.AcceptsHandoff != tc.accepts {
				t.Errorf("AcceptsHandoff = %v, want %v", a.AcceptsHandoff, tc.accepts)
			}
			// It loads as part of a folder, and its snapshot reads back.
			reg, err := manifest.ParseSkills("", []manifest.SkillFile{{Path: "x/SKILL.md", Data: []byte(tc.prefix + head + tc.block + tail)}})
			if err != nil {
				t.Fatalf("ParseSkills: %v", err)
			}
			if _, err := manifest.ParseSnapshot(reg.Snapshot); err != nil {
				t.Fatalf("ParseSnapshot: %v", err)
			}
		})
	}
}

// TestManifestVersionsAndRoles: the versions a manifest accepts are the
// versions a governed/1 handoff may name (seed 003: "Agent versions must
// be valid semver"), and vbw_role takes seed 001's roles only.
func TestManifestVersionsAndRoles(t *testing.T) {
	doc := func(version, role string) []byte {
		r := ""
		if role != "" {
			r = `, "vbw_role": "` + role + `"`
		}
		return []byte(`{"manifest_version": 1, "agents": [{"agent_id": "a", "agent_type": "domain", "agent_version": "` + version + `", "prompt_path": "a.md"` + r + `}]}`)
	}
	for _, tc := range []struct {
		version, role string
		want          error
	}{
		{"1.1.0-rc.1", "", nil},
		{"1.0.0+build.7", "", nil},
		{"1.0.0", manifest.RoleScout, nil},
		{"1.0.0", manifest.RoleLead, nil},
		{"1.0", "", manifest.ErrAgentVersion},
		{"1.0.0", "Scout", manifest.ErrVBWRole},
		{"1.0.0", manifest.RoleMapLead, nil},
		{"1.0.0", manifest.RoleExecuteLead, nil},
		{"1.0.0", manifest.RoleQALead, nil},
		{"1.0.0", manifest.RoleDebugLead, nil},
		{"1.0.0", "map_lead", manifest.ErrVBWRole},
		{"1.0.0", "Map Lead", manifest.ErrVBWRole},
	} {
		reg, err := manifest.Parse("m.json", doc(tc.version, tc.role), "")
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("Parse(version %q, role %q) = %v; want %v", tc.version, tc.role, err, tc.want)
			continue
		}
		if err == nil && (reg.Agents[0].VBWRole != tc.role || reg.DeclaresVBWRoles() != (tc.role != "")) {
			t.Errorf("Parse(role %q): agent %+v", tc.role, reg.Agents[0])
		}
	}
}
