import type { Governor, Mode, AgentRef } from "./index.js";

export interface GotoOptions {
  source: AgentRef;
  target: AgentRef;
  input?: string | object;
  /** The Command's update when accepted. */
  update?: any;
  mode?: Mode;
  /** Where a refused handoff goes; default END. */
  refuseGoto?: string;
  /** The update of a refused handoff; default an assistant message in `messages`. */
  refusalUpdate?: (text: string) => any;
  /** The thread's start time, unless thread_id is a UUID v7. */
  time?: Date | string | number | ((config: any) => Date | string | number);
}
/** Command({goto: target}) when the ledger accepts; throws (abort) or Command({goto: refuseGoto}) (refuse) otherwise. */
export declare function governedGoto(gov: Governor, config: any, options: GotoOptions): Promise<any>;

export interface HandoffToolOptions {
  source: AgentRef;
  target: AgentRef;
  name?: string;
  description?: string;
  mode?: Mode;
  time?: GotoOptions["time"];
  /** Command to the parent graph (default true: the tool runs in an agent subgraph). */
  parent?: boolean;
}
/** A LangChain tool transfer_to_<target> whose Command runs only when the ledger accepts. */
export declare function governedHandoffTool(gov: Governor, options: HandoffToolOptions): Promise<any>;
