import type { Governor, Mode, Run, AgentRef } from "./index.js";

/** RFC 8785 canonical JSON. */
export declare function canonicalJSON(value: unknown): string;
export interface InterceptorOptions {
  /** The local agent sending. */
  source: AgentRef;
  /** The remote agent from the client's Agent Card; default its name and canonical JSON. */
  target?: (card: any) => AgentRef;
  mode?: Mode;
  /** The run of a message; default its contextId. */
  run?: (message: any) => Run;
}
/** A CallInterceptor for @a2a-js/sdk's Client. */
export declare function governedInterceptor(gov: Governor, options: InterceptorOptions): { before(args: any): Promise<void>; after(args: any): Promise<void> };
