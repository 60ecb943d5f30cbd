package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// Append stores b in one transaction if the stored head is still b.At.
//
// The whole commit is one round trip: one pipeline of statements that
// PostgreSQL runs as one implicit transaction, committed when the
// pipeline ends. Its first statement, govledger.advance, takes the head
// row's lock (waiting for another writer's commit), compares it with
// b.At and moves it to b.Head; a head that moved raises an error that
// aborts the transaction before any insert runs, and Append returns an
// error wrapping ledger.ErrConflict. When the answer is lost (the
// connection broke), Append reconnects and reads the head to find out
// whether the batch landed, for up to Options.Timeout; if it cannot tell,
// the error wraps ErrOutcomeUnknown. An error the server answered stored
// nothing.
//
// When b erases blobs, Append vacuums the blobs table after the commit
// (VACUUM FULL with Options.VacuumFull) so that the erased rows' bytes
// leave the table's pages; see the package documentation for what
// PostgreSQL keeps elsewhere.
func (d *Driver) Append(ctx context.Context, b *Batch) error {
	if d.opts.ReadOnly {
		return ledger.ErrReadOnly
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return ledger.ErrClosed
	}
	return d.commit(ctx, b, nil)
}

// commit sends b's statements as one pipeline: on a connection from the
// pool (one implicit transaction), or with v, on the locked view's
// connection inside its transaction, followed by COMMIT.
func (d *Driver) commit(ctx context.Context, b *Batch, v *view) error {
	q, err := batchRows(b)
	if err != nil {
		return err
	}
	d.stats.appends.Add(1)
	var xid int64
	if v != nil {
		q.Queue(`COMMIT`)
		err = send(ctx, v.conn.SendBatch(ctx, q), q, &xid)
	} else {
		err = send(ctx, d.pool.SendBatch(ctx, q), q, &xid)
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pgErr) && pgErr.Code == codeConflict:
		d.stats.conflicts.Add(1)
		return fmt.Errorf("postgres: %s (the batch extends seq %d, %s): %w", pgErr.Message, b.At.Seq, b.At.Hash, ledger.ErrConflict)
	case errors.As(err, &pgErr) && pgErr.Code == codeNoHead:
		return fmt.Errorf("postgres: append: head row missing: %w", ledger.ErrCorrupt)
	case ctx.Err() == nil && !unavailable(err):
		// The server answered with an error, or pgx refused the batch
		// before sending it: rolled back.
		return wrapErr("append", err)
	default:
		d.stats.unknown.Add(1)
		return d.resolve(b, xid, err)
	}
	if len(b.Erase) > 0 {
		d.erased(xid)
	}
	return nil
}

// Lock implements ledger.Locker: a view of the stored head that holds the
// head row's lock (a READ COMMITTED transaction that took it with SELECT
// … FOR UPDATE: while it holds the lock no other writer commits, so every
// read answers as of the head). Its Append stores a batch built on it and
// commits; Close without Append rolls back. Either releases the lock.
func (d *Driver) Lock(ctx context.Context) (ledger.LockedView, error) {
	if d.opts.ReadOnly {
		return nil, ledger.ErrReadOnly
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ledger.ErrClosed
	}
	return d.open(ctx, true)
}

// Append stores b, built on the locked view v, and commits. It fails
// (ledger.ErrReadOnly) on a view that is not locked.
func (v *view) Append(ctx context.Context, b *Batch) error {
	if !v.locked {
		return fmt.Errorf("postgres: append on a view that does not hold the head: %w", ledger.ErrReadOnly)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return fmt.Errorf("postgres: append: view %w", ledger.ErrClosed)
	}
	return v.d.commit(ctx, b, v)
}

// SQLSTATEs govledger.advance raises (migrations/002_advance.sql).
const (
	codeConflict = "GL409" // the head moved
	codeNoHead   = "GL500" // the head row is missing
)

