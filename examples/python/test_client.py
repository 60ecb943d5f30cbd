"""Checks govledger_client.py against a running server (the Go tests start one
with an in-memory backend). Usage: python3 test_client.py URL TOKEN

TOKEN must hold handoff:write for agent-a only, and ledger:read. Exits 1 on the
first failed check (no assert statements: they vanish under python -O).
"""

import os
import sys

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
    url, token = sys.argv[1], sys.argv[2]
    os.environ["GOVLEDGER_TOKEN"] = token
    gl = Client(url, max_backoff=0.2)  # token from the environment
    check(gl.token == token, "token read from GOVLEDGER_TOKEN")

    doc = b'{"source_agent":"agent-a","target_agent":"agent-b","handoff_id":"py-1"}'
    r = gl.submit(doc)
    check(r["decision"] == "accepted" and r["seq"] >= 1 and len(r["entry_hash"]) == 64, "submit accepted: %r" % r)

    first = gl.submit(doc, idempotency_key="py-key-1")
    again = gl.submit(doc, idempotency_key="py-key-1")
    check(again["seq"] == first["seq"] and again.get("replayed") is True, "retry with the same key replays: %r %r" % (first, again))
    e = expect_error(lambda: gl.submit(b"other bytes", idempotency_key="py-key-1"), "same key, other bytes")
    check(e.status == 409 and e.code == "IDEMPOTENCY_CONFLICT" and e.attempts == 1, "409 is not retried: %r" % vars(e))

    ok = gl.on_handoff("agent-a", "agent-b", "## Status\nall green")
    check(ok["decision"] == "accepted" and ok["source"] == "agent-a", "hook accepted: %r" % ok)
    ok = gl.on_handoff("agent-a", "agent-b", {"source_agent": "agent-a", "target_agent": "agent-b", "handoff_id": "py-2"})
    check(ok["decision"] == "accepted" and ok["handoff_id"] == "py-2", "hook with a dict: %r" % ok)
    try:
        gl.on_handoff("agent-a", "nobody", "## to an unknown agent")
        check(False, "hook did not raise HandoffRejected")
    except HandoffRejected as rej:
        codes = [x["code"] for x in rej.reasons]
        check("UNKNOWN_AGENT" in codes and rej.seq >= 1, "rejection carries reasons and seq: %r" % rej.result)

    # Ambiguous commit: the server recorded the handoff but answered 503
    # "outcome unknown"; the retry with the same key gets the first answer.
    before = gl.entries(limit=1)["entries"][0]["seq"]
    amb = b'{"source_agent":"agent-a","target_agent":"agent-b","x_fault":"outcome_unknown_once"}'
    r = gl.submit(amb)
    after = gl.entries(limit=1)["entries"][0]["seq"]
    check(r.get("replayed") is True and r["seq"] == before + 1 and after == before + 1,
          "outcome unknown resolved by one retry, one entry: %r (head %d -> %d)" % (r, before, after))

    e = expect_error(lambda: gl.submit(b'{"source_agent":"agent-b","target_agent":"agent-a"}'), "other source")
    check(e.status == 403 and e.code == "FORBIDDEN_SOURCE" and e.attempts == 1 and e.problem.get("written") == "no",
          "403 for another agent's handoff: %r" % vars(e))
    check(gl.entries(limit=1)["entries"][0]["seq"] == after, "nothing written for a forbidden source")

    few = Client(url, token=token, retries=2, backoff=0.01, max_backoff=0.05)
    e = expect_error(lambda: few.submit(b'{"source_agent":"agent-a","target_agent":"agent-b","x_fault":"overloaded"}'), "overloaded")
    check(e.status == 503 and e.code == "OVERLOADED" and e.attempts == 3, "503 retried, then raised: %r" % vars(e))

    down = Client("http://127.0.0.1:1", token=token, retries=2, backoff=0.01, max_backoff=0.05, timeout=2)
    e = expect_error(lambda: down.submit(doc), "connection refused")
    check(e.status is None and e.attempts == 3, "connection errors retried, then raised: %r" % vars(e))

    e = expect_error(lambda: Client(url, token="glt_wrong").submit(doc), "bad token")
    check(e.status == 401 and e.code == "UNAUTHENTICATED" and e.attempts == 1, "401 not retried: %r" % vars(e))

    v = gl.validate(b'{"source_agent":"agent-a","target_agent":"nobody"}')
    check(v["seq"] == 0 and v["decision"] == "rejected", "validate records nothing: %r" % v)

    print("ok: %d checks" % checks)


if __name__ == "__main__":
    main()
