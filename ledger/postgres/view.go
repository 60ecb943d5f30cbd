package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// view is a REPEATABLE READ READ ONLY transaction on a connection of its
// own. A pgx connection serves one query at a time: mu serialises the
// view's reads, and Scan holds it only while it fetches a chunk, so fn may
// read the view too.
type view struct {
	d    *Driver
	head entry.Head

	mu     sync.Mutex
	conn   *pgxpool.Conn
	tx     pgx.Tx
	closed bool
}

var _ ledger.View = (*view)(nil)

// View opens a snapshot of the ledger as of the stored head now.
func (d *Driver) View(ctx context.Context) (ledger.View, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ledger.ErrClosed
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, wrapErr("view", err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, wrapErr("view", err)
	}
	v := &view{d: d, conn: conn, tx: tx}
	// The snapshot is taken by the transaction's first query: this one.
	h, _, err := readHead(ctx, tx, false)
	if err != nil {
		v.release()
		return nil, err
	}
	v.head = h
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		v.release()
		return nil, ledger.ErrClosed
	}
	d.views[v] = struct{}{}
	d.mu.Unlock()
	return v, nil
}

// readHead reads the head row (locking it with forUpdate) and returns the
// head and the origin.
func readHead(ctx context.Context, q pgx.Tx, forUpdate bool) (entry.Head, string, error) {
	sql := `SELECT origin, seq, hash, time_s, time_ns, manifest, lock, key FROM govledger.head WHERE id = 1`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	var (
		h                    entry.Head
		origin               string
		seq, ts              int64
		tns                  int32
		hash, man, lock, key []byte
	)
	err := q.QueryRow(ctx, sql).Scan(&origin, &seq, &hash, &ts, &tns, &man, &lock, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, "", fmt.Errorf("postgres: head row missing: %w", ledger.ErrCorrupt)
	}
	if err != nil {
		return h, "", wrapErr("read head", err)
	}
	if seq < 0 || len(hash) != 32 || man != nil && len(man) != 32 || lock != nil && len(lock) != 32 {
		return h, "", fmt.Errorf("postgres: head row malformed: %w", ledger.ErrCorrupt)
	}
	h.Seq = uint64(seq)
	copy(h.Hash[:], hash)
	if seq > 0 {
		h.Time = time.Unix(ts, int64(tns)).UTC()
	}
	if man != nil {
		copy(h.Manifest[:], man)
		h.HasManifest = true
	}
	if lock != nil {
		copy(h.Lock[:], lock)
		h.HasLock = true
	}
	h.Key = string(key)
	return h, origin, nil
}

func (v *view) Head() entry.Head { return v.head }

// release ends the transaction and returns the connection.
func (v *view) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v.tx.Rollback(ctx) != nil {
		// A connection whose transaction could not end is not reused.
		v.conn.Conn().Close(ctx)
	}
	v.conn.Release()
}

// Close ends the view. Closing twice is fine.
func (v *view) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	v.release()
	v.d.mu.Lock()
	delete(v.d.views, v)
	v.d.mu.Unlock()
	return nil
}

// query runs fn on the view's transaction under mu, with ctx bounded by
// Options.Timeout when it has no deadline.
func (v *view) query(ctx context.Context, op string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.d.opts.Timeout)
		defer cancel()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return fmt.Errorf("postgres: %s: view %w", op, ledger.ErrClosed)
	}
	if err := fn(ctx, v.tx); err != nil {
		var re *ledger.RecordError
		if errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrNotFound) || errors.As(err, &re) {
			return err
		}
		return wrapErr(op, err)
	}
	return nil
}

func (v *view) accept(sql, key string) (entry.Accept, bool, error) {
	var a entry.Accept
	var seq int64
	var payload []byte
	sum := entry.Sum256([]byte(key))
	err := v.query(context.Background(), "read", func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, sql, sum[:]).Scan(&seq, &payload)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	if seq < 1 || uint64(seq) > v.head.Seq || len(payload) != 32 {
		return a, false, fmt.Errorf("postgres: %q: stored acceptance malformed: %w", key, ledger.ErrCorrupt)
	}
	a.Seq = uint64(seq)
	copy(a.Payload[:], payload)
	return a, true, nil
}