// send reads the results of q, sent as br: the guard, then (when the
// batch erases) the transaction id into xid, then the inserts.
func send(ctx context.Context, br pgx.BatchResults, q *pgx.Batch, xid *int64) error {
	var err error
	for i, qq := range q.QueuedQueries {
		if i == 1 && strings.HasPrefix(qq.SQL, sqlXid) {
			err = br.QueryRow().Scan(xid)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// sqlXid reads the erasing transaction's id: snapshots older than it may
// still read the erased rows, and VACUUM keeps them until they end.
const sqlXid = `SELECT txid_current() % 4294967296`

// Batch is ledger.Batch, named here for the doc comments.
type Batch = ledger.Batch

// resolve finds out whether b landed after its COMMIT's answer was lost:
// stored when the entry at b.Head.Seq has b.Head's hash, not stored when
// the head is still b.At. It retries on fresh connections until
// Options.Timeout passes.
func (d *Driver) resolve(b *Batch, xid int64, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	for {
		var head int64
		var hash []byte
		err := d.pool.QueryRow(ctx, `SELECT h.seq, (SELECT e.hash FROM govledger.entries e WHERE e.seq = $1)
FROM govledger.head h WHERE h.id = 1`, int64(b.Head.Seq)).Scan(&head, &hash)
		if err == nil {
			switch {
			case hash != nil && bytes.Equal(hash, b.Head.Hash[:]):
				if len(b.Erase) > 0 {
					d.erased(xid)
				}
				return nil
			case uint64(head) == b.At.Seq:
				return fmt.Errorf("postgres: append: commit failed, nothing stored: %w: %w", ErrUnavailable, cause)
			case hash == nil && uint64(head) < b.Head.Seq:
				// The head moved, but not to or past this batch: another
				// writer's batch landed and this one did not.
				return fmt.Errorf("postgres: append: commit failed, nothing stored (head moved): %w: %w", ErrUnavailable, cause)
			default:
				// Another writer's entries hold this batch's seqs.
				return fmt.Errorf("postgres: append: commit failed, nothing stored (seq %d holds another entry): %w: %w", b.Head.Seq, ErrUnavailable, cause)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres: append: %w: %w: %w", ErrOutcomeUnknown, ErrUnavailable, cause)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// batchRows checks b's shape and returns the statements that store it
// and move the head, as one pgx.Batch.
func batchRows(b *Batch) (*pgx.Batch, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("postgres: append: invalid batch: "+format, args...)
	}
	n := uint64(len(b.Entries))
	if b.Head.Seq != b.At.Seq+n {
		return nil, bad("%d entries take seq %d to %d, not %d", n, b.At.Seq, b.At.Seq+n, b.Head.Seq)
	}
	if n > 0 && b.Entries[n-1].Hash != b.Head.Hash || n == 0 && b.Head.Hash != b.At.Hash {
		return nil, bad("the head hash is not the last entry's")
	}
	if want := tlog.StoredHashIndex(0, int64(b.Head.Seq)) - tlog.StoredHashIndex(0, int64(b.At.Seq)); int64(len(b.Hashes)) != want {
		return nil, bad("%d tree hashes, want %d", len(b.Hashes), want)
	}
	var (
		seqs                                 []int64
		raws, hashes, hids, wids, srcs, tgts [][]byte
		hidx, widx, srcx, tgtx               []*int64
		decisions                            []*string
		times                                []int64
		nanos                                []int32
	)
	str := func(ok bool, s string) ([]byte, *int64) {
		if !ok {
			return nil, nil
		}
		x := xxh(s)
		return []byte(s), &x
	}
	for i, a := range b.Entries {
		seq := b.At.Seq + uint64(i) + 1
		e := a.Entry
		if e == nil {
			var err error
			if e, err = entry.Decode(a.Raw); err != nil {
				return nil, bad("entry %d: %v", seq, err)
			}
		}
		if e.Seq != seq {
			return nil, bad("entry %d says seq %d", seq, e.Seq)
		}
		if seq > 1<<62 {
			return nil, bad("seq %d out of range", seq)
		}
		seqs = append(seqs, int64(seq))
		raws = append(raws, a.Raw)
		hashes = append(hashes, a.Hash[:])
		var h, w, s, t []byte
		var hx, wx, sx, tx *int64
		var dec *string
		switch e.Kind {
		case entry.KindHandoff:
			h, hx = str(e.HandoffID.Valid, e.HandoffID.S)
			w, wx = str(e.WorkflowID.Valid, e.WorkflowID.S)
			s, sx = str(e.Source.Valid, e.Source.S)
			t, tx = str(e.Target.Valid, e.Target.S)
			if e.Decision != "" {
				dec = &e.Decision
			}
		case entry.KindUnblock:
			s, sx = str(true, e.Agent)
		case entry.KindOutcome:
			w, wx = str(e.WorkflowID.Valid, e.WorkflowID.S)
			s, sx = str(true, e.Agent)
		}
		hids, hidx = append(hids, h), append(hidx, hx)
		wids, widx = append(wids, w), append(widx, wx)
		srcs, srcx = append(srcs, s), append(srcx, sx)
		tgts, tgtx = append(tgts, t), append(tgtx, tx)
		decisions = append(decisions, dec)
		times = append(times, e.Time.Unix())
		nanos = append(nanos, int32(e.Time.Nanosecond()))
	}
	q := &pgx.Batch{}
	h := &b.Head
	var man, lock []byte
	if h.HasManifest {
		man = h.Manifest[:]
	}
	if h.HasLock {
		lock = h.Lock[:]
	}
	ts, tns := time.Time{}.Unix(), int32(0)
	if h.Seq > 0 {
		ts, tns = h.Time.Unix(), int32(h.Time.Nanosecond())
	}
	q.Queue(`SELECT govledger.advance($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		int64(b.At.Seq), b.At.Hash[:], int64(h.Seq), h.Hash[:], ts, tns, man, lock, []byte(h.Key))
	if len(b.Erase) > 0 {
		q.Queue(sqlXid)
	}
	if n > 0 {
		q.Queue(`INSERT INTO govledger.entries
(seq, raw, hash, handoff_id, handoff_x, workflow_id, workflow_x, source, source_x, target, target_x, decision, time_s, time_ns)
SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bigint[], $6::bytea[], $7::bigint[],
                     $8::bytea[], $9::bigint[], $10::bytea[], $11::bigint[], $12::text[], $13::bigint[], $14::integer[])`,
			seqs, raws, hashes, hids, hidx, wids, widx, srcs, srcx, tgts, tgtx, decisions, times, nanos)
	}
	if len(b.Hashes) > 0 {
		base := tlog.StoredHashIndex(0, int64(b.At.Seq))
		idx := make([]int64, len(b.Hashes))
		hs := make([][]byte, len(b.Hashes))
		for i := range b.Hashes {
			idx[i] = base + int64(i)
			hs[i] = b.Hashes[i][:]
		}
		q.Queue(`INSERT INTO govledger.tree (idx, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])`, idx, hs)
	}
	if len(b.Blobs) > 0 {
		var sums, data [][]byte
		for _, sum := range sortedHashes(b.Blobs) {
			v := b.Blobs[sum]
			if entry.Sum256(v) != sum {
				return nil, bad("blob %s: bytes hash to %s", sum, entry.Sum256(v))
			}
			sums = append(sums, sum[:]) // sum is a fresh copy per iteration
			data = append(data, v)
		}
		q.Queue(`INSERT INTO govledger.blobs (sha256, bytes) SELECT * FROM unnest($1::bytea[], $2::bytea[])
ON CONFLICT (sha256) DO NOTHING`, sums, data)
	}
	if len(b.Erase) > 0 {
		sums := make([][]byte, len(b.Erase))
		for i := range b.Erase {
			sums[i] = b.Erase[i][:]
		}
		q.Queue(`DELETE FROM govledger.blobs WHERE sha256 = ANY($1::bytea[])`, sums)
		q.Queue(`INSERT INTO govledger.redacted (sha256, seq) SELECT s, $2 FROM unnest($1::bytea[]) s
ON CONFLICT (sha256) DO UPDATE SET seq = excluded.seq`, sums, int64(b.Head.Seq))
	}
	d := &b.Delta
	if d.ClearBlocked {
		q.Queue(`DELETE FROM govledger.blocked`)
	}
	if len(d.Unblocked) > 0 {
		var sums [][]byte
		for a := range d.Unblocked {
			s := entry.Sum256([]byte(a))
			sums = append(sums, s[:])
		}
		q.Queue(`DELETE FROM govledger.blocked WHERE agent_sha256 = ANY($1::bytea[])`, sums)
	}
	if len(d.Blocked) > 0 {
		var sums, agents [][]byte
		var seqs []int64
		for _, a := range sortedKeys(d.Blocked) {
			s := entry.Sum256([]byte(a))
			sums, agents, seqs = append(sums, s[:]), append(agents, []byte(a)), append(seqs, int64(d.Blocked[a]))
		}
		q.Queue(`INSERT INTO govledger.blocked (agent_sha256, agent, seq) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bigint[])
ON CONFLICT (agent_sha256) DO UPDATE SET seq = excluded.seq`, sums, agents, seqs)
	}
	for _, t := range []struct {
		table string
		m     map[string]entry.Accept
	}{{"accepted", d.Accepted}, {"idempotency", d.Idempotent}} {
		if len(t.m) == 0 {
			continue
		}
		var sums, payloads [][]byte
		var seqs []int64
		for _, k := range sortedKeys(t.m) {
			s, a := entry.Sum256([]byte(k)), t.m[k]
			sums, payloads, seqs = append(sums, s[:]), append(payloads, a.Payload[:]), append(seqs, int64(a.Seq))
		}
		// A first acceptance is first: one already stored means the
		// tables and the batch disagree, and the insert fails.
		q.Queue(`INSERT INTO govledger.`+t.table+` SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::bytea[])`, sums, seqs, payloads)
	}
	return q, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedHashes(m map[entry.Hash][]byte) []entry.Hash {
	out := make([]entry.Hash, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b entry.Hash) int { return bytes.Compare(a[:], b[:]) })
	return out
}
