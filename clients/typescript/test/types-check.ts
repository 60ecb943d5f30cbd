// Compiled by tsc --noEmit in TestFrameworks: the hand-written types hold
// for a typical use of each entry point.
import { Client, Governor, HandoffRejected, GovledgerError, newRunId, type SubmitResult } from "govledger";
import { governAgents, governedHandoff } from "govledger/openai-agents";
import { governedGoto, governedHandoffTool } from "govledger/langgraph";
import { governTransfers, transferGate } from "govledger/adk";
import { claudeHooks } from "govledger/claude-agent-sdk";
import { governedInterceptor, canonicalJSON } from "govledger/a2a";

const client = new Client({ baseUrl: "http://127.0.0.1:8080", token: "t", timeoutMs: 5000 });
const gov = new Governor({ client, mode: "refuse", agents: { triage: { type: "orchestrator", version: "1.0.0" } } });
async function use(): Promise<void> {
  const r: SubmitResult = await client.submit("{}", { idempotencyKey: "k", workflow: "w" });
  const g = await gov.gate({ run: { id: newRunId() }, step: "s", source: { name: "a", instructions: "x" }, target: { name: "b" } });
  if (!g.allowed) console.log(g.refusal, r.seq);
  try { await client.validate({}); } catch (e) { if (e instanceof HandoffRejected) console.log(e.codes); if (e instanceof GovledgerError) console.log(e.code); }
  governAgents(gov, [{ handoffs: [] }]);
  governedHandoff(gov, {}, {});
  await governedGoto(gov, {}, { source: { name: "a" }, target: { name: "b" } });
  await governedHandoffTool(gov, { source: { name: "a" }, target: { name: "b" }, parent: false });
  governTransfers(gov, {});
  transferGate(gov, {});
  const h = claudeHooks(gov, { main: { name: "triage" } });
  console.log(h.hooks.PreToolUse[0].matcher, h.error, canonicalJSON({ b: 1 }));
  governedInterceptor(gov, { source: { name: "triage" } });
}
void use;
