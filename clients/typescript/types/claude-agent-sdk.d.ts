import type { Governor, Mode, OutcomeResult } from "./index.js";

export interface ClaudeHooksOptions {
  /** The subagents given to query() (options.agents): their prompts are hashed. */
  agents?: Record<string, { prompt?: string }>;
  /** The main session as an agent: its registry name and instructions (systemPrompt). */
  main?: { name: string; instructions?: string };
  mode?: Mode;
  /** The subagent of an Agent call without subagent_type; default "general-purpose". */
  defaultSubagent?: string;
  /** Record SubagentStop as the outcome (POST /v1/outcomes); default true. */
  outcomes?: boolean;
  /** How long to wait for the prompt's line to reach the session transcript; default 10000. */
  transcriptWaitMs?: number;
}
export type HookCallback = (input: any, toolUseID: string | undefined, options: { signal?: AbortSignal }) => Promise<Record<string, unknown>>;
export interface ClaudeHooks {
  /** For query()'s options.hooks. */
  hooks: { PreToolUse: { matcher: string; hooks: HookCallback[] }[]; SubagentStop: { hooks: HookCallback[] }[] };
  /** Abort mode: the error that stopped the session. */
  readonly error: Error | undefined;
  /** Every refusal and failure, in order (outcome failures too). */
  readonly errors: Error[];
  readonly outcomes: OutcomeResult[];
  preToolUse: HookCallback;
  subagentStop: HookCallback;
}
export declare function claudeHooks(gov: Governor, options?: ClaudeHooksOptions): ClaudeHooks;
