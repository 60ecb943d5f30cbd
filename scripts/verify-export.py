#!/usr/bin/env python3
"""Verify a govledger export (JSON Lines) without govledger.

Written from the README's "Verify an export independently" section alone:
it re-derives every entry's RFC 8785 bytes, hash and chain link, and checks
each payload against its recorded SHA-256. Usage: verify-export.py FILE
"""
import base64, hashlib, json, sys

def canon(v):  # RFC 8785 for govledger entries: integers and strings only
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(canon(k) + ":" + canon(x) for k, x in items) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if v is True: return "true"
    if v is False: return "false"
    if v is None: return "null"
    if isinstance(v, int) and abs(v) <= 2**53 - 1: return str(v)
    raise ValueError("not an I-JSON integer/string value: %r" % (v,))

prev, seq = "0" * 64, 0
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    rec = json.loads(line)
    e = rec["entry"]
    data = canon(e).encode("utf-8")
    h = hashlib.sha256(b"\x00" + data).hexdigest()
    seq += 1
    assert e["seq"] == seq, "line %d: seq %s, want %d" % (n, e["seq"], seq)
    assert e["prev"] == prev, "seq %d: prev does not link to seq %d" % (seq, seq - 1)
    assert rec["hash"] == h, "seq %d: hash %s, recomputed %s" % (seq, rec["hash"], h)
    want = e.get("payload_sha256") or e.get("content_sha256")
    if want and "payload_b64" in rec:
        p = base64.b64decode(rec["payload_b64"], validate=True)
        assert hashlib.sha256(p).hexdigest() == want, "seq %d: payload hash differs" % seq
    prev = h
print("OK: %d entries, head %s" % (seq, prev))
