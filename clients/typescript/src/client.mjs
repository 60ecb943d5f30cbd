// The HTTP client of govledger serve: handoffs, batches, outcomes and reads,
// problem+json errors as typed errors. Node 20+ (built-in fetch), no
// dependencies. The library reads no environment: pass the token.

import { randomUUID } from "node:crypto";

/**
 * The server answered with an error (a problem+json document), or could not
 * be reached (status undefined, see LedgerUnreachable). Nothing is known to
 * be recorded unless problem.written says otherwise.
 */
export class GovledgerError extends Error {
  /**
   * @param {string} message
   * @param {number|undefined} status
   * @param {Record<string, any>} problem
   * @param {number} attempts
   * @param {{cause?: unknown}} [options]
   */
  constructor(message, status, problem, attempts, options) {
    super(message, options);
    this.name = "GovledgerError";
    this.status = status;
    this.problem = problem;
    this.attempts = attempts;
  }

  /** The problem's stable code (FORBIDDEN_SOURCE, OUTCOME_UNKNOWN, ...). */
  get code() {
    return this.problem?.code;
  }

  /** "no", "unknown" or undefined (not said). */
  get written() {
    return this.problem?.written;
  }
}

/** The server could not be reached, or did not answer within the timeout. */
export class LedgerUnreachable extends GovledgerError {
  constructor(message, attempts, options) {
    super(message, undefined, {}, attempts, options);
    this.name = "LedgerUnreachable";
  }
}

/** The ledger recorded the handoff as rejected: the framework must not proceed. */
export class HandoffRejected extends Error {
  /** @param {Record<string, any>} result */
  constructor(result) {
    const reasons = result.reasons ?? [];
    const codes = reasons.map((r) => r.code).join(", ") || "no reasons";
    super(`handoff ${result.source ?? "?"} -> ${result.target ?? "?"} rejected (seq ${result.seq}): ${codes}`);
    this.name = "HandoffRejected";
    this.result = result;
    this.reasons = reasons;
    this.seq = result.seq;
  }

  /** The reason codes, e.g. ["BOUNDARY_VIOLATION"]. */
  get codes() {
    return this.reasons.map((r) => r.code);
  }
}

const visibleASCII = /^[\x21-\x7e]{1,255}$/;

export class Client {
  /**
   * @param {{baseUrl: string, token?: string, timeoutMs?: number, retries?: number,
   *   backoffMs?: number, fetch?: typeof fetch}} options
   */
  constructor({ baseUrl, token, timeoutMs = 10_000, retries = 3, backoffMs = 200, fetch: f } = /** @type {any} */ ({})) {
    if (typeof baseUrl !== "string" || !/^https?:\/\//.test(baseUrl)) {
      throw new TypeError(`govledger Client: baseUrl ${JSON.stringify(baseUrl)}: want an http(s) URL`);
    }
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new TypeError(`govledger Client: timeoutMs ${timeoutMs}: want a positive number of milliseconds`);
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.timeoutMs = timeoutMs;
    this.retries = retries;
    this.backoffMs = backoffMs;
    this.fetch = f ?? globalThis.fetch;
  }

  /**
   * Record one handoff document; a rejected handoff is recorded too and
   * returned with decision "rejected".
   * @param {Uint8Array|string|object} document
   * @param {{format?: string, source?: string, target?: string, idempotencyKey?: string,
   *   workflow?: string, traceparent?: string}} [options]
   */
  async submit(document, { format, source, target, idempotencyKey, workflow, traceparent } = {}) {
    const key = idempotencyKey ?? randomUUID();
    checkKey(key);
    /** @type {Record<string, string>} */
    const headers = { "Idempotency-Key": key, "Content-Type": "application/octet-stream" };
    // fetch takes header values as byte strings: UTF-8 goes as its bytes.
    if (workflow !== undefined) headers["Govledger-Workflow"] = Buffer.from(checkWorkflow(workflow), "utf8").toString("latin1");
    if (traceparent) headers.traceparent = traceparent;
    return this.#call("POST", "/v1/handoffs", query({ format, from: source, to: target }), body(document), headers);
  }

