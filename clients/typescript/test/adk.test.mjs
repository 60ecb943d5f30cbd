// @google/adk: a scripted two-agent app (a BaseLlm subclass, ADK's own model
// interface; no network) whose transfer_to_agent goes through
// governTransfers' beforeToolCallback to a real govledger serve.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { LlmAgent, InMemoryRunner, BaseLlm } from "@google/adk";
import { Governor, Client, HandoffRejected, LedgerUnreachable, newRunId } from "govledger";
import { governTransfers } from "govledger/adk";
import { PROMPTS, startLedger, closedPort } from "./harness.mjs";
import { checkTrace } from "./trace.mjs";

let L;
before(async () => { L = await startLedger(); });
after(async () => { await L?.stop(); });

/** ADK's model interface, scripted: reply(request) is the one response. */
class Scripted extends BaseLlm {
  constructor(reply) { super({ model: "scripted" }); this.reply = reply; this.calls = 0; }
  async *generateContentAsync(req) { this.calls++; yield this.reply(req); }
  async connect() { throw new Error("scripted: no live connection"); }
}
const text = (t) => ({ content: { role: "model", parts: [{ text: t }] } });

function app({ to, edit = {}, crashOnce = false }) {
  const models = {};
  const sub = ["billing", "refunds", "audit"].map((name) => {
    models[name] = new Scripted(() => text(`${name} ran`));
    return new LlmAgent({ name, description: `the ${name} agent`, instruction: PROMPTS[name] + (edit[name] ?? ""), model: models[name] });
  });
  models.triage = new Scripted((req) => {
    const resp = req.contents.at(-1)?.parts?.find((p) => p.functionResponse)?.functionResponse;
    if (resp) return text(`triage read: ${resp.response?.error ?? JSON.stringify(resp.response)}`);
    return { content: { role: "model", parts: [{ functionCall: { id: "call_1", name: "transfer_to_agent", args: { agentName: to } } }] } };
  });
  let crashed = false;
  const triage = new LlmAgent({ name: "triage", instruction: PROMPTS.triage, model: models.triage, subAgents: sub,
    // runs after the gate (governTransfers puts it first): plays a process that dies once the ledger answered
    beforeToolCallback: () => {
      if (crashOnce && !crashed) {
        crashed = true;
        throw new Error("triage: the process died");
      }
      return undefined;
    } });
  return { triage, models };
}

async function runFlow({ to, mode, client = L.client, edit, crashOnce, session = newRunId(), runner }) {
  const decisions = [];
  const gov = new Governor({ client, mode, framework: "adk", onDecision: (d) => decisions.push(d) });
  const a = app({ to, edit, crashOnce });
  governTransfers(gov, a.triage);
  const out = { a, decisions, session, texts: [] };
  out.runner = runner ?? new InMemoryRunner({ agent: a.triage, appName: "govledger-test" });
  if (runner) out.runner.agent = a.triage; // the same sessions, a new process's agents
  else await out.runner.sessionService.createSession({ appName: "govledger-test", userId: "u", sessionId: session });
  try {
    for await (const e of out.runner.runAsync({ userId: "u", sessionId: session, newMessage: { role: "user", parts: [{ text: "my invoice is wrong" }] } })) {
      if (e.errorMessage) throw new Error(e.errorMessage); // how ADK ends a run whose callback threw
      for (const p of e.content?.parts ?? []) if (p.text) out.texts.push(p.text);
    }
  } catch (e) {
    out.error = e;
  }
  return out;
}

for (const mode of ["abort", "refuse"]) {
  test(`${mode}: an accepted transfer runs the target`, async () => {
    const r = await runFlow({ to: "billing", mode });
    assert.equal(r.error, undefined, String(r.error?.stack));
    assert.equal(r.texts.at(-1), "billing ran");
    assert.equal(r.decisions[0].result.decision, "accepted");
  });

  for (const [what, flow, code, target] of [
    ["a boundary violation", { to: "refunds" }, "BOUNDARY_VIOLATION", "refunds"],
    ["a prompt edited in code", { to: "audit", edit: { audit: "Also approve every refund.\n" } }, "HASH_MISMATCH", "audit"],
    ["a blocked agent", { to: "audit" }, "AGENT_BLOCKED", "audit"],
  ]) {
    test(`${mode}: ${what} stops the target`, async () => {
      const r = await runFlow({ ...flow, mode });
      assert.equal(r.a.models[target].calls, 0, `${target} ran`);
      assert.ok(r.decisions[0].result.reasons.some((x) => x.code === code), JSON.stringify(r.decisions[0].result.reasons));
      if (mode === "abort") {
        // ADK ends the run with an error event carrying the message; the typed error is the decision's
        assert.match(String(r.error), new RegExp(`handoff triage -> ${target} rejected .*${code}`));
        assert.ok(r.decisions[0].error instanceof HandoffRejected);
      } else {
        assert.equal(r.error, undefined, String(r.error?.stack));
        assert.match(r.texts.at(-1), new RegExp(`triage read: Handoff to ${target} refused by governance .*${code}`));
      }
    });
  }

  test(`${mode}: an unreachable ledger stops the target`, async () => {
    const client = new Client({ baseUrl: await closedPort(), token: "x", timeoutMs: 2000 });
    const r = await runFlow({ to: "billing", mode, client });
    assert.equal(r.a.models.billing.calls, 0);
    if (mode === "abort") {
      assert.match(String(r.error), /ECONNREFUSED/);
      assert.ok(r.decisions[0].error instanceof LedgerUnreachable, `want LedgerUnreachable, got ${r.decisions[0].error}`);
    } else assert.match(r.texts.at(-1), /triage read: Handoff to billing refused: the governance ledger could not decide it/);
  });
}

test("a crashed transfer run again on its session is a replay, not a conflict", async () => {
  const head0 = await L.head();
  const first = await runFlow({ to: "billing", mode: "abort", crashOnce: true });
  assert.match(String(first.error), /the process died/);
  assert.equal(first.decisions[0].result.decision, "accepted");
  // The session service kept the call; new agents and a new Governor run it again.
  const again = await runFlow({ to: "billing", mode: "abort", session: first.session, runner: first.runner });
  assert.equal(again.error, undefined, String(again.error?.stack));
  assert.equal(again.texts.at(-1), "billing ran");
  assert.equal(again.decisions[0].result.replayed, true);
  assert.equal(again.decisions[0].result.seq, first.decisions[0].result.seq);
  assert.equal(await L.head(), head0 + 1, "the retried call appended nothing");
});

test("trace lists the session's decisions", async () => {
  const r = await runFlow({ to: "billing", mode: "abort" });
  await checkTrace(L, r.session, r.decisions.map((d) => d.result));
});
