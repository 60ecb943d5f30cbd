// A scripted Anthropic Messages API on 127.0.0.1 for the real Claude Code
// the Agent SDK runs. The user's prompt says "route:<subagent> nonce:<n>":
// the main session's first turn calls the Agent tool for that subagent,
// passing the nonce on; a subagent (recognised by its prompt in the system
// prompt) answers "<name> ran" and counts a run for its nonce; after a tool
// result the main session answers "main read: <the result>". The nonce
// keeps concurrent sessions' counts apart.

import { createServer } from "node:http";

export async function startModel(subagentPrompts) {
  const m = { runs: {}, server: undefined, url: "" };
  m.ran = (name, nonce) => m.runs[`${name}/${nonce}`] ?? 0;
  let n = 0;
  m.server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => { body += c; });
    req.on("end", () => {
      if (!req.url.startsWith("/v1/messages")) { res.writeHead(404).end(); return; }
      if (req.url.includes("count_tokens")) { res.writeHead(200, { "Content-Type": "application/json" }).end('{"input_tokens":10}'); return; }
      const r = JSON.parse(body);
      const system = JSON.stringify(r.system ?? "");
      const text = JSON.stringify(r.messages ?? []);
      n++;
      let block;
      let stop = "end_turn";
      const sub = Object.entries(subagentPrompts).find(([, p]) => system.includes(JSON.stringify(p.trim()).slice(1, -1)));
      const hasAgentTool = (r.tools ?? []).some((t) => t.name === "Agent" || t.name === "Task");
      const results = (r.messages ?? []).flatMap((msg) => (Array.isArray(msg.content) ? msg.content : []).filter((p) => p.type === "tool_result"));
      const to = /route:([a-z-]+)/.exec(text)?.[1];
      const nonce = /nonce:([a-z0-9]+)/.exec(text)?.[1];
      if (sub) {
        m.runs[`${sub[0]}/${nonce}`] = m.ran(sub[0], nonce) + 1;
        block = { type: "text", text: `${sub[0]} ran` };
      } else if (hasAgentTool && !text.includes('"tool_use"')) {
        stop = "tool_use";
        const tool = r.tools.some((t) => t.name === "Agent") ? "Agent" : "Task";
        block = { type: "tool_use", id: `toolu_${String(n).padStart(3, "0")}`, name: tool,
          input: { subagent_type: to, description: "handle the invoice", prompt: `nonce:${nonce} My invoice is wrong.`, run_in_background: false } };
      } else {
        const last = results.at(-1);
        const content = typeof last?.content === "string" ? last.content : (last?.content ?? []).map((c) => c.text ?? "").join("");
        block = { type: "text", text: `main read: ${content}` };
      }
      const msg = { id: `msg_${n}`, type: "message", role: "assistant", model: "claude-sonnet-4-5", stop_reason: null, stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 } };
      if (!r.stream) {
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ ...msg, content: [block], stop_reason: stop }));
        return;
      }
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const ev = (name, v) => res.write(`event: ${name}\ndata: ${JSON.stringify(v)}\n\n`);
      ev("message_start", { type: "message_start", message: { ...msg, content: [] } });
      if (block.type === "tool_use") {
        ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
        ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
      } else {
        ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
        ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: block.text } });
      }
      ev("content_block_stop", { type: "content_block_stop", index: 0 });
      ev("message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } });
      ev("message_stop", { type: "message_stop" });
      res.end();
    });
  });
  await new Promise((r) => m.server.listen(0, "127.0.0.1", r));
  m.url = `http://127.0.0.1:${m.server.address().port}`;
  m.stop = () => new Promise((r) => m.server.close(r));
  return m;
}
