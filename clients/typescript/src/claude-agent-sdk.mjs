// @anthropic-ai/claude-agent-sdk adapter: hook callbacks for query()'s
// options.hooks. PreToolUse on the Agent (Task) tool is a handoff from the
// calling agent (the subagent the hook fires in, or the main session) to
// subagent_type, decided by the ledger before the subagent runs;
// SubagentStop records the outcome of that handoff.
//
//   import { claudeHooks } from "govledger/claude-agent-sdk";
//   const gl = claudeHooks(gov, { agents, main: { name: "triage", instructions: SYSTEM_PROMPT } });
//   for await (const m of query({ prompt, options: { agents, systemPrompt: SYSTEM_PROMPT, hooks: gl.hooks } })) …
//   if (gl.error) throw gl.error;   // abort mode: why the session stopped
//
// The instructions hashed are each subagent's AgentDefinition.prompt (what
// the SDK gives it) and the main session's instructions. The run is the
// session; the step is the tool_use_id, dated by the transcript line of the
// tool call, so a call retried or resumed is the same document.

import { open } from "node:fs/promises";
import { HandoffRefused } from "./governor.mjs";

const AGENT_TOOLS = new Set(["Agent", "Task"]);
const TRANSCRIPT_WAIT_MS = 3000;

/** The time of the transcript line holding tool_use id, or undefined. */
async function transcriptTime(path, id) {
  let f;
  try {
    f = await open(path);
  } catch {
    return undefined;
  }
  try {
    const needle = JSON.stringify(id);
    for await (const line of f.readLines()) {
      if (!line.includes(needle)) continue;
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        continue;
      }
      const content = rec?.message?.content;
      if (Array.isArray(content) && content.some((b) => b?.type === "tool_use" && b.id === id) && rec.timestamp) {
        const d = new Date(rec.timestamp);
        if (!Number.isNaN(d.getTime())) return d;
      }
    }
  } finally {
    await f.close();
  }
  return undefined;
}

async function toolUseTime(input, signal) {
  const paths = [input.transcript_path];
  if (input.agent_id && input.transcript_path) paths.push(input.transcript_path.replace(/\.jsonl$/, "") + `/subagents/agent-${input.agent_id}.jsonl`);
  // Claude Code writes the tool call's line around the time it runs the hook: look again for a moment.
  for (const deadline = Date.now() + TRANSCRIPT_WAIT_MS; ;) {
    for (const p of paths) {
      if (!p) continue;
      const t = await transcriptTime(p, input.tool_use_id);
      if (t) return t;
    }
    if (Date.now() > deadline || signal?.aborted) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new HandoffRefused(`govledger: the session transcript has no tool_use ${input.tool_use_id} (session persistence off?): the handoff cannot be dated reproducibly, so it does not run`);
}

/**
 * Hooks for query()'s options.hooks, and the error that stopped the session
 * (abort mode). Accepted: the hook has no objection (the SDK's permission
 * rules decide as usual). Refused (refuse mode): permissionDecision "deny"
 * with the reasons, which the model reads; the session goes on. Abort mode:
 * the same denial, and the session stops (continue: false) with the reason;
 * error holds the typed error. Any failure of the hook (an unreachable
 * ledger, a transcript without the call) denies: the callback never throws,
 * so the SDK's default of letting a failed hook's tool call go ahead never
 * applies.
 * @param {import("./governor.mjs").Governor} gov
 * @param {{agents?: Record<string, {prompt?: string}>, main?: {name: string, instructions?: string},
 *   mode?: "abort"|"refuse", defaultSubagent?: string, outcomes?: boolean}} [options]
 */
export function claudeHooks(gov, { agents = {}, main = { name: "main" }, mode = gov.mode, defaultSubagent = "general-purpose", outcomes = true } = {}) {
  const state = { error: undefined, errors: [], pending: new Map(), outcomes: [] };
  const instructionsOf = (name) => (name === main.name && !(name in agents) ? main.instructions : agents[name]?.prompt);

  async function preToolUse(input, _toolUseID, { signal } = {}) {
    if (input?.hook_event_name !== "PreToolUse" || !AGENT_TOOLS.has(input.tool_name)) return {};
    const deny = (reason, stop) => ({
      ...(stop ? { continue: false, stopReason: reason } : {}),
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: reason },
    });
    try {
      const ti = input.tool_input ?? {};
      const source = input.agent_type || main.name;
      const target = ti.subagent_type || defaultSubagent;
      const when = await toolUseTime(input, signal);
      const g = await gov.gate({ run: { id: input.session_id }, stepTime: when, step: `${source}>${target}/${input.tool_use_id}`, mode: "refuse",
        source: { name: source, instructions: instructionsOf(source) }, target: { name: target, instructions: instructionsOf(target) },
        request: { description: ti.description, input: ti.prompt ?? "" } });
      if (g.allowed) {
        state.pending.set(`${input.session_id}/${target}`, [...(state.pending.get(`${input.session_id}/${target}`) ?? []),
          { run: { id: input.session_id }, step: `${source}>${target}/${input.tool_use_id}`, result: g.result, started: Date.now() }]);
        return {};
      }
      state.errors.push(g.error);
      if (mode === "abort") state.error ??= g.error;
      return deny(g.refusal, mode === "abort");
    } catch (e) {
      state.errors.push(e);
      if (mode === "abort") state.error ??= e;
      return deny(`Handoff refused: govledger could not decide it (${e?.message ?? e}).`, mode === "abort");
    }
  }

  async function subagentStop(input) {
    if (!outcomes || input?.hook_event_name !== "SubagentStop") return {};
    const key = `${input.session_id}/${input.agent_type}`;
    const queue = state.pending.get(key) ?? [];
    const decided = queue.shift();
    if (!decided) return {};
    try {
      state.outcomes.push(await gov.outcome(decided, { status: "succeeded", output: input.last_assistant_message ?? "", durationMs: Date.now() - decided.started }));
    } catch (e) {
      state.errors.push(e); // the subagent already ran: nothing to stop, the caller sees it in errors
    }
    return {};
  }

  return {
    hooks: {
      PreToolUse: [{ matcher: "Agent|Task", hooks: [preToolUse] }],
      SubagentStop: [{ hooks: [subagentStop] }],
    },
    get error() { return state.error; },
    get errors() { return state.errors; },
    /** The outcomes recorded (POST /v1/outcomes answers), in order. */
    get outcomes() { return state.outcomes; },
    preToolUse,
    subagentStop,
  };
}
