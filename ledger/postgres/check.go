package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

var _ ledger.Checker = (*Driver)(nil)

// Check compares every stored row with what the chain of entries implies,
// and reports each difference (it never stops at the first): entries are
// gapless 1..head, decode, carry their row's seq, link to the previous
// entry's hash and keep time in order; each entry's hash column and the
// columns Find filters on match its bytes; the head row is the last entry,
// with the snapshots and checkpoint key the fold leaves in force; every
// stored tree hash equals the one recomputed from the entries, and none
// lies beyond the tree; the accepted, idempotency, blocked and redacted
// tables equal those the fold (entry.State) rebuilds; every blob hashes to
// its key and is referred to by an entry, no blob a redaction erased is
// still stored, and every snapshot's bytes are there.
//
// It reads in one REPEATABLE READ snapshot. Verify (the verify package)
// replays the chain and re-hashes payloads itself; Check is what sees the
// rows verify does not read: tree hashes, the derived tables, the index
// columns. Memory grows with the number of distinct payloads, accepted
// handoff ids and idempotency keys. An error (ctx, the database) comes
// with the findings gathered so far.
func (d *Driver) Check(ctx context.Context) (findings []ledger.Finding, err error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ledger.ErrClosed
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, wrapErr("check", err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, wrapErr("check", err)
	}
	defer tx.Rollback(context.Background())
	c := &checker{ctx: ctx, tx: tx, st: entry.NewState(entry.Head{}, nil),
		tree: map[int64]tlog.Hash{}, refs: map[entry.Hash]uint64{}, snapshots: map[entry.Hash]uint64{}}
	err = c.run()
	return c.findings, wrapErr("check", err)
}

type checker struct {
	ctx      context.Context
	tx       pgx.Tx
	findings []ledger.Finding

	n         int64 // entries walked
	lastSeq   uint64
	lastHash  entry.Hash
	lastTime  time.Time
	st        *entry.State          // the fold of the entries walked
	tree      map[int64]tlog.Hash   // recomputed stored hashes
	refs      map[entry.Hash]uint64 // blob hash -> last entry naming it
	snapshots map[entry.Hash]uint64 // snapshot content -> seq
	redacted  map[entry.Hash]uint64 // payload -> latest redaction seq
}

func (c *checker) add(seq uint64, kind, want, got string) {
	c.findings = append(c.findings, ledger.Finding{Seq: seq, Kind: kind, Want: want, Got: got})
}

