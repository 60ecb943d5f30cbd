"""gate(): a framework-neutral handoff gate.

Call it at the one point where your framework hands work from one agent to
another, before the target runs, with the prompts the framework will
actually give both agents. It builds a governed/1 document (the only format
that carries prompt hashes) with each agent's prompt hashed as it is now,
submits it, and lets the handoff proceed only when the ledger recorded it
as accepted:

    d = gate(client, Agent("planner", PLANNER_PROMPT, "1.0.0"),
             Agent("writer", WRITER_PROMPT, "1.0.0"),
             run=thread_id, step=step_id, at=step_started_at)
    # here only when accepted; a rejection or an unreachable ledger raised

Deterministic: the handoff id, the timestamp (`at`, the time your framework
keeps with the step) and the Idempotency-Key come from the run, the step
and the two agents, so the same step always sends byte-identical bytes
with the same key, and a retried or resumed step is answered with the
first decision ("replayed"), never a 409 conflict.

Fails closed: mode="raise" (the default) raises HandoffRejected for a
rejection and GovledgerError (LedgerUnavailable when nothing answered)
for everything else; mode="refuse" returns a Decision that is not accepted
and carries a refusal text a model can read. No mode lets a handoff
proceed without an "accepted" from the ledger.
"""

import datetime
import hashlib
import json
import re
import urllib.parse

from .client import GovledgerError, HandoffRejected, check_workflow_id

__all__ = ["Agent", "Decision", "gate", "handoff_document", "refusal_text", "MODES"]

MODES = ("raise", "refuse")
AGENT_TYPES = ("domain", "archetype", "orchestrator")
REQUEST_TYPES = ("query", "task", "analysis", "decision")

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


class Agent:
    """One side of a handoff: the registry's agent id, the prompt the
    framework will run for it (str, UTF-8, or bytes: hashed as they are, so
    load it from the file the lock pins and give the framework that same
    text), its version and type as the registry declares them."""

    __slots__ = ("id", "prompt", "version", "type")

    def __init__(self, id, prompt, version, type="domain"):
        if not isinstance(id, str) or not id:
            raise ValueError("agent id: a non-empty str")
        if not isinstance(prompt, (str, bytes)):
            raise ValueError("agent %s: prompt must be str or bytes, not %s" % (id, prompt.__class__.__name__))
        if not isinstance(version, str) or not version:
            raise ValueError("agent %s: version, as the registry declares it (e.g. \"1.0.0\")" % id)
        if type not in AGENT_TYPES:
            raise ValueError("agent %s: type must be one of %s, not %r" % (id, ", ".join(AGENT_TYPES), type))
        self.id, self.prompt, self.version, self.type = id, prompt, version, type

    @property
    def prompt_hash(self):
        """"sha256:" and the hex SHA-256 of the prompt's bytes, as the lock
        records a prompt file."""
        data = self.prompt.encode("utf-8") if isinstance(self.prompt, str) else self.prompt
        return "sha256:" + hashlib.sha256(data).hexdigest()

    def _block(self):
        return {"agent_type": self.type, "agent_id": self.id, "agent_version": self.version,
                "prompt_hash": self.prompt_hash}

    def __repr__(self):
        return "Agent(%r, version=%r, type=%r, prompt_hash=%r)" % (self.id, self.version, self.type, self.prompt_hash)


