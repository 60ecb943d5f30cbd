import type { Governor, Mode } from "./index.js";

/** A beforeToolCallback deciding transfer_to_agent calls; other tools pass. */
export declare function transferGate(gov: Governor, root: any, options?: { mode?: Mode }): (params: { tool: any; args: Record<string, unknown>; context: any }) => Promise<Record<string, unknown> | undefined>;
/** Puts transferGate first in every LlmAgent's beforeToolCallback under root. */
export declare function governTransfers<R>(gov: Governor, root: R, options?: { mode?: Mode }): R;
