// @a2a-js/sdk: a local agent sends a message to remote A2A agents (real
// A2A servers on 127.0.0.1, their AgentExecutor scripted; no other network)
// through a Client whose governedInterceptor asks a real govledger serve
// first. The remote agent's Agent Card, in canonical JSON, is its prompt file.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import express from "express";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { Governor, Client, HandoffRejected, LedgerUnreachable, newRunId } from "govledger";
import { governedInterceptor, canonicalJSON } from "govledger/a2a";
import { PROMPTS, startLedger, closedPort } from "./harness.mjs";
import { checkTrace } from "./trace.mjs";

const REMOTES = ["billing", "refunds", "audit"];
let L, server, base;
const runs = Object.fromEntries(REMOTES.map((n) => [n, 0]));

function card(name, description = `the ${name} agent`) {
  return {
    name, description, version: "1.0.0",
    supportedInterfaces: [{ url: `${base}/${name}`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
    skills: [{ id: name, name, description, tags: [name], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}

before(async () => {
  const app = express();
  server = await new Promise((r) => { const s = app.listen(0, "127.0.0.1", () => r(s)); });
  base = `http://127.0.0.1:${server.address().port}`;
  for (const name of REMOTES) {
    const executor = {
      async execute(ctx, bus) {
        runs[name]++;
        bus.publish(AgentEvent.message({ messageId: `${name}-reply-${runs[name]}`, contextId: ctx.contextId, taskId: "", role: 2,
          parts: [{ content: { $case: "text", value: `${name} ran` }, metadata: undefined, filename: "", mediaType: "text/plain" }],
          metadata: undefined, extensions: [], referenceTaskIds: [] }));
        bus.finished();
      },
      async cancelTask() {},
    };
    const handler = new DefaultRequestHandler(card(name), new InMemoryTaskStore(), executor);
    app.use(`/${name}`, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  }
  // the registry pins each remote agent's card as the client sees it
  L = await startLedger({ prompts: Object.fromEntries(REMOTES.map((n) => [n, canonicalJSON(card(n))])) });
});
after(async () => {
  await L?.stop();
  await new Promise((r) => server?.close(r));
});

async function send({ to, mode, client = L.client, edited = false, contextId = newRunId(), messageId = "msg-1" }) {
  const decisions = [];
  const gov = new Governor({ client, mode, framework: "a2a", onDecision: (d) => decisions.push(d) });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { clientConfig: { interceptors: [
    governedInterceptor(gov, { source: { name: "triage", instructions: PROMPTS.triage } })] } }));
  const a2a = await factory.createFromAgentCard(card(to, edited ? `the ${to} agent, now also approving refunds` : undefined));
  const out = { decisions, contextId };
  try {
    out.reply = await a2a.sendMessage({ tenant: "", configuration: undefined, metadata: undefined,
      message: { messageId, contextId, taskId: "", role: 1, metadata: undefined, extensions: [], referenceTaskIds: [],
        parts: [{ content: { $case: "text", value: "my invoice is wrong" }, metadata: undefined, filename: "", mediaType: "text/plain" }] } });
  } catch (e) {
    out.error = e;
  }
  out.text = out.reply?.parts?.map((p) => p.content?.value).join("");
  return out;
}

for (const mode of ["abort", "refuse"]) {
  test(`${mode}: an accepted message reaches the remote agent`, async () => {
    const before = runs.billing;
    const r = await send({ to: "billing", mode });
    assert.equal(r.error, undefined, String(r.error?.stack));
    assert.equal(r.text, "billing ran");
    assert.equal(runs.billing, before + 1);
    assert.equal(r.decisions[0].result.decision, "accepted");
  });

  for (const [what, flow, code, target] of [
    ["a boundary violation", { to: "refunds" }, "BOUNDARY_VIOLATION", "refunds"],
    ["an Agent Card edited on the remote", { to: "audit", edited: true }, "HASH_MISMATCH", "audit"],
    ["a blocked agent", { to: "audit" }, "AGENT_BLOCKED", "audit"],
  ]) {
    test(`${mode}: ${what} stops the message`, async () => {
      const before = runs[target];
      const r = await send({ ...flow, mode });
      assert.equal(runs[target], before, `${target} ran`);
      assert.ok(r.decisions[0].result.reasons.some((x) => x.code === code), JSON.stringify(r.decisions[0].result.reasons));
      if (mode === "abort") assert.ok(r.error instanceof HandoffRejected, `want HandoffRejected, got ${r.error}`);
      else {
        assert.equal(r.error, undefined, String(r.error?.stack));
        assert.match(r.text, new RegExp(`Handoff to ${target} refused by governance .*${code}`));
        assert.equal(r.reply.metadata.govledger.refused, true);
      }
    });
  }

  test(`${mode}: an unreachable ledger stops the message`, async () => {
    const before = runs.billing;
    const client = new Client({ baseUrl: await closedPort(), token: "x", timeoutMs: 2000 });
    const r = await send({ to: "billing", mode, client });
    assert.equal(runs.billing, before);
    if (mode === "abort") assert.ok(r.error instanceof LedgerUnreachable, `want LedgerUnreachable, got ${r.error}`);
    else assert.match(r.text, /Handoff to billing refused: the governance ledger could not decide it/);
  });
}

test("a message resent after a crash is a replay, not a conflict", async () => {
  const head0 = await L.head();
  const first = await send({ to: "billing", mode: "abort", messageId: "msg-crash" });
  assert.equal(first.decisions[0].result.decision, "accepted");
  // the sender died before it saw the reply; a new process resends the same message
  const again = await send({ to: "billing", mode: "abort", messageId: "msg-crash", contextId: first.contextId });
  assert.equal(again.error, undefined, String(again.error?.stack));
  assert.equal(again.decisions[0].result.replayed, true);
  assert.equal(again.decisions[0].result.seq, first.decisions[0].result.seq);
  assert.equal(await L.head(), head0 + 1, "the resent message appended nothing");
});

test("trace lists the context's decisions", async () => {
  const r = await send({ to: "billing", mode: "abort" });
  await checkTrace(L, r.contextId, r.decisions.map((d) => d.result));
});
