// Test support: a registry whose prompts are the instructions the test
// agents run with, locked by the real govledger, served by a real
// `govledger serve` on 127.0.0.1. GOVLEDGER_BIN names the binary (the Go
// test that runs these builds it).

import { spawn, execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { Client } from "govledger";

const run = promisify(execFile);

/** The instructions of the test agents: the code runs them, the registry pins them. */
export const PROMPTS = {
  triage: "You are the triage agent. Route billing questions to billing.\n",
  billing: "You are the billing agent. Answer billing questions.\n",
  refunds: "You are the refunds agent. You are not triage's to call.\n",
  audit: "You are the audit agent. Review what billing did.\n",
};

/** The registry: triage may hand to billing and audit only; refunds is registered but out of bounds. */
const MANIFEST = {
  manifest_version: 1,
  agents: [
    { agent_id: "triage", agent_type: "domain", agent_version: "1.0.0", prompt_path: "prompts/triage.md", handoff_to: ["billing", "audit"] },
    { agent_id: "billing", agent_type: "domain", agent_version: "1.0.0", prompt_path: "prompts/billing.md", handoff_to: ["triage"] },
    { agent_id: "refunds", agent_type: "domain", agent_version: "1.0.0", prompt_path: "prompts/refunds.md" },
    { agent_id: "audit", agent_type: "domain", agent_version: "1.0.0", prompt_path: "prompts/audit.md" },
  ],
};

export function bin() {
  const b = process.env.GOVLEDGER_BIN;
  if (!b) throw new Error("GOVLEDGER_BIN is not set: run these tests through `go test ./clients/typescript` (it builds govledger)");
  return b;
}

/** A closed port on 127.0.0.1: a ledger nobody answers at. */
export async function closedPort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

/**
 * Starts a real govledger serve on a fresh ledger; prompts replaces the
 * prompt files of some agents (an A2A agent's is its Agent Card). Returns its URL, a token
 * (handoff:write for any agent, ledger:read), a CLI runner and stop().
 */
export async function startLedger({ prompts = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "govledger-js-"));
  mkdirSync(join(dir, "reg", "prompts"), { recursive: true });
  for (const [name, text] of Object.entries({ ...PROMPTS, ...prompts })) writeFileSync(join(dir, "reg", "prompts", `${name}.md`), text);
  const manifest = join(dir, "reg", "prompt-manifest.json");
  writeFileSync(manifest, JSON.stringify(MANIFEST, null, 2));
  const lock = join(dir, "reg", "prompt-lock.json");
  const db = join(dir, "ledger.db");
  const tokens = join(dir, "tokens.json");
  const global = ["--db", db, "--manifest", manifest, "--lock", lock];
  await run(bin(), [...global, "lock"]);
  const { stdout } = await run(bin(), ["token", "create", "--tokens", tokens, "--scope", "handoff:write", "--scope", "ledger:read", "--agents", "*", "writer"]);
  const token = stdout.trim();
  const child = spawn(bin(), [...global, "serve", "--tokens", tokens, "--addr", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      for (const line of log.split("\n")) {
        if (!line.includes('"msg":"listening"')) continue;
        try {
          resolve(JSON.parse(line).url);
        } catch { /* a partial line: wait for the rest */ }
      }
    });
    child.on("exit", (code) => reject(new Error(`govledger serve exited ${code} before listening:\n${log}`)));
  });
  const client = new Client({ baseUrl: url, token });
  return {
    dir, url, token, client,
    /** Runs a govledger command against the server; resolves with stdout. */
    async cli(...args) {
      const { stdout: out } = await run(bin(), [...args.slice(0, -1), "--server", url, args.at(-1)],
        { env: { ...process.env, GOVLEDGER_TOKEN: token } });
      return out;
    },
    /** The newest seq in the ledger. */
    async head() {
      const page = await client.entries({ limit: 1 });
      return page.entries[0]?.seq ?? 0;
    },
    /** Whether the server has a route (a probe for features other branches add). */
    async hasRoute(method, path) {
      const res = await fetch(url + "/openapi.json");
      const api = await res.json();
      return Boolean(api.paths?.[path]?.[method.toLowerCase()]);
    },
    async stop() {
      if (child.exitCode === null) {
        const done = new Promise((r) => child.on("exit", r));
        child.kill("SIGTERM");
        await done;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
