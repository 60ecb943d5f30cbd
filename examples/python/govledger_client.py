"""A small client for the govledger HTTP API (govledger serve), standard library only.

    from govledger_client import Client, HandoffRejected

    gl = Client("http://127.0.0.1:8080")           # token from GOVLEDGER_TOKEN
    result = gl.submit(open("handoff.json", "rb").read())
    print(result["seq"], result["decision"])

    # As an agent framework's handoff hook: refuse to proceed on a rejection.
    try:
        gl.on_handoff("domain-05-product", "domain-02-analysis", document)
    except HandoffRejected as e:
        print("refused:", [r["code"] for r in e.reasons])

Every submission carries an Idempotency-Key. When the server answers 503
(overloaded, or "outcome unknown" after a storage failure), 429, or the
connection fails, the client retries with the SAME key, so a handoff that was
in fact recorded is answered with its first result ("replayed": true) and is
never recorded twice.
"""

import json
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

__all__ = ["Client", "GovledgerError", "HandoffRejected"]


class GovledgerError(Exception):
    """The server refused a request, or could not be reached.

    status is the HTTP status (None when no answer came), problem the RFC 9457
    problem body (a dict; empty when there was none), attempts how many times
    the request was sent.
    """

    def __init__(self, message, status=None, problem=None, attempts=1):
        super().__init__(message)
        self.status = status
        self.problem = problem or {}
        self.attempts = attempts

    @property
    def code(self):
        """The problem's stable code, e.g. FORBIDDEN_SOURCE (None without one)."""
        return self.problem.get("code")


class HandoffRejected(Exception):
    """The ledger recorded the handoff as rejected: the framework must not proceed.

    result is the server's answer (seq, entry_hash, decision, reasons, ...);
    reasons the list of {code, severity, field, message}.
    """

    def __init__(self, result):
        self.result = result
        self.reasons = result.get("reasons", [])
        self.seq = result.get("seq")
        codes = ", ".join(r.get("code", "?") for r in self.reasons) or "no reasons"
        super().__init__("handoff rejected (seq %s): %s" % (self.seq, codes))


_RETRY_STATUSES = (429, 503)


class Client:
    """A govledger API client.

    base_url: e.g. "http://127.0.0.1:8080". token: a bearer token (default:
    the GOVLEDGER_TOKEN environment variable). retries: further attempts after
    a 503, 429 or connection failure. backoff: the first wait between attempts
    in seconds (doubling, with jitter); a Retry-After header is honoured, up
    to max_backoff seconds.
    """

    def __init__(self, base_url, token=None, timeout=10.0, retries=5, backoff=0.25, max_backoff=30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token if token is not None else os.environ.get("GOVLEDGER_TOKEN")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff

    # -- writes ---------------------------------------------------------

    def submit(self, document, format=None, source=None, target=None, idempotency_key=None, traceparent=None):
        """Record one handoff document and return the server's answer (a dict).

        document: bytes, str (sent as UTF-8) or a dict/list (sent as JSON).
        source/target: the agents, for formats that do not name them (vbw/1,
        task/1); the server uses a document's own agents when it names them.
        A rejected handoff is recorded too and returned normally with
        "decision": "rejected" (on_handoff raises instead). Raises
        GovledgerError when nothing could be recorded.
        """
        key = idempotency_key or str(uuid.uuid4())
        headers = {"Idempotency-Key": key, "Content-Type": "application/octet-stream"}
        if traceparent:
            headers["traceparent"] = traceparent
        query = {k: v for k, v in (("format", format), ("from", source), ("to", target)) if v}
        return self._call("POST", "/v1/handoffs", query, _body(document), headers)

    def validate(self, document, format=None, source=None, target=None):
        """Decide a document without recording it (the answer has seq 0)."""
        query = {k: v for k, v in (("format", format), ("from", source), ("to", target)) if v}
        return self._call("POST", "/v1/validate", query, _body(document), {"Content-Type": "application/octet-stream"})

    def on_handoff(self, source, target, document, **kwargs):
        """A handoff hook: record the handoff from source to target, and raise
        HandoffRejected when the ledger rejected it, so the caller does not hand
        the work over. Returns the server's answer when accepted."""
        result = self.submit(document, source=source, target=target, **kwargs)
        if result.get("decision") != "accepted":
            raise HandoffRejected(result)
        return result

    # -- reads ----------------------------------------------------------

    def entries(self, **filters):
        """One page of entries, newest first (filters as GET /v1/entries)."""
        return self._call("GET", "/v1/entries", {k: str(v) for k, v in filters.items()}, None, {})

    def entry(self, seq):
        """One entry: {"seq", "hash", "entry"}."""
        return self._call("GET", "/v1/entries/%d" % seq, {}, None, {})

    # -- plumbing -------------------------------------------------------

    def _call(self, method, path, query, body, headers):
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = dict(headers)
        headers["Accept"] = "application/json, application/problem+json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        wait = self.backoff
        attempt = 0
        while True:
            attempt += 1
            req = urllib.request.Request(url, data=body, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                problem = _problem(e)
                status = e.code
                retry_after = e.headers.get("Retry-After")
                message = "%s %s: %d %s" % (method, path, status, problem.get("detail") or problem.get("title") or e.reason)
                if status not in _RETRY_STATUSES or attempt > self.retries:
                    raise GovledgerError(message, status, problem, attempt) from None
                delay = _retry_after(retry_after, wait)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                if attempt > self.retries:
                    raise GovledgerError("%s %s: %s" % (method, path, e), None, None, attempt) from None
                delay = wait
            time.sleep(min(delay, self.max_backoff) * random.uniform(0.8, 1.0))
            wait = min(wait * 2, self.max_backoff)


def _body(document):
    if isinstance(document, bytes):
        return document
    if isinstance(document, str):
        return document.encode("utf-8")
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _problem(err):
    try:
        data = json.loads(err.read().decode("utf-8"))
        return data if isinstance(data, dict) else {}
    except (ValueError, UnicodeDecodeError, OSError):
        return {}


def _retry_after(value, default):
    try:
        return max(float(int(value)), 0.0)
    except (TypeError, ValueError):
        return default
