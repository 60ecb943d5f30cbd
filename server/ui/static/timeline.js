// The timeline's live tail: new entries from the API's event stream
// (/v1/events, authenticated by the session cookie) that match the page's
// filters are added on top. Rows are built with textContent only.
'use strict';
(function () {
  const out = document.getElementById('live-status');
  if (!out || !window.EventSource) return;
  const f = out.dataset;
  let after = Number(f.after || 0);
  const since = f.since ? Date.parse(/Z|[+-]\d\d:\d\d$/.test(f.since) ? f.since : f.since + 'Z') : NaN;

  function matches(e) {
    if (f.agent && e.source !== f.agent && e.target !== f.agent) return false;
    if (f.decision && e.decision !== f.decision) return false;
    if (f.format && e.format !== f.format) return false;
    if (f.workflow && e.workflow_id !== f.workflow) return false;
    if (f.kind && e.kind !== f.kind) return false;
    if (f.code && !(e.reasons || []).some((r) => r.code === f.code)) return false;
    if (!isNaN(since) && Date.parse(e.time) < since) return false;
    return true;
  }
  function cell(tr, text, cls) {
    const td = document.createElement('td');
    if (text !== undefined && text !== null) td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function link(parent, href, text) {
    const a = document.createElement('a');
    a.href = href;
    a.textContent = text;
    parent.appendChild(a);
  }
  function summary(e) {
    switch (e.kind) {
      case 'snapshot': return e.what + ' snapshot in force' + ((e.lifts || []).length ? '; lifts ' + e.lifts.join(', ') : '');
      case 'unblock': return 'unblock ' + e.agent + ': ' + e.note;
      case 'redaction': return 'redaction of entry ' + e.redacted_seq + ': ' + e.note;
      case 'key_rotation': return 'checkpoint key rotation: ' + e.note;
    }
    return e.kind;
  }
  function row(seq, e) {
    const tr = document.createElement('tr');
    tr.dataset.seq = String(seq);
    tr.className = 'fresh';
    link(cell(tr), '/ui/entries/' + seq, '#' + seq);
    cell(tr, e.time);
    if (e.kind === 'handoff') {
      cell(tr, e.decision, e.decision === 'accepted' || e.decision === 'rejected' ? e.decision : '');
      cell(tr, e.format || '');
      const st = cell(tr);
      if (e.source) link(st, '/ui/agents/' + encodeURIComponent(e.source), e.source); else st.append('–');
      st.append(' → ');
      if (e.target) link(st, '/ui/agents/' + encodeURIComponent(e.target), e.target); else st.append('–');
      const wf = cell(tr);
      if (e.workflow_id) link(wf, '/ui/workflows/' + encodeURIComponent(e.workflow_id), e.workflow_id);
      cell(tr, (e.reasons || []).map((r) => r.code).join(' '));
    } else {
      cell(tr, e.kind);
      cell(tr, '');
      cell(tr, summary(e)).colSpan = 3;
    }
    return tr;
  }

  let es;
  function connect() {
    es = new EventSource('/v1/events?after=' + after);
    es.addEventListener('open', () => { out.textContent = 'Live tail: on'; out.className = 'good'; });
    es.addEventListener('entry', (ev) => {
      let v;
      try { v = JSON.parse(ev.data); } catch (e) { return; }
      if (typeof v.seq !== 'number' || v.seq <= after) return;
      after = v.seq;
      if (!v.entry || !matches(v.entry)) return;
      const body = document.querySelector('table.entries tbody');
      if (!body) return;
      const none = document.getElementById('no-entries');
      if (none) none.remove();
      body.prepend(row(v.seq, v.entry));
    });
    es.addEventListener('error', () => {
      // Reconnect by hand after the last entry seen: the browser's own
      // retry would send Last-Event-ID beside ?after=, which the API refuses.
      es.close();
      out.textContent = 'Live tail: reconnecting…';
      out.className = '';
      setTimeout(connect, 2000);
    });
  }
  connect();
})();
