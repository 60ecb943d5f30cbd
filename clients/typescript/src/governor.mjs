// The framework-neutral core of the adapters: a handoff from one agent to
// another becomes a deterministic governed/1 document carrying the hashes of
// the instructions each agent is given, submitted with the step's identity as
// Idempotency-Key; the decision lets the handoff run, stops it (abort) or
// hands the model a refusal (refuse). Never fails open.

import { createHash, randomBytes } from "node:crypto";
import { Client, GovledgerError, HandoffRejected } from "./client.mjs";

/** @typedef {"abort"|"refuse"} Mode */

const AGENT_TYPES = new Set(["domain", "archetype", "orchestrator"]);
const ZERO_HASH = "0".repeat(64);

/** The SHA-256 (lower-case hex) of text as UTF-8, or of bytes. */
export function sha256Hex(data) {
  return createHash("sha256").update(typeof data === "string" ? Buffer.from(data, "utf8") : data).digest("hex");
}

/**
 * A UUID version 4 (RFC 4122 variant) derived from parts: the same parts,
 * the same id. governed/1 wants a v4 id; this one is reproducible.
 * @param {string[]} parts
 */
export function derivedUUID(...parts) {
  const h = createHash("sha256").update(parts.join("\u0000")).digest();
  h[6] = (h[6] & 0x0f) | 0x40;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * The time embedded in a time-ordered id: a UUID version 7 (Unix ms), a
 * UUID version 6 or 1 (Gregorian 100 ns), or undefined.
 * @param {string} id
 * @returns {Date|undefined}
 */
export function idTime(id) {
  const m = /^([0-9a-f]{8})-([0-9a-f]{4})-([167])([0-9a-f]{3})-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.exec(id ?? "");
  if (!m) return undefined;
  const [, a, b, v, c] = m;
  if (v === "7") return new Date(Number.parseInt(a + b, 16));
  const ticks = v === "6" ? BigInt(`0x${a}${b}${c}`) : BigInt(`0x${c}${b}${a}`);
  // 100 ns ticks since 1582-10-15; 12219292800000 ms before the Unix epoch.
  return new Date(Number(ticks / 10000n) - 12219292800000);
}

/**
 * A new run id: a UUID version 7, whose embedded time is the run's start
 * time, so every step of the run can be dated the same way after a crash.
 * @param {Date} [now]
 */
export function newRunId(now = new Date()) {
  const b = randomBytes(16);
  const ms = BigInt(now.getTime());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = b.toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * The handoff was not allowed to run, in refuse mode: what the model reads.
 * Adapters return its message as the handoff's tool result.
 */
export class HandoffRefused extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = "HandoffRefused";
  }
}

export class Governor {
  /**
   * @param {{client: Client|{baseUrl: string, token?: string, timeoutMs?: number, retries?: number},
   *   agents?: Record<string, {id?: string, type?: string, version?: string}>,
   *   mode?: Mode, framework?: string, workflow?: boolean | ((run: string) => string|undefined),
   *   requestType?: "query"|"task"|"analysis"|"decision",
   *   onDecision?: (d: {run: {id: string}, step: string, source: string, target: string, allowed: boolean,
   *     result?: Record<string, any>, error?: Error}) => void}} options
   *   agents: the registry's view of each framework agent name (id defaults to the
   *   name, type to "domain", version to "1.0.0"); an agent not listed is sent as
   *   named so the ledger says UNKNOWN_AGENT.
   */
  constructor({ client, agents = {}, mode = "abort", framework = "js", workflow = true, requestType = "task", onDecision }) {
    if (!client) throw new TypeError("govledger Governor: client is required");
    this.client = client instanceof Client ? client : new Client(client);
    this.agents = agents;
    this.mode = checkMode(mode);
    this.framework = framework;
    this.workflow = workflow;
    this.requestType = requestType;
    this.onDecision = onDecision;
  }

  /** The registry block of a framework agent whose instructions are text. */
  agentBlock(name, instructions) {
    const a = this.agents[name] ?? {};
    const type = a.type ?? "domain";
    if (!AGENT_TYPES.has(type)) throw new TypeError(`govledger: agent ${name}: type ${JSON.stringify(type)}: want domain, archetype or orchestrator`);
    return {
      agent_type: type,
      agent_id: a.id ?? name,
      agent_version: a.version ?? "1.0.0",
      prompt_hash: instructions === undefined || instructions === null ? ZERO_HASH : sha256Hex(instructions),
    };
  }

  /**
   * When the run started: run.time, else the time in a time-ordered run id
   * (UUID v7, v6 or v1; newRunId() makes one). Both survive a crash, so a
   * resumed step gets the same timestamp and the same document; a run with
   * neither is refused rather than recorded with a time a resume could not
   * reproduce (which would be a 409 on resume).
   */
  runTime(run) {
    if (run.time !== undefined) {
      const d = new Date(run.time);
      if (Number.isNaN(d.getTime())) throw new TypeError(`govledger: run ${run.id}: time ${JSON.stringify(run.time)} is not a date`);
      return d;
    }
    const t = idTime(run.id);
    if (t) return t;
    throw new TypeError(`govledger: run ${JSON.stringify(run.id)} has no time: use a time-ordered run id (newRunId(), a UUID v7) or pass {id, time} with the run's start time, so a resumed step is byte-identical`);
  }

