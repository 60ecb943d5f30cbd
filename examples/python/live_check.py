"""Checks govledger_client.py against a real `govledger serve` (the Go test
TestServeExampleClients starts one on the example registry).

Usage: python3 live_check.py URL TOKEN HANDOFFS_DIR

TOKEN must hold handoff:write for domain-05-product only, and ledger:read;
HANDOFFS_DIR holds 01-product-to-analysis.json. Exits 1 on the first failed
check (no assert statements: they vanish under python -O).
"""

import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from govledger_client import Client, GovledgerError, HandoffRejected  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)


def expect_error(fn, what):
    try:
        fn()
    except GovledgerError as e:
        return e
    check(False, what + ": no GovledgerError")


def main():
    url, token, handoffs = sys.argv[1], sys.argv[2], sys.argv[3]
    os.environ["GOVLEDGER_TOKEN"] = token
    gl = Client(url, max_backoff=0.2)
    check(gl.token == token, "token read from GOVLEDGER_TOKEN")

    template = open(os.path.join(handoffs, "01-product-to-analysis.json"), "rb").read()
    doc = template.replace(b"550e8400-e29b-41d4-a716-446655440000", str(uuid.uuid4()).encode())
    key = "py-" + str(uuid.uuid4())
    first = gl.submit(doc, idempotency_key=key)
    check(first["decision"] == "accepted" and first["seq"] >= 1 and len(first["entry_hash"]) == 64
          and first["source"] == "domain-05-product", "governed/1 handoff accepted: %r" % first)
    again = gl.submit(doc, idempotency_key=key)
    check(again["seq"] == first["seq"] and again["entry_hash"] == first["entry_hash"] and again.get("replayed") is True,
          "a retry with the same key gets the first answer: %r" % again)
    e = expect_error(lambda: gl.submit(doc + b" ", idempotency_key=key), "same key, other bytes")
    check(e.status == 409 and e.code == "IDEMPOTENCY_CONFLICT" and e.attempts == 1, "409 is not retried: %r" % vars(e))

    ok = gl.on_handoff("domain-05-product", "domain-02-analysis", "## Status\nall green, from the python hook")
    check(ok["decision"] == "accepted" and ok["format"] == "vbw/1" and ok["target"] == "domain-02-analysis",
          "hook: an allowed handoff proceeds: %r" % ok)
    try:
        gl.on_handoff("domain-05-product", "domain-06-security", "## Status\nsecurity is not ours to reach")
        check(False, "hook did not raise HandoffRejected")
    except HandoffRejected as rej:
        codes = [r["code"] for r in rej.reasons]
        check("BOUNDARY_VIOLATION" in codes and rej.seq > ok["seq"], "hook refuses a rejected handoff: %r" % rej.result)

    head = gl.entries(limit=1)["entries"][0]["seq"]
    other = template.replace(b'"domain-05-product"', b'"domain-01-research"', 1)
    e = expect_error(lambda: gl.submit(other), "another agent's handoff")
    check(e.status == 403 and e.code == "FORBIDDEN_SOURCE" and e.attempts == 1 and e.problem.get("written") == "no",
          "403 for another agent's handoff, not retried: %r" % vars(e))
    check(gl.entries(limit=1)["entries"][0]["seq"] == head, "nothing written for another agent's handoff")

    v = gl.validate(b"## Status\nnot recorded", source="domain-05-product", target="domain-02-analysis")
    check(v["seq"] == 0 and v["decision"] == "accepted", "validate records nothing: %r" % v)
    check(gl.entries(limit=1)["entries"][0]["seq"] == head, "validate wrote nothing")

    e = expect_error(lambda: Client(url, token="glt_wrong").submit(doc), "bad token")
    check(e.status == 401 and e.code == "UNAUTHENTICATED" and e.attempts == 1, "401 is not retried: %r" % vars(e))
    down = Client("http://127.0.0.1:1", token=token, retries=2, backoff=0.01, max_backoff=0.05, timeout=2)
    e = expect_error(lambda: down.submit(doc), "connection refused")
    check(e.status is None and e.attempts == 3, "connection failures are retried, then raised: %r" % vars(e))

    print("ok: %d checks against %s" % (checks, url))


if __name__ == "__main__":
    main()
