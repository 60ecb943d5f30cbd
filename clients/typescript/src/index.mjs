export { Client, GovledgerError, LedgerUnreachable, HandoffRejected } from "./client.mjs";
export { Governor, HandoffRefused, derivedUUID, idTime, newRunId, sha256Hex } from "./governor.mjs";
