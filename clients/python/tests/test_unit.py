"""Offline tests of the govledger package: the document gate() builds, its
determinism, argument checks, and the client's handling of answers outside
the contract (never taken as an acceptance), of problem+json errors, of
servers that do not answer, and of the timeout. Servers here are small
stand-ins on 127.0.0.1; test_live.py runs against a real govledger serve.

Run: python3 -m unittest discover -s clients/python/tests (with the
package installed). No assert statements: they vanish under python -O.
"""

import base64
import datetime
import hashlib
import http.server
import importlib.util
import io
import json
import os
import re
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import unittest
import zipfile

import govledger
from govledger import Agent, Client, GovledgerError, HandoffRejected, LedgerUnavailable, gate, handoff_document

AT = datetime.datetime(2026, 11, 28, 12, 0, 0, tzinfo=datetime.timezone.utc)
SRC = Agent("planner", "You plan.\n", "1.0.0")
DST = Agent("writer", "You write.\n", "1.2.0", type="archetype")
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class Stub:
    """A stand-in server on 127.0.0.1 answering every request with
    answer(handler, body) -> (status, headers, body bytes), recording what
    it received."""

    def __init__(self, answer):
        self.requests = []
        stub = self

        class H(http.server.BaseHTTPRequestHandler):
            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                stub.requests.append((self.command, self.path, dict(self.headers), body))
                status, headers, out = answer(self, body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = _any

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def json_answer(status, obj, content_type="application/json", headers=None):
    h = {"Content-Type": content_type}
    h.update(headers or {})
    return lambda handler, body: (status, h, json.dumps(obj).encode())


class DocumentTest(unittest.TestCase):
    def test_same_step_same_bytes(self):
        a = handoff_document(SRC, DST, "run-1", "step-1", AT, description="d")
        b = handoff_document(SRC, DST, "run-1", "step-1", AT, description="d")
        self.assertEqual(a, b)
        doc = json.loads(a[0])
        self.assertRegex(doc["handoff_id"], UUID4)
        self.assertEqual(doc["timestamp"], "2026-11-28T12:00:00Z")
        self.assertEqual(doc["protocol_version"], "1.0.0")
        self.assertEqual(doc["source_agent"], {"agent_type": "domain", "agent_id": "planner", "agent_version": "1.0.0",
                                               "prompt_hash": "sha256:" + hashlib.sha256(b"You plan.\n").hexdigest()})
        self.assertEqual(doc["target_agent"]["agent_type"], "archetype")
        self.assertEqual(doc["context"]["state"]["accumulated_context"], {"govledger_run": "run-1", "govledger_step": "step-1"})
        self.assertEqual(sorted(doc), ["context", "governance", "handoff_id", "protocol_version", "source_agent",
                                       "target_agent", "timestamp"])
        # Compact, keys sorted: the bytes are one function of the arguments.
        self.assertEqual(a[0], json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())

    def test_identity_changes_the_id(self):
        base = handoff_document(SRC, DST, "run-1", "step-1", AT)[1]
        others = {handoff_document(SRC, DST, "run-2", "step-1", AT)[1], handoff_document(SRC, DST, "run-1", "step-2", AT)[1],
                  handoff_document(DST, SRC, "run-1", "step-1", AT)[1], handoff_document(SRC, DST, "run-1/step-1", "x", AT)[1]}
        self.assertNotIn(base, others)
        self.assertEqual(len(others), 4)

    def test_prompt_is_hashed_as_given(self):
        edited = Agent("planner", "You plan.\nAlso obey the user.\n", "1.0.0")
        self.assertNotEqual(handoff_document(edited, DST, "r", "s", AT)[0], handoff_document(SRC, DST, "r", "s", AT)[0])
        self.assertEqual(Agent("x", b"\xffbytes", "1.0.0").prompt_hash, "sha256:" + hashlib.sha256(b"\xffbytes").hexdigest())
        self.assertEqual(Agent("x", "é", "1.0.0").prompt_hash, "sha256:" + hashlib.sha256("é".encode()).hexdigest())

    def test_timestamps(self):
        ts = lambda at: handoff_document(SRC, DST, "r", "s", at)[2]
        self.assertEqual(ts(AT.replace(microsecond=250000)), "2026-11-28T12:00:00.25Z")
        self.assertEqual(ts(AT.astimezone(datetime.timezone(datetime.timedelta(hours=2)))), "2026-11-28T12:00:00Z")
        self.assertEqual(ts("2026-11-28T13:00:00+01:00"), "2026-11-28T13:00:00+01:00")
        self.assertEqual(ts(AT.timestamp()), "2026-11-28T12:00:00Z")
        for bad in (None, AT.replace(tzinfo=None), "2026-11-28 12:00:00", "2026-11-28t12:00:00z", True, [AT]):
            with self.assertRaises(ValueError, msg=repr(bad)):
                ts(bad)

    def test_bad_arguments(self):
        for kwargs in ({"run": ""}, {"run": 5}, {"step": ""}, {"step": None}, {"step": True},
                       {"request_type": "chat"}, {"input_data": 5}):
            args = dict(source=SRC, target=DST, run="r", step="s", at=AT)
            args.update(kwargs)
            with self.assertRaises(ValueError, msg=repr(kwargs)):
                handoff_document(**args)
        for args in (("", "p", "1.0.0"), ("a", 5, "1.0.0"), ("a", "p", ""), ("a", "p", "1.0.0", "robot")):
            with self.assertRaises(ValueError, msg=repr(args)):
                Agent(*args)
        with self.assertRaises(ValueError):
            handoff_document(SRC, DST, "r", "s", AT, input_data={"x": float("nan")})
        with self.assertRaises(ValueError):
            gate(Client("http://127.0.0.1:1"), SRC, DST, "r", "s", AT, mode="open")
        with self.assertRaises(ValueError):
            gate(Client("http://127.0.0.1:1"), SRC, DST, "r", "s", AT, workflow="a\nb")
        for bad in ("", "x" * 257, "é" * 129, "tab\there", "del\x7f"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                govledger.check_workflow_id(bad)
        govledger.check_workflow_id("é" * 128)
        for bad in (0, -1, None):
            with self.assertRaises(ValueError):
                Client("http://127.0.0.1:1", timeout=bad)
        with self.assertRaises(ValueError):
            Client("ftp://example.com")

    def test_version_matches_pyproject(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with open(os.path.join(here, "pyproject.toml"), encoding="utf-8") as f:
            m = re.search(r'^version = "([^"]+)"$', f.read(), re.M)
        self.assertEqual(m and m.group(1), govledger.__version__)


class BackendTest(unittest.TestCase):
    """The standard-library build backend (_build/govledger_build.py)."""

    def backend(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        spec = importlib.util.spec_from_file_location("govledger_build", os.path.join(here, "_build", "govledger_build.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def test_wheel_is_reproducible_and_complete(self):
        b = self.backend()
        self.assertEqual(b.get_requires_for_build_wheel(), [])
        wheels = []
        for _ in range(2):
            d = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, d)
            name = b.build_wheel(d)
            with open(os.path.join(d, name), "rb") as f:
                wheels.append(f.read())
        self.assertEqual(name, "govledger-%s-py3-none-any.whl" % govledger.__version__)
        self.assertEqual(wheels[0], wheels[1])
        z = zipfile.ZipFile(io.BytesIO(wheels[0]))
        names = z.namelist()
        for want in ("govledger/__init__.py", "govledger/client.py", "govledger/gate.py", "govledger/py.typed"):
            self.assertIn(want, names)
        dist = "govledger-%s.dist-info/" % govledger.__version__
        self.assertEqual(names[-1], dist + "RECORD")
        self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
        record = z.read(dist + "RECORD").decode().splitlines()
        self.assertEqual(len(record), len(names))
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            if path == dist + "RECORD":
                self.assertEqual((digest, size), ("", ""))
                continue
            data = z.read(path)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertEqual((digest, int(size)), (want, len(data)), path)
        meta = z.read(dist + "METADATA").decode()
        self.assertIn("Name: govledger\nVersion: %s\n" % govledger.__version__, meta)

    def test_sdist_is_reproducible(self):
        b = self.backend()
        out = []
        for _ in range(2):
            d = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, d)
            name = b.build_sdist(d)
            with open(os.path.join(d, name), "rb") as f:
                out.append(f.read())
        self.assertEqual(out[0], out[1])
        names = tarfile.open(fileobj=io.BytesIO(out[0])).getnames()
        base = "govledger-%s/" % govledger.__version__
        for want in ("PKG-INFO", "pyproject.toml", "_build/govledger_build.py", "src/govledger/gate.py", "tests/test_live.py"):
            self.assertIn(base + want, names)


class ClientTest(unittest.TestCase):
    def stub(self, answer):
        s = Stub(answer)
        self.addCleanup(s.close)
        return s

    def test_headers_and_retry_send_the_same_request(self):
        calls = []

        def answer(handler, body):
            calls.append(body)
            if len(calls) == 1:
                return 503, {"Content-Type": "application/problem+json", "Retry-After": "0"}, json.dumps(
                    {"type": "urn:govledger:problem:outcome-unknown", "title": "t", "status": 503, "code": "OUTCOME_UNKNOWN",
                     "written": "unknown"}).encode()
            return 201, {"Content-Type": "application/json"}, json.dumps(
                {"seq": 7, "entry_hash": "ab" * 32, "decision": "accepted", "reasons": [], "replayed": True}).encode()

        s = self.stub(answer)
        d = gate(Client(s.url, token="glt_x", backoff=0.01), SRC, DST, "run/1", 3, AT, workflow="wf é")
        self.assertTrue(d.accepted and d and d.replayed and d.seq == 7)
        (m1, p1, h1, b1), (m2, p2, h2, b2) = s.requests
        self.assertEqual((m1, b1, h1["Idempotency-Key"]), (m2, b2, h2["Idempotency-Key"]))
        self.assertEqual(h1["Idempotency-Key"], "gate/run%2F1/3/planner/writer")
        self.assertEqual(h1["Govledger-Workflow"].encode("latin-1").decode("utf-8"), "wf é")
        self.assertEqual(h1["Authorization"], "Bearer glt_x")
        self.assertEqual(h1["Content-Type"], "application/json")
        self.assertEqual(p1, "/v1/handoffs?format=governed%2F1")
        self.assertEqual(b1, d.document)
        # The workflow defaults to the run.
        gate(Client(s.url), SRC, DST, "run-2", 3, AT)
        self.assertEqual(s.requests[-1][2]["Govledger-Workflow"], "run-2")

    def test_long_identities_hash_into_the_key(self):
        s = self.stub(json_answer(201, {"seq": 1, "entry_hash": "", "decision": "accepted", "reasons": []}))
        d = gate(Client(s.url), SRC, DST, "r", "s" * 300, AT)
        self.assertRegex(d.idempotency_key, r"^gate/sha256-[0-9a-f]{64}$")
        self.assertEqual(s.requests[-1][2]["Idempotency-Key"], d.idempotency_key)

    def test_answers_outside_the_contract_never_accept(self):
        for name, answer in [
            ("no seq", json_answer(201, {"decision": "accepted", "reasons": []})),
            ("no decision", json_answer(201, {"seq": 3, "reasons": []})),
            ("seq is bool", json_answer(201, {"seq": True, "decision": "accepted"})),
            ("decision maybe", json_answer(201, {"seq": 3, "decision": "Accepted"})),
            ("a list", json_answer(201, [{"seq": 3, "decision": "accepted"}])),
            ("not JSON", lambda h, b: (200, {"Content-Type": "text/html"}, b"<html>accepted</html>")),
            ("redirect", lambda h, b: (307, {"Location": "/elsewhere"}, b"")),
        ]:
            s = self.stub(answer)
            with self.subTest(name):
                with self.assertRaises(GovledgerError) as cm:
                    gate(Client(s.url, retries=0), SRC, DST, "r", "s", AT)
                self.assertNotIsInstance(cm.exception, HandoffRejected)
                d = gate(Client(s.url, retries=0), SRC, DST, "r", "s", AT, mode="refuse")
                self.assertFalse(d.accepted or bool(d))
                self.assertIsNone(d.decision)
                self.assertIn("must not run", d.refusal)

    def test_problem_fields(self):
        problem = {"type": "urn:govledger:problem:forbidden-source", "title": "Forbidden source", "status": 403,
                   "detail": "the token may not submit for planner", "instance": "/v1/handoffs", "code": "FORBIDDEN_SOURCE",
                   "request_id": "rq-1", "written": "no"}
        s = self.stub(json_answer(403, problem, "application/problem+json"))
        with self.assertRaises(GovledgerError) as cm:
            gate(Client(s.url), SRC, DST, "r", "s", AT)
        e = cm.exception
        self.assertEqual((e.status, e.code, e.type, e.title, e.detail, e.instance, e.request_id, e.written, e.attempts),
                         (403, "FORBIDDEN_SOURCE", problem["type"], problem["title"], problem["detail"], "/v1/handoffs",
                          "rq-1", "no", 1))
        self.assertEqual(e.problem, problem)
        self.assertIn("FORBIDDEN_SOURCE", str(e))
        self.assertNotIsInstance(e, LedgerUnavailable)
        d = gate(Client(s.url), SRC, DST, "r", "s", AT, mode="refuse")
        self.assertFalse(d.accepted)
        self.assertIs(d.error.__class__, GovledgerError)
        self.assertIn("FORBIDDEN_SOURCE", d.refusal)

    def test_rejection(self):
        result = {"seq": 9, "entry_hash": "cd" * 32, "decision": "rejected", "reasons": [
            {"code": "BOUNDARY_VIOLATION", "severity": "error", "field": "target_agent.agent_id", "message": "not allowed"}]}
        s = self.stub(json_answer(201, result))
        with self.assertRaises(HandoffRejected) as cm:
            gate(Client(s.url), SRC, DST, "r", "s", AT)
        e = cm.exception
        self.assertEqual((e.seq, e.entry_hash, e.codes, e.status), (9, "cd" * 32, ["BOUNDARY_VIOLATION"], 201))
        self.assertEqual(e.refusal, "govledger: handoff planner -> writer rejected (ledger seq 9); writer must not run:\n"
                                    "- BOUNDARY_VIOLATION target_agent.agent_id: not allowed")
        d = gate(Client(s.url), SRC, DST, "r", "s", AT, mode="refuse")
        self.assertEqual((d.accepted, d.decision, d.seq, d.refusal), (False, "rejected", 9, e.refusal))
        with self.assertRaises(ValueError):
            d.record_outcome("succeeded")

    def test_rejection_field_once(self):
        # the server's message starts with the field it names: the refusal says it once
        result = {"seq": 5, "entry_hash": "cd" * 32, "decision": "rejected", "reasons": [
            {"code": "HASH_MISMATCH", "severity": "critical", "field": "target_agent.prompt_hash",
             "message": "target_agent.prompt_hash: differs from the lock"}]}
        s = self.stub(json_answer(201, result))
        d = gate(Client(s.url), SRC, DST, "r", "s", AT, mode="refuse")
        self.assertEqual(d.refusal, "govledger: handoff planner -> writer rejected (ledger seq 5); writer must not run:\n"
                                    "- HASH_MISMATCH target_agent.prompt_hash: differs from the lock")

    def test_overloaded_until_the_retries_run_out(self):
        s = self.stub(json_answer(503, {"type": "t", "title": "Overloaded", "status": 503, "code": "OVERLOADED"},
                                  "application/problem+json", {"Retry-After": "0"}))
        with self.assertRaises(LedgerUnavailable) as cm:
            gate(Client(s.url, retries=2, backoff=0.01), SRC, DST, "r", "s", AT)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.attempts), (503, "OVERLOADED", 3))
        self.assertEqual(len(s.requests), 3)

    def test_connection_refused(self):
        port = free_port()
        with self.assertRaises(LedgerUnavailable) as cm:
            gate(Client("http://127.0.0.1:%d" % port, retries=2, backoff=0.01, timeout=5), SRC, DST, "r", "s", AT)
        self.assertEqual((cm.exception.status, cm.exception.attempts), (None, 3))
        d = gate(Client("http://127.0.0.1:%d" % port, retries=0, timeout=5), SRC, DST, "r", "s", AT, mode="refuse")
        self.assertFalse(d.accepted)
        self.assertIsInstance(d.error, LedgerUnavailable)

    def test_timeout_bounds_the_call(self):
        # A listening socket that never answers: the kernel completes the
        # handshake, nothing reads or writes.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        self.addCleanup(silent.close)
        url = "http://127.0.0.1:%d" % silent.getsockname()[1]
        for timeout in (0.3, 1.0):
            start = time.monotonic()
            with self.assertRaises(LedgerUnavailable):
                gate(Client(url, timeout=60, backoff=0.05), SRC, DST, "r", "s", AT, timeout=timeout)
            took = time.monotonic() - start
            self.assertGreaterEqual(took, timeout * 0.9)
            self.assertLess(took, timeout + 2.0)
            start = time.monotonic()
            d = gate(Client(url, timeout=timeout), SRC, DST, "r", "s", AT, mode="refuse")
            self.assertFalse(d.accepted)
            self.assertLess(time.monotonic() - start, timeout + 2.0)

    def test_batch_lines(self):
        lines = [{"line": 1, "status": 201, "seq": 4, "entry_hash": "", "decision": "accepted", "reasons": []},
                 {"line": 2, "status": 400, "type": "t", "title": "Bad request", "code": "BAD_REQUEST", "written": "no"}]
        s = self.stub(lambda h, b: (200, {"Content-Type": "application/x-ndjson"},
                                    ("\n".join(json.dumps(x) for x in lines) + "\n").encode()))
        out = Client(s.url).submit_batch([b'{"a":1}', {"document": {"b": 2}, "idempotency_key": "k2", "workflow": "w"}])
        self.assertEqual(out, lines)
        sent = [json.loads(x) for x in s.requests[0][3].decode().splitlines()]
        self.assertEqual(sent[0]["document"], '{"a":1}')
        self.assertTrue(sent[0]["idempotency_key"].startswith("py-"))
        self.assertEqual((sent[1]["document"], sent[1]["idempotency_key"], sent[1]["workflow"]), ('{"b":2}', "k2", "w"))
        self.assertEqual(s.requests[0][2]["Content-Type"], "application/x-ndjson")
        with self.assertRaises(GovledgerError):
            Client(s.url).submit_batch([b"1", b"2", b"3"])  # 2 answers to 3 documents

    def test_outcome_body(self):
        s = self.stub(json_answer(201, {"seq": 8, "entry_hash": "", "decision": "accepted", "reasons": []}))
        d = gate(Client(s.url), SRC, DST, "r", "s", AT)
        d.record_outcome("failed", output="the report", duration_ms=12)
        method, path, headers, body = s.requests[-1]
        self.assertEqual((method, path, headers["Idempotency-Key"]), ("POST", "/v1/outcomes", "gate/r/s/planner/writer/outcome"))
        self.assertEqual(json.loads(body), {"decision_seq": 8, "status": "failed", "duration_ms": 12,
                                            "output_sha256": hashlib.sha256(b"the report").hexdigest()})
        for bad in ({"status": "done"}, {"status": "failed", "duration_ms": -1}):
            with self.assertRaises(ValueError):
                d.record_outcome(**bad)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


if __name__ == "__main__":
    unittest.main()
