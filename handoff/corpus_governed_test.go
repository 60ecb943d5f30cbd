package handoff_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govledger/govledger/handoff"
)

// Prompt hashes of testdata/registry (COMMON.md).
const (
	hashResearch  = "ee5240584af8b2d079ee8b040a37fb0257ed1b44e88de31f0b3a21adfe03f6ee"
	hashAnalysis  = "91a3c63e7eb1dca488acc7c8a2661bd579d21d53f3c099fe76f4614e4dd33846"
	hashTechnical = "6ffee54ce5660d0f68dca70d36f03a0d5ff0ae67700a3e1b46072fce218e7582"
	hashContent   = "fef12457ab5bdf4d1f03cfa7db00a59aae78c823317ad9e6545ecafb1c872cb6"
	hashProduct   = "e504dec08fc5ea57ae16ddad5878f41efe921bab1c62070934ad9692f50c509d"
	hashSecurity  = "4568fd4af96308c05842187cf50a4c36c4b75a85d136ceba673662c85a6c954d"
	hashThinker   = "1145d79318c71d416d2bda0e8ca33d44a3cff87f55186b0c8986099877108f89"
	hashLead      = "a49feba8177257e1fa655a110a62b01901b2c7dbb3d15bc48559a8b1eabb8523"
	hashOrch      = "ee7ee5e9314c499e648413ac5d223d6e9025a05e45458b462fa9a09c333955de"
)

// governedSeed is seed 003's complete example with the registry's real
// prompt hashes in place of the seed's (which match no prompt here).
var governedSeed = `{
  "handoff_id": "550e8400-e29b-41d4-a716-446655440000",
  "timestamp": "2026-02-11T00:45:02Z",
  "protocol_version": "1.0.0",
  "source_agent": {
    "agent_type": "domain",
    "agent_id": "domain-05-product",
    "agent_version": "1.0.0",
    "prompt_hash": "` + hashProduct + `"
  },
  "target_agent": {
    "agent_type": "domain",
    "agent_id": "domain-02-analysis",
    "agent_version": "1.0.0",
    "prompt_hash": "` + hashAnalysis + `"
  },
  "context": {
    "request": {
      "type": "analysis",
      "description": "Analyze user research data to validate product hypothesis",
      "input_data": {
        "hypothesis": "Users want feature X",
        "data_sources": ["user_interviews.json", "analytics_data.csv"]
      },
      "constraints": [
        "Focus on quantitative validation",
        "Provide confidence intervals"
      ],
      "expected_output": "Statistical analysis with recommendation"
    },
    "state": {
      "conversation_history": [],
      "accumulated_context": {
        "product_context": "Mobile app, B2C, 10k MAU"
      },
      "decisions_made": []
    }
  },
  "governance": {
    "source_agent_verified": true,
    "target_agent_verified": true,
    "composition_valid": true,
    "boundaries_respected": true,
    "audit_trail": "handoff-log-2026-02-11-001.json"
  }
}
`

func governedDoc(id, ts, srcType, src, srcVer, srcHash, dstType, dst, dstVer, dstHash, reqType, inputData, history string) string {
	return fmt.Sprintf(`{
  "handoff_id": %q,
  "timestamp": %q,
  "protocol_version": "1.0.0",
  "source_agent": {"agent_type": %q, "agent_id": %q, "agent_version": %q, "prompt_hash": %q},
  "target_agent": {"agent_type": %q, "agent_id": %q, "agent_version": %q, "prompt_hash": %q},
  "context": {
    "request": {
      "type": %q,
      "description": "Review the request and report back",
      "input_data": %s,
      "constraints": [],
      "expected_output": "A short written report"
    },
    "state": {"conversation_history": %s, "accumulated_context": {}, "decisions_made": [{"decision": "proceed", "by": "orchestrator"}]}
  },
  "governance": {"source_agent_verified": true, "target_agent_verified": true, "composition_valid": true, "boundaries_respected": true, "audit_trail": "audit/2026-02-11.log#42"}
}
`, id, ts, srcType, src, srcVer, srcHash, dstType, dst, dstVer, dstHash, reqType, inputData, history)
}

