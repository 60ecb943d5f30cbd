package handoff_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/govledger/govledger/handoff"
)

// A2A 0.3.0 documents (a2aproject/A2A v0.3.0, types/src/types.ts): a
// Message, and the same message in a SendMessageRequest.
var (
	a2aMessage = `{
  "kind": "message",
  "messageId": "9229e770-767c-417b-a0b0-f0741243c589",
  "contextId": "ctx-route-planning-001",
  "role": "user",
  "parts": [
    {
      "kind": "text",
      "text": "Plan a route from the depot to the airport, avoiding tolls."
    },
    {
      "kind": "data",
      "data": {"origin": {"lat": 37.422, "lng": -122.084}, "preferences": ["avoid_tolls"]}
    }
  ],
  "metadata": {
    "govledger": {"source": "planner", "target": "router"}
  }
}
`
	a2aRequest = `{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "message/send",
  "params": {
    "message": {
      "role": "user",
      "parts": [
        {"kind": "text", "text": "Summarise the attached incident report."},
        {"kind": "file", "file": {"name": "incident.txt", "mimeType": "text/plain", "bytes": "aW5jaWRlbnQ6IGRpc2sgZnVsbAo="}}
      ],
      "messageId": "6dbc13b5-bd57-4c2b-b503-24e381a3d1f1",
      "contextId": "ctx-incident-42",
      "taskId": "task-7",
      "referenceTaskIds": ["task-3"],
      "extensions": ["https://example.com/ext/priority/v1"],
      "metadata": {"govledger": {"source": "planner", "target": "router"}},
      "kind": "message"
    },
    "configuration": {
      "acceptedOutputModes": ["text/plain"],
      "historyLength": 5,
      "blocking": true,
      "pushNotificationConfig": {"url": "https://client.example.com/hook", "token": "t", "authentication": {"schemes": ["Bearer"]}}
    },
    "metadata": {}
  }
}
`
)

