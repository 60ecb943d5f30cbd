// Checks govledger-client.mjs against a real `govledger serve` (the Go test
// TestServeExampleClients starts one on the example registry).
// Usage: node live-check.mjs URL TOKEN HANDOFFS_DIR
// TOKEN must hold handoff:write for domain-05-product only, and ledger:read;
// HANDOFFS_DIR holds 01-product-to-analysis.json. Exits 1 on the first failed
// check.

import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Client, GovledgerError, HandoffRejected } from "./govledger-client.mjs";

const [url, token, handoffs] = process.argv.slice(2);
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

const template = await readFile(join(handoffs, "01-product-to-analysis.json"), "utf8");
const doc = template.replace("550e8400-e29b-41d4-a716-446655440000", randomUUID());
const key = `js-${randomUUID()}`;
const first = await gl.submit(doc, { idempotencyKey: key });
check(first.decision === "accepted" && first.seq >= 1 && first.entry_hash.length === 64 && first.source === "domain-05-product",
  `governed/1 handoff accepted: ${show(first)}`);
const again = await gl.submit(new TextEncoder().encode(doc), { idempotencyKey: key });
check(again.seq === first.seq && again.entry_hash === first.entry_hash && again.replayed === true,
  `a retry with the same key gets the first answer: ${show(again)}`);
let e = await expectError(() => gl.submit(doc + " ", { idempotencyKey: key }), "same key, other bytes");
check(e.status === 409 && e.code === "IDEMPOTENCY_CONFLICT" && e.attempts === 1, `409 is not retried: ${errInfo(e)}`);

const ok = await gl.onHandoff("domain-05-product", "domain-02-analysis", "## Status\nall green, from the node hook");
check(ok.decision === "accepted" && ok.format === "vbw/1" && ok.target === "domain-02-analysis", `hook: an allowed handoff proceeds: ${show(ok)}`);
try {
  await gl.onHandoff("domain-05-product", "domain-06-security", "## Status\nsecurity is not ours to reach");
  check(false, "hook did not throw HandoffRejected");
} catch (rej) {
  check(rej instanceof HandoffRejected, `hook threw ${rej}`);
  check(rej.reasons.some((r) => r.code === "BOUNDARY_VIOLATION") && rej.result.seq > ok.seq,
    `hook refuses a rejected handoff: ${show(rej.result)}`);
}

const head = (await gl.entries({ limit: 1 })).entries[0].seq;
const other = template.replace('"domain-05-product"', '"domain-01-research"');
e = await expectError(() => gl.submit(other), "another agent's handoff");
check(e.status === 403 && e.code === "FORBIDDEN_SOURCE" && e.attempts === 1 && e.problem.written === "no",
  `403 for another agent's handoff, not retried: ${errInfo(e)}`);
check((await gl.entries({ limit: 1 })).entries[0].seq === head, "nothing written for another agent's handoff");

const v = await gl.validate("## Status\nnot recorded", { source: "domain-05-product", target: "domain-02-analysis" });
check(v.seq === 0 && v.decision === "accepted", `validate records nothing: ${show(v)}`);

e = await expectError(() => new Client({ baseUrl: url, token: "glt_wrong" }).submit(doc), "bad token");
check(e.status === 401 && e.code === "UNAUTHENTICATED" && e.attempts === 1, `401 is not retried: ${errInfo(e)}`);
const down = new Client({ baseUrl: "http://127.0.0.1:1", token, retries: 2, backoffMs: 10, maxBackoffMs: 50, timeoutMs: 2000 });
e = await expectError(() => down.submit(doc), "connection refused");
check(e.status === undefined && e.attempts === 3, `connection failures are retried, then raised: ${errInfo(e)}`);

console.log(`ok: ${checks} checks against ${url}`);