func generateGoverned(t *testing.T) {
	G := handoff.Governed
	valid := []doc{
		{name: "seed-003-example.json", body: governedSeed, format: G},
		{name: "archetype-to-composition-domain.json", format: G, body: governedDoc(
			"0b6f2c4e-8d1a-4f3b-9c2d-7e5a1b3c4d5e", "2026-02-11T01:00:00.123456789+01:00",
			"archetype", "archetype-product-thinker", "1.2.0", "sha256:"+hashThinker,
			"domain", "domain-03-technical", "1.1.0", "sha256:"+hashTechnical, "task",
			`"Review the checkout service architecture"`, `[]`)},
		{name: "orchestrator-to-security.json", format: G, body: governedDoc(
			"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "2026-02-11T02:30:00-05:00",
			"orchestrator", "orchestrator", "2.0.0", hashOrch,
			"domain", "domain-06-security", "2.0.0", hashSecurity, "query",
			`{"question": "Which endpoints lack rate limiting?", "depth": 2, "flags": [true, false, null]}`,
			`[{"role": "user", "content": "Check the API"}, {"role": "assistant", "content": "Routing to security"}]`)},
		{name: "research-to-content.json", format: G, body: governedDoc(
			"3d2c1b0a-9f8e-4d7c-a6b5-4a3b2c1d0e9f", "2026-02-11T03:00:00.5Z",
			"domain", "domain-01-research", "1.0.0", hashResearch,
			"domain", "domain-04-content", "1.0.2", hashContent, "task",
			`"Draft a blog post from the attached findings (emoji ok: \u2705, caf\u00e9)"`, `[]`)},
		{name: "analysis-to-research-lead.json", format: G, body: governedDoc(
			"c0ffee00-1234-4abc-bdef-0123456789ab", "2026-02-11T04:00:00Z",
			"domain", "domain-02-analysis", "1.0.0", hashAnalysis,
			"archetype", "archetype-research-lead", "0.9.0", "sha256:"+hashLead, "decision",
			`{"options": ["A", "B"], "weights": {"cost": 0.4, "speed": -0.6}, "max": 9007199254740991}`, `[]`)},
		// RFC 4122: hex digits are "case insensitive on input"; recorded in lower case.
		{name: "handoff-id-upper-case.json", format: G, body: rep(governedSeed, `"550e8400-e29b-41d4-a716-446655440000"`, `"550E8400-E29B-41D4-A716-446655440000"`)},
	}
	writeCorpus(t, filepath.Join(genRoot, "governed", "valid"), expectFile{}, valid)

	S, U, P, I, T, R := "SCHEMA_INVALID", "UNPARSEABLE", "UNKNOWN_FORMAT", "INVALID_ID", "INVALID_TIMESTAMP", "INVALID_REQUEST_TYPE"
	b := governedSeed
	var h []doc
	add := func(name, body string, format handoff.Format, codes ...string) {
		h = append(h, doc{name: name + ".json", body: body, format: format, codes: codes})
	}
	srcHash := `"prompt_hash": "` + hashProduct + `"`
	// I1 duplicate names, at every depth.
	add("i1-dup-top-handoff_id", rep(b, `"timestamp"`, `"handoff_id": "6f1c2b1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
  "timestamp"`), G, U)
	add("i1-dup-nested-agent_id", rep(b, `"agent_version": "1.0.0",`, `"agent_id": "orchestrator", "agent_version": "1.0.0",`), G, U)
	add("i1-dup-deep-input_data", rep(b, `"hypothesis": "Users want feature X",`, `"hypothesis": "a", "hypothesis": "b",`), G, U)
	add("i1-dup-governance-flag", rep(b, `"composition_valid": true,`, `"composition_valid": false, "composition_valid": true,`), G, U)
	add("i1-dup-escaped-name", rep(b, `"agent_version": "1.0.0",`, `"agent\u005fid": "orchestrator", "agent_version": "1.0.0",`), G, U)
	add("i1-dup-request-type", rep(b, `"type": "analysis",`, `"type": "analysis", "type": "decision",`), G, U)
	// I2 case variants and unknown members.
	add("i2-case-HANDOFF_ID", rep(b, `"handoff_id"`, `"HANDOFF_ID"`), G, S)
	add("i2-case-Agent_Id", rep(b, `"agent_id": "domain-05-product"`, `"Agent_Id": "domain-05-product"`), G, S)
	add("i2-case-Source_Agent", rep(b, `"source_agent"`, `"Source_Agent"`), G, S)
	add("i2-case-Audit_Trail", rep(b, `"audit_trail"`, `"Audit_Trail"`), G, S)
	add("i2-case-Type", rep(b, `"type": "analysis"`, `"Type": "analysis"`), G, S)
	add("i2-unknown-top-decision", rep(b, `"protocol_version"`, `"decision": "accepted",
  "protocol_version"`), G, S)
	add("i2-unknown-agent-alias", rep(b, srcHash, srcHash+`, "alias": "domain-06-security"`), G, S)
	add("i2-unknown-request-priority", rep(b, `"type": "analysis",`, `"type": "analysis", "priority": "urgent",`), G, S)
	add("i2-unknown-governance-override", rep(b, `"composition_valid": true,`, `"composition_valid": true, "override": true,`), G, S)
	add("i2-unknown-state-member", rep(b, `"decisions_made": []`, `"decisions_made": [], "approved": true`), G, S)
	add("i2-unknown-context-member", rep(b, `"state": {`, `"signature": "x", "state": {`), G, S)
	// Seed 003's structure is closed: no trace_id, no workflow_id.
	add("i2-unknown-trace_id", rep(b, `"protocol_version"`, `"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
  "protocol_version"`), G, S)
	add("i2-unknown-workflow_id", rep(b, `"protocol_version"`, `"workflow_id": "wf-42",
  "protocol_version"`), G, S)
	// I3 framing.
	add("i3-trailing-object", b+`{"agent_id":"evil"}`, G, U)
	add("i3-trailing-garbage", b+"x", G, U)
	add("i3-two-documents", b+b, G, U)
	add("i3-bom", "\xef\xbb\xbf"+b, G, U)
	add("i3-empty", "", "", U)
	add("i3-whitespace-only", " \n\t\r\n", "", U)
	add("i3-null", "null\n", "", P)
	add("i3-array-wrapped", "["+b+"]", "", P)
	add("i3-string-top", `"handoff_id"`, "", P)
	add("i3-truncated", b[:len(b)/2], G, U)
	add("i3-yaml-separator", b+"---\n"+b, G, U)
	// I4 invalid UTF-8 and lone surrogates.
	add("i4-invalid-utf8-description", rep(b, "Analyze user", "Analyze \xff user"), G, U)
	add("i4-invalid-utf8-agent_id", rep(b, `"domain-05-product"`, "\"domain-05-pr\xc3\x28oduct\""), G, U)
	add("i4-lone-high-surrogate", rep(b, "Analyze user", `Analyze \ud800 user`), G, U)
	add("i4-lone-low-surrogate", rep(b, "Analyze user", `Analyze \udc00 user`), G, U)
	add("i4-reversed-surrogates", rep(b, "Analyze user", `\udc00\ud800`), G, U)
	add("i4-overlong-slash", rep(b, "Analyze user", "Analyze \xc0\xaf user"), G, U)
	add("i4-utf16le", "\xff\xfe{\x00\"\x00h\x00\"\x00}\x00", "", U)
	add("i4-raw-nul-in-string", rep(b, "Analyze user", "Analyze \x00 user"), G, U)
	add("i4-raw-newline-in-string", rep(b, "Analyze user", "Analyze\nuser"), G, U)
	// I5 numbers.
	add("i5-2pow53-plus-1", rep(b, `"hypothesis": "Users want feature X",`, `"n": 9007199254740993,`), G, U)
	add("i5-1e400", rep(b, `"hypothesis": "Users want feature X",`, `"n": 1e400,`), G, U)
	add("i5-minus-1e400", rep(b, `"hypothesis": "Users want feature X",`, `"n": -1e400,`), G, U)
	add("i5-nan", rep(b, `"hypothesis": "Users want feature X",`, `"n": NaN,`), G, U)
	add("i5-hex", rep(b, `"hypothesis": "Users want feature X",`, `"n": 0x10,`), G, U)
	add("i5-plus-sign", rep(b, `"hypothesis": "Users want feature X",`, `"n": +1,`), G, U)
	add("i5-minus-zero-as-bool", rep(b, `"composition_valid": true`, `"composition_valid": -0`), G, S)
	add("i5-version-as-number", rep(b, `"agent_version": "1.0.0",`, `"agent_version": 1.0,`), G, S)
	// I6 nesting.
	add("i6-depth-33", rep(b, `"hypothesis": "Users want feature X",`, `"deep": `+strings.Repeat("[", 29)+strings.Repeat("]", 29)+`,`), G, U)
	add("i6-depth-65", rep(b, `"hypothesis": "Users want feature X",`, `"deep": `+strings.Repeat("[", 61)+strings.Repeat("]", 61)+`,`), G, U)
	add("i6-depth-10001", rep(b, `"hypothesis": "Users want feature X",`, `"deep": `+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`,`), G, U)
	// I10 type confusion and missing fields, for every field.
	fields := []struct{ name, old, key string }{
		{"handoff_id", `"550e8400-e29b-41d4-a716-446655440000"`, `"handoff_id"`},
		{"timestamp", `"2026-02-11T00:45:02Z"`, `"timestamp"`},
		{"protocol_version", `"1.0.0",
  "source_agent"`, ""},
		{"agent_type", `"domain",
    "agent_id": "domain-05-product"`, ""},
		{"agent_id", `"domain-05-product"`, ""},
		{"agent_version", `"1.0.0",
    "prompt_hash": "` + hashProduct + `"`, ""},
		{"prompt_hash", `"` + hashProduct + `"`, ""},
		{"target_agent.agent_id", `"domain-02-analysis"`, ""},
		{"request.type", `"analysis"`, ""},
		{"description", `"Analyze user research data to validate product hypothesis"`, ""},
		{"expected_output", `"Statistical analysis with recommendation"`, ""},
		{"audit_trail", `"handoff-log-2026-02-11-001.json"`, ""},
	}
	for _, f := range fields {
		tail := ""
		if i := strings.Index(f.old, ","); i >= 0 {
			tail = f.old[i:]
		}
		for _, v := range []struct{ label, val string }{{"number", "42"}, {"null", "null"}, {"array", `["x"]`}, {"object", `{}`}, {"bool", "true"}} {
			add("i10-"+strings.ReplaceAll(f.name, ".", "-")+"-as-"+v.label, rep(b, f.old, v.val+tail), G, S)
		}
	}
	for _, f := range []struct{ name, old, new string }{
		{"source_agent-as-string", `"source_agent": {`, `"source_agent": "domain-05-product", "x": {`},
		{"context-as-array", `"context": {`, `"context": [], "x": {`},
		{"governance-as-string", `"governance": {`, `"governance": "verified", "x": {`},
		{"constraints-as-string", `"constraints": [
        "Focus on quantitative validation",
        "Provide confidence intervals"
      ]`, `"constraints": "none"`},
		{"constraints-item-number", `"Provide confidence intervals"`, `7`},
		{"input_data-as-number", `"input_data": {`, `"input_data": 5, "x": {`},
		{"input_data-as-array", `"input_data": {`, `"input_data": [], "x": {`},
		{"conversation_history-as-object", `"conversation_history": []`, `"conversation_history": {}`},
		{"conversation_history-item-string", `"conversation_history": []`, `"conversation_history": ["hello"]`},
		{"accumulated_context-as-string", `"accumulated_context": {`, `"accumulated_context": "x", "y": {`},
		{"decisions_made-as-null", `"decisions_made": []`, `"decisions_made": null`},
		{"flag-as-string", `"source_agent_verified": true`, `"source_agent_verified": "true"`},
		{"flag-as-number", `"target_agent_verified": true`, `"target_agent_verified": 1`},
		{"boundaries-as-null", `"boundaries_respected": true`, `"boundaries_respected": null`},
	} {
		add("i10-"+f.name, rep(b, f.old, f.new), G, S)
	}
	for _, m := range []struct{ name, old string }{
		{"handoff_id", `"handoff_id": "550e8400-e29b-41d4-a716-446655440000",`},
		{"timestamp", `"timestamp": "2026-02-11T00:45:02Z",`},
		{"protocol_version", `"protocol_version": "1.0.0",`},
		{"agent_type", `"agent_type": "domain",
    "agent_id": "domain-05-product",`},
		{"prompt_hash", `,
    "prompt_hash": "` + hashProduct + `"`},
		{"request-type", `"type": "analysis",`},
		{"constraints", `"constraints": [
        "Focus on quantitative validation",
        "Provide confidence intervals"
      ],`},
		{"input_data", `"input_data": {
        "hypothesis": "Users want feature X",
        "data_sources": ["user_interviews.json", "analytics_data.csv"]
      },`},
		{"audit_trail", `,
    "audit_trail": "handoff-log-2026-02-11-001.json"`},
		{"decisions_made", `,
      "decisions_made": []`},
	} {
		body := rep(b, m.old, "")
		if m.name == "agent_type" {
			body = rep(b, m.old, `"agent_id": "domain-05-product",`)
		}
		add("i10-missing-"+m.name, body, G, S)
	}
	add("i10-missing-governance", rep(b, `,
  "governance": {
    "source_agent_verified": true,
    "target_agent_verified": true,
    "composition_valid": true,
    "boundaries_respected": true,
    "audit_trail": "handoff-log-2026-02-11-001.json"
  }`, ""), G, S)
	add("i10-empty-object", "{}", "", P)
	add("i10-ids-only", `{"handoff_id": "550e8400-e29b-41d4-a716-446655440000"}`, G, S)
	// Malformed prompt hashes.
	for name, v := range map[string]string{
		"upper-case":   strings.ToUpper(hashProduct),
		"63-chars":     hashProduct[:63],
		"65-chars":     hashProduct + "0",
		"base64":       "5QTewI/FqH1t6spX1YeP7+kbq6vWIgcJNKtpaS9Qxp0=",
		"leading-ws":   " " + hashProduct,
		"trailing-ws":  hashProduct + " ",
		"md5-prefixed": "md5:0cc175b9c0f1b6a831c399e269772661",
		"prefix-upper": "SHA256:" + hashProduct,
		"sha512":       hashProduct + hashProduct,
		"prefix-only":  "sha256:",
		"non-hex":      "g" + hashProduct[1:],
		"empty":        "",
	} {
		add("i10-hash-"+name, rep(b, `"`+hashProduct+`"`, fmt.Sprintf("%q", v)), G, S)
	}
	// R6 bad handoff ids.
	for name, v := range map[string]string{
		"v1":          "550e8400-e29b-11d4-a716-446655440000",
		"v7":          "01890a5d-ac96-774b-bcce-b302099a8057",
		"braces":      "{550e8400-e29b-41d4-a716-446655440000}",
		"no-dashes":   "550e8400e29b41d4a716446655440000",
		"urn":         "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
		"bad-variant": "550e8400-e29b-41d4-c716-446655440000",
		"nil":         "00000000-0000-0000-0000-000000000000",
		"short":       "550e8400-e29b-41d4-a716-44665544000",
		"trailing-ws": "550e8400-e29b-41d4-a716-446655440000 ",
		"empty":       "",
		"cyrillic-a":  "550e8400-e29b-41d4-\u0430716-446655440000",
	} {
		add("r6-id-"+name, rep(b, `"550e8400-e29b-41d4-a716-446655440000"`, fmt.Sprintf("%q", v)), G, I)
	}
	// R5 bad timestamps.
	for name, v := range map[string]string{
		"lower-t":       "2026-02-11t00:45:02Z",
		"lower-z":       "2026-02-11T00:45:02z",
		"hour-24":       "2026-02-11T24:00:00Z",
		"10-fraction":   "2026-02-11T00:45:02.1234567890Z",
		"no-zone":       "2026-02-11T00:45:02",
		"date-only":     "2026-02-11",
		"space-sep":     "2026-02-11 00:45:02Z",
		"leap-second":   "2026-02-11T23:59:60Z",
		"month-13":      "2026-13-11T00:45:02Z",
		"feb-30":        "2026-02-30T00:45:02Z",
		"short-offset":  "2026-02-11T00:45:02+01",
		"compact-basic": "20260211T004502Z",
		"empty":         "",
		"epoch-digits":  "1770770702",
	} {
		add("r5-timestamp-"+name, rep(b, `"2026-02-11T00:45:02Z"`, fmt.Sprintf("%q", v)), G, T)
	}
	add("r5-timestamp-as-number", rep(b, `"2026-02-11T00:45:02Z"`, "1770770702"), G, S)
	for name, v := range map[string]string{"capitalized": "Analysis", "trailing-space": "analysis ", "unknown": "delete", "empty": ""} {
		add("request-type-"+name, rep(b, `"type": "analysis"`, fmt.Sprintf(`"type": %q`, v)), G, R)
	}
	for name, v := range map[string]string{"short": "1.0", "major-2": "2.0.0", "v-prefix": "v1.0.0"} {
		add("protocol-version-"+name, rep(b, `"protocol_version": "1.0.0"`, fmt.Sprintf(`"protocol_version": %q`, v)), G, S)
	}
	for name, v := range map[string]string{"capitalized": "Domain", "unknown": "admin", "empty": ""} {
		add("agent-type-"+name, rep(b, `"agent_type": "domain"`, fmt.Sprintf(`"agent_type": %q`, v)), G, S)
	}
	// A pre-release or build suffix is semver ("Agent versions must be valid
	// semver"): decided against the registry by the policy, not refused here.
	for name, v := range map[string]string{"two-parts": "1.0", "v-prefix": "v1.0.0", "leading-zero": "01.0.0", "four-parts": "1.0.0.0", "prerelease-leading-zero": "1.0.0-01", "empty-prerelease": "1.0.0-"} {
		add("agent-version-"+name, rep(b, `"agent_version": "1.0.0"`, fmt.Sprintf(`"agent_version": %q`, v)), G, S)
	}
	// I12 lookalike agent ids.
	for name, v := range map[string]string{
		"cyrillic-o":   "domain-05-pr\u043educt",
		"zero-width":   "domain-05-\u200bproduct",
		"bidi-rlo":     "domain-05-\u202etcudorp",
		"fullwidth":    "\uff44omain-05-product",
		"nfd-accent":   "domain-05-produe\u0301ct",
		"upper-case":   "Domain-05-Product",
		"trailing-ws":  "domain-05-product ",
		"leading-dash": "-domain-05-product",
		"underscore":   "domain_05_product",
		"path-like":    "../domain-05-product",
		"empty":        "",
	} {
		add("i12-agent-id-"+name, rep(b, `"agent_id": "domain-05-product"`, fmt.Sprintf(`"agent_id": %q`, v)), G, S)
	}
	// Detection edge: a document that is both governed/1 and vbw/1.
	add("detect-ambiguous-with-vbw-type", rep(b, `"protocol_version"`, `"type": "qa_result",
  "protocol_version"`), "", P)
	writeCorpus(t, filepath.Join(genRoot, "governed", "hostile"), expectFile{}, h)
}
