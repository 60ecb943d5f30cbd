// @openai/agents adapter: every handoff of the governed agents goes through
// the ledger before the target runs.
//
//   import { Agent, run } from "@openai/agents";
//   import { Governor } from "govledger";
//   import { governAgents } from "govledger/openai-agents";
//   governAgents(gov, [triage, billing]);               // wraps their handoffs in place
//   await run(triage, "refund my invoice", { context: { govledgerRun: "run-42" } });
//
// The source agent is the agent whose handoffs list holds the handoff; the
// instructions hashed are what the Runner gives each agent
// (agent.getSystemPrompt(runContext)). The run comes from the run context
// (context.govledgerRun: an id, or {id, time}); the step is the n-th
// governed handoff of the run, kept in the context object so a RunState
// resumed elsewhere carries it.

import { getHandoff } from "@openai/agents";
import { HandoffRefused } from "./governor.mjs";

const STEPS = "govledgerSteps";

/** The run of a run context: context.govledgerRun, an id or {id, time}. */
export function defaultRun(runContext) {
  const r = runContext?.context?.govledgerRun;
  if (typeof r === "string" && r !== "") return { id: r };
  if (r && typeof r.id === "string" && r.id !== "") return r;
  throw new HandoffRefused("govledger: the run context names no run (pass { context: { govledgerRun: \"<run id>\" } } to run()): a handoff without a run cannot be recorded reproducibly, so it does not run");
}

function nextStep(runContext, label) {
  const ctx = runContext.context;
  const counts = ctx && typeof ctx === "object" ? (ctx[STEPS] ??= {}) : {};
  const n = (counts[label] ?? 0) + 1;
  counts[label] = n;
  return `${label}#${n}`;
}

/**
 * A copy of the handoff to target (an Agent or a Handoff) whose invocation
 * is decided by the ledger first. Abort mode: a rejection or an unreachable
 * ledger throws out of run(), the target never runs. Refuse mode: the
 * handoff goes back to the source agent, whose model reads the refusal as
 * the handoff's tool output, and the run goes on (refuse mode sets an
 * inputFilter, so the run cannot use conversationId/previousResponseId).
 * @param {import("./governor.mjs").Governor} gov
 * @param {any} source the Agent handing off
 * @param {any} target an Agent or a Handoff
 * @param {{mode?: "abort"|"refuse", run?: (runContext: any) => {id: string, time?: any}}} [options]
 */
export function governedHandoff(gov, source, target, { mode = gov.mode, run = defaultRun } = {}) {
  const base = getHandoff(target);
  if (base.governedBy === gov) return base;
  const refusals = new WeakMap();
  const onInvokeHandoff = async (runContext, args) => {
    const r = run(runContext);
    const step = nextStep(runContext, `${source.name}>${base.agentName}`);
    const [si, ti] = await Promise.all([source.getSystemPrompt(runContext), base.agent.getSystemPrompt(runContext)]);
    const g = await gov.gate({ run: r, step, mode, source: { name: source.name, instructions: si ?? "" },
      target: { name: base.agentName, instructions: ti ?? "" }, request: { input: args || "" } });
    if (g.allowed) return base.onInvokeHandoff(runContext, args);
    refusals.set(runContext, g.refusal);
    return source;
  };
  /** @type {Record<string, any>} */
  const overrides = { onInvokeHandoff };
  if (mode === "refuse") {
    overrides.inputFilter = (data) => {
      const text = refusals.get(data.runContext);
      if (text === undefined) return base.inputFilter ? base.inputFilter(data) : data;
      refusals.delete(data.runContext);
      for (let i = data.newItems.length - 1; i >= 0; i--) {
        const item = data.newItems[i];
        if (item?.type === "handoff_output_item") {
          item.rawItem = { ...item.rawItem, output: { type: "text", text } };
          break;
        }
      }
      return data;
    };
  }
  const h = base.clone(overrides);
  h.governedBy = gov;
  return h;
}

/**
 * Replaces, in place, the handoffs of each agent with governed ones (the
 * agent is their source). Returns the agents.
 * @param {import("./governor.mjs").Governor} gov
 * @param {any[]} agents
 * @param {Parameters<typeof governedHandoff>[3]} [options]
 */
export function governAgents(gov, agents, options) {
  for (const a of agents) a.handoffs = a.handoffs.map((h) => governedHandoff(gov, a, h, options));
  return agents;
}
