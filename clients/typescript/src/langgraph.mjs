// @langchain/langgraph adapter: a handoff is a Command({goto}) from one node
// to another, or a handoff tool's Command to the parent graph; both are
// decided by the ledger before the target node runs.
//
//   import { governedGoto } from "govledger/langgraph";
//   async function triage(state, config) {
//     const ai = await model.invoke([new SystemMessage(TRIAGE_PROMPT), ...state.messages]);
//     return governedGoto(gov, config, { source: { name: "triage", instructions: TRIAGE_PROMPT },
//       target: { name: "billing", instructions: BILLING_PROMPT }, update: { messages: [ai] } });
//   }
//
// The run is the thread (configurable.thread_id: a UUID v7, or pass
// time); the step is the node's task (metadata.langgraph_checkpoint_ns),
// which LangGraph derives from the checkpoint the step started from, so a
// thread resumed after a crash re-runs the step with the same identity.

import { Command, END } from "@langchain/langgraph";
import { HandoffRefused } from "./governor.mjs";

function threadRun(config, time) {
  const id = config?.configurable?.thread_id;
  if (typeof id !== "string" || id === "") {
    throw new HandoffRefused("govledger: the graph runs without a thread_id (pass { configurable: { thread_id } }): a handoff without a run cannot be recorded reproducibly, so it does not run");
  }
  return time === undefined ? { id } : { id, time: typeof time === "function" ? time(config) : time };
}

/**
 * Decides the handoff of a node to target and returns the Command to run:
 * Command({goto: target, update}) when accepted. Abort mode throws (the
 * graph run rejects, the target never runs). Refuse mode returns
 * Command({goto: refuseGoto (default END), update: refusalUpdate(text)}):
 * by default an assistant message in `messages` saying why.
 * @param {import("./governor.mjs").Governor} gov
 * @param {any} config the node's RunnableConfig
 * @param {{source: {name: string, instructions?: string}, target: {name: string, instructions?: string},
 *   input?: string|object, update?: any, mode?: "abort"|"refuse", refuseGoto?: string,
 *   refusalUpdate?: (text: string) => any, time?: any}} h
 */
export async function governedGoto(gov, config, { source, target, input, update, mode, refuseGoto = END,
  refusalUpdate = (text) => ({ messages: [{ role: "assistant", content: text, name: source.name }] }), time }) {
  const run = threadRun(config, time);
  const task = config?.metadata?.langgraph_checkpoint_ns ?? config?.configurable?.checkpoint_ns;
  if (!task) throw new HandoffRefused("govledger: the node's config carries no task (metadata.langgraph_checkpoint_ns): call governedGoto with the config the node was given");
  const g = await gov.gate({ run, step: `${task}>${target.name}`, source, target, request: { input: input ?? "" }, mode });
  if (g.allowed) return new Command({ goto: target.name, update });
  return new Command({ goto: refuseGoto, update: refusalUpdate(g.refusal) });
}

/**
 * A handoff tool for the tool-calling pattern (langgraph-supervisor and
 * swarm style): the model calls transfer_to_<target>; when the ledger
 * accepts, the tool returns Command({goto: target, graph: Command.PARENT})
 * with the tool message. Refuse mode returns the refusal as the tool's
 * result, which the model reads. Abort mode throws: give the ToolNode
 * handleToolErrors: false, or it turns the error into a message (the
 * target still does not run). Needs @langchain/core.
 * @param {import("./governor.mjs").Governor} gov
 * @param {{source: {name: string, instructions?: string}, target: {name: string, instructions?: string},
 *   name?: string, description?: string, mode?: "abort"|"refuse", time?: any, parent?: boolean}} h
 *   parent (default true): the tool runs in an agent subgraph (createReactAgent, supervisor,
 *   swarm) and the Command goes to the parent graph; false for a ToolNode in the same graph.
 */
export async function governedHandoffTool(gov, { source, target, name = `transfer_to_${target.name}`, description, mode, time, parent = true }) {
  const { tool } = await import("@langchain/core/tools");
  const { ToolMessage } = await import("@langchain/core/messages");
  return tool(async (_args, config) => {
    const run = threadRun(config, time);
    const callId = config?.toolCall?.id ?? config?.toolCallId;
    if (!callId) throw new HandoffRefused("govledger: the handoff tool was called without a tool call id");
    const g = await gov.gate({ run, step: `${source.name}>${target.name}/${callId}`, source, target, mode });
    if (!g.allowed) return g.refusal;
    return new Command({ goto: target.name, ...(parent ? { graph: Command.PARENT } : {}),
      update: { messages: [new ToolMessage({ content: `Transferred to ${target.name}`, name, tool_call_id: callId })] } });
  }, { name, description: description ?? `Hand the conversation to ${target.name}.`, schema: { type: "object", properties: {} } });
}
