// Types of the govledger npm package (hand-written; the sources are plain ESM).

export type Decision = "accepted" | "rejected";

export interface Reason {
  code: string;
  severity: "critical" | "error" | "warning";
  field: string;
  message: string;
}

/** The answer to POST /v1/handoffs: the decision and the entry that records it. */
export interface SubmitResult {
  seq: number;
  entry_hash: string;
  decision: Decision;
  reasons: Reason[];
  format?: string;
  handoff_id?: string;
  source?: string;
  target?: string;
  workflow_id?: string;
  /** true when the Idempotency-Key had been used: this is the first answer, nothing was appended. */
  replayed?: boolean;
  [k: string]: unknown;
}

/** An RFC 9457 problem document as govledger sends it. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  code?: string;
  detail?: string;
  instance?: string;
  request_id?: string;
  written?: "no" | "unknown";
  [k: string]: unknown;
}

export interface OutcomeResult {
  seq: number;
  kind: "outcome";
  decision_seq: number;
  workflow_id: string | null;
  agent: string;
  status: OutcomeStatus;
  [k: string]: unknown;
}

export type OutcomeStatus = "succeeded" | "failed" | "cancelled";
export type Document = Uint8Array | string | object;

export interface ClientOptions {
  /** http(s)://host:port of govledger serve. */
  baseUrl: string;
  /** A bearer token (govledger token create); the library reads no environment. */
  token?: string;
  /** Per attempt; default 10000. */
  timeoutMs?: number;
  /** Further attempts after a 503 OUTCOME_UNKNOWN, with the same Idempotency-Key; default 3. */
  retries?: number;
  backoffMs?: number;
  fetch?: typeof fetch;
}

export interface SubmitOptions {
  format?: string;
  source?: string;
  target?: string;
  /** 1..255 visible ASCII characters; a random UUID when absent. */
  idempotencyKey?: string;
  /** Sent as Govledger-Workflow: 1..256 bytes of UTF-8, no control characters. */
  workflow?: string;
  traceparent?: string;
}

export interface BatchItem extends Omit<SubmitOptions, "traceparent"> {
  document: Document;
}

export declare class GovledgerError extends Error {
  status: number | undefined;
  problem: Problem;
  attempts: number;
  readonly code: string | undefined;
  readonly written: "no" | "unknown" | undefined;
}

export declare class LedgerUnreachable extends GovledgerError {}

export declare class HandoffRejected extends Error {
  result: SubmitResult;
  reasons: Reason[];
  seq: number;
  readonly codes: string[];
}

export declare class Client {
  constructor(options: ClientOptions);
  baseUrl: string;
  timeoutMs: number;
  retries: number;
  submit(document: Document, options?: SubmitOptions): Promise<SubmitResult>;
  batch(items: BatchItem[]): Promise<Array<(SubmitResult & { line: number; status: 201 }) | (Problem & { line: number })>>;
  validate(document: Document, options?: Pick<SubmitOptions, "format" | "source" | "target">): Promise<SubmitResult>;
  outcome(outcome: { decisionSeq: number; status: OutcomeStatus; outputSha256?: string; durationMs?: number; idempotencyKey?: string }): Promise<OutcomeResult>;
  entries(filters?: Record<string, string | number>): Promise<{ entries: { seq: number; hash: string; entry: Record<string, unknown> }[]; next?: number }>;
  workflow(id: string): Promise<{ workflow_id: string; entries: Record<string, unknown>[] }>;
}

export type Mode = "abort" | "refuse";

/** A run: its id, and when it started unless the id is a UUID v7, v6 or v1. */
export interface Run {
  id: string;
  time?: Date | string | number;
}

export interface AgentRef {
  /** The framework's name for the agent. */
  name: string;
  /** The instructions the framework gives it: their SHA-256 is the document's prompt_hash. */
  instructions?: string | Uint8Array;
}

export interface Handoff {
  run: Run;
  /** The step's identity within the run: the same step, the same document and key. */
  step: string;
  source: AgentRef;
  target: AgentRef;
  request?: { type?: "query" | "task" | "analysis" | "decision"; description?: string; input?: string | object; expectedOutput?: string };
  /** The step's time, when the framework keeps one; else the run's. */
  stepTime?: Date;
  mode?: Mode;
}

export type GateResult =
  | { allowed: true; result: SubmitResult; document: string }
  | { allowed: false; result: SubmitResult | undefined; error: Error; document: string; refusal: string };

export interface DecisionEvent {
  run: Run;
  step: string;
  source: string;
  target: string;
  allowed: boolean;
  result?: SubmitResult;
  error?: Error;
}

export interface GovernorOptions {
  client: Client | ClientOptions;
  /** The registry's view of each framework agent name; defaults: id = name, type "domain", version "1.0.0". */
  agents?: Record<string, { id?: string; type?: "domain" | "archetype" | "orchestrator"; version?: string }>;
  /** Default "abort". */
  mode?: Mode;
  /** Names the adapter in keys and documents. */
  framework?: string;
  /** Send the run id as Govledger-Workflow (default true), or map it. */
  workflow?: boolean | ((run: string) => string | undefined);
  requestType?: "query" | "task" | "analysis" | "decision";
  onDecision?: (d: DecisionEvent) => void;
}

export declare class Governor {
  constructor(options: GovernorOptions);
  client: Client;
  mode: Mode;
  framework: string;
  onDecision?: (d: DecisionEvent) => void;
  agentBlock(name: string, instructions?: string | Uint8Array): { agent_type: string; agent_id: string; agent_version: string; prompt_hash: string };
  runTime(run: Run): Date;
  document(h: Handoff): string;
  key(run: Run, step: string): string;
  /** Abort mode throws HandoffRejected or GovledgerError unless accepted; refuse mode resolves with the refusal. */
  gate(h: Handoff): Promise<GateResult>;
  outcome(decided: { run: Run; step: string; result: { seq: number } }, outcome: { status: OutcomeStatus; output?: string | Uint8Array; durationMs?: number }): Promise<OutcomeResult>;
}

export declare class HandoffRefused extends Error {}
export declare function sha256Hex(data: string | Uint8Array): string;
export declare function derivedUUID(...parts: string[]): string;
export declare function idTime(id: string): Date | undefined;
export declare function newRunId(now?: Date): string;
