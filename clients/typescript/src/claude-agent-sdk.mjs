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
// prompt that led to it, so a call retried or resumed is the same document.

import { open } from "node:fs/promises";
import { HandoffRefused } from "./governor.mjs";

const AGENT_TOOLS = new Set(["Agent", "Task"]);

/**
 * When the prompt that led to the call was submitted: the timestamp of the
 * first transcript line of prompt promptId (or, without one, of the first
 * timestamped line: the session's start). Claude Code writes that line when
 * the prompt arrives, before any tool call it leads to, and never rewrites
 * it, so every retry or resume of the call reads the same time.
 */
async function promptTime(path, promptId) {
  let f;
  try {
    f = await open(path);
  } catch {
    return undefined;
  }
  try {
    const needle = promptId ? JSON.stringify(promptId) : '"timestamp"';
    for await (const line of f.readLines()) {
      if (!line.includes(needle)) continue;
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        continue;
      }
      if (promptId && rec?.promptId !== promptId) continue;
      const d = new Date(rec?.timestamp);
      if (!Number.isNaN(d.getTime())) return d;
    }
  } finally {
    await f.close();
  }
  return undefined;
}

async function callTime(input, signal, waitMs) {
  for (const deadline = Date.now() + waitMs; ;) {
    const t = input.transcript_path ? await promptTime(input.transcript_path, input.prompt_id) : undefined;
    if (t) return t;
    if (Date.now() > deadline || signal?.aborted) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new HandoffRefused(`govledger: the session transcript ${input.transcript_path ?? "(none)"} has no line of prompt ${input.prompt_id ?? "(none)"} (session persistence off?): the handoff cannot be dated reproducibly, so it does not run`);
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
 *   mode?: "abort"|"refuse", defaultSubagent?: string, outcomes?: boolean, transcriptWaitMs?: number}} [options]
 *   transcriptWaitMs: how long to wait for the prompt's line to reach the transcript (default 10000).
 */
export function claudeHooks(gov, { agents = {}, main = { name: "main" }, mode = gov.mode, defaultSubagent = "general-purpose", outcomes = true, transcriptWaitMs = 10_000 } = {}) {
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
      const when = await callTime(input, signal, transcriptWaitMs);
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