func (c *checker) run() error {
	head, origin, herr := readHead(c.ctx, c.tx)
	if errors.Is(herr, ledger.ErrCorrupt) {
		c.add(0, ledger.FindMetaHead, "one well-formed head row", herr.Error())
	} else if herr != nil {
		return herr
	} else if err := checkOrigin(origin); err != nil {
		c.add(0, ledger.FindBadValue, "head origin", err.Error())
	}
	if err := c.walkEntries(); err != nil {
		return err
	}
	if err := c.resolveRedactions(); err != nil {
		return err
	}
	if herr == nil {
		c.checkHead(head)
	}
	for _, f := range []func() error{c.checkTree, c.checkAccepts, c.checkBlocked, c.checkRedacted, c.checkBlobs} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// walkEntries reads every entry row in seq order, judging the chain, the
// row's own columns, the tree hashes it implies and the fold.
func (c *checker) walkEntries() error {
	rows, err := c.tx.Query(c.ctx, `SELECT seq, raw, hash, handoff_id, handoff_x, workflow_id, workflow_x,
       source, source_x, target, target_x, decision, time_s, time_ns
  FROM govledger.entries ORDER BY seq`)
	if err != nil {
		return err
	}
	defer rows.Close()
	expect := uint64(1)
	for rows.Next() {
		var r entryRow
		if err := rows.Scan(&r.seq, &r.raw, &r.hash, &r.hid, &r.hx, &r.wid, &r.wx, &r.src, &r.sx, &r.tgt, &r.tx,
			&r.decision, &r.ts, &r.tns); err != nil {
			return err
		}
		if c.n%1024 == 0 {
			if err := c.ctx.Err(); err != nil {
				return err
			}
		}
		seq := uint64(r.seq)
		if seq != expect {
			c.add(seq, ledger.FindSeqGap, fmt.Sprint(expect), fmt.Sprint(seq))
		}
		expect = seq + 1
		h := entry.LeafHash(r.raw)
		if !bytes.Equal(r.hash, h[:]) {
			c.add(seq, ledger.FindBadValue, "entries.hash "+h.String(), fmt.Sprintf("%x", r.hash))
		}
		c.treeLeaf(seq, h)
		prevHash := c.lastHash
		c.lastSeq, c.lastHash = seq, h
		c.n++
		e, err := entry.Decode(r.raw)
		if err != nil {
			c.add(seq, ledger.FindUndecodable, "a canonical entry", err.Error())
			continue
		}
		if e.Seq != seq {
			c.add(seq, ledger.FindSeqMismatch, fmt.Sprint(seq), fmt.Sprint(e.Seq))
		}
		if e.Prev != prevHash {
			c.add(seq, ledger.FindPrevLink, prevHash.String(), e.Prev.String())
		}
		if e.Time.Before(c.lastTime) {
			c.add(seq, ledger.FindTimeOrder, ">= "+c.lastTime.Format(time.RFC3339Nano), e.Time.Format(time.RFC3339Nano))
		} else {
			c.lastTime = e.Time.Time
		}
		c.columns(seq, e, &r)
		c.derive(seq, e, h)
	}
	return rows.Err()
}

// entryRow is one row of govledger.entries.
type entryRow struct {
	seq                int64
	raw, hash          []byte
	hid, wid, src, tgt []byte
	hx, wx, sx, tx     *int64
	decision           *string
	ts                 int64
	tns                int32
}

// columns compares the row's filter columns with those its entry implies
// (batchRows writes them).
func (c *checker) columns(seq uint64, e *entry.Entry, r *entryRow) {
	var want entryRow
	set := func(ok bool, s string, b *[]byte, x **int64) {
		if ok {
			v := xxh(s)
			*b, *x = []byte(s), &v
		}
	}
	switch e.Kind {
	case entry.KindHandoff:
		set(e.HandoffID.Valid, e.HandoffID.S, &want.hid, &want.hx)
		set(e.WorkflowID.Valid, e.WorkflowID.S, &want.wid, &want.wx)
		set(e.Source.Valid, e.Source.S, &want.src, &want.sx)
		set(e.Target.Valid, e.Target.S, &want.tgt, &want.tx)
		if e.Decision != "" {
			want.decision = &e.Decision
		}
	case entry.KindUnblock:
		set(true, e.Agent, &want.src, &want.sx)
	case entry.KindOutcome:
		set(e.WorkflowID.Valid, e.WorkflowID.S, &want.wid, &want.wx)
		set(true, e.Agent, &want.src, &want.sx)
	}
	str := func(b []byte, x *int64) string {
		if b == nil && x == nil {
			return "NULL"
		}
		xs := "NULL"
		if x != nil {
			xs = fmt.Sprint(*x)
		}
		return fmt.Sprintf("%q (%s)", b, xs)
	}
	same := func(a, b []byte, x, y *int64) bool {
		return (a == nil) == (b == nil) && bytes.Equal(a, b) && (x == nil) == (y == nil) && (x == nil || *x == *y)
	}
	for _, col := range []struct {
		name        string
		want, got   []byte
		wantx, gotx *int64
	}{
		{"handoff_id", want.hid, r.hid, want.hx, r.hx},
		{"workflow_id", want.wid, r.wid, want.wx, r.wx},
		{"source", want.src, r.src, want.sx, r.sx},
		{"target", want.tgt, r.tgt, want.tx, r.tx},
	} {
		if !same(col.want, col.got, col.wantx, col.gotx) {
			c.add(seq, ledger.FindIndexMissing, "entries."+col.name+" "+str(col.want, col.wantx), str(col.got, col.gotx))
		}
	}
	if (want.decision == nil) != (r.decision == nil) || want.decision != nil && *want.decision != *r.decision {
		c.add(seq, ledger.FindIndexMissing, fmt.Sprintf("entries.decision %v", deref(want.decision)), fmt.Sprint(deref(r.decision)))
	}
	if r.ts != e.Time.Unix() || r.tns != int32(e.Time.Nanosecond()) {
		c.add(seq, ledger.FindIndexMissing, fmt.Sprintf("entries.time %d.%09d", e.Time.Unix(), e.Time.Nanosecond()), fmt.Sprintf("%d.%09d", r.ts, r.tns))
	}
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// treeLeaf recomputes the stored hashes entry seq adds to the tree.
func (c *checker) treeLeaf(seq uint64, h entry.Hash) {
	hashes, err := tlog.StoredHashesForRecordHash(c.n, tlog.Hash(h), tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = c.tree[x]
		}
		return out, nil
	}))
	if err != nil {
		c.add(seq, ledger.FindTreeHash, "computable", err.Error())
		return
	}
	base := tlog.StoredHashIndex(0, c.n)
	for i, want := range hashes {
		c.tree[base+int64(i)] = want
	}
}

