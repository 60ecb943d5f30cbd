// The HTTP client against a real govledger serve: handoffs, batches,
// idempotency, problem+json as typed errors, the timeout, and retries on
// 503 OUTCOME_UNKNOWN only (through a proxy on 127.0.0.1 that plays an
// ambiguous commit: the request reaches the ledger, the answer is lost).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, Governor, GovledgerError, LedgerUnreachable, HandoffRejected, newRunId, idTime, derivedUUID } from "govledger";
import { PROMPTS, startLedger } from "./harness.mjs";

let L;
before(async () => { L = await startLedger(); });
after(async () => { await L?.stop(); });

const gov = () => new Governor({ client: L.client, framework: "client-test" });
const handoff = (to, step = "s1", run = newRunId()) => ({ run: { id: run }, step,
  source: { name: "triage", instructions: PROMPTS.triage }, target: { name: to, instructions: PROMPTS[to] } });

/** A proxy to the ledger whose first `faults` answers to POST /v1/handoffs are replaced by status/code. */
async function proxy(status, code, faults = 1) {
  const p = { seen: [], server: undefined };
  p.server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    p.seen.push({ method: req.method, url: req.url, key: req.headers["idempotency-key"], workflow: req.headers["govledger-workflow"] });
    const upstream = await fetch(L.url + req.url, { method: req.method, headers: { ...req.headers, host: undefined }, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const body = Buffer.from(await upstream.arrayBuffer());
    if (req.url.startsWith("/v1/handoffs") && faults > 0) {
      faults--;
      if (status === "hang") return; // never answers
      res.writeHead(status, { "Content-Type": "application/problem+json" });
      res.end(JSON.stringify({ type: "about:blank", title: "x", status, code, written: code === "OUTCOME_UNKNOWN" ? "unknown" : "no" }));
      return;
    }
    res.writeHead(upstream.status, { "Content-Type": upstream.headers.get("content-type") ?? "application/json" });
    res.end(body);
  });
  await new Promise((r) => p.server.listen(0, "127.0.0.1", r));
  p.url = `http://127.0.0.1:${p.server.address().port}`;
  p.close = () => { p.server.closeAllConnections(); return new Promise((r) => p.server.close(r)); };
  return p;
}

