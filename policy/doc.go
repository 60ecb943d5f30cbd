// Package policy takes govledger's governance decision: given the agent
// registry, the prompt lock, a submitted handoff document, the ledger's
// derived state and the entry's time, it decides whether the handoff is
// accepted or rejected, and why.
//
// # Model
//
//   - Params are the caller's settings (--format, --from/--to, --strict,
//     --max-age, --max-payload). Inputs are Params plus the file-system
//     Observations the format rules needed; both are recorded in the ledger
//     entry (Entry.Inputs) so that verify can re-run the decision.
//   - Input is everything a decision depends on. State is the slice of the
//     ledger a decision reads (accepted handoff IDs, blocked agents,
//     snapshots in force); nil means an empty ledger.
//   - Decide returns a Decision: accepted or rejected, the reasons in a
//     deterministic order, the parsed handoff Record and the agents the
//     decision blocks.
//   - Decision.Fill writes the decision into a ledger entry of kind
//     "handoff".
//
// # Guarantees
//
// Decide does no I/O, reads no clock and no environment, and never iterates
// a map: the same Input gives a deep-equal Decision, which is what lets
// verify replay a ledger. File-system facts come only from the recorded
// Observations (handoff.NewReplayEnv); with none recorded, the formats'
// file-system rules are skipped (a nil handoff.Env), which is also how a
// document is decided without a root folder.
//
// Every reason has a stable code (package reason), a severity, the dotted
// path of the field it concerns in the document's own format ("" for the
// whole document or for agents given by --from/--to), and a message.
//
// A reason is stored in its ledger entry for good, and redacting a payload
// removes the payload's bytes, not the entry. So a message names fields and
// constraints (the field path, the expected form, the allowed values, a
// length or count, a duration) and values of the registry and the lock
// (registered agent ids, versions, locked hashes, allowed targets,
// categories), never a value taken from the submitted document: not a
// rejected id, hash, version, timestamp, path or enum value, and not an
// agent id unless it is registered. Hashes the ledger computed (of the
// payload, of a deliverable) and file-system errors may be named; member
// names appear in field paths (as handoff words them: only when they have
// the shape of a field name). Registry values are Go-quoted with only
// ASCII and cut to 128 bytes.
// TestReasonsNeverCopyValues holds every format to this.
//
// # Rules
//
// In order (the order of the reasons, within one severity):
//
//  1. PAYLOAD_TOO_LARGE (error): more than Params.MaxPayload bytes (0: no
//     limit). Nothing else is checked and the Record is nil.
//  2. The format's own findings (handoff.Parse).
//  3. For each agent the document names (source, then target):
//     UNKNOWN_AGENT (error) if it is not in the registry (a case-insensitive
//     near miss is named: IDs are canonical, there are no aliases);
//     TYPE_MISMATCH (error) if the document's agent_type differs from the
//     registry; VERSION_MISMATCH (error) if the document's agent_version
//     differs from the registry's or from the lock entry's, or if the lock
//     entry's version differs from the registry's (a stale lock);
//     HASH_MISMATCH if the document's prompt_hash (bare hex or "sha256:hex",
//     both compare equal; only governed/1 carries one) differs from the lock
//     entry. It is critical, and the agent is added to Decision.Blocks, for
//     the source's own hash, and for the target's only when the handoff is
//     attributable: the source is registered, in the lock, quotes its own
//     prompt_hash as locked, is allowed to hand off to the target
//     (Registry.Allows) and is not blocked. Otherwise the target's mismatch
//     is an error, blocks nobody, and its message says which of these
//     failed: a document from an unknown, out-of-bounds or blocked source,
//     or one that misquotes its own hash, cannot block its target (prompt
//     hashes are not secret, so this confines blocks; it does not
//     authenticate the sender);
//     HASH_MISMATCH (error, no block) if the agent has no lock entry: its
//     prompt was never reviewed, whatever the format (this rule applies to
//     formats that carry no hash too);
//     AGENT_BLOCKED (error) if State says an earlier entry blocked it.
//  4. COMPOSITION_INVALID (error): a source or target archetype whose
//     composition is empty, names an agent that is not a registered domain,
//     names one twice, has a percent outside 1..100, or does not sum to 100.
//  5. INELIGIBLE_TARGET (error) when the target skill does not declare
//     accepts_handoff: true (seed 000): for swarm/2 in any kind of
//     registry, and for every format in a registry loaded from skills.
//  6. BOUNDARY_VIOLATION (error) when manifest.Registry.Allows refuses the
//     pair (deny by default); the message lists the targets the source may
//     hand off to. Not reported for a target already INELIGIBLE_TARGET.
//  7. swarm/2 only, for an eligible target skill: REQUIRES_MISSING (error)
//     for each field its requires: names (relative to handoff) that the
//     payload has no value for (absent, null, blank, empty list or
//     mapping); CATEGORY_MISMATCH (error) when target.category is given and
//     is not one of its handoff_categories (exact string comparison).
//  8. vbw/1 typed messages only, when the registry declares vbw_role for
//     any agent: ROLE_MISMATCH (error) when the source's vbw_role is not
//     the sender seed 001 names for the message type (scout_findings:
//     scout; dev_progress, dev_blocker: dev; qa_result: qa;
//     debugger_report: debugger) or the target's is not its receiver
//     (scout_findings: map-lead; dev_progress, dev_blocker: execute-lead;
//     qa_result: execute-lead or qa-lead; debugger_report: debug-lead) nor
//     lead, any lead.
//  9. governed/1 only: INVALID_REQUEST_TYPE (error) when the target declares
//     request_types and context.request.type is not one of them; the message
//     lists the source's allowed targets that accept that type.
//  10. REPLAY (error) when State holds an accepted entry with the same
//     handoff_id and the same payload SHA-256 (the message names its seq);
//     ID_CONFLICT (error) when the payload differs (seq and both hashes).
//  11. CLOCK_SKEW (error) when the document's timestamp is more than
//     MaxClockSkew (5 minutes) after Input.Now; STALE (error) when it is more
//     than Params.MaxAge before it (0: no limit). Exactly at either bound is
//     accepted. A timestamp that is not RFC 3339 gives INVALID_TIMESTAMP
//     (error) unless the format already reported one. A zero Input.Now skips
//     these checks.
//  12. governed/1 only: ATTESTATION_MISMATCH. The governance block is a
//     claim. A claim of true that a check refuted is an error:
//     source_agent_verified / target_agent_verified (the agent is unknown,
//     unlocked, blocked, or has a type, version or hash mismatch),
//     composition_valid (COMPOSITION_INVALID), boundaries_respected
//     (BOUNDARY_VIOLATION or INVALID_REQUEST_TYPE). A claim of false for a
//     check that ran and passed is a warning (the sender's view of the
//     registry differs from the ledger's; the handoff itself is sound).
//     A claim about a check that could not run is neither confirmed nor
//     refuted: composition and boundaries when an agent is unknown, and an
//     agent whose agent_type, agent_version or prompt_hash the format
//     already rejected (SCHEMA_INVALID) but that no other check refuted.
//
// Reasons are then ordered by severity (critical, error, warning), keeping
// the order above within a severity, and the decision is reason.Decide.
package policy