// Accepted implements entry.Tables.
func (v *view) Accepted(handoffID string) (entry.Accept, bool, error) {
	return v.accept(`SELECT seq, payload FROM govledger.accepted WHERE id_sha256 = $1`, handoffID)
}

// Idempotent implements entry.Tables.
func (v *view) Idempotent(key string) (entry.Accept, bool, error) {
	return v.accept(`SELECT seq, payload FROM govledger.idempotency WHERE key_sha256 = $1`, key)
}

// Blocked implements entry.Tables.
func (v *view) Blocked(agent string) (uint64, bool, error) {
	var seq int64
	sum := entry.Sum256([]byte(agent))
	err := v.query(context.Background(), "read blocked", func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT seq FROM govledger.blocked WHERE agent_sha256 = $1 AND agent = $2`, sum[:], []byte(agent)).Scan(&seq)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if seq < 1 || uint64(seq) > v.head.Seq {
		return 0, false, fmt.Errorf("postgres: blocked %q: seq %d: %w", agent, seq, ledger.ErrCorrupt)
	}
	return uint64(seq), true, nil
}

// ReadHashes implements tlog.HashReader: the stored hashes at indexes, in
// their order, in one query.
func (v *view) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	limit := tlog.StoredHashIndex(0, int64(v.head.Seq))
	for _, i := range indexes {
		if i < 0 || i >= limit {
			return nil, fmt.Errorf("postgres: stored hash %d beyond tree size %d: %w", i, v.head.Seq, ledger.ErrBadRange)
		}
	}
	got := make(map[int64][]byte, len(indexes))
	err := v.query(context.Background(), "read tree", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT idx, hash FROM govledger.tree WHERE idx = ANY($1)`, indexes)
		if err != nil {
			return err
		}
		var idx int64
		var h []byte
		_, err = pgx.ForEachRow(rows, []any{&idx, &h}, func() error {
			got[idx] = h
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		h, ok := got[idx]
		if !ok || len(h) != 32 {
			return nil, fmt.Errorf("postgres: stored hash %d missing or malformed: %w", idx, ledger.ErrCorrupt)
		}
		copy(out[i][:], h)
	}
	return out, nil
}

// Entry returns the canonical bytes of entry seq.
func (v *view) Entry(seq uint64) ([]byte, error) {
	if seq < 1 || seq > v.head.Seq {
		return nil, &ledger.RecordError{Seq: seq, Op: "get", Err: ledger.ErrNotFound}
	}
	var raw []byte
	err := v.query(context.Background(), "get", func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT raw FROM govledger.entries WHERE seq = $1`, int64(seq)).Scan(&raw)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &ledger.RecordError{Seq: seq, Op: "get", Err: fmt.Errorf("%w: entry missing below the head %d", ledger.ErrCorrupt, v.head.Seq)}
	}
	return raw, err
}

// Scan calls fn with entries from through the view's head, in order. It
// fetches chunks of rows, calling fn outside the view's lock, and reports
// a missing row (a gap below the head) as ErrCorrupt.
func (v *view) Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error {
	const maxRows, maxBytes = 512, 4 << 20
	if from < 1 {
		from = 1
	}
	type row struct {
		seq uint64
		raw []byte
	}
	next := from
	for next <= v.head.Seq {
		if err := ctx.Err(); err != nil {
			return err
		}
		var chunk []row
		err := v.query(ctx, "scan", func(ctx context.Context, tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT seq, raw FROM govledger.entries WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3`,
				int64(next), int64(v.head.Seq), maxRows)
			if err != nil {
				return err
			}
			size := 0
			var seq int64
			var raw []byte
			_, err = pgx.ForEachRow(rows, []any{&seq, &raw}, func() error {
				if size < maxBytes {
					chunk = append(chunk, row{uint64(seq), raw})
					size += len(raw)
				}
				return nil
			})
			return err
		})
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			return &ledger.RecordError{Seq: next, Op: "scan", Err: fmt.Errorf("%w: entries %d-%d missing below the head", ledger.ErrCorrupt, next, v.head.Seq)}
		}
		for _, r := range chunk {
			if r.seq != next {
				return &ledger.RecordError{Seq: next, Op: "scan", Err: fmt.Errorf("%w: entry missing below the head %d (next stored is %d)", ledger.ErrCorrupt, v.head.Seq, r.seq)}
			}
			if err := fn(r.seq, r.raw); err != nil {
				return err
			}
			next++
		}
	}
	return nil
}