class Decision:
    """What gate() decided. accepted is True only when the ledger recorded
    the handoff as accepted; bool(decision) is accepted.

    decision: "accepted", "rejected", or None when the ledger gave no
    decision (refused the request, or could not be reached). seq,
    entry_hash, reasons, replayed, result: the ledger's answer, when one
    came. refusal: a readable text saying why the handoff must not proceed
    (None when accepted). error: the GovledgerError behind a refusal.
    handoff_id, timestamp, idempotency_key, workflow, document: what was
    sent.
    """

    def __init__(self, client, source, target, run, step, handoff_id, timestamp, key, workflow, document):
        self._client = client
        self.source, self.target, self.run, self.step = source, target, run, step
        self.handoff_id, self.timestamp, self.idempotency_key = handoff_id, timestamp, key
        self.workflow, self.document = workflow, document
        self.accepted = False
        self.decision = None
        self.result = None
        self.seq = None
        self.entry_hash = None
        self.reasons = []
        self.replayed = False
        self.refusal = None
        self.error = None

    def __bool__(self):
        return self.accepted

    def __repr__(self):
        return "Decision(%s -> %s, %s, seq=%r%s)" % (self.source, self.target, self.decision or "no decision", self.seq,
                                                      ", replayed" if self.replayed else "")

    def record_outcome(self, status, output=None, duration_ms=None, client=None, timeout=None):
        """Record that the target finished: status "succeeded", "failed" or
        "cancelled"; output (str or bytes) is recorded as its SHA-256 only;
        duration_ms its run time. client: one whose token holds
        handoff:write for the target (default: the gate's). The key is
        derived from the step, so a retry is answered with the first
        outcome. Raises GovledgerError when it could not be recorded."""
        if not self.accepted:
            raise ValueError("no outcome for a handoff the ledger did not accept")
        digest = None
        if output is not None:
            data = output.encode("utf-8") if isinstance(output, str) else bytes(output)
            digest = hashlib.sha256(data).hexdigest()
        return (client or self._client).record_outcome(self.seq, status, output_sha256=digest, duration_ms=duration_ms,
                                                       idempotency_key=_outcome_key(self.idempotency_key), timeout=timeout)


def _timestamp(at):
    """at as the RFC 3339 text the document carries: an aware datetime (in
    UTC, microseconds when not zero), an RFC 3339 string (as given), or
    seconds since the epoch."""
    if isinstance(at, str):
        if not _RFC3339.match(at):
            raise ValueError("at: RFC 3339 with upper-case T and Z (e.g. 2026-11-28T12:00:00Z), not %r" % at)
        return at
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        at = datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
    if not isinstance(at, datetime.datetime):
        raise ValueError("at: the step's time (an aware datetime, RFC 3339 text or epoch seconds), not %r; "
                         "keep it with the run's state so a resumed step sends the same document" % (at,))
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("at: a naive datetime is ambiguous; give it a timezone (datetime.timezone.utc)")
    at = at.astimezone(datetime.timezone.utc)
    s = at.strftime("%Y-%m-%dT%H:%M:%S")
    if at.microsecond:
        s += (".%06d" % at.microsecond).rstrip("0")
    return s + "Z"


def _identity(run, step):
    if not isinstance(run, str) or not run:
        raise ValueError("run: a non-empty str naming the run (thread, session) across retries and resumes")
    if isinstance(step, bool) or not isinstance(step, (str, int)) or step == "":
        raise ValueError("step: a non-empty str or an int naming the step within the run")
    return run, str(step)


def _handoff_id(run, step, source, target):
    h = hashlib.sha256("\x00".join(("govledger gate", run, step, source, target)).encode("utf-8")).digest()
    u = bytearray(h[:16])
    u[6] = u[6] & 0x0F | 0x40
    u[8] = u[8] & 0x3F | 0x80
    x = u.hex()
    return "%s-%s-%s-%s-%s" % (x[:8], x[8:12], x[12:16], x[16:20], x[20:])


def _key(run, step, source, target):
    """gate/<run>/<step>/<source>/<target>, each part percent-encoded (so
    the key is visible ASCII and no two identities share one); a hash when
    that would exceed 160 characters: the ledger stores a key after the
    token's name in at most 255 bytes, and the outcome's key adds 8."""
    parts = [urllib.parse.quote(p, safe="") for p in (run, step, source, target)]
    key = "gate/" + "/".join(parts)
    if len(key) > 160:
        key = "gate/sha256-" + hashlib.sha256("\x00".join((run, step, source, target)).encode("utf-8")).hexdigest()
    return key


def _outcome_key(key):
    return key + "/outcome"


