// A small client for the govledger HTTP API (govledger serve). Plain ESM with
// JSDoc types: runs on Node 20+ (built-in fetch), no build step, no packages.
//
//   import { Client, HandoffRejected } from "./govledger-client.mjs";
//   const gl = new Client({ baseUrl: "http://127.0.0.1:8080" }); // token from GOVLEDGER_TOKEN
//   const result = await gl.submit(await readFile("handoff.json"));
//
//   // As an agent framework's handoff hook: refuse to proceed on a rejection.
//   try { await gl.onHandoff("domain-05-product", "domain-02-analysis", document); }
//   catch (e) { if (e instanceof HandoffRejected) console.log(e.reasons.map((r) => r.code)); }
//
// Every submission carries an Idempotency-Key. On 503 (overloaded, or "outcome
// unknown" after a storage failure), 429 or a network failure the client
// retries with the SAME key, so a handoff that was in fact recorded is answered
// with its first result ("replayed": true) and never recorded twice.

import { randomUUID } from "node:crypto";

/**
 * @typedef {{code: string, severity: "critical"|"error"|"warning", field: string, message: string}} Reason
 * @typedef {{seq: number, entry_hash: string, decision: "accepted"|"rejected", reasons: Reason[],
 *   format?: string, handoff_id?: string, source?: string, target?: string, workflow_id?: string,
 *   replayed?: boolean}} SubmitResult
 * @typedef {{type: string, title: string, status: number, code: string, detail?: string,
 *   instance?: string, request_id?: string, written?: "no"|"unknown", retry_after?: number}} Problem
 * @typedef {Uint8Array|string|object} Document  bytes, text (UTF-8) or a value sent as JSON
 * @typedef {{format?: string, source?: string, target?: string, idempotencyKey?: string,
 *   traceparent?: string}} SubmitOptions
 */

/** The server refused a request, or could not be reached (status undefined). */
export class GovledgerError extends Error {
  /**
   * @param {string} message
   * @param {number|undefined} status
   * @param {Partial<Problem>} problem
   * @param {number} attempts
   */
  constructor(message, status, problem, attempts) {
    super(message);
    this.name = "GovledgerError";
    this.status = status;
    this.problem = problem;
    this.attempts = attempts;
  }

  /** @returns {string|undefined} the problem's stable code, e.g. FORBIDDEN_SOURCE */
  get code() {
    return this.problem.code;
  }
}

/** The ledger recorded the handoff as rejected: the framework must not proceed. */
export class HandoffRejected extends Error {
  /** @param {SubmitResult} result */
  constructor(result) {
    const codes = (result.reasons ?? []).map((r) => r.code).join(", ") || "no reasons";
    super(`handoff rejected (seq ${result.seq}): ${codes}`);
    this.name = "HandoffRejected";
    this.result = result;
    this.reasons = result.reasons ?? [];
    this.seq = result.seq;
  }
}

const RETRY_STATUSES = new Set([429, 503]);

export class Client {
  /**
   * @param {{baseUrl: string, token?: string, timeoutMs?: number, retries?: number,
   *   backoffMs?: number, maxBackoffMs?: number}} options
   *   token defaults to GOVLEDGER_TOKEN; retries are further attempts after a 503,
   *   429 or network failure; waits start at backoffMs and double (Retry-After is
   *   honoured), capped at maxBackoffMs.
   */
  constructor({ baseUrl, token = process.env.GOVLEDGER_TOKEN, timeoutMs = 10000, retries = 5, backoffMs = 250, maxBackoffMs = 30000 }) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.backoffMs = backoffMs;
    this.maxBackoffMs = maxBackoffMs;
  }

  /**
   * Record one handoff document. A rejected handoff is recorded too and
   * returned with decision "rejected" (onHandoff throws instead). Throws
   * GovledgerError when nothing could be recorded.
   * @param {Document} document
   * @param {SubmitOptions} [options] source/target: agents for formats that do not name them
   * @returns {Promise<SubmitResult>}
   */
  async submit(document, { format, source, target, idempotencyKey, traceparent } = {}) {
    /** @type {Record<string, string>} */
    const headers = { "Idempotency-Key": idempotencyKey ?? randomUUID(), "Content-Type": "application/octet-stream" };
    if (traceparent) headers.traceparent = traceparent;
    return this.#call("POST", "/v1/handoffs", query({ format, from: source, to: target }), body(document), headers);
  }

  /**
   * Decide a document without recording it (seq 0).
   * @param {Document} document
   * @param {SubmitOptions} [options]
   * @returns {Promise<SubmitResult>}
   */
  async validate(document, { format, source, target } = {}) {
    return this.#call("POST", "/v1/validate", query({ format, from: source, to: target }), body(document),
      { "Content-Type": "application/octet-stream" });
  }

  /**
   * A handoff hook: record the handoff from source to target and throw
   * HandoffRejected when the ledger rejected it.
   * @param {string} source
   * @param {string} target
   * @param {Document} document
   * @param {SubmitOptions} [options]
   * @returns {Promise<SubmitResult>}
   */
  async onHandoff(source, target, document, options = {}) {
    const result = await this.submit(document, { ...options, source, target });
    if (result.decision !== "accepted") throw new HandoffRejected(result);
    return result;
  }

  /**
   * One page of entries, newest first (filters as GET /v1/entries).
   * @param {Record<string, string|number>} [filters]
   * @returns {Promise<{entries: {seq: number, hash: string, entry: object}[], next?: number}>}
   */
  async entries(filters = {}) {
    return this.#call("GET", "/v1/entries", query(filters), undefined, {});
  }

  async #call(method, path, qs, payload, headers) {
    const url = this.baseUrl + path + qs;
    const h = { ...headers, Accept: "application/json, application/problem+json" };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    let wait = this.backoffMs;
    for (let attempt = 1; ; attempt++) {
      let delay;
      try {
        const res = await fetch(url, { method, headers: h, body: payload, signal: AbortSignal.timeout(this.timeoutMs) });
        const text = await res.text();
        if (res.ok) return JSON.parse(text);
        let problem = {};
        try {
          const p = JSON.parse(text);
          if (p && typeof p === "object") problem = p;
        } catch { /* not a problem document */ }
        const message = `${method} ${path}: ${res.status} ${problem.detail ?? problem.title ?? res.statusText}`;
        if (!RETRY_STATUSES.has(res.status) || attempt > this.retries) {
          throw new GovledgerError(message, res.status, problem, attempt);
        }
        const ra = Number.parseInt(res.headers.get("Retry-After") ?? "", 10);
        delay = Number.isFinite(ra) && ra >= 0 ? ra * 1000 : wait;
      } catch (e) {
        if (e instanceof GovledgerError) throw e;
        // fetch rejects with a TypeError on network failures, a DOMException on timeout.
        if (attempt > this.retries) {
          throw new GovledgerError(`${method} ${path}: ${e?.cause?.code ?? e?.message ?? e}`, undefined, {}, attempt);
        }
        delay = wait;
      }
      await new Promise((r) => setTimeout(r, Math.min(delay, this.maxBackoffMs) * (0.8 + 0.2 * Math.random())));
      wait = Math.min(wait * 2, this.maxBackoffMs);
    }
  }
}

/** @param {Record<string, string|number|undefined>} params */
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** @param {Document} document */
function body(document) {
  if (document instanceof Uint8Array) return document;
  if (typeof document === "string") return new TextEncoder().encode(document);
  return new TextEncoder().encode(JSON.stringify(document));
}
