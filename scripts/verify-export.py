#!/usr/bin/env python3
"""Verify a govledger export (JSON Lines) without govledger: usage verify-export.py FILE.
Written from the README's "Verify an export independently" section alone. Every check exits
explicitly (never assert, which python3 -O strips): exit 0 with "OK: <count>, head <hash>", or
exit 1 with "FAIL: line N (seq N): what failed"."""
import base64, binascii, hashlib, json, sys

class Bad(Exception): pass

def canon(v):  # RFC 8785 for govledger entries: integers and strings only
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(canon(k) + ":" + canon(x) for k, x in items) + "}"
    if isinstance(v, list): return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, str): return json.dumps(v, ensure_ascii=False)
    if v is True or v is False or v is None: return json.dumps(v)
    if isinstance(v, int) and abs(v) <= 2**53 - 1: return str(v)
    raise Bad("not an I-JSON integer/string value: %r" % (v,))

def unique(pairs):  # one line, one reading: refuse duplicate names
    if len({k for k, _ in pairs}) != len(pairs): raise Bad("duplicate name in a JSON object")
    return dict(pairs)

if len(sys.argv) != 2: sys.exit("usage: verify-export.py EXPORT.jsonl")
prev, n = "0" * 64, 0
try:
    for n, raw in enumerate(open(sys.argv[1], "rb"), 1):  # entry seq n is on line n
        rec = json.loads(raw.decode("utf-8"), object_pairs_hook=unique)
        if not isinstance(rec, dict) or not isinstance(rec.get("entry"), dict): raise Bad("entry: missing or not an object")
        if set(rec) - {"entry", "hash", "payload_b64", "canonical"}: raise Bad("unknown fields %s" % sorted(set(rec) - {"entry", "hash", "payload_b64", "canonical"}))
        e, c = rec["entry"], canon(rec["entry"])  # test vectors also carry the canonical text
        if "canonical" in rec and rec["canonical"] != c: raise Bad("canonical %r, recomputed %r" % (rec["canonical"], c))
        h = hashlib.sha256(b"\x00" + c.encode("utf-8")).hexdigest()
        if type(e.get("seq")) is not int or e["seq"] != n: raise Bad("seq %r, want %d" % (e.get("seq"), n))
        if e.get("prev") != prev: raise Bad("prev %r does not link to the hash of seq %d, %s" % (e.get("prev"), n - 1, prev))
        if rec.get("hash") != h: raise Bad("hash %r, recomputed %s" % (rec.get("hash"), h))
        if "payload_b64" in rec:
            want = e.get("payload_sha256") or e.get("content_sha256")
            if not isinstance(want, str): raise Bad("payload_b64 on an entry that names no payload or content")
            got = hashlib.sha256(base64.b64decode(rec["payload_b64"], validate=True)).hexdigest()
            if got != want: raise Bad("payload SHA-256 %s, the entry says %s" % (got, want))
        prev = h
except (Bad, ValueError, TypeError, binascii.Error) as err:  # JSON and UTF-8 errors are ValueErrors
    sys.exit("FAIL: line %d (seq %d): %s" % (n, n, err))
except OSError as err:
    sys.exit("FAIL: %s" % err)
print("OK: %d entries, head %s" % (n, prev))