def handoff_document(source, target, run, step, at, request_type="task", description="", input_data="",
                     constraints=(), expected_output=None, history=(), context=None):
    """The governed/1 document gate() sends, as bytes, with its handoff id
    and timestamp: (document, handoff_id, timestamp). Byte-identical for the
    same arguments: keys sorted, no spaces, UTF-8."""
    if not isinstance(source, Agent) or not isinstance(target, Agent):
        raise ValueError("source and target: Agent(id, prompt, version, type)")
    run, step = _identity(run, step)
    if request_type not in REQUEST_TYPES:
        raise ValueError("request_type: one of %s, not %r" % (", ".join(REQUEST_TYPES), request_type))
    if not isinstance(input_data, (str, dict)):
        raise ValueError("input_data: a str or a dict")
    accumulated = {"govledger_run": run, "govledger_step": step}
    if context:
        accumulated.update(context)
    hid = _handoff_id(run, step, source.id, target.id)
    ts = _timestamp(at)
    doc = {
        "handoff_id": hid,
        "timestamp": ts,
        "protocol_version": "1.0.0",
        "source_agent": source._block(),
        "target_agent": target._block(),
        "context": {
            "request": {"type": request_type, "description": description, "input_data": input_data,
                        "constraints": [str(c) for c in constraints],
                        "expected_output": expected_output if expected_output is not None else "the result of " + target.id},
            "state": {"conversation_history": list(history), "accumulated_context": accumulated, "decisions_made": []},
        },
        # The gate claims what the ledger is asked to check; a refuted
        # claim adds ATTESTATION_MISMATCH to the reasons of a rejection.
        "governance": {"source_agent_verified": True, "target_agent_verified": True, "composition_valid": True,
                       "boundaries_respected": True, "audit_trail": "govledger-gate:" + run + "/" + step},
    }
    data = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return data, hid, ts


def refusal_text(source, target, result):
    """The readable refusal of a rejected handoff: every reason on a line."""
    lines = ["govledger: handoff %s -> %s rejected (ledger seq %s); %s must not run:" % (source, target, result.get("seq"), target)]
    for r in result.get("reasons") or []:
        if isinstance(r, dict):
            field, message = r.get("field"), r.get("message")
            if field and isinstance(message, str) and message.startswith(field + ": "):
                message = message[len(field) + 2:]  # the server's message names the field already
            lines.append("- %s%s: %s" % (r.get("code"), " " + field if field else "", message))
    return "\n".join(lines)


def gate(client, source, target, run, step, at, mode="raise", workflow=None, timeout=None, traceparent=None,
         request_type="task", description="", input_data="", constraints=(), expected_output=None, history=(),
         context=None):
    """Ask the ledger whether source may hand work to target now, and
    record the decision. Returns a Decision.

    client: a govledger.Client (its token must hold handoff:write for the
    source). source, target: Agent, with the prompts the framework will
    actually run. run, step: the identity of this handoff in your framework
    (a thread or session id, and the step or tool-call id within it); at:
    the step's time, kept with the run so a resumed step passes the same
    value. workflow: the Govledger-Workflow the handoff is filed under
    (default: run). timeout: seconds for the whole decision (default: the
    client's). mode: "raise" (default) or "refuse" (see the module doc).
    The rest fills the document's request and state.
    """
    if mode not in MODES:
        raise ValueError("mode: one of %s, not %r" % (", ".join(MODES), mode))
    document, hid, ts = handoff_document(source, target, run, step, at, request_type=request_type,
                                         description=description, input_data=input_data, constraints=constraints,
                                         expected_output=expected_output, history=history, context=context)
    run, step = _identity(run, step)
    workflow = run if workflow is None else workflow
    check_workflow_id(workflow)
    key = _key(run, step, source.id, target.id)
    d = Decision(client, source.id, target.id, run, step, hid, ts, key, workflow, document)
    try:
        result = client.submit(document, format="governed/1", idempotency_key=key, workflow=workflow,
                               traceparent=traceparent, timeout=timeout, content_type="application/json")
    except GovledgerError as e:
        if mode == "raise":
            raise
        d.error = e
        d.refusal = "govledger: handoff %s -> %s not allowed; %s must not run: %s" % (source.id, target.id, target.id, e)
        return d
    d.result = result
    d.decision = result["decision"]
    d.seq = result["seq"]
    d.entry_hash = result.get("entry_hash")
    d.reasons = result.get("reasons") or []
    d.replayed = result.get("replayed") is True
    if d.decision == "accepted":
        d.accepted = True
        return d
    rejected = HandoffRejected(result, refusal_text(source.id, target.id, result))
    if mode == "raise":
        raise rejected
    d.error = rejected
    d.refusal = rejected.refusal
    return d