// derive folds e into the checker's state (the one fold of package entry)
// and notes the blobs it names. As in the bbolt driver's check, the fold
// is positioned on e's own seq, prev and time, so it judges only the
// state rules; the chain is judged by walkEntries.
func (c *checker) derive(seq uint64, e *entry.Entry, h entry.Hash) {
	st := c.st
	st.Head = entry.PositionAt(st.Head, e)
	if err := st.Judge(e, h); err != nil {
		c.add(seq, ledger.FindStateRule, "an entry that follows the ledger state", err.Error())
	}
	switch e.Kind {
	case entry.KindHandoff:
		c.refs[*e.PayloadSHA256] = seq
	case entry.KindSnapshot:
		c.refs[*e.ContentSHA256] = seq
		c.snapshots[*e.ContentSHA256] = seq
	}
}

// resolveRedactions reads the entries the redaction entries name, for
// their payload hashes.
func (c *checker) resolveRedactions() error {
	c.redacted = map[entry.Hash]uint64{}
	rs := c.st.Delta.Redactions
	if len(rs) == 0 {
		return nil
	}
	var seqs []int64
	for _, r := range rs {
		seqs = append(seqs, int64(r.Of))
	}
	rows, err := c.tx.Query(c.ctx, `SELECT seq, raw FROM govledger.entries WHERE seq = ANY($1)`, seqs)
	if err != nil {
		return err
	}
	raws := map[uint64][]byte{}
	var seq int64
	var raw []byte
	if _, err := pgx.ForEachRow(rows, []any{&seq, &raw}, func() error {
		raws[uint64(seq)] = slices.Clone(raw)
		return nil
	}); err != nil {
		return err
	}
	for _, r := range rs {
		t, err := entry.Decode(raws[r.Of])
		if err != nil || t.Kind != entry.KindHandoff {
			c.add(r.Seq, ledger.FindRedacted, fmt.Sprintf("redacted_seq %d a handoff", r.Of), "not a readable handoff entry")
			continue
		}
		c.redacted[*t.PayloadSHA256] = r.Seq
	}
	return nil
}

// checkHead compares the head row with the last entry and the fold.
func (c *checker) checkHead(h entry.Head) {
	if h.Seq != c.lastSeq || h.Hash != c.lastHash {
		c.add(c.lastSeq, ledger.FindMetaHead, fmt.Sprintf("seq %d hash %s", c.lastSeq, c.lastHash), fmt.Sprintf("seq %d hash %s", h.Seq, h.Hash))
	}
	if c.n > 0 && !h.Time.Equal(c.lastTime) {
		c.add(c.lastSeq, ledger.FindMetaHead, "time "+c.lastTime.Format(time.RFC3339Nano), h.Time.Format(time.RFC3339Nano))
	}
	for _, x := range []struct {
		name      string
		want, got entry.Hash
		wok, gok  bool
	}{{"manifest", c.st.Manifest, h.Manifest, c.st.HasManifest, h.HasManifest}, {"lock", c.st.Lock, h.Lock, c.st.HasLock, h.HasLock}} {
		switch {
		case !x.wok && x.gok:
			c.add(0, ledger.FindInForce, "no "+x.name+" in force", x.got.String())
		case x.wok && (!x.gok || x.got != x.want):
			got := "NULL"
			if x.gok {
				got = x.got.String()
			}
			c.add(c.snapshots[x.want], ledger.FindInForce, x.name+" "+x.want.String(), got)
		}
	}
	if h.Key != c.st.Key {
		c.add(0, ledger.FindKey, fmt.Sprintf("head key %q", c.st.Key), fmt.Sprintf("%q", h.Key))
	}
}