  /**
   * Record several documents in one request (POST /v1/handoffs:batch). The
   * answer has one item per document, in order: a result ({status: 201, ...})
   * or a problem ({status, code, ...}).
   * @param {{document: Uint8Array|string|object, format?: string, source?: string, target?: string,
   *   idempotencyKey?: string, workflow?: string}[]} items
   */
  async batch(items) {
    const lines = items.map((it, i) => {
      const env = { document: new TextDecoder().decode(body(it.document)) };
      for (const [k, v] of [["idempotency_key", it.idempotencyKey ?? randomUUID()], ["format", it.format],
        ["from", it.source], ["to", it.target], ["workflow", it.workflow]]) {
        if (v !== undefined) env[k] = v;
      }
      try {
        checkKey(env.idempotency_key);
        if (it.workflow !== undefined) checkWorkflow(it.workflow);
      } catch (e) {
        throw new TypeError(`batch item ${i + 1}: ${e.message}`);
      }
      return JSON.stringify(env);
    });
    const text = await this.#call("POST", "/v1/handoffs:batch", "", new TextEncoder().encode(lines.join("\n") + "\n"),
      { "Content-Type": "application/x-ndjson" }, true);
    return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
  }

  /** Decide a document without recording it (seq 0). */
  async validate(document, { format, source, target } = {}) {
    return this.#call("POST", "/v1/validate", query({ format, from: source, to: target }), body(document),
      { "Content-Type": "application/octet-stream" });
  }

  /**
   * Record the outcome of an accepted handoff (POST /v1/outcomes).
   * @param {{decisionSeq: number, status: "succeeded"|"failed"|"cancelled", outputSha256?: string,
   *   durationMs?: number, idempotencyKey?: string}} outcome
   */
  async outcome({ decisionSeq, status, outputSha256, durationMs, idempotencyKey }) {
    const key = idempotencyKey ?? randomUUID();
    checkKey(key);
    /** @type {Record<string, any>} */
    const b = { decision_seq: decisionSeq, status };
    if (outputSha256 !== undefined) b.output_sha256 = outputSha256;
    if (durationMs !== undefined) b.duration_ms = Math.max(0, Math.round(durationMs));
    return this.#call("POST", "/v1/outcomes", "", new TextEncoder().encode(JSON.stringify(b)),
      { "Idempotency-Key": key, "Content-Type": "application/json" });
  }

  /** One page of entries, newest first (filters as GET /v1/entries). */
  async entries(filters = {}) {
    return this.#call("GET", "/v1/entries", query(filters), undefined, {});
  }

  /** A workflow's entries in seq order (GET /v1/workflows/{id}). */
  async workflow(id) {
    return this.#call("GET", `/v1/workflows/${encodeURIComponent(id)}`, "", undefined, {});
  }

  // Retries only a 503 OUTCOME_UNKNOWN (the commit may or may not have
  // happened), with the same request and so the same Idempotency-Key: the
  // retry is answered with the first decision if there was one. Anything
  // else is the caller's to decide, at once.
  async #call(method, path, qs, payload, headers, raw = false) {
    const url = this.baseUrl + path + qs;
    const h = { ...headers, Accept: "application/json, application/problem+json" };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    for (let attempt = 1; ; attempt++) {
      let res, text;
      try {
        res = await this.fetch(url, { method, headers: h, body: payload, signal: AbortSignal.timeout(this.timeoutMs) });
        text = await res.text();
      } catch (e) {
        const why = e?.name === "TimeoutError" ? `no answer within ${this.timeoutMs} ms` : (e?.cause?.code ?? e?.message ?? String(e));
        throw new LedgerUnreachable(`${method} ${this.baseUrl}${path}: ${why}`, attempt, { cause: e });
      }
      if (res.ok) return raw ? text : JSON.parse(text);
      let problem = {};
      try {
        const p = JSON.parse(text);
        if (p && typeof p === "object" && !Array.isArray(p)) problem = p;
      } catch { /* not a problem document */ }
      const err = new GovledgerError(`${method} ${path}: ${res.status} ${problem.code ?? ""} ${problem.detail ?? problem.title ?? res.statusText}`.replace(/\s+/g, " ").trim(),
        res.status, problem, attempt);
      if (res.status !== 503 || problem.code !== "OUTCOME_UNKNOWN" || attempt > this.retries) throw err;
      const ra = Number.parseInt(res.headers.get("Retry-After") ?? "", 10);
      const wait = Number.isFinite(ra) && ra >= 0 ? ra * 1000 : this.backoffMs * 2 ** (attempt - 1);
      await new Promise((r) => setTimeout(r, Math.min(wait, this.timeoutMs)));
    }
  }
}

function checkKey(key) {
  if (typeof key !== "string" || !visibleASCII.test(key)) {
    throw new TypeError(`idempotency key ${JSON.stringify(key)}: want 1 to 255 visible ASCII characters`);
  }
}

function checkWorkflow(w) {
  // eslint-disable-next-line no-control-regex
  if (typeof w !== "string" || w === "" || Buffer.byteLength(w) > 256 || /[\u0000-\u001f\u007f]/.test(w) || !w.isWellFormed()) {
    throw new TypeError(`workflow ${JSON.stringify(w)}: want 1 to 256 bytes of UTF-8 without control characters`);
  }
  return w;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

function body(document) {
  if (document instanceof Uint8Array) return document;
  if (typeof document === "string") return new TextEncoder().encode(document);
  return new TextEncoder().encode(JSON.stringify(document));
}
