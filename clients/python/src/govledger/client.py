"""The HTTP client of govledger's API (`govledger serve`), standard library only.

Every write carries an Idempotency-Key (a fresh one unless the caller gives
one): when the server answers 429 or 503 (overloaded, or "outcome unknown"
after a storage failure) or does not answer at all, the client sends the
same request again with the same key, so a handoff that was in fact
recorded is answered with its first result ("replayed": true) and never
recorded twice. Every other refusal is raised at once as a GovledgerError
carrying the problem+json fields (RFC 9457) the server sent.

`timeout` bounds one call, retries and waits included: when it runs out,
LedgerUnavailable is raised.
"""

import http.client
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

__all__ = ["Client", "GovledgerError", "LedgerUnavailable", "HandoffRejected", "check_workflow_id"]

_RETRY_STATUSES = (429, 503)


class GovledgerError(Exception):
    """The ledger refused a request, answered outside its contract, or could
    not be reached. Nothing may proceed on it.

    status: the HTTP status (None when no answer came). problem: the
    problem+json body (a dict; empty without one), whose members are also
    attributes: type, title, detail, code (the stable reason, e.g.
    FORBIDDEN_SOURCE), instance, request_id, written ("no": nothing was
    written; "unknown": retry with the same Idempotency-Key), retry_after.
    attempts: how many times the request was sent.
    """

    def __init__(self, message, status=None, problem=None, attempts=1):
        super().__init__(message)
        self.status = status
        self.problem = problem if isinstance(problem, dict) else {}
        self.attempts = attempts

    def _member(self, name):
        return self.problem.get(name)

    @property
    def type(self):
        return self._member("type")

    @property
    def title(self):
        return self._member("title")

    @property
    def detail(self):
        return self._member("detail")

    @property
    def code(self):
        return self._member("code")

    @property
    def instance(self):
        return self._member("instance")

    @property
    def request_id(self):
        return self._member("request_id")

    @property
    def written(self):
        return self._member("written")

    @property
    def retry_after(self):
        return self._member("retry_after")


class LedgerUnavailable(GovledgerError):
    """No answer within the timeout: the connection failed or timed out, or
    the server stayed overloaded (429/503) through every retry. status and
    problem are those of the last answer, if one came."""


class HandoffRejected(GovledgerError):
    """The ledger recorded the handoff as rejected: the target must not run.

    result is the server's answer; reasons its list of {code, severity,
    field, message}; seq and entry_hash the ledger entry that records the
    refusal; refusal a readable text naming every reason.
    """

    def __init__(self, result, refusal):
        super().__init__(refusal, status=201, problem=None, attempts=1)
        self.result = result
        self.reasons = result.get("reasons") or []
        self.seq = result.get("seq")
        self.entry_hash = result.get("entry_hash")
        self.refusal = refusal

    @property
    def codes(self):
        return [r.get("code") for r in self.reasons if isinstance(r, dict)]


def check_workflow_id(workflow):
    """Raises ValueError unless workflow is a valid Govledger-Workflow value:
    1 to 256 bytes of UTF-8, no control characters."""
    if not isinstance(workflow, str):
        raise ValueError("workflow id: a str, not %s" % type(workflow).__name__)
    b = workflow.encode("utf-8", "strict")
    if not 1 <= len(b) <= 256:
        raise ValueError("workflow id: 1 to 256 bytes of UTF-8, not %d" % len(b))
    for ch in workflow:
        o = ord(ch)
        if o < 0x20 or 0x7F <= o < 0xA0:
            raise ValueError("workflow id: control character U+%04X" % o)
    return b


def _check_key(key):
    if not isinstance(key, str) or not 1 <= len(key) <= 255 or any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise ValueError("Idempotency-Key: 1 to 255 visible ASCII characters, not %r" % (key,))
    return key


