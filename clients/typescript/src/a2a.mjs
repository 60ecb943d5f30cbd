// @a2a-js/sdk adapter: a client CallInterceptor that decides every message
// sent to a remote A2A agent (sendMessage, sendMessageStream) before the
// transport is called.
//
//   import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
//   import { governedInterceptor } from "govledger/a2a";
//   const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { clientConfig: { interceptors: [
//     governedInterceptor(gov, { source: { name: "triage", instructions: TRIAGE_PROMPT } })] } }));
//
// The source is the local agent; the target is the remote agent the client's
// Agent Card names, and what is hashed for it is the card's canonical JSON
// (RFC 8785) as the SDK holds it. The lock pins a file's bytes, so the
// registry must hold the card file in exactly that form (canonicalJSON(card),
// no trailing newline), and name the agent as card.name or through the
// Governor's agents map; an Agent Cards folder kept indented, as cards are
// served, quotes a different hash (docs/guides/frameworks.md, "@a2a-js/sdk").
// The run is the message's contextId (a UUID v7, or pass run()); the step is
// its messageId, which a client resending the same message keeps.

import { HandoffRefused } from "./governor.mjs";

/**
 * RFC 8785 (JCS) canonical JSON of a JSON value: members sorted by UTF-16
 * code units, no whitespace, ECMAScript number and string forms. Members
 * whose value is undefined are left out, as JSON.stringify does.
 * @param {any} v
 * @returns {string}
 */
export function canonicalJSON(v) {
  if (v === null || typeof v === "boolean" || typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new TypeError(`canonicalJSON: ${v} is not a JSON number`);
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : canonicalJSON(x))).join(",")}]`;
  if (typeof v === "object") {
    if (typeof v.toJSON === "function") return canonicalJSON(v.toJSON());
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJSON(v[k])}`).join(",")}}`;
  }
  throw new TypeError(`canonicalJSON: a ${typeof v} is not JSON`);
}

function defaultRun(message) {
  if (typeof message?.contextId !== "string" || message.contextId === "") {
    throw new HandoffRefused("govledger: the A2A message has no contextId: a handoff without a run cannot be recorded reproducibly, so it is not sent (set message.contextId, a UUID v7)");
  }
  return { id: message.contextId };
}

const SENDS = new Set(["sendMessage", "sendMessageStream"]);

/**
 * A CallInterceptor for an A2A Client. Accepted: the call goes on. Abort
 * mode: before() throws, so the client call rejects and nothing is sent.
 * Refuse mode: the call is answered, without contacting the remote agent,
 * by an agent Message carrying the refusal (for sendMessageStream, one
 * StreamResponse holding it).
 * @param {import("./governor.mjs").Governor} gov
 * @param {{source: {name: string, instructions?: string}, target?: (card: any) => {name: string, instructions?: string},
 *   mode?: "abort"|"refuse", run?: (message: any) => {id: string, time?: any}}} options
 */
export function governedInterceptor(gov, { source, target = (card) => ({ name: card.name, instructions: canonicalJSON(card) }), mode = gov.mode, run = defaultRun }) {
  return {
    async before(args) {
      if (!SENDS.has(args.input.method)) return;
      const message = args.input.value?.message;
      if (!message?.messageId) throw new HandoffRefused("govledger: the A2A message has no messageId");
      const t = target(args.agentCard);
      const text = (message.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
      const g = await gov.gate({ run: run(message), step: `${source.name}>${t.name}/${message.messageId}`, source, target: t, mode,
        request: { input: text } });
      if (g.allowed) return;
      const reply = { messageId: `govledger-refusal-${message.messageId}`, contextId: message.contextId, taskId: message.taskId ?? "",
        role: 2, parts: [{ content: { $case: "text", value: g.refusal }, metadata: undefined, filename: "", mediaType: "text/plain" }],
        metadata: { govledger: { refused: true, seq: g.result?.seq ?? null } }, extensions: [], referenceTaskIds: [] };
      if (args.input.method === "sendMessage") args.earlyReturn = { method: "sendMessage", value: reply };
      else args.earlyReturn = { method: "sendMessageStream", value: { payload: { $case: "message", value: reply } } };
    },
    async after() {},
  };
}
