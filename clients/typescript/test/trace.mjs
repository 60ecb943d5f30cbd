// `govledger trace RUN` against the test's server: the run's decisions, and
// their outcomes where the server records outcomes.
//
// Feature probes, for what other branches add to the server: the workflow
// header (Govledger-Workflow, in openapi.json) and POST /v1/outcomes. When
// the server has one, its assertions run and must hold; when it does not,
// the test says what it did not check (and asserts the server indeed lacks it).

import assert from "node:assert/strict";

/** Every object with a numeric seq, anywhere in v. */
function seqs(v, out = new Set()) {
  if (Array.isArray(v)) v.forEach((x) => seqs(x, out));
  else if (v && typeof v === "object") {
    if (typeof v.seq === "number") out.add(v.seq);
    Object.values(v).forEach((x) => seqs(x, out));
  }
  return out;
}

/**
 * @param {Awaited<ReturnType<import("./harness.mjs").startLedger>>} L
 * @param {string} run
 * @param {{seq: number, decision: string, workflow_id?: string}[]} results the run's decisions
 * @param {(r: any) => Promise<{seq: number}>} [recordOutcome] records an outcome of an accepted decision
 */
export async function checkTrace(L, run, results, recordOutcome) {
  assert.ok(results.length > 0, "the run made no decision");
  const api = await (await fetch(L.url + "/openapi.json")).text();
  if (!api.includes("Govledger-Workflow")) {
    // The server predates workflows: the header is ignored, so trace cannot list the run.
    assert.ok(results.every((r) => !r.workflow_id), "a workflow_id without the header in openapi.json");
    console.log(`# trace ${run}: not checked, this govledger serve takes no Govledger-Workflow header yet`);
    return;
  }
  for (const r of results) assert.equal(r.workflow_id, run, `decision ${r.seq}: workflow_id`);
  const outcomes = [];
  const hasOutcomes = await L.hasRoute("POST", "/v1/outcomes");
  if (hasOutcomes) {
    for (const r of results.filter((x) => x.decision === "accepted")) {
      const o = recordOutcome ? await recordOutcome(r) : await L.client.outcome({ decisionSeq: r.seq, status: "succeeded", durationMs: 5 });
      assert.equal(o.kind, "outcome");
      assert.equal(o.decision_seq, r.seq);
      outcomes.push(o.seq);
    }
    assert.ok(outcomes.length > 0, "no accepted decision to record an outcome of");
  } else {
    console.log(`# trace ${run}: outcomes not checked, this govledger serve has no POST /v1/outcomes yet`);
  }
  const trace = JSON.parse(await L.cli("--output", "json", "trace", run));
  const listed = seqs(trace);
  for (const r of results) assert.ok(listed.has(r.seq), `trace ${run} does not list decision ${r.seq}: ${JSON.stringify(trace)}`);
  for (const s of outcomes) assert.ok(listed.has(s), `trace ${run} does not list outcome ${s}: ${JSON.stringify(trace)}`);
}