class Client:
    """A client of one govledger server.

    url: e.g. "http://127.0.0.1:8080". token: a bearer token (None: none).
    timeout: seconds one call may take, retries included. retries: further
    attempts after a 429, a 503 or no answer. backoff: the first wait between
    attempts (doubling, with jitter, a Retry-After honoured) up to
    max_backoff seconds.
    """

    def __init__(self, url, token=None, timeout=10.0, retries=5, backoff=0.25, max_backoff=30.0):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError("url: http:// or https://, not %r" % (url,))
        if timeout is None or timeout <= 0:
            raise ValueError("timeout: a positive number of seconds (a gate never waits for ever)")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)

    @classmethod
    def from_env(cls, environ, **kwargs):
        """A client from GOVLEDGER_SERVER and GOVLEDGER_TOKEN of environ
        (pass os.environ), the variables the govledger CLI reads."""
        url = environ.get("GOVLEDGER_SERVER")
        if not url:
            raise ValueError("GOVLEDGER_SERVER is not set")
        return cls(url, token=environ.get("GOVLEDGER_TOKEN") or None, **kwargs)

    # -- writes ---------------------------------------------------------

    def submit(self, document, format=None, source=None, target=None, idempotency_key=None,
               workflow=None, traceparent=None, timeout=None, content_type=None):
        """POST /v1/handoffs: decide and record one document; returns the
        answer (seq, entry_hash, decision, reasons, replayed, ...).

        document: bytes, str (UTF-8) or a dict/list (sent as JSON).
        source/target: the agents, for formats that name none (vbw/1, task/1).
        workflow: the Govledger-Workflow header (the run the handoff belongs
        to). content_type: the media type sent (default: application/json
        for a dict or list, else application/octet-stream; the server
        detects the format from the bytes). A rejected handoff is recorded
        and returned normally with
        "decision": "rejected" (gate() raises instead). Raises GovledgerError
        when nothing could be recorded.
        """
        if content_type is None:
            content_type = "application/octet-stream" if isinstance(document, (bytes, str)) else "application/json"
        headers = {"Idempotency-Key": _check_key(idempotency_key or "py-" + str(uuid.uuid4())),
                   "Content-Type": content_type}
        if workflow is not None:
            headers["Govledger-Workflow"] = check_workflow_id(workflow)
        if traceparent:
            headers["traceparent"] = traceparent
        query = _query(format=format, **{"from": source, "to": target})
        result = self._call("POST", "/v1/handoffs", query, _body(document), headers, timeout)
        _check_result(result, "POST /v1/handoffs")
        return result

    def submit_batch(self, items, format=None, source=None, target=None, traceparent=None, timeout=None):
        """POST /v1/handoffs:batch: record several documents in one commit
        group. items: documents, or dicts {"document", "idempotency_key",
        "format", "from", "to", "workflow"}. Each item without a key gets a
        fresh one, so the whole batch can be retried safely. Returns one dict
        per item, in order: a result ("status": 201) or a problem (its
        "status" and "code"; nothing was written for it).
        """
        lines = []
        for item in items:
            env = dict(item) if isinstance(item, dict) and "document" in item else {"document": item}
            doc = env["document"]
            if isinstance(doc, bytes):
                doc = doc.decode("utf-8")
            elif not isinstance(doc, str):
                doc = _body(doc).decode("utf-8")
            env["document"] = doc
            env["idempotency_key"] = _check_key(env.get("idempotency_key") or "py-" + str(uuid.uuid4()))
            if env.get("workflow") is not None:
                check_workflow_id(env["workflow"])
            lines.append(json.dumps(env, separators=(",", ":"), ensure_ascii=False, allow_nan=False))
        if not lines:
            return []
        headers = {"Content-Type": "application/x-ndjson"}
        if traceparent:
            headers["traceparent"] = traceparent
        query = _query(format=format, **{"from": source, "to": target})
        body = ("\n".join(lines) + "\n").encode("utf-8")
        answers = self._call("POST", "/v1/handoffs:batch", query, body, headers, timeout, ndjson=True)
        if len(answers) != len(lines):
            raise GovledgerError("POST /v1/handoffs:batch: %d answers to %d documents" % (len(answers), len(lines)))
        return answers

    def validate(self, document, format=None, source=None, target=None, timeout=None):
        """POST /v1/validate: the decision without recording it (seq 0)."""
        query = _query(format=format, **{"from": source, "to": target})
        result = self._call("POST", "/v1/validate", query, _body(document),
                            {"Content-Type": "application/octet-stream"}, timeout)
        _check_result(result, "POST /v1/validate")
        return result

    def record_outcome(self, decision_seq, status, output_sha256=None, duration_ms=None,
                       idempotency_key=None, timeout=None):
        """POST /v1/outcomes: the target of an accepted handoff finished.
        status: "succeeded", "failed" or "cancelled". The token must hold
        handoff:write for the decision's target agent. Returns the answer
        ({"seq", "kind": "outcome", "decision_seq", ...})."""
        if status not in ("succeeded", "failed", "cancelled"):
            raise ValueError("outcome status: succeeded, failed or cancelled, not %r" % (status,))
        body = {"decision_seq": int(decision_seq), "status": status}
        if output_sha256 is not None:
            body["output_sha256"] = output_sha256
        if duration_ms is not None:
            if int(duration_ms) < 0:
                raise ValueError("duration_ms: >= 0")
            body["duration_ms"] = int(duration_ms)
        headers = {"Idempotency-Key": _check_key(idempotency_key or "py-" + str(uuid.uuid4())),
                   "Content-Type": "application/json"}
        return self._call("POST", "/v1/outcomes", {}, _body(body), headers, timeout)

    # -- reads ----------------------------------------------------------

    def entries(self, timeout=None, **filters):
        """One page of entries, newest first (filters as GET /v1/entries)."""
        return self._call("GET", "/v1/entries", {k: str(v) for k, v in filters.items()}, None, {}, timeout)

    def entry(self, seq, timeout=None):
        """One entry: {"seq", "hash", "entry"}."""
        return self._call("GET", "/v1/entries/%d" % int(seq), {}, None, {}, timeout)

    def workflow(self, workflow_id, timeout=None):
        """GET /v1/workflows/{id}: the workflow's entries in seq order."""
        check_workflow_id(workflow_id)
        return self._call("GET", "/v1/workflows/" + urllib.parse.quote(workflow_id, safe=""), {}, None, {}, timeout)

    def openapi(self, timeout=None):
        """The server's OpenAPI document (what routes it has)."""
        return self._call("GET", "/openapi.json", {}, None, {}, timeout)

    # -- plumbing -------------------------------------------------------

    def _call(self, method, path, query, body, headers, timeout=None, ndjson=False):
        budget = self.timeout if timeout is None else float(timeout)
        if budget <= 0:
            raise ValueError("timeout: a positive number of seconds")
        deadline = time.monotonic() + budget
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = dict(headers)
        headers["Accept"] = "application/x-ndjson, application/problem+json" if ndjson else "application/json, application/problem+json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        what = "%s %s" % (method, path)
        wait = self.backoff
        attempt = 0
        while True:
            attempt += 1
            left = deadline - time.monotonic()
            if left <= 0:
                raise LedgerUnavailable("%s: no answer within %gs" % (what, budget), None, None, attempt - 1)
            req = urllib.request.Request(url, data=body, method=method, headers=headers)
            last_status, last_problem = None, None
            try:
                with urllib.request.urlopen(req, timeout=left) as resp:
                    raw = resp.read()
                    return _decode(raw, what, resp.status, ndjson)
            except urllib.error.HTTPError as e:
                problem = _problem(e)
                status = e.code
                detail = problem.get("detail") or problem.get("title") or e.reason
                message = "%s: %d %s%s" % (what, status, problem.get("code") or "", (": " + str(detail)) if detail else "")
                if status not in _RETRY_STATUSES:
                    raise GovledgerError(message, status, problem, attempt) from None
                if attempt > self.retries:
                    raise LedgerUnavailable(message, status, problem, attempt) from None
                last_status, last_problem = status, problem
                delay = _retry_after(e.headers.get("Retry-After"), wait)
                reason = message
            except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
                why = getattr(e, "reason", e)
                reason = "%s: %s" % (what, why)
                if attempt > self.retries:
                    raise LedgerUnavailable(reason, None, None, attempt) from None
                delay = wait
            delay = min(delay, self.max_backoff) * random.uniform(0.8, 1.0)
            if time.monotonic() + delay >= deadline:
                raise LedgerUnavailable("%s (no answer within %gs)" % (reason, budget), last_status, last_problem, attempt)
            time.sleep(delay)
            wait = min(wait * 2, self.max_backoff)


def _query(**kv):
    return {k: v for k, v in kv.items() if v}


def _body(document):
    if isinstance(document, bytes):
        return document
    if isinstance(document, str):
        return document.encode("utf-8")
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _decode(raw, what, status, ndjson):
    try:
        text = raw.decode("utf-8")
        if ndjson:
            out = [json.loads(line) for line in text.splitlines() if line.strip()]
            if all(isinstance(x, dict) for x in out):
                return out
        else:
            out = json.loads(text)
            if isinstance(out, dict):
                return out
    except ValueError:
        pass
    raise GovledgerError("%s: %d answer is not the JSON the API defines" % (what, status), status)


def _check_result(result, what):
    """A handoff answer must say accepted or rejected with a seq: anything
    else is a contract violation, never taken as an acceptance."""
    if result.get("decision") not in ("accepted", "rejected") or not isinstance(result.get("seq"), int) \
            or isinstance(result.get("seq"), bool):
        raise GovledgerError("%s: the answer has no decision and seq: %.200r" % (what, result))


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
