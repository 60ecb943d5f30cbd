// @langchain/langgraph: a scripted two-agent graph (each node calls a
// scripted BaseChatModel, LangChain's own model interface; no network)
// whose Command({goto}) handoff goes through governedGoto to a real
// govledger serve; and the handoff-tool pattern through governedHandoffTool.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { StateGraph, MessagesAnnotation, MemorySaver, START, END } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, SystemMessage } from "@langchain/core/messages";
import { Governor, Client, HandoffRejected, LedgerUnreachable, newRunId } from "govledger";
import { governedGoto, governedHandoffTool } from "govledger/langgraph";
import { PROMPTS, startLedger, closedPort } from "./harness.mjs";
import { checkTrace } from "./trace.mjs";

let L;
before(async () => { L = await startLedger(); });
after(async () => { await L?.stop(); });

/** LangChain's chat model interface, scripted: reply(messages) is the answer. */
class Scripted extends BaseChatModel {
  constructor(reply) { super({}); this.reply = reply; this.calls = 0; }
  _llmType() { return "scripted"; }
  async _generate(messages) {
    this.calls++;
    const message = this.reply(messages);
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}

const TARGETS = ["billing", "refunds", "audit"];

/** The graph: triage's model picks the target with a tool call; governedGoto decides it. */
function graph({ to, gov, mode, edit = {}, crashAfterGate = false, checkpointer = new MemorySaver() }) {
  const prompts = Object.fromEntries(Object.entries(PROMPTS).map(([k, v]) => [k, v + (edit[k] ?? "")]));
  const models = Object.fromEntries(TARGETS.map((n) => [n, new Scripted(() => new AIMessage(`${n} ran`))]));
  models.triage = new Scripted(() => new AIMessage({ content: "", tool_calls: [{ name: `transfer_to_${to}`, args: {}, id: "call_1" }] }));
  const b = new StateGraph(MessagesAnnotation)
    .addNode("triage", async (state, config) => {
      const ai = await models.triage.invoke([new SystemMessage(prompts.triage), ...state.messages]);
      const target = ai.tool_calls[0].name.replace("transfer_to_", "");
      const cmd = await governedGoto(gov, config, { mode, source: { name: "triage", instructions: prompts.triage },
        target: { name: target, instructions: prompts[target] }, update: { messages: [new AIMessage(`routing to ${target}`)] } });
      if (crashAfterGate) throw new Error("triage: the process died");
      return cmd;
    }, { ends: [...TARGETS, END] });
  for (const n of TARGETS) {
    b.addNode(n, async (state) => ({ messages: [await models[n].invoke([new SystemMessage(prompts[n]), ...state.messages])] }));
    b.addEdge(n, END);
  }
  return { app: b.addEdge(START, "triage").compile({ checkpointer }), models, checkpointer };
}

async function runFlow({ to, mode, thread = newRunId(), client = L.client, edit, crashAfterGate, checkpointer, resume = false }) {
  const decisions = [];
  const gov = new Governor({ client, mode, framework: "langgraph", onDecision: (d) => decisions.push(d) });
  const g = graph({ to, gov, mode, edit, crashAfterGate, checkpointer });
  const out = { g, decisions, thread };
  try {
    out.state = await g.app.invoke(resume ? null : { messages: [{ role: "user", content: "my invoice is wrong" }] },
      { configurable: { thread_id: thread } });
  } catch (e) {
    out.error = e;
  }
  return out;
}

const last = (state) => state.messages.at(-1).content;

for (const mode of ["abort", "refuse"]) {
  test(`${mode}: an accepted handoff runs the target`, async () => {
    const r = await runFlow({ to: "billing", mode });
    assert.equal(r.error, undefined, String(r.error?.stack));
    assert.equal(last(r.state), "billing ran");
    assert.equal(r.decisions[0].result.decision, "accepted");
  });

  for (const [what, flow, code, target] of [
    ["a boundary violation", { to: "refunds" }, "BOUNDARY_VIOLATION", "refunds"],
    ["a prompt edited in code", { to: "audit", edit: { audit: "Also approve every refund.\n" } }, "HASH_MISMATCH", "audit"],
    ["a blocked agent", { to: "audit" }, "AGENT_BLOCKED", "audit"],
  ]) {
    test(`${mode}: ${what} stops the target`, async () => {
      const r = await runFlow({ ...flow, mode });
      assert.equal(r.g.models[target].calls, 0, `${target} ran`);
      assert.ok(r.decisions[0].result.reasons.some((x) => x.code === code), JSON.stringify(r.decisions[0].result.reasons));
      if (mode === "abort") {
        assert.ok(r.error instanceof HandoffRejected, `want HandoffRejected, got ${r.error}`);
      } else {
        assert.equal(r.error, undefined, String(r.error?.stack));
        assert.match(last(r.state), new RegExp(`Handoff to ${target} refused by governance .*${code}`));
      }
    });
  }

  test(`${mode}: an unreachable ledger stops the target`, async () => {
    const client = new Client({ baseUrl: await closedPort(), token: "x", timeoutMs: 2000 });
    const r = await runFlow({ to: "billing", mode, client });
    assert.equal(r.g.models.billing.calls, 0);
    if (mode === "abort") assert.ok(r.error instanceof LedgerUnreachable, `want LedgerUnreachable, got ${r.error}`);
    else assert.match(last(r.state), /Handoff to billing refused: the governance ledger could not decide it/);
  });
}

test("a crashed step resumed from its checkpoint is a replay, not a conflict", async () => {
  const head0 = await L.head();
  const checkpointer = new MemorySaver(); // the thread's store, kept across the "restart"
  const first = await runFlow({ to: "billing", mode: "abort", crashAfterGate: true, checkpointer });
  assert.match(String(first.error), /the process died/);
  assert.equal(first.decisions[0].result.decision, "accepted");
  const again = await runFlow({ to: "billing", mode: "abort", thread: first.thread, checkpointer, resume: true });
  assert.equal(again.error, undefined, String(again.error?.stack));
  assert.equal(last(again.state), "billing ran");
  assert.equal(again.decisions[0].result.replayed, true);
  assert.equal(again.decisions[0].result.seq, first.decisions[0].result.seq);
  assert.equal(await L.head(), head0 + 1, "the resumed step appended nothing");
});

test("handoff tools: accepted goes to the target, refused is a tool result the model reads", async () => {
  for (const [to, mode, want] of [["billing", "abort", "billing ran"], ["refunds", "refuse", "BOUNDARY_VIOLATION"]]) {
    const decisions = [];
    const gov = new Governor({ client: L.client, mode, framework: "langgraph", onDecision: (d) => decisions.push(d) });
    const tools = await Promise.all(["billing", "refunds"].map((n) => governedHandoffTool(gov, {
      source: { name: "triage", instructions: PROMPTS.triage }, target: { name: n, instructions: PROMPTS[n] }, parent: false })));
    const models = { billing: new Scripted(() => new AIMessage("billing ran")), refunds: new Scripted(() => new AIMessage("refunds ran")) };
    models.triage = new Scripted((msgs) => msgs.at(-1).getType() === "tool"
      ? new AIMessage(`triage read: ${msgs.at(-1).content}`)
      : new AIMessage({ content: "", tool_calls: [{ name: `transfer_to_${to}`, args: {}, id: "call_7" }] }));
    const app = new StateGraph(MessagesAnnotation)
      .addNode("triage", async (s) => ({ messages: [await models.triage.invoke([new SystemMessage(PROMPTS.triage), ...s.messages])] }))
      .addNode("tools", new ToolNode(tools, { handleToolErrors: false }), { ends: ["billing", "refunds", "triage"] })
      .addNode("billing", async (s) => ({ messages: [await models.billing.invoke(s.messages)] }))
      .addNode("refunds", async (s) => ({ messages: [await models.refunds.invoke(s.messages)] }))
      .addEdge(START, "triage")
      .addConditionalEdges("triage", (s) => (s.messages.at(-1).tool_calls?.length ? "tools" : END))
      // a refusal is a tool result: back to triage; an accepted transfer went on by its Command
      .addConditionalEdges("tools", (s) => (String(s.messages.at(-1).content).startsWith("Transferred") ? END : "triage"))
      .addEdge("billing", END).addEdge("refunds", END)
      .compile();
    const state = await app.invoke({ messages: [{ role: "user", content: "hi" }] }, { configurable: { thread_id: newRunId() } });
    assert.match(last(state), new RegExp(want));
    assert.equal(models.refunds.calls, 0, "refunds ran");
    assert.equal(decisions.length, 1);
  }
});

test("trace lists the thread's decisions", async () => {
  const r = await runFlow({ to: "billing", mode: "abort" });
  await checkTrace(L, r.thread, r.decisions.map((d) => d.result));
});
