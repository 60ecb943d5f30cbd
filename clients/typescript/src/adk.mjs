// @google/adk adapter: a beforeToolCallback on transfer_to_agent decides
// every agent transfer before the target runs.
//
//   import { governTransfers } from "govledger/adk";
//   governTransfers(gov, rootAgent);   // every LlmAgent in the tree
//
// The source is the agent calling transfer_to_agent, the target the agent it
// names; the instructions hashed are each agent's canonicalInstruction (the
// instruction, or what its InstructionProvider returns; a template's {state}
// placeholders are hashed as written, as the prompt file the lock pins holds
// them). The run is the session; the step is the function call's id and its
// time the time of the session event that holds the call, both kept by the
// session service, so a call retried or resumed is the same step.

import { HandoffRefused } from "./governor.mjs";

const TRANSFER = "transfer_to_agent";

function callTime(context) {
  const events = context.invocationContext?.session?.events ?? [];
  for (const e of events) {
    for (const p of e.content?.parts ?? []) {
      if (p.functionCall?.id === context.functionCallId && p.functionCall?.name === TRANSFER) return new Date(e.timestamp);
    }
  }
  return undefined;
}

/**
 * The beforeToolCallback of one source agent. Resolves undefined (the
 * transfer runs) when the ledger accepted it. Abort mode throws (the run
 * fails, the target never runs); refuse mode answers {error: refusal} as
 * the tool's result: the transfer does not happen and the model reads why.
 * @param {import("./governor.mjs").Governor} gov
 * @param {any} root the root agent (targets are looked up in its tree)
 * @param {{mode?: "abort"|"refuse"}} [options]
 */
export function transferGate(gov, root, { mode } = {}) {
  return async ({ tool, args, context }) => {
    if (tool?.name !== TRANSFER) return undefined;
    const source = context.invocationContext.agent;
    const targetName = String(args?.agentName ?? "");
    const target = root.findAgent(targetName);
    if (!context.functionCallId) throw new HandoffRefused("govledger: transfer_to_agent was called without a function call id");
    const when = callTime(context);
    if (!when) throw new HandoffRefused(`govledger: the session holds no event with function call ${context.functionCallId}: the transfer cannot be dated reproducibly, so it does not run`);
    const instr = async (a) => (a?.canonicalInstruction ? (await a.canonicalInstruction(context)).instruction : undefined);
    const [si, ti] = await Promise.all([instr(source), instr(target)]);
    const g = await gov.gate({ run: { id: context.sessionId }, stepTime: when, step: `${source.name}>${targetName}/${context.functionCallId}`,
      source: { name: source.name, instructions: si }, target: { name: targetName, instructions: ti }, mode });
    if (g.allowed) return undefined;
    return { error: g.refusal };
  };
}

/**
 * Puts transferGate first in the beforeToolCallback of every LlmAgent in
 * the tree under root (keeping the callbacks it had). Returns root.
 * @param {import("./governor.mjs").Governor} gov
 * @param {any} root
 * @param {{mode?: "abort"|"refuse"}} [options]
 */
export function governTransfers(gov, root, options) {
  const gate = transferGate(gov, root, options);
  const walk = (a) => {
    if ("beforeToolCallback" in a && !a.governedBy) {
      const had = a.beforeToolCallback;
      a.beforeToolCallback = [gate, ...(had === undefined ? [] : Array.isArray(had) ? had : [had])];
      a.governedBy = gov;
    }
    for (const s of a.subAgents ?? []) walk(s);
  };
  walk(root);
  return root;
}
