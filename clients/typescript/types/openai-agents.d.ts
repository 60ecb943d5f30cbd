import type { Governor, Mode, Run } from "./index.js";

export interface OpenAIAgentsOptions {
  mode?: Mode;
  /** The run of a run context; default: context.govledgerRun (an id or {id, time}). */
  run?: (runContext: any) => Run;
}
export declare function defaultRun(runContext: any): Run;
/** A copy of the handoff to target (an Agent or a Handoff) decided by the ledger before it runs. */
export declare function governedHandoff<H = any>(gov: Governor, source: any, target: any, options?: OpenAIAgentsOptions): H;
/** Replaces each agent's handoffs with governed ones, in place. */
export declare function governAgents<A extends { handoffs: any[] }>(gov: Governor, agents: A[], options?: OpenAIAgentsOptions): A[];