// Blob returns the bytes stored under sum.
func (v *view) Blob(sum entry.Hash) ([]byte, error) {
	var data []byte
	var redacted bool
	err := v.query(context.Background(), "blob", func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT (SELECT bytes FROM govledger.blobs WHERE sha256 = $1),
       EXISTS (SELECT 1 FROM govledger.redacted WHERE sha256 = $1)`, sum[:]).Scan(&data, &redacted)
	})
	switch {
	case err != nil:
		return nil, err
	case data != nil:
		if got := entry.Sum256(data); got != sum {
			return nil, fmt.Errorf("blob %s: %w: stored bytes hash to %s", sum, ledger.ErrCorrupt, got)
		}
		return data, nil
	case redacted:
		return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrRedacted)
	default:
		return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrNotFound)
	}
}

// Blocks returns every agent blocked at the view's head.
func (v *view) Blocks() (map[string]uint64, error) {
	out := map[string]uint64{}
	err := v.query(context.Background(), "blocks", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT agent, seq FROM govledger.blocked`)
		if err != nil {
			return err
		}
		var agent []byte
		var seq int64
		_, err = pgx.ForEachRow(rows, []any{&agent, &seq}, func() error {
			if seq < 1 || uint64(seq) > v.head.Seq {
				return fmt.Errorf("postgres: blocked %q: seq %d: %w", agent, seq, ledger.ErrCorrupt)
			}
			out[string(agent)] = uint64(seq)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Find returns the seqs of the entries matching q, ascending. Each filter
// is exact: the xxhash columns pick candidates from an index, and the
// string columns confirm them.
func (v *view) Find(ctx context.Context, q ledger.Query) ([]uint64, error) {
	sql := `SELECT seq FROM govledger.entries WHERE seq <= $1`
	args := []any{int64(v.head.Seq)}
	arg := func(a any) string {
		args = append(args, a)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.HandoffID != "" {
		sql += ` AND handoff_x = ` + arg(xxh(q.HandoffID)) + ` AND handoff_id = ` + arg([]byte(q.HandoffID))
	}
	if q.WorkflowID != "" {
		sql += ` AND workflow_x = ` + arg(xxh(q.WorkflowID)) + ` AND workflow_id = ` + arg([]byte(q.WorkflowID))
	}
	if q.Agent != "" {
		x, a := arg(xxh(q.Agent)), arg([]byte(q.Agent))
		sql += ` AND ((source_x = ` + x + ` AND source = ` + a + `) OR (target_x = ` + x + ` AND target = ` + a + `))`
	}
	if q.Decision != "" {
		sql += ` AND decision = ` + arg(q.Decision)
	}
	if !q.Since.IsZero() {
		sql += ` AND (time_s, time_ns) >= (` + arg(q.Since.Unix()) + `, ` + arg(int32(q.Since.Nanosecond())) + `)`
	}
	if !q.Until.IsZero() {
		sql += ` AND (time_s, time_ns) < (` + arg(q.Until.Unix()) + `, ` + arg(int32(q.Until.Nanosecond())) + `)`
	}
	if q.After > 0 {
		sql += ` AND seq > ` + arg(int64(min(q.After, math.MaxInt64)))
	}
	if q.Before > 0 {
		sql += ` AND seq < ` + arg(int64(min(q.Before, math.MaxInt64)))
	}
	if q.Limit > 0 && q.Newest {
		sql += ` ORDER BY seq DESC LIMIT ` + arg(int64(q.Limit))
	} else {
		sql += ` ORDER BY seq`
		if q.Limit > 0 {
			sql += ` LIMIT ` + arg(int64(q.Limit))
		}
	}
	var out []uint64
	err := v.query(ctx, "find", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var seq int64
		_, err = pgx.ForEachRow(rows, []any{&seq}, func() error {
			out = append(out, uint64(seq))
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if q.Limit > 0 && q.Newest {
		slices.Reverse(out)
	}
	return out, nil
}

// xxh is the index key of a string: its xxhash64 as a bigint.
func xxh(s string) int64 { return int64(xxhash.Sum64String(s)) }
