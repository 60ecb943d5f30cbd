package handoff_test

import (
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/handoff"
)

const skillDeliverable = "skill/docs/literature/hepatocyte-oxygenation/review-draft.md"

// skillSeed is seed 002's example. Adapted: location is relative to the
// corpus root and checksum (the seed's "sha256:abc123..." placeholder) is
// the fixture's real hash.
func skillSeed(sum string) string {
	return `handoff:
  version: "1.0"
  source_skill: researcher
  target_skill: synthesizer
  timestamp: "2026-02-03T14:30:00Z"
  workflow_id: "workflow-abc123"

deliverable:
  type: document
  location: "` + skillDeliverable + `"
  format: markdown
  summary: "Literature review covering 8 key papers on hepatocyte oxygen consumption rates in various culture formats"
  checksum: "sha256:` + sum + `"

context:
  original_goal: "Write comprehensive literature review on hepatocyte oxygenation"
  completed_skills: ["researcher"]
  focus_areas: ["oxygen consumption rates", "culture format comparison", "measurement methods"]
  known_gaps: ["Limited data on 3D spheroid formats", "No papers after 2024"]
  open_questions: ["Should we include non-mammalian hepatocytes?"]

quality:
  completion_status: complete
  confidence: high
  warnings: ["Some older papers (pre-2020) may have outdated methods"]
`
}

