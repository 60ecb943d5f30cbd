// Package manifest loads and validates govledger's agent registry: a
// prompt-manifest.json file, a folder of */SKILL.md skills whose front
// matter declares a handoff block (seed 000), or a Claude Code subagents
// folder (.claude/agents/*.md, ParseSubagents).
//
// The types:
//
//   - Registry: the validated agents, the folder their prompt paths are
//     relative to, and the Snapshot bytes the ledger records.
//   - Agent, Component: one agent; one share of an archetype's composition.
//   - Error, ErrorList: every problem found, each at file:line:col and field.
//
// The entry points are split by what they touch:
//
//   - Parse (manifest bytes), ParseSkill and ParseSkills (SKILL.md bytes) and
//     ParseSnapshot (Registry.Snapshot bytes) are lexical: bytes in, a
//     Registry or an ErrorList out, no file system access. They enforce
//     every rule the bytes decide.
//   - Load reads a manifest file or a skills folder, then checks through an
//     os.Root that no prompt path leaves the registry folder by a symbolic
//     link and that each names a regular file.
//
// Rules (docs/reference/files.md, "Field reference"): manifest_version is 1; agent_id
// matches ^[a-z0-9][a-z0-9-]*$, is at most MaxIDLength bytes and unique
// (also ignoring case); agent_type is domain, archetype or orchestrator;
// agent_version is a semantic version without "v" (pre-release and build
// allowed: governed/1 handoffs accept the same versions); only archetypes
// have a composition, and every archetype has one, naming distinct existing
// domain agents with integer percents from 1 to 100 summing to exactly 100;
// handoff_to names existing agents other than the agent itself, once each;
// request_types are among query, task, analysis, decision; vbw_role
// (optional) is one of VBWRoles, the roles of seed 001's messages, and a
// registry that declares it for any agent opts in to the policy's sender
// and receiver check for vbw/1 (a SKILL.md or a subagent file declares it
// at the top of its front matter); prompt_path is a
// relative, clean, slash-separated ASCII path (no "..", no absolute path,
// no backslash, no NUL) and no two agents' paths differ only by case.
// Unknown fields, duplicate names, trailing data, invalid UTF-8, a byte
// order mark and numbers outside +-(2^53-1) are errors (internal/strictjson).
//
// Skills folders: see ParseSkills and the comment at the top of skills.go
// for how a SKILL.md becomes an agent.
package manifest
