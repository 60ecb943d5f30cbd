// Checks govledger-client.mjs against a running server (the Go tests start one
// with an in-memory backend). Usage: node test-client.mjs URL TOKEN
// TOKEN must hold handoff:write for agent-a only, and ledger:read. Exits 1 on
// the first failed check.

import { Client, GovledgerError, HandoffRejected } from "./govledger-client.mjs";

const [url, token] = process.argv.slice(2);
let checks = 0;

function check(cond, what) {
  checks++;
  if (!cond) {
    console.error("FAIL:", what);
    process.exit(1);
  }
}

async function expectError(fn, what) {
  try {
    await fn();
  } catch (e) {
    if (e instanceof GovledgerError) return e;
    check(false, `${what}: ${e}`);
  }
  check(false, `${what}: no GovledgerError`);
}

const show = (v) => JSON.stringify(v);
const errInfo = (e) => show({ status: e.status, code: e.code, attempts: e.attempts, problem: e.problem });

process.env.GOVLEDGER_TOKEN = token;
const gl = new Client({ baseUrl: url, maxBackoffMs: 200 });
check(gl.token === token, "token read from GOVLEDGER_TOKEN");

const doc = '{"source_agent":"agent-a","target_agent":"agent-b","handoff_id":"js-1"}';
let r = await gl.submit(new TextEncoder().encode(doc));
check(r.decision === "accepted" && r.seq >= 1 && r.entry_hash.length === 64, `submit accepted: ${show(r)}`);

const first = await gl.submit(doc, { idempotencyKey: "js-key-1" });
const again = await gl.submit(doc, { idempotencyKey: "js-key-1" });
check(again.seq === first.seq && again.replayed === true, `retry with the same key replays: ${show([first, again])}`);
let e = await expectError(() => gl.submit("other bytes", { idempotencyKey: "js-key-1" }), "same key, other bytes");
check(e.status === 409 && e.code === "IDEMPOTENCY_CONFLICT" && e.attempts === 1, `409 is not retried: ${errInfo(e)}`);

let ok = await gl.onHandoff("agent-a", "agent-b", "## Status\nall green");
check(ok.decision === "accepted" && ok.source === "agent-a", `hook accepted: ${show(ok)}`);
ok = await gl.onHandoff("agent-a", "agent-b", { source_agent: "agent-a", target_agent: "agent-b", handoff_id: "js-2" });
check(ok.decision === "accepted" && ok.handoff_id === "js-2", `hook with an object: ${show(ok)}`);
try {
  await gl.onHandoff("agent-a", "nobody", "## to an unknown agent");
  check(false, "hook did not throw HandoffRejected");
} catch (rej) {
  check(rej instanceof HandoffRejected && rej.reasons.some((x) => x.code === "UNKNOWN_AGENT") && rej.seq >= 1,
    `rejection carries reasons and seq: ${show(rej.result)}`);
}

// Ambiguous commit: recorded, but answered 503 "outcome unknown"; the retry
// with the same key gets the first answer and nothing is recorded twice.
const before = (await gl.entries({ limit: 1 })).entries[0].seq;
r = await gl.submit('{"source_agent":"agent-a","target_agent":"agent-b","x_fault":"outcome_unknown_once"}');
const after = (await gl.entries({ limit: 1 })).entries[0].seq;
check(r.replayed === true && r.seq === before + 1 && after === before + 1,
  `outcome unknown resolved by one retry, one entry: ${show(r)} (head ${before} -> ${after})`);

e = await expectError(() => gl.submit('{"source_agent":"agent-b","target_agent":"agent-a"}'), "other source");
check(e.status === 403 && e.code === "FORBIDDEN_SOURCE" && e.attempts === 1 && e.problem.written === "no",
  `403 for another agent's handoff: ${errInfo(e)}`);
check((await gl.entries({ limit: 1 })).entries[0].seq === after, "nothing written for a forbidden source");

const few = new Client({ baseUrl: url, token, retries: 2, backoffMs: 10, maxBackoffMs: 50 });
e = await expectError(() => few.submit('{"source_agent":"agent-a","target_agent":"agent-b","x_fault":"overloaded"}'), "overloaded");
check(e.status === 503 && e.code === "OVERLOADED" && e.attempts === 3, `503 retried, then thrown: ${errInfo(e)}`);

const down = new Client({ baseUrl: "http://127.0.0.1:1", token, retries: 2, backoffMs: 10, maxBackoffMs: 50, timeoutMs: 2000 });
e = await expectError(() => down.submit(doc), "connection refused");
check(e.status === undefined && e.attempts === 3, `network errors retried, then thrown: ${errInfo(e)}`);

e = await expectError(() => new Client({ baseUrl: url, token: "glt_wrong" }).submit(doc), "bad token");
check(e.status === 401 && e.code === "UNAUTHENTICATED" && e.attempts === 1, `401 not retried: ${errInfo(e)}`);

const v = await gl.validate('{"source_agent":"agent-a","target_agent":"nobody"}');
check(v.seq === 0 && v.decision === "rejected", `validate records nothing: ${show(v)}`);

console.log(`ok: ${checks} checks`);
