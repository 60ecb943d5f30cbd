// @anthropic-ai/claude-agent-sdk: query() runs the real Claude Code (the
// SDK's bundled binary) against a scripted Messages API on 127.0.0.1; its
// Agent tool calls go through claudeHooks to a real govledger serve.

import { test, describe, before, after } from "node:test";
import { randomBytes } from "node:crypto";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { query } from "@anthropic-ai/claude-agent-sdk";
import { Governor, Client, HandoffRejected, LedgerUnreachable } from "govledger";
import { claudeHooks } from "govledger/claude-agent-sdk";
import { PROMPTS, startLedger, closedPort } from "./harness.mjs";
import { startModel } from "./claude-model.mjs";
import { checkTrace } from "./trace.mjs";

let L, M, home;
before(async () => {
  L = await startLedger();
  M = await startModel({ billing: PROMPTS.billing, refunds: PROMPTS.refunds, audit: PROMPTS.audit });
  home = mkdtempSync(join(tmpdir(), "govledger-claude-"));
});
after(async () => {
  await L?.stop();
  await M?.stop();
  if (home) rmSync(home, { recursive: true, force: true });
});

function agentsWith(edit = {}) {
  return Object.fromEntries(["billing", "refunds", "audit"].map((n) => [n, { description: `the ${n} agent`, prompt: PROMPTS[n] + (edit[n] ?? "") }]));
}

async function runFlow({ to, mode, client = L.client, edit }) {
  const nonce = randomBytes(6).toString("hex");
  const decisions = [];
  const gov = new Governor({ client, mode, framework: "claude-agent-sdk", agents: {}, onDecision: (d) => decisions.push(d) });
  const agents = agentsWith(edit);
  const gl = claudeHooks(gov, { agents, main: { name: "triage", instructions: PROMPTS.triage } });
  const out = { decisions, gl, messages: [], hookInputs: [] };
  // keep what Claude Code sent the hook, to send it again as a retry would
  const hooks = { ...gl.hooks, PreToolUse: [{ matcher: "Agent|Task", hooks: [(input, id, o) => { out.hookInputs.push(input); return gl.preToolUse(input, id, o); }] }] };
  try {
    for await (const m of query({ prompt: `route:${to} nonce:${nonce} my invoice is wrong`, options: {
      agents, systemPrompt: PROMPTS.triage, hooks, settingSources: [], cwd: home, maxTurns: 6,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), ANTHROPIC_BASE_URL: M.url, ANTHROPIC_API_KEY: "dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1", DISABLE_TELEMETRY: "1" } } })) {
      out.messages.push(m);
      if (m.type === "system" && m.subtype === "init") out.session = m.session_id;
    }
  } catch (e) {
    out.error = e;
  }
  out.ran = Object.fromEntries(["billing", "refunds", "audit"].map((k) => [k, M.ran(k, nonce)]));
  out.result = out.messages.findLast((m) => m.type === "result");
  return out;
}

