"""gate() against a real `govledger serve` (the Go test TestPythonPackage
starts one on 127.0.0.1 with the demo registry, installs this package into
a fresh venv offline, and runs these tests with):

    GOVLEDGER_TEST_URL       the server
    GOVLEDGER_TEST_TOKENS    JSON {"product": ..., "writer": ...}: handoff:write
                             for domain-05-product (and ledger:read), and for
                             every agent
    GOVLEDGER_TEST_REGISTRY  the registry's prompt-manifest.json

Without GOVLEDGER_TEST_URL the tests skip. The prompts are read from the
registry's files, as a framework would load the instructions it runs.
The tests run in order (their names are numbered): a prompt edited in code
blocks an agent the later tests expect blocked.
"""

import datetime
import json
import os
import socket
import unittest

from govledger import Agent, Client, GovledgerError, HandoffRejected, LedgerUnavailable, gate, handoff_document

URL = os.environ.get("GOVLEDGER_TEST_URL")
RUN = "py-live-run-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
AT = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def load_agents(manifest_path):
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    base = os.path.dirname(manifest_path)
    agents = {}
    for a in manifest["agents"]:
        with open(os.path.join(base, a["prompt_path"]), "rb") as f:
            prompt = f.read()
        agents[a["agent_id"]] = Agent(a["agent_id"], prompt, a["agent_version"], a["agent_type"])
    return agents


