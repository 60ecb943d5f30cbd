// Package handoff parses the six handoff formats of govledger into one
// normalized Record, with the findings of each format's own rules.
//
// Parse(data, Options) is the entry point; it never returns nil and never
// panics (a parser fault becomes an UNPARSEABLE finding), and Record.Raw is
// the input. Detect names a format from content alone. An Env answers the
// file-system questions of format rules: RootEnv resolves paths inside one
// directory through an os.Root and records every Observation it returns;
// NewReplayEnv answers from such a record, so a decision can be
// re-evaluated later without the files. SeedError and StopMessage render a
// rejection in the shapes seeds 000 and 002 prescribe.
//
// Governance rules (registry, lock, boundaries, attestation truth, replay,
// blocked agents, clock skew, staleness) are not checked here: they belong
// to the policy, which reads the Record's normalized fields.
//
// # Carriers
//
// JSON (governed/1, vbw/1, a2a/1) is read by internal/strictjson: exactly one value,
// no byte order mark, no duplicate names, valid UTF-8 with no lone
// surrogates, numbers within +-(2^53-1), names matched exactly. YAML
// (swarm/2, skill/1, task/1) is read as a yaml.Node tree and refused when
// it holds an anchor, an alias, an explicit tag, a merge key "<<", a
// duplicate or non-string key, a second document, an integer not in
// decimal notation, a number outside +-(2^53-1), or a value of a type
// other than string, integer, float, boolean, null or timestamp. A UTF-8
// byte order mark before a YAML document or a markdown file (task/1, vbw/1
// markdown) is skipped: YAML 1.2 allows one at the start of a stream.
// Both carriers refuse nesting deeper than MaxDepth (32). A document that is
// not valid UTF-8 anywhere is refused before any field is read. Carrier
// failures are UNPARSEABLE; schema failures SCHEMA_INVALID. A document whose
// only carrier fault is numbers outside +-(2^53-1) is UNPARSEABLE (one
// finding per number) but its fields are still read, so its agents, handoff
// id and workflow reach the Record (and the ledger's indexes) while it stays
// rejected; a document with any other carrier fault yields no field. A plain YAML
// scalar that resolves to a non-string (2.0, 2026-02-04, yes is a string in
// YAML 1.2 but true is not) where text is required is SCHEMA_INVALID; only
// timestamp fields accept an unquoted YAML timestamp.
//
// # Unknown fields
//
//	format      unknown members                      why
//	governed/1  SCHEMA_INVALID at every level        the governed format is a closed schema
//	            except the free-form values          (input_data, accumulated_context,
//	                                                 conversation_history and decisions_made items)
//	swarm/2     ignored                              seed 000: "Target skills MUST ignore unknown fields"
//	skill/1     SCHEMA_INVALID for version "1.0";    seed 002: a higher version's unknown fields are
//	            ignored for a higher version, which  ignored and a warning logged (NEWER_VERSION)
//	            gives NEWER_VERSION (warning)
//	vbw/1       SCHEMA_INVALID                       seed 001 lists every field of each message type
//	task/1      SCHEMA_INVALID                       seed 004 lists every field and "enforces" the schema
//	a2a/1       SCHEMA_INVALID except the free-form  A2A 0.3.0 lists every member of a Message,
//	            values (metadata, DataPart data)     Part and SendMessageRequest
//
// # Detection
//
// Detect applies six content rules (see its documentation) and accepts
// exactly one match; a file name is never consulted. A swarm/2 or skill/1
// document without its source field is still attributed by its other
// members (swarm/2: handoff.source, target, context, meta, ...; skill/1:
// handoff.target_skill, a top-level deliverable or quality), so it is
// refused naming the missing field. When nothing matches, Parse falls back
// to vbw/1 markdown only if Options.From or Options.To is given and the
// text is prose: text that starts with "{" (or "[" and is JSON), or has a
// line of a swarm/2 or skill/1 document (handoff:, source_skill:,
// target_skill:, session_path:, deliverable:) is UNKNOWN_FORMAT, and text
// with a heading that is almost "## Handoff" (another level or case) or a
// top-level "outcome:" line is judged as task/1 (and refused), so that a
// broken document of one format never passes as valid prose. The fallback
// gives MARKDOWN_FALLBACK, a warning, or an error under Options.Strict.
// Otherwise no match is UNKNOWN_FORMAT (its message lists every format
// considered and why it did not match), and bytes that are no text at all
// (empty, invalid UTF-8, control characters) are UNPARSEABLE with Format "".
//
// # Messages
//
// A finding names the field (a dotted path, "[i]" for list items), its
// position and the rule broken, with the allowed values or form; it never
// copies a value of the document (findings are kept in the ledger when the
// payload is redacted). A member name of the document appears in a path
// only when it has the shape of a field name ([A-Za-z0-9_][A-Za-z0-9_-]*, at
// most 64 bytes); any other name is written "<key>".
//
// # Rules per format
//
// governed/1 (seed 003): every field of the five blocks is required and no
// other field is allowed (the seed's "canonical structure" is closed: a
// trace_id or workflow_id is SCHEMA_INVALID, the error says so).
// handoff_id is a UUID version 4, RFC 4122 variant, in its 36-character
// form with hex digits in either case (RFC 4122: "case insensitive on
// input"; else INVALID_ID), recorded in lower case; timestamp is RFC 3339
// with upper-case T and Z, at most 9 fraction digits (else
// INVALID_TIMESTAMP); protocol_version is "1.0.0"; agent_type is
// domain|archetype|orchestrator; agent_id matches [a-z0-9][a-z0-9-]* (so
// homoglyphs, zero-width and bidi characters fail); agent_version is a
// semantic version as the manifest accepts it (manifest.CheckVersion:
// MAJOR.MINOR.PATCH with optional pre-release and build); prompt_hash is 64
// lower-case hex digits, bare or after "sha256:"; context.request.type is
// query|task|analysis|decision (else INVALID_REQUEST_TYPE); description and
// expected_output are strings, constraints a list of strings, input_data a
// mapping or string; conversation_history and decisions_made are lists of
// mappings, accumulated_context a mapping; governance holds four booleans
// and audit_trail. Record.Attestation carries the governance block.
//
// swarm/2 (seed 000): handoff.version "2.0", or "1.0" (seed 000: "v1.0
// payloads are still valid"), whose target.skill must be lit-pm (v1.0 was
// hard-coded to it); timestamp (and expires_at if
// present) RFC 3339; source.skill "perspective-swarm"; source.session_path
// a non-empty path that the Env finds to be a readable directory
// (SESSION_UNREADABLE, PATH_ESCAPE); target.skill a non-empty agent id;
// context.original_prompt non-empty; context.problem_type
// decision|creative|analytical|strategic. expires_at defaults to timestamp
// + 1h and must not be before Options.Now (EXPIRED). meta.perspectives_completed,
// when present, equals the number of entries of the session directory whose
// names match PerspectivePattern ("perspective-*.md", top level only)
// (PERSPECTIVE_COUNT); meta.convergence_level is high|medium|low|none;
// handoff_chain defaults to ["perspective-swarm"] and a chain holding the
// target gives HANDOFF_LOOP (warning). meta.payload_hash (64 lower-case hex
// digits, bare or after "sha256:")
// and meta.payload_size_bytes, when present, describe SwarmPreimage (the
// document without its payload_hash and payload_size_bytes lines; see
// SwarmPreimage for the grep/sha256sum recipe): CHECKSUM_MISMATCH,
// PAYLOAD_SIZE. The optional insights, research_seeds and meta fields are
// type-checked when present. Source = source.skill, Target = target.skill,
// WorkflowID = source.workflow_id, no HandoffID. The target skill's own
// rules (requires:, target.category against handoff_categories) need the
// registry: the policy applies them, through Record.Text and HasValue.
//
// skill/1 (seed 002): handoff.version, source_skill, target_skill,
// timestamp, workflow_id; deliverable.type document|data|analysis,
// location, format markdown|json|yaml, summary of at least 50 runes,
// checksum (64 lower-case hex digits as sha256sum prints them, bare or
// after "sha256:"); context.original_goal, completed_skills (non-empty);
// quality.completion_status complete|partial|failed, confidence
// high|medium|low. The lists focus_areas, known_gaps, open_questions and
// warnings are optional (seed 002 marks only the handoff block "Required
// fields"), type-checked when present. The Env must
// find deliverable.location to be a readable regular file
// (DELIVERABLE_MISSING, PATH_ESCAPE) whose SHA-256 equals the checksum
// (CHECKSUM_MISMATCH). A version above "1.0" gives NEWER_VERSION (warning).
//
// vbw/1 (seed 001): "type" is one of the five message types, each with its
// required fields and enumerations (scout_findings domain and cross_cutting
// target_domain tech-stack|architecture|quality|concerns; relevance and
// confidence high|medium|low; dev_progress commit 7-40 lower-case hex,
// status complete|partial|failed, task "plan-id/task-name" whose plan-id is
// plan_id; qa_result tier quick|standard|deep, result PASS|FAIL|PARTIAL;
// debugger_report recommended_fix "Insufficient evidence" when confidence is
// low and a fix, not that, when it is high). Record.MessageType is the
// type; the policy checks the sender and receiver roles (VBWSenders,
// VBWReceivers, VBWReceiver) against the registry. qa_result counts are non-negative integers with
// passed+failed == total; PASS has no failed check and no failure details;
// FAIL has a failed check; there are no more failure details than failed
// checks (COUNTS_INCONSISTENT; failed checks without details is a warning).
// Agents come from Options.From/To (AGENTS_REQUIRED when missing);
// WorkflowID is plan_id where the type has one.
//
// task/1 (seed 004): the section after the only "## Handoff" heading
// outside code fences, up to the next heading or "---" line; its YAML is
// the section's first fenced code block (``` or ~~~ of any length, CommonMark
// rules, marked yaml, yml or unmarked; prose may come before it), or the
// whole section as bare YAML when it has no fence. outcome
// completed|partial|failed|blocked; partial
// needs blockers and suggested_next_steps, failed needs blockers with
// suggested_resolution, blocked needs blockers with blocking_tasks. Every
// path (files_created/files_modified path, dependencies_for_next file) is
// relative and stays inside the root (PATH_ESCAPE), also through symbolic
// links when the Env finds the path; lines is "N-M" with 1 <= N <= M, or
// "all"; applies_to tags are lower-case and hyphenated; change_type,
// severity and priority are enumerations; blocking is a boolean. Agents
// come from Options.From/To; WorkflowID is the ID of a "# Task ID: Name"
// title; there is no HandoffID.
//
// a2a/1 (A2A specification 0.3.0, A2AVersion): a Message (kind
// "message"; role user|agent; parts of kind text, file or data, a file
// holding base64 bytes or a uri, not both; messageId; optional contextId,
// taskId, referenceTaskIds, extensions, metadata) or a JSON-RPC
// SendMessageRequest carrying one (jsonrpc "2.0", id string or number,
// method message/send or message/stream, params {message, configuration,
// metadata}). HandoffID is messageId (1 to MaxFieldLen bytes, not blank,
// no control characters; else INVALID_ID), WorkflowID contextId (same
// rule; else SCHEMA_INVALID). The agents are metadata.govledger.source and
// .target (A2AMetadataKey), or Options.From and To; both must agree where
// both name one, and an agent named by neither is AGENTS_REQUIRED.
// metadata.govledger.source_prompt_hash and target_prompt_hash, when
// present, fill AgentRef.PromptHash for the policy. A document in A2A
// 1.0's shape (ROLE_USER, SendMessage, parts without kind) is refused
// saying so.
//
// # Paths
//
// Paths in documents are resolved by the Env against its root. Lexically,
// before any Env, a path must be non-empty and free of control characters
// and backslashes, not a URL, and inside the root after cleaning; task/1
// also refuses absolute paths. swarm/2 and skill/1 accept an absolute path
// only when it lies under the Env's root. With a nil Env the file-system
// rules (existence, readability, checksums, perspective count, symbolic
// link escape) are skipped and report nothing; lexical rules still apply.
// The corpus in testdata/handoffs uses that directory as its root.
//
// # Normalized fields
//
// A Record field is filled only from a value that passed its format's rule
// for it and is valid UTF-8 of at most MaxFieldLen bytes; otherwise it is
// "" (so a look-alike agent id, an upper-case hash or an invalid handoff id
// never reaches the policy or the ledger as if it were meaningful).
package handoff