// checkTree compares the stored tree hashes with the recomputed ones.
func (c *checker) checkTree() error {
	rows, err := c.tx.Query(c.ctx, `SELECT idx, hash FROM govledger.tree ORDER BY idx`)
	if err != nil {
		return err
	}
	count := tlog.StoredHashCount(c.n)
	seen := int64(0)
	var idx int64
	var h []byte
	if _, err := pgx.ForEachRow(rows, []any{&idx, &h}, func() error {
		want, ok := c.tree[idx]
		switch {
		case idx >= count || !ok:
			c.add(0, ledger.FindTreeExtra, fmt.Sprintf("%d stored hashes", count), fmt.Sprintf("tree[%d]", idx))
		case !bytes.Equal(h, want[:]):
			c.add(leafOf(idx), ledger.FindTreeHash, fmt.Sprintf("tree[%d]=%x", idx, want[:]), fmt.Sprintf("%x", h))
			seen++
		default:
			seen++
		}
		return nil
	}); err != nil {
		return err
	}
	if seen < count {
		// Find which are missing: one more pass over the indexes.
		rows, err := c.tx.Query(c.ctx, `SELECT idx FROM govledger.tree WHERE idx < $1`, count)
		if err != nil {
			return err
		}
		have := map[int64]bool{}
		if _, err := pgx.ForEachRow(rows, []any{&idx}, func() error { have[idx] = true; return nil }); err != nil {
			return err
		}
		for x := range count {
			if !have[x] {
				want := c.tree[x]
				c.add(leafOf(x), ledger.FindTreeHash, fmt.Sprintf("tree[%d]=%x", x, want[:]), "absent")
			}
		}
	}
	return nil
}

// leafOf returns the seq of the entry whose append stored tree hash idx.
func leafOf(idx int64) uint64 {
	n := int64(0)
	for lo, hi := int64(0), idx+1; lo <= hi; {
		mid := lo + (hi-lo)/2
		if tlog.StoredHashIndex(0, mid) <= idx {
			n, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return uint64(n) + 1
}

// checkAccepts compares the accepted and idempotency tables with the fold.
func (c *checker) checkAccepts() error {
	for _, t := range []struct {
		table, key string
		want       map[string]entry.Accept
	}{{"accepted", "id_sha256", c.st.Delta.Accepted}, {"idempotency", "key_sha256", c.st.Delta.Idempotent}} {
		want := map[entry.Hash]entry.Accept{}
		for k, a := range t.want {
			want[entry.Sum256([]byte(k))] = a
		}
		rows, err := c.tx.Query(c.ctx, `SELECT `+t.key+`, seq, payload FROM govledger.`+t.table)
		if err != nil {
			return err
		}
		seen := map[entry.Hash]bool{}
		var key, payload []byte
		var seq int64
		if _, err := pgx.ForEachRow(rows, []any{&key, &seq, &payload}, func() error {
			var k entry.Hash
			copy(k[:], key)
			a, ok := want[k]
			if len(key) != 32 || !ok {
				c.add(uint64(max(seq, 0)), ledger.FindAccepted, "no "+t.table+" row", fmt.Sprintf("%s %x", t.key, key))
				return nil
			}
			seen[k] = true
			if uint64(seq) != a.Seq || !bytes.Equal(payload, a.Payload[:]) {
				c.add(a.Seq, ledger.FindAccepted, fmt.Sprintf("%s %x: seq %d payload %s", t.table, key, a.Seq, a.Payload),
					fmt.Sprintf("seq %d payload %x", seq, payload))
			}
			return nil
		}); err != nil {
			return err
		}
		for k, a := range want {
			if !seen[k] {
				c.add(a.Seq, ledger.FindAccepted, fmt.Sprintf("%s %x: seq %d payload %s", t.table, k[:], a.Seq, a.Payload), "absent")
			}
		}
	}
	return nil
}

// checkBlocked compares the blocked table with the fold.
func (c *checker) checkBlocked() error {
	want := c.st.Delta.Blocked
	rows, err := c.tx.Query(c.ctx, `SELECT agent_sha256, agent, seq FROM govledger.blocked`)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var sum, agent []byte
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&sum, &agent, &seq}, func() error {
		a := string(agent)
		w, ok := want[a]
		if s := entry.Sum256(agent); !bytes.Equal(sum, s[:]) {
			c.add(uint64(max(seq, 0)), ledger.FindBlocked, fmt.Sprintf("agent_sha256 %s for %q", s, a), fmt.Sprintf("%x", sum))
		}
		if !ok {
			c.add(uint64(max(seq, 0)), ledger.FindBlocked, "not blocked", fmt.Sprintf("%q blocked by %d", a, seq))
			return nil
		}
		seen[a] = true
		if uint64(seq) != w {
			c.add(w, ledger.FindBlocked, fmt.Sprintf("%q blocked by %d", a, w), fmt.Sprint(seq))
		}
		return nil
	}); err != nil {
		return err
	}
	for a, seq := range want {
		if !seen[a] {
			c.add(seq, ledger.FindBlocked, fmt.Sprintf("%q blocked by %d", a, seq), "absent")
		}
	}
	return nil
}