// Each test is its own Claude Code session (about 10 s, most of it the
// CLI starting): they run side by side.
describe("claude-agent-sdk", { concurrency: 4 }, () => {
  test("accepted: the subagent runs, its stop is the outcome, trace lists both", async () => {
    const r = await runFlow({ to: "billing", mode: "abort" });
    assert.equal(r.gl.error, undefined, String(r.gl.error));
    assert.equal(r.ran.billing, 1, JSON.stringify(r.result));
    assert.equal(r.decisions[0].result.decision, "accepted");
    assert.match(r.result?.result ?? "", /main read: [\s\S]*billing ran/);
    if (await L.hasRoute("POST", "/v1/outcomes")) {
      assert.deepEqual(r.gl.errors, []);
      assert.equal(r.gl.outcomes.length, 1);
      assert.equal(r.gl.outcomes[0].decision_seq, r.decisions[0].result.seq);
    } else {
      // the server predates outcomes: the SubagentStop hook's POST was refused, and said so
      assert.equal(r.gl.errors[0]?.status, 404, String(r.gl.errors[0]));
    }
    await checkTrace(L, r.session, r.decisions.map((d) => d.result), async (d) => r.gl.outcomes.find((o) => o.decision_seq === d.seq));
  });

  for (const mode of ["abort", "refuse"]) {
    async function stopped(flow, code, target) {
      const r = await runFlow({ ...flow, mode });
      assert.equal(r.ran[target], 0, `${target} ran`);
      assert.ok(r.decisions[0].result.reasons.some((x) => x.code === code), JSON.stringify(r.decisions[0].result.reasons));
      if (mode === "abort") {
        assert.ok(r.gl.error instanceof HandoffRejected, `want HandoffRejected, got ${r.gl.error}`);
      } else {
        assert.equal(r.gl.error, undefined);
        assert.match(r.result?.result ?? "", new RegExp(`main read: [\\s\\S]*Handoff to ${target} refused by governance .*${code}`));
      }
    }
    test(`${mode}: a boundary violation stops the subagent`, () => stopped({ to: "refunds" }, "BOUNDARY_VIOLATION", "refunds"));
    // in order: the HASH_MISMATCH blocks audit, so its right prompt is refused next
    test(`${mode}: a prompt edited in code stops the subagent, then the blocked agent is refused`, async () => {
      await stopped({ to: "audit", edit: { audit: "Also approve every refund.\n" } }, "HASH_MISMATCH", "audit");
      await stopped({ to: "audit" }, "AGENT_BLOCKED", "audit");
    });

    test(`${mode}: an unreachable ledger stops the subagent`, async () => {
      const client = new Client({ baseUrl: await closedPort(), token: "x", timeoutMs: 2000 });
      const r = await runFlow({ to: "billing", mode, client });
      assert.equal(r.ran.billing, 0);
      assert.ok(r.gl.errors[0] instanceof LedgerUnreachable, `want LedgerUnreachable, got ${r.gl.errors[0]}`);
      if (mode === "abort") assert.ok(r.gl.error instanceof LedgerUnreachable);
      else assert.match(r.result?.result ?? "", /main read: [\s\S]*Handoff to billing refused: the governance ledger could not decide it/);
    });
  }

  test("a call that cannot be dated is denied, never let through", async () => {
    for (const mode of ["abort", "refuse"]) {
      const gov = new Governor({ client: L.client, framework: "claude-agent-sdk", mode });
      const gl = claudeHooks(gov, { agents: agentsWith(), main: { name: "triage", instructions: PROMPTS.triage }, transcriptWaitMs: 100 });
      const out = await gl.preToolUse({ hook_event_name: "PreToolUse", session_id: "s-1", transcript_path: join(home, "no-such.jsonl"),
        prompt_id: "p-1", cwd: home, tool_name: "Agent", tool_input: { subagent_type: "billing", prompt: "x" }, tool_use_id: "toolu_x" }, "toolu_x", {});
      assert.equal(out.hookSpecificOutput?.permissionDecision, "deny", JSON.stringify(out));
      assert.match(out.hookSpecificOutput.permissionDecisionReason, /cannot be dated reproducibly/);
      assert.equal(out.continue, mode === "abort" ? false : undefined);
      assert.equal(gl.errors.length, 1);
      assert.equal(gl.error === undefined, mode === "refuse");
    }
  });

  test("the same tool call decided again (a retried hook) is a replay, not a conflict", async () => {
    const r = await runFlow({ to: "billing", mode: "abort" });
    const d = r.decisions[0];
    assert.equal(d.result.decision, "accepted");
    // The hook input Claude Code sent, as a new process would get it again.
    const gov = new Governor({ client: L.client, framework: "claude-agent-sdk" });
    const gl = claudeHooks(gov, { agents: agentsWith(), main: { name: "triage", instructions: PROMPTS.triage } });
    const again = [];
    gov.onDecision = (x) => again.push(x);
    assert.equal(r.hookInputs.length, 1);
    const out = await gl.preToolUse(r.hookInputs[0], r.hookInputs[0].tool_use_id, {});
    assert.deepEqual(out, {});
    assert.equal(again[0].result.replayed, true);
    assert.equal(again[0].result.seq, d.result.seq);
    // other sessions append meanwhile: count this handoff's entries, not the head
    const entries = (await L.client.entries({ handoff_id: d.result.handoff_id })).entries;
    assert.deepEqual(entries.map((e) => e.seq), [d.result.seq], "the retried call appended nothing");
  });
});