  /**
   * The governed/1 document of one handoff: byte-identical for the same run,
   * step, agents, instructions and request.
   * @param {{run: {id: string, time?: Date|string|number}, step: string,
   *   source: {name: string, instructions?: string|Uint8Array},
   *   target: {name: string, instructions?: string|Uint8Array},
   *   request?: {type?: string, description?: string, input?: string|object, expectedOutput?: string},
   *   stepTime?: Date}} h
   */
  document(h) {
    checkHandoff(h);
    const when = h.stepTime ?? this.runTime(h.run);
    const req = h.request ?? {};
    const doc = {
      handoff_id: derivedUUID("govledger", this.framework, h.run.id, h.step, h.source.name, h.target.name),
      timestamp: when.toISOString(),
      protocol_version: "1.0.0",
      source_agent: this.agentBlock(h.source.name, h.source.instructions),
      target_agent: this.agentBlock(h.target.name, h.target.instructions),
      context: {
        request: {
          type: req.type ?? this.requestType,
          description: req.description ?? `handoff from ${h.source.name} to ${h.target.name}`,
          input_data: req.input === undefined ? "" : typeof req.input === "string" || isPlainObject(req.input) ? req.input : JSON.stringify(req.input),
          constraints: [],
          expected_output: req.expectedOutput ?? `the result of ${h.target.name}`,
        },
        state: {
          conversation_history: [],
          accumulated_context: { framework: this.framework, run: h.run.id, step: h.step },
          decisions_made: [],
        },
      },
      governance: {
        source_agent_verified: true,
        target_agent_verified: true,
        composition_valid: true,
        boundaries_respected: true,
        audit_trail: `${this.framework}:${h.run.id}/${h.step}`,
      },
    };
    return JSON.stringify(doc);
  }

  /** The Idempotency-Key of a step: framework/run/step, or its digest when that is not a valid key. */
  key(run, step) {
    const k = `${this.framework}/${run.id}/${step}`;
    return /^[\x21-\x7e]{1,255}$/.test(k) ? k : `${this.framework}/sha256-${sha256Hex(`${run.id}\u0000${step}`).slice(0, 48)}`;
  }

  /**
   * Decide one handoff. Resolves with {allowed: true, result} when the ledger
   * accepted it. Otherwise, in abort mode, throws HandoffRejected (recorded as
   * rejected) or a GovledgerError (nothing decided: unreachable, refused
   * request, timeout); in refuse mode resolves with {allowed: false, refusal,
   * error}, refusal being the text the model should read.
   * @param {Parameters<Governor["document"]>[0] & {mode?: Mode}} h
   */
  async gate(h) {
    const mode = checkMode(h.mode ?? this.mode);
    const doc = this.document(h);
    const report = (d) => {
      this.onDecision?.({ run: h.run, step: h.step, source: h.source.name, target: h.target.name, ...d });
      return d;
    };
    const workflow = typeof this.workflow === "function" ? this.workflow(h.run.id) : this.workflow ? h.run.id : undefined;
    let result;
    try {
      result = await this.client.submit(doc, { idempotencyKey: this.key(h.run, h.step), workflow });
    } catch (e) {
      report({ allowed: false, error: e });
      if (mode === "abort") throw e;
      const why = e instanceof GovledgerError ? e.message : String(e);
      return { allowed: false, result: undefined, error: e, document: doc,
        refusal: `Handoff to ${h.target.name} refused: the governance ledger could not decide it (${why}). Do not retry the handoff; continue without ${h.target.name}.` };
    }
    if (result.decision === "accepted") {
      report({ allowed: true, result });
      return { allowed: true, result, document: doc };
    }
    const err = new HandoffRejected(result);
    report({ allowed: false, result, error: err });
    if (mode === "abort") throw err;
    const reasons = (result.reasons ?? []).map((r) => `${r.code}: ${r.message}`).join("; ");
    return { allowed: false, result, error: err, document: doc,
      refusal: `Handoff to ${h.target.name} refused by governance (ledger seq ${result.seq}): ${reasons || "rejected"}. Continue without ${h.target.name}.` };
  }

  /**
   * Record the outcome of an accepted handoff (POST /v1/outcomes), keyed by
   * the step so a retry is answered with the first outcome.
   * @param {{run: {id: string}, step: string, result: {seq: number}}} decided
   * @param {{status: "succeeded"|"failed"|"cancelled", output?: string|Uint8Array, durationMs?: number}} outcome
   */
  async outcome(decided, { status, output, durationMs }) {
    return this.client.outcome({ decisionSeq: decided.result.seq, status, durationMs,
      outputSha256: output === undefined ? undefined : sha256Hex(output),
      idempotencyKey: `${this.key(decided.run, decided.step)}/outcome`.slice(0, 255) });
  }
}

function checkMode(mode) {
  if (mode !== "abort" && mode !== "refuse") throw new TypeError(`govledger: mode ${JSON.stringify(mode)}: want "abort" or "refuse"`);
  return mode;
}

function checkHandoff(h) {
  if (!h || typeof h.run?.id !== "string" || h.run.id === "") throw new TypeError("govledger: handoff: run.id (a non-empty string) is required");
  if (typeof h.step !== "string" || h.step === "") throw new TypeError("govledger: handoff: step (a non-empty string) is required");
  for (const side of ["source", "target"]) {
    if (typeof h[side]?.name !== "string" || h[side].name === "") throw new TypeError(`govledger: handoff: ${side}.name is required`);
  }
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}