func generateA2A(t *testing.T) {
	A := handoff.A2A
	S, U, P, I, G := "SCHEMA_INVALID", "UNPARSEABLE", "UNKNOWN_FORMAT", "INVALID_ID", "AGENTS_REQUIRED"
	noMeta := rep(a2aMessage, `,
  "metadata": {
    "govledger": {"source": "planner", "target": "router"}
  }`, "")
	valid := []doc{
		{name: "message.json", body: a2aMessage, format: A},
		{name: "send-message-request.json", body: a2aRequest, format: A},
		{name: "message-stream-request.json", body: rep(a2aRequest, `"message/send"`, `"message/stream"`), format: A},
		{name: "agents-from-request.json", body: noMeta, format: A},
		{name: "file-uri.json", body: rep(a2aRequest, `"bytes": "aW5jaWRlbnQ6IGRpc2sgZnVsbAo="`, `"uri": "https://files.example.com/incident.txt"`), format: A},
		{name: "string-request-id.json", body: rep(a2aRequest, `"id": 1`, `"id": "req-1"`), format: A},
		{name: "minimal.json", format: A, body: `{"kind": "message", "messageId": "m-1", "role": "agent", "parts": [{"kind": "text", "text": "done"}]}`},
		{name: "prompt-hashes.json", format: A, body: rep(a2aMessage, `"target": "router"}`, `"target": "router", "target_prompt_hash": "sha256:`+hashProduct+`"}`)},
	}
	// The folder's from/to agree with the metadata of the documents.
	writeCorpus(t, filepath.Join(genRoot, "a2a", "valid"), expectFile{From: "planner", To: "router"}, valid)

	var h []doc
	add := func(name, body string, format handoff.Format, codes ...string) {
		h = append(h, doc{name: name + ".json", body: body, format: format, codes: codes})
	}
	add("kind-not-message", rep(a2aMessage, `"kind": "message"`, `"kind": "task"`), A, S)
	add("role-invalid", rep(a2aMessage, `"role": "user"`, `"role": "system"`), A, S)
	add("role-a2a-1.0", rep(a2aMessage, `"role": "user"`, `"role": "ROLE_USER"`), A, S)
	add("missing-message-id", rep(a2aMessage, `"messageId": "9229e770-767c-417b-a0b0-f0741243c589",`, ``), A, S)
	add("message-id-blank", rep(a2aMessage, `"9229e770-767c-417b-a0b0-f0741243c589"`, `"  "`), A, I)
	add("message-id-control", rep(a2aMessage, `"9229e770-767c-417b-a0b0-f0741243c589"`, `"m\u001b[2J"`), A, I)
	add("context-id-number", rep(a2aMessage, `"ctx-route-planning-001"`, `42`), A, S)
	add("missing-parts", rep(a2aMessage, `"parts": [`, `"x-parts": [`), A, S)
	add("part-kind-invalid", rep(a2aMessage, `"kind": "data"`, `"kind": "json"`), A, S)
	add("part-without-kind", rep(a2aMessage, `"kind": "text",`, ``), A, S)
	add("text-not-string", rep(a2aMessage, `"text": "Plan a route from the depot to the airport, avoiding tolls."`, `"text": ["Plan"]`), A, S)
	add("data-not-object", rep(a2aMessage, `"data": {"origin": {"lat": 37.422, "lng": -122.084}, "preferences": ["avoid_tolls"]}`, `"data": "origin"`), A, S)
	add("file-bytes-and-uri", rep(a2aRequest, `"bytes": "aW5jaWRlbnQ6IGRpc2sgZnVsbAo="`, `"bytes": "aW5j", "uri": "https://x.example/f"`), A, S)
	add("file-bytes-not-base64", rep(a2aRequest, `"aW5jaWRlbnQ6IGRpc2sgZnVsbAo="`, `"not base64!"`), A, S)
	add("unknown-member", rep(a2aMessage, `"role": "user",`, `"role": "user", "approved": true,`), A, S)
	add("unknown-part-member", rep(a2aMessage, `"kind": "text",`, `"kind": "text", "lang": "en",`), A, S)
	add("jsonrpc-version", rep(a2aRequest, `"jsonrpc": "2.0"`, `"jsonrpc": "1.0"`), A, S)
	add("method-other", rep(a2aRequest, `"message/send"`, `"tasks/get"`), A, S)
	add("method-a2a-1.0", rep(a2aRequest, `"message/send"`, `"SendMessage"`), A, S)
	add("request-without-id", rep(a2aRequest, `"id": 1,`, ``), A, S)
	add("request-id-null", rep(a2aRequest, `"id": 1,`, `"id": null,`), A, S)
	add("params-without-message", rep(a2aRequest, `"message": {`, `"msg": {`), A, S)
	add("history-length-negative", rep(a2aRequest, `"historyLength": 5`, `"historyLength": -1`), A, S)
	add("push-config-without-url", rep(a2aRequest, `"url": "https://client.example.com/hook", `, ``), A, S)
	add("metadata-source-not-canonical", rep(a2aMessage, `"source": "planner"`, `"source": "Planner"`), A, S)
	add("metadata-govledger-not-object", rep(a2aMessage, `{"source": "planner", "target": "router"}`, `"planner->router"`), A, S)
	add("metadata-unknown-govledger-member", rep(a2aMessage, `"target": "router"}`, `"target": "router", "approved": true}`), A, S)
	add("prompt-hash-upper-case", rep(a2aMessage, `"target": "router"}`, `"target": "router", "source_prompt_hash": "`+strings.ToUpper(hashProduct)+`"}`), A, S)
	add("agents-contradict-request", rep(a2aMessage, `"target": "router"`, `"target": "billing"`), A, S)
	h = append(h, doc{name: "no-agents.json", body: noMeta, format: A, codes: []string{G}, noAgents: true})
	add("i1-duplicate-message-id", rep(a2aMessage, `"contextId"`, `"messageId": "x", "contextId"`), A, U)
	add("i1-duplicate-kind", rep(a2aMessage, `"role"`, `"kind": "message", "role"`), A, U)
	add("i3-trailing-data", a2aMessage+`{"kind": "message"}`, A, U)
	add("i3-truncated-json", a2aMessage[:70], A, U)
	add("i3-bom", "\xef\xbb\xbf"+a2aMessage, A, U)
	add("i4-invalid-utf8", rep(a2aMessage, "depot", "dep\xffot"), A, U)
	add("i5-huge-number", rep(a2aMessage, `"lat": 37.422`, `"lat": 9007199254740993`), A, U)
	add("i5-huge-request-id", rep(a2aRequest, `"id": 1`, `"id": 18446744073709551616`), A, U)
	// Detection stays unambiguous: a document with members of two formats
	// is refused, never read as either.
	add("ambiguous-governed", rep(a2aMessage, `"role": "user",`, `"role": "user", "handoff_id": "550e8400-e29b-41d4-a716-446655440000",`), "", P)
	add("ambiguous-vbw", rep(a2aMessage, `"role": "user",`, `"role": "user", "type": "dev_progress",`), "", P)
	add("kind-case-variant", rep(noMeta, `"messageId": "9229e770-767c-417b-a0b0-f0741243c589",`, `"MessageID": "9229e770-767c-417b-a0b0-f0741243c589",`), A, S)
	writeCorpus(t, filepath.Join(genRoot, "a2a", "hostile"), expectFile{From: "planner", To: "router"}, h)
}