func generateSkill(t *testing.T) {
	sum := writeFixture(t, skillDeliverable, "# Hepatocyte oxygenation: literature review (draft)\n\nEight papers compared.\n")
	dataSum := writeFixture(t, "skill/deliverables/churn-data.json", "{\"rows\": 1200, \"columns\": [\"week\", \"churn\"]}\n")
	yamlSum := writeFixture(t, "skill/deliverables/analysis.yaml", "result: significant\np_value: 0.003\n")
	writeFixture(t, "skill/deliverables/subdir/README.md", "a directory used as a bogus deliverable\n")

	K := handoff.Skill
	b := skillSeed(sum)
	data := rep(rep(rep(rep(rep(b, skillDeliverable, "skill/deliverables/churn-data.json"), sum, dataSum), "type: document", "type: data"), "format: markdown", "format: json"), "target_skill: synthesizer", "target_skill: statistician")
	valid := []doc{
		{name: "seed-002-example.yaml", body: b, format: K},
		{name: "data-deliverable.yaml", body: data, format: K},
		{name: "analysis-unquoted-timestamp.yaml", format: K, body: rep(rep(rep(rep(rep(b, skillDeliverable, "skill/deliverables/analysis.yaml"), sum, yamlSum),
			"type: document", "type: analysis"), "format: markdown", "format: yaml"), `timestamp: "2026-02-03T14:30:00Z"`, `timestamp: 2026-02-03T14:30:00.5+02:00`)},
		{name: "summary-exactly-50-runes.yaml", format: K, body: rep(b, `"Literature review covering 8 key papers on hepatocyte oxygen consumption rates in various culture formats"`,
			`"Überblick über Sauerstoffverbrauch: Leberzellen ✓✓"`)},
		{name: "newer-version-unknown-fields.yaml", format: K, codes: []string{"NEWER_VERSION"}, body: rep(rep(b, `version: "1.0"`, `version: "1.1"`), "quality:", "provenance:\n  model: x\nquality:\n  reviewer: alice")},
		// "Compute checksum: sha256sum deliverable.location": the bare digest.
		{name: "checksum-bare-hex.yaml", format: K, body: rep(b, "sha256:"+sum, sum)},
		// Only the handoff block is "Required fields"; these lists are not.
		{name: "optional-lists-omitted.yaml", format: K, body: rep(rep(rep(rep(b,
			"  focus_areas: [\"oxygen consumption rates\", \"culture format comparison\", \"measurement methods\"]\n", ""),
			"  known_gaps: [\"Limited data on 3D spheroid formats\", \"No papers after 2024\"]\n", ""),
			"  open_questions: [\"Should we include non-mammalian hepatocytes?\"]\n", ""),
			"  warnings: [\"Some older papers (pre-2020) may have outdated methods\"]\n", "")},
		{name: "bom.yaml", format: K, body: "\xef\xbb\xbf" + b},
	}
	writeCorpus(t, filepath.Join(genRoot, "skill", "valid"), expectFile{}, valid)

	S, U := "SCHEMA_INVALID", "UNPARSEABLE"
	var h []doc
	add := func(name, body string, codes ...string) {
		h = append(h, doc{name: name + ".yaml", body: body, format: K, codes: codes})
	}
	add("missing-version", rep(b, "  version: \"1.0\"\n", ""), S)
	add("version-older", rep(b, `version: "1.0"`, `version: "0.9"`), S)
	add("version-malformed", rep(b, `version: "1.0"`, `version: "1"`), S)
	add("version-unquoted-float", rep(b, `version: "1.0"`, `version: 1.0`), S)
	add("missing-workflow-id", rep(b, "  workflow_id: \"workflow-abc123\"\n", ""), S)
	add("summary-49-chars", rep(b, `"Literature review covering 8 key papers on hepatocyte oxygen consumption rates in various culture formats"`, `"Literature review of eight hepatocyte oxygen pap."`), S)
	add("summary-49-runes-many-bytes", rep(b, `"Literature review covering 8 key papers on hepatocyte oxygen consumption rates in various culture formats"`, `"Überblick über Sauerstoffverbrauch: Leberzellen ✓"`), S)
	add("completed-skills-empty", rep(b, `completed_skills: ["researcher"]`, `completed_skills: []`), S)
	add("completed-skills-missing", rep(b, "  completed_skills: [\"researcher\"]\n", ""), S)
	add("deliverable-missing-file", rep(b, skillDeliverable, "skill/docs/literature/missing.md"), "DELIVERABLE_MISSING")
	add("deliverable-is-directory", rep(b, skillDeliverable, "skill/deliverables/subdir"), "DELIVERABLE_MISSING")
	add("deliverable-dotdot", rep(b, skillDeliverable, "../../../etc/passwd"), "PATH_ESCAPE")
	add("deliverable-absolute-outside", rep(b, skillDeliverable, "/etc/passwd"), "PATH_ESCAPE")
	add("deliverable-url", rep(b, skillDeliverable, "file:///etc/passwd"), "PATH_ESCAPE")
	add("deliverable-nul", rep(b, skillDeliverable, `skill/deliverables/analysis.yaml\0.md`), "PATH_ESCAPE")
	add("deliverable-backslash", rep(b, skillDeliverable, `..\\..\\etc\\passwd`), "PATH_ESCAPE")
	add("checksum-seed-placeholder", rep(b, "sha256:"+sum, "sha256:abc123..."), S)
	add("checksum-upper-case", rep(b, sum, "ABCDEF"+sum[6:]), S)
	add("checksum-sha256sum-line", rep(b, "sha256:"+sum, sum+"  "+skillDeliverable), S)
	add("checksum-mismatch", rep(b, sum, dataSum), "CHECKSUM_MISMATCH")
	add("type-invalid", rep(b, "type: document", "type: report"), S)
	add("format-invalid", rep(b, "format: markdown", "format: pdf"), S)
	add("completion-status-invalid", rep(b, "completion_status: complete", "completion_status: done"), S)
	add("confidence-invalid", rep(b, "confidence: high", "confidence: certain"), S)
	add("unknown-field-v1", rep(b, "quality:", "signature: trusted\nquality:"), S)
	add("timestamp-invalid", rep(b, `"2026-02-03T14:30:00Z"`, `"yesterday"`), "INVALID_TIMESTAMP")
	add("source-skill-homoglyph", rep(b, "source_skill: researcher", "source_skill: \"r\u0435searcher\""), S)
	add("source-skill-bidi", rep(b, "source_skill: researcher", "source_skill: \"researcher\u202e\""), S)
	// No source_skill: target_skill still says skill/1, so the error names
	// the missing field (not "unknown format").
	add("missing-source-skill", rep(b, "  source_skill: researcher\n", ""), S)
	add("broken-yaml-missing-source-skill", rep(rep(b, "  source_skill: researcher\n", ""), "  target_skill: synthesizer", "  target_skill: synthesizer\n\t bad: indent"), U)
	add("missing-quality", b[:len(b)-len("quality:\n  completion_status: complete\n  confidence: high\n  warnings: [\"Some older papers (pre-2020) may have outdated methods\"]\n")], S)
	add("warnings-as-string", rep(b, `warnings: ["Some older papers (pre-2020) may have outdated methods"]`, `warnings: "none"`), S)
	add("i8-alias", rep(b, "target_skill: synthesizer", "target_skill: &t synthesizer\n  extra: *t"), U)
	add("i1-duplicate-key", rep(b, "source_skill: researcher", "source_skill: researcher\n  source_skill: orchestrator"), U)
	add("i3-two-documents", b+"---\n"+b, U)
	add("i9-tagged-checksum", rep(b, `checksum: "sha256:`, `checksum: !!str "sha256:`), U)
	writeCorpus(t, filepath.Join(genRoot, "skill", "hostile"), expectFile{}, h)
}