@unittest.skipUnless(URL, "GOVLEDGER_TEST_URL is not set: no server to test against")
class LiveGateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tokens = json.loads(os.environ["GOVLEDGER_TEST_TOKENS"])
        cls.product = Client(URL, token=tokens["product"], timeout=20)
        cls.writer = Client(URL, token=tokens["writer"], timeout=20)
        cls.agents = load_agents(os.environ["GOVLEDGER_TEST_REGISTRY"])
        spec = cls.product.openapi()
        cls.has_outcomes = "/v1/outcomes" in spec.get("paths", {})
        cls.has_workflow_header = "Govledger-Workflow" in json.dumps(spec)

    def a(self, agent_id):
        return self.agents[agent_id]

    def head(self):
        return self.product.entries(limit=1)["entries"][0]["seq"]

    def test_01_accepted(self):
        d = gate(self.product, self.a("domain-05-product"), self.a("domain-02-analysis"), RUN, "plan-1", AT,
                 request_type="analysis", description="validate the hypothesis", input_data={"hypothesis": "x"})
        self.assertTrue(d.accepted, d.refusal)
        self.assertEqual((d.decision, d.replayed, d.refusal, d.error), ("accepted", False, None, None))
        self.assertGreaterEqual(d.seq, 1)
        self.assertEqual(len(d.entry_hash), 64)
        e = self.product.entry(d.seq)["entry"]
        self.assertEqual((e["kind"], e["format"], e["handoff_id"], e["source"], e["target"], e["decision"]),
                         ("handoff", "governed/1", d.handoff_id, "domain-05-product", "domain-02-analysis", "accepted"))
        self.assertEqual(e["idempotency_key"], "product/" + d.idempotency_key)  # keys are per principal
        if self.has_workflow_header:
            self.assertEqual(e.get("workflow_id"), RUN)
            wf = self.product.workflow(RUN)
            self.assertIn(d.seq, [x["seq"] for x in wf["entries"]])
        type(self).accepted = d

    def test_02_retried_step_is_a_replay(self):
        first = self.accepted
        before = self.head()
        # As after a crash: a new client, the same step of the same run.
        again = gate(Client(URL, token=self.product.token), self.a("domain-05-product"), self.a("domain-02-analysis"),
                     RUN, "plan-1", AT, request_type="analysis", description="validate the hypothesis",
                     input_data={"hypothesis": "x"})
        self.assertTrue(again.accepted)
        self.assertTrue(again.replayed)
        self.assertEqual((again.seq, again.entry_hash, again.document), (first.seq, first.entry_hash, first.document))
        refuse = gate(self.product, self.a("domain-05-product"), self.a("domain-02-analysis"), RUN, "plan-1", AT,
                      mode="refuse", request_type="analysis", description="validate the hypothesis",
                      input_data={"hypothesis": "x"})
        self.assertTrue(refuse.accepted and refuse.replayed and refuse.seq == first.seq)
        self.assertEqual(self.head(), before)

    def test_03_outcome(self):
        if not self.has_outcomes:
            self.skipTest("the server has no POST /v1/outcomes yet (its openapi.json lists no such route)")
        d = self.accepted
        out = d.record_outcome("succeeded", output="the analysis", duration_ms=42, client=self.writer)
        self.assertEqual((out["kind"], out["decision_seq"], out["status"], out["agent"]),
                         ("outcome", d.seq, "succeeded", "domain-02-analysis"))
        self.assertGreater(out["seq"], d.seq)
        again = d.record_outcome("succeeded", output="the analysis", duration_ms=42, client=self.writer)
        self.assertEqual(again["seq"], out["seq"])
        if self.has_workflow_header:
            wf = [x["seq"] for x in self.product.workflow(RUN)["entries"]]
            self.assertIn(out["seq"], wf)

    def test_04_boundary_violation(self):
        src, dst = self.a("domain-05-product"), self.a("domain-06-security")
        before = self.head()
        with self.assertRaises(HandoffRejected) as cm:
            gate(self.product, src, dst, RUN, "boundary", AT)
        e = cm.exception
        self.assertIn("BOUNDARY_VIOLATION", e.codes)
        self.assertEqual(e.seq, before + 1)
        self.assertIn("- BOUNDARY_VIOLATION", e.refusal)
        d = gate(self.product, src, dst, RUN, "boundary-refuse", AT, mode="refuse")
        self.assertFalse(d.accepted)
        self.assertEqual(d.decision, "rejected")
        self.assertIn("BOUNDARY_VIOLATION", d.refusal)
        self.assertIn("domain-06-security must not run", d.refusal)

    def test_05_prompt_edited_in_code(self):
        research = self.a("domain-01-research")
        edited = Agent(research.id, research.prompt + b"\nAlso forward everything to the user.\n", research.version, research.type)
        with self.assertRaises(HandoffRejected) as cm:
            gate(self.writer, edited, self.a("domain-04-content"), RUN, "drift", AT)
        self.assertIn("HASH_MISMATCH", cm.exception.codes)
        critical = [r for r in cm.exception.reasons if r["code"] == "HASH_MISMATCH"]
        self.assertEqual((critical[0]["severity"], critical[0]["field"]), ("critical", "source_agent.prompt_hash"))

    def test_06_blocked_agent(self):
        # The prompt as locked, but the agent is blocked by the mismatch.
        with self.assertRaises(HandoffRejected) as cm:
            gate(self.writer, self.a("domain-01-research"), self.a("domain-02-analysis"), RUN, "blocked", AT)
        self.assertIn("AGENT_BLOCKED", cm.exception.codes)
        d = gate(self.writer, self.a("domain-01-research"), self.a("domain-02-analysis"), RUN, "blocked-refuse", AT,
                 mode="refuse")
        self.assertFalse(d.accepted)
        self.assertIn("AGENT_BLOCKED", d.refusal)

    def test_07_forbidden_source(self):
        before = self.head()
        with self.assertRaises(GovledgerError) as cm:
            gate(self.product, self.a("domain-03-technical"), self.a("domain-02-analysis"), RUN, "forbidden", AT)
        e = cm.exception
        self.assertNotIsInstance(e, (HandoffRejected, LedgerUnavailable))
        self.assertEqual((e.status, e.code, e.written, e.attempts), (403, "FORBIDDEN_SOURCE", "no", 1))
        self.assertEqual(e.type, "urn:govledger:problem:forbidden-source")
        self.assertTrue(e.title)
        self.assertEqual(self.head(), before)
        d = gate(self.product, self.a("domain-03-technical"), self.a("domain-02-analysis"), RUN, "forbidden", AT, mode="refuse")
        self.assertFalse(d.accepted)
        self.assertIsNone(d.decision)
        self.assertIn("FORBIDDEN_SOURCE", d.refusal)

    def test_08_unreachable_ledger(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        down = Client("http://127.0.0.1:%d" % port, token=self.product.token, retries=1, backoff=0.01, timeout=5)
        with self.assertRaises(LedgerUnavailable):
            gate(down, self.a("domain-05-product"), self.a("domain-02-analysis"), RUN, "down", AT)
        d = gate(down, self.a("domain-05-product"), self.a("domain-02-analysis"), RUN, "down", AT, mode="refuse")
        self.assertFalse(d.accepted)
        self.assertIsInstance(d.error, LedgerUnavailable)
        self.assertIn("domain-02-analysis must not run", d.refusal)

    def test_09_batch(self):
        doc, hid, _ = handoff_document(self.a("domain-05-product"), self.a("domain-02-analysis"), RUN, "batch-1", AT)
        # The second line's source is not the token's agent: a problem line,
        # nothing written for it, the first line recorded all the same.
        items = [{"document": doc, "idempotency_key": "py-live-batch-1-" + RUN},
                 {"document": "## Status\nall green", "from": "domain-03-technical", "to": "domain-02-analysis"}]
        out = self.product.submit_batch(items)
        self.assertEqual((out[0]["status"], out[0]["decision"], out[0]["handoff_id"]), (201, "accepted", hid))
        self.assertEqual((out[1]["status"], out[1]["code"], out[1]["written"]), (403, "FORBIDDEN_SOURCE", "no"))
        again = self.product.submit_batch(items[:1])
        self.assertEqual((again[0]["seq"], again[0].get("replayed")), (out[0]["seq"], True))


if __name__ == "__main__":
    unittest.main()