// checkRedacted compares the redacted table with the redaction entries.
// The driver stores the head seq of the erasing batch, which is at or
// after the redaction entry: the row must name a seq from the redaction
// through the head.
func (c *checker) checkRedacted() error {
	rows, err := c.tx.Query(c.ctx, `SELECT sha256, seq FROM govledger.redacted`)
	if err != nil {
		return err
	}
	seen := map[entry.Hash]bool{}
	var sum []byte
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&sum, &seq}, func() error {
		var k entry.Hash
		copy(k[:], sum)
		want, ok := c.redacted[k]
		if len(sum) != 32 || !ok {
			c.add(uint64(max(seq, 0)), ledger.FindRedacted, "not redacted", fmt.Sprintf("%x", sum))
			return nil
		}
		seen[k] = true
		if uint64(seq) < want || uint64(seq) > c.lastSeq {
			c.add(want, ledger.FindRedacted, fmt.Sprintf("%x redacted by %d..%d", sum, want, c.lastSeq), fmt.Sprint(seq))
		}
		return nil
	}); err != nil {
		return err
	}
	for h, seq := range c.redacted {
		if !seen[h] {
			c.add(seq, ledger.FindRedacted, fmt.Sprintf("%x redacted by %d", h[:], seq), "absent")
		}
	}
	return nil
}

// checkBlobs checks every blob's key against its bytes (hashed by the
// server: the bytes stay there), that an entry names it, and that no
// erased one remains; then that every snapshot's bytes are stored.
func (c *checker) checkBlobs() error {
	rows, err := c.tx.Query(c.ctx, `SELECT sha256, sha256(bytes) FROM govledger.blobs`)
	if err != nil {
		return err
	}
	stored := map[entry.Hash]bool{}
	var key, got []byte
	if _, err := pgx.ForEachRow(rows, []any{&key, &got}, func() error {
		var h entry.Hash
		copy(h[:], key)
		if len(key) != 32 {
			c.add(0, ledger.FindUnknownKey, "32-byte blob key", fmt.Sprintf("%x", key))
			return nil
		}
		stored[h] = true
		if !bytes.Equal(got, key) {
			c.add(c.refs[h], ledger.FindBlobHash, h.String(), fmt.Sprintf("%x", got))
		}
		ref, ok := c.refs[h]
		if !ok {
			c.add(0, ledger.FindBlobOrphan, "a referring entry", h.String())
		} else if r, ok := c.redacted[h]; ok && ref < r {
			c.add(r, ledger.FindBlobUnremoved, "absent", h.String())
		}
		return nil
	}); err != nil {
		return err
	}
	var missing []entry.Hash
	for h := range c.snapshots {
		if _, red := c.redacted[h]; !stored[h] && !red {
			missing = append(missing, h)
		}
	}
	slices.SortFunc(missing, func(a, b entry.Hash) int { return cmp.Compare(c.snapshots[a], c.snapshots[b]) })
	for _, h := range missing {
		c.add(c.snapshots[h], ledger.FindBlobMissing, h.String(), "absent")
	}
	return nil
}