test("the same step gives byte-identical documents; the key is the step", () => {
  const g = gov();
  const h = handoff("billing");
  assert.equal(g.document(h), g.document(structuredClone(h)));
  assert.notEqual(g.document(h), g.document({ ...h, step: "s2" }));
  const doc = JSON.parse(g.document(h));
  assert.match(doc.handoff_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(doc.timestamp, idTime(h.run.id).toISOString());
  assert.equal(g.key(h.run, "s1"), `client-test/${h.run.id}/s1`);
  assert.equal(doc.handoff_id, derivedUUID("govledger", "client-test", h.run.id, "s1", "triage", "billing"));
  assert.throws(() => g.document({ ...h, run: { id: "run-without-time" } }), /has no time/);
  assert.equal(JSON.parse(g.document({ ...h, run: { id: "r", time: "2026-11-28T10:00:00Z" } })).timestamp, "2026-11-28T10:00:00.000Z");
});

test("submit, replay with the same key, 409 for other bytes, typed errors", async () => {
  const g = gov();
  const h = handoff("billing");
  const first = await g.gate(h);
  assert.equal(first.result.decision, "accepted");
  const again = await L.client.submit(first.document, { idempotencyKey: g.key(h.run, h.step) });
  assert.equal(again.replayed, true);
  assert.equal(again.seq, first.result.seq);
  const e = await L.client.submit(first.document + " ", { idempotencyKey: g.key(h.run, h.step) }).catch((x) => x);
  assert.ok(e instanceof GovledgerError && !(e instanceof LedgerUnreachable));
  assert.equal(e.status, 409);
  assert.equal(e.code, "IDEMPOTENCY_CONFLICT");
  assert.equal(e.written, "no");
  assert.equal(e.attempts, 1);
  const bad = await new Client({ baseUrl: L.url, token: "glt_wrong" }).submit("{}").catch((x) => x);
  assert.equal(bad.status, 401);
  assert.equal(bad.code, "UNAUTHENTICATED");
  await assert.rejects(L.client.submit("{}", { idempotencyKey: "with space" }), TypeError);
  await assert.rejects(L.client.submit("{}", { workflow: "a\nb" }), TypeError);
});

test("a rejected handoff: HandoffRejected in abort mode, a refusal in refuse mode", async () => {
  const e = await gov().gate(handoff("refunds")).catch((x) => x);
  assert.ok(e instanceof HandoffRejected);
  assert.ok(e.codes.includes("BOUNDARY_VIOLATION"));
  assert.equal(e.result.decision, "rejected");
  const r = await gov().gate({ ...handoff("refunds"), mode: "refuse" });
  assert.equal(r.allowed, false);
  assert.match(r.refusal, /refused by governance \(ledger seq \d+\): BOUNDARY_VIOLATION/);
});

test("batch: one answer per document, in order", async () => {
  const g = gov();
  const a = handoff("billing");
  const b = handoff("refunds");
  const out = await L.client.batch([
    { document: g.document(a), idempotencyKey: g.key(a.run, a.step) },
    { document: g.document(b), idempotencyKey: g.key(b.run, b.step) },
    { document: "not a handoff {", source: "triage", target: "billing" },
  ]);
  assert.equal(out.length, 3);
  assert.equal(out[0].decision, "accepted");
  assert.equal(out[1].decision, "rejected");
  assert.ok(out[1].reasons.some((x) => x.code === "BOUNDARY_VIOLATION"));
  const again = await L.client.batch([{ document: g.document(a), idempotencyKey: g.key(a.run, a.step) }]);
  assert.equal(again[0].seq, out[0].seq);
  assert.equal(again[0].replayed, true);
});

test("503 OUTCOME_UNKNOWN is retried with the same key and answered with the first decision", async () => {
  const p = await proxy(503, "OUTCOME_UNKNOWN");
  try {
    const head = await L.head();
    const client = new Client({ baseUrl: p.url, token: L.token, backoffMs: 10 });
    const g = new Governor({ client, framework: "client-test" });
    const r = await g.gate(handoff("billing"));
    assert.equal(r.allowed, true);
    assert.equal(r.result.replayed, true, "the retry found the decision the lost answer carried");
    assert.equal(await L.head(), head + 1, "one entry for two requests");
    const posts = p.seen.filter((s) => s.url.startsWith("/v1/handoffs"));
    assert.equal(posts.length, 2);
    assert.equal(posts[0].key, posts[1].key);
    assert.equal(posts[0].workflow, r.result.workflow_id ?? posts[0].workflow);
  } finally {
    await p.close();
  }
});

test("other 503s are not retried; a timeout is LedgerUnreachable", async () => {
  const p = await proxy(503, "OVERLOADED");
  try {
    const e = await new Client({ baseUrl: p.url, token: L.token, backoffMs: 10 }).submit(new Governor({ client: L.client, framework: "t" }).document(handoff("billing"))).catch((x) => x);
    assert.equal(e.status, 503);
    assert.equal(e.code, "OVERLOADED");
    assert.equal(e.attempts, 1);
  } finally {
    await p.close();
  }
  const h = await proxy("hang", "");
  try {
    const t0 = Date.now();
    const e = await new Client({ baseUrl: h.url, token: L.token, timeoutMs: 300 }).submit("{}").catch((x) => x);
    assert.ok(e instanceof LedgerUnreachable, String(e));
    assert.match(e.message, /no answer within 300 ms/);
    assert.ok(Date.now() - t0 < 5000);
  } finally {
    await h.close();
  }
});
