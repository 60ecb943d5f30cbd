// The entry page's inclusion proof check, run in the browser: fetch the
// entry and its proof (with the signed checkpoint) from the API, recompute
// the entry's leaf hash and the RFC 6962 tree root with WebCrypto SHA-256,
// check the checkpoint's Ed25519 signature (C2SP signed note) against the
// configured verifier key, and say "verified" or which step failed.
'use strict';
(function () {
  const sec = document.getElementById('proof');
  if (!sec) return;
  const status = document.getElementById('proof-status');
  const list = document.getElementById('proof-steps');
  const button = document.getElementById('proof-check');
  const seq = Number(sec.dataset.seq);
  const shownHash = sec.dataset.hash;
  const verifierKey = sec.dataset.key;

  class StepError extends Error {
    constructor(step, message) { super(message); this.step = step; }
  }
  const enc = new TextEncoder();
  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  function unhex(step, s) {
    if (typeof s !== 'string' || !/^([0-9a-f]{2})*$/.test(s)) throw new StepError(step, 'not lowercase hex: ' + String(s).slice(0, 80));
    const out = new Uint8Array(s.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(s.substr(2 * i, 2), 16);
    return out;
  }
  function unb64(step, s) {
    let bin;
    try { bin = atob(s); } catch (e) { throw new StepError(step, 'not base64: ' + String(s).slice(0, 80)); }
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  }
  function concat(...parts) {
    const n = parts.reduce((a, p) => a + p.length, 0);
    const out = new Uint8Array(n);
    let i = 0;
    for (const p of parts) { out.set(p, i); i += p.length; }
    return out;
  }
  async function sha256(...parts) {
    return new Uint8Array(await crypto.subtle.digest('SHA-256', concat(...parts)));
  }
  const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

  async function fetchText(step, url) {
    let r;
    try {
      r = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/json' }, cache: 'no-store' });
    } catch (e) {
      throw new StepError(step, url + ': ' + e.message);
    }
    const text = await r.text();
    if (!r.ok) throw new StepError(step, url + ' answered ' + r.status);
    return text;
  }

  // parseKey reads a note verifier key: name+hash+base64(0x01 || 32-byte key).
  async function parseKey(step, vkey) {
    if (!vkey) throw new StepError(step, 'no verifier key is configured on the server');
    // The name has no '+'; the base64 key may.
    const m = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(vkey);
    if (!m) throw new StepError(step, 'malformed verifier key');
    const [, name, khash] = m;
    const key = unb64(step, m[3]);
    if (key.length !== 33 || key[0] !== 1) throw new StepError(step, 'verifier key is not an Ed25519 key');
    const h = await sha256(enc.encode(name + '\n'), key);
    if (hex(h.slice(0, 4)) !== khash) throw new StepError(step, 'verifier key hash does not match its key');
    return { name, khash, pub: key.slice(1) };
  }

  // openNote checks the signed note's signature by key and returns its text lines.
  async function openNote(step, note, key) {
    const i = note.lastIndexOf('\n\n');
    if (i < 0 || !note.endsWith('\n')) throw new StepError(step, 'checkpoint is not a signed note');
    const text = note.slice(0, i + 1);
    let found = false;
    for (const line of note.slice(i + 2, -1).split('\n')) {
      const m = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!m) throw new StepError(step, 'malformed signature line');
      if (m[1] !== key.name) continue;
      const raw = unb64(step, m[2]);
      if (raw.length !== 68 || hex(raw.slice(0, 4)) !== key.khash) continue;
      let ok;
      try {
        const k = await crypto.subtle.importKey('raw', key.pub, { name: 'Ed25519' }, false, ['verify']);
        ok = await crypto.subtle.verify({ name: 'Ed25519' }, k, raw.slice(4), enc.encode(text));
      } catch (e) {
        throw new StepError(step, 'this browser cannot verify Ed25519: ' + e.message);
      }
      if (!ok) throw new StepError(step, 'the signature by ' + key.name + ' does not verify');
      found = true;
    }
    if (!found) throw new StepError(step, 'no signature by the configured key ' + key.name + '+' + key.khash);
    return text.slice(0, -1).split('\n');
  }

  // rootFromProof is RFC 9162 section 2.1.3.2.
  async function rootFromProof(step, index, size, leaf, path) {
    if (index >= size) throw new StepError(step, 'leaf index ' + index + ' outside a tree of ' + size);
    let fn = index, sn = size - 1, r = leaf;
    for (const p of path) {
      if (sn === 0) throw new StepError(step, 'audit path too long');
      if (fn % 2 === 1 || fn === sn) {
        r = await sha256(Uint8Array.of(1), p, r);
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      } else {
        r = await sha256(Uint8Array.of(1), r, p);
      }
      fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
    }
    if (sn !== 0) throw new StepError(step, 'audit path too short');
    return r;
  }

  function show(step, ok, detail) {
    const li = document.createElement('li');
    li.className = ok ? 'good' : 'bad';
    li.dataset.step = step;
    li.textContent = (ok ? '\u2713 ' : '\u2717 ') + step + (detail ? ': ' + detail : '');
    list.appendChild(li);
  }

  async function check() {
    list.replaceChildren();
    status.className = '';
    status.textContent = 'checking…';
    let step = 'WebCrypto';
    try {
      if (!window.isSecureContext || !window.crypto || !crypto.subtle) {
        throw new StepError(step, 'not a secure context: open the viewer over HTTPS or on localhost');
      }
      step = 'fetch entry';
      const entryText = await fetchText(step, '/v1/entries/' + seq);
      // The entry's canonical bytes are the "entry" member, verbatim: the
      // API writes {"seq":…,"hash":…,"entry":…} with the entry last.
      const at = entryText.indexOf('"entry":');
      const end = entryText.lastIndexOf('}');
      if (at < 0 || end < at) throw new StepError(step, 'answer has no entry');
      const canonical = entryText.slice(at + 8, end);
      let parsed;
      try { parsed = JSON.parse(canonical); } catch (e) { throw new StepError(step, 'entry is not JSON'); }
      if (parsed.seq !== seq) throw new StepError(step, 'the API answered entry ' + parsed.seq);
      show(step, true, canonical.length + ' bytes');

      step = 'fetch proof';
      let proof;
      try { proof = JSON.parse(await fetchText(step, '/v1/entries/' + seq + '/proof')); } catch (e) {
        if (e instanceof StepError) throw e;
        throw new StepError(step, 'proof is not JSON');
      }
      show(step, true, (proof.hashes || []).length + ' hashes, tree size ' + proof.tree_size);

      step = 'entry hash';
      const leaf = await sha256(Uint8Array.of(0), enc.encode(canonical));
      if (hex(leaf) !== shownHash) throw new StepError(step, 'SHA-256(0x00 || entry) is ' + hex(leaf) + ', the page shows ' + shownHash);
      if (hex(leaf) !== proof.leaf_hash) throw new StepError(step, 'the proof is for leaf ' + proof.leaf_hash + ', not ' + hex(leaf));
      show(step, true, hex(leaf));

      step = 'checkpoint signature';
      const key = await parseKey(step, verifierKey);
      const lines = await openNote(step, String(proof.checkpoint || ''), key);
      show(step, true, 'signed by ' + key.name);

      step = 'checkpoint';
      if (lines.length < 3 || !/^(0|[1-9][0-9]*)$/.test(lines[1])) throw new StepError(step, 'malformed checkpoint text');
      const origin = lines[0];
      const size = Number(lines[1]);
      const root = unb64(step, lines[2]);
      if (root.length !== 32) throw new StepError(step, 'root hash is not 32 bytes');
      if (size !== proof.tree_size) throw new StepError(step, 'checkpoint size ' + size + ', proof for tree size ' + proof.tree_size);
      show(step, true, origin + ' at size ' + size);

      step = 'inclusion proof';
      const path = (proof.hashes || []).map((h) => unhex(step, h));
      if (path.some((p) => p.length !== 32)) throw new StepError(step, 'a proof hash is not 32 bytes');
      const got = await rootFromProof(step, seq - 1, size, leaf, path);
      if (!equal(got, root)) throw new StepError(step, 'the audit path leads to ' + hex(got) + ', the checkpoint root is ' + hex(root));
      show(step, true, 'root ' + hex(root));

      status.className = 'good';
      status.textContent = 'verified: entry ' + seq + ' is in ' + origin + ' at tree size ' + size;
    } catch (e) {
      const s = e instanceof StepError ? e.step : step;
      show(s, false, e.message);
      status.className = 'bad';
      status.textContent = 'FAILED at step "' + s + '": ' + e.message;
    }
  }

  button.addEventListener('click', check);
  check();
})();
