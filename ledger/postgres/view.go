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
// own, or (locked) a READ COMMITTED transaction holding the head row's
// lock. A pgx connection serves one query at a time: mu serialises the
// view's reads, and Scan holds it only while it fetches a chunk, so fn may
// read the view too.
type view struct {
	d      *Driver
	head   entry.Head
	locked bool
	// ctx is the context the view was opened with: the reads that take
	// none (Entry, Blob, Blocks, the tree's hashes, …) run under it, so a
	// reader's cancellation reaches the query in flight.
	ctx context.Context

	mu     sync.Mutex
	conn   *pgxpool.Conn
	closed bool

	// The answers read so far (Prefetch loads many in one query): the
	// snapshot never changes, so neither do they (nor, under the head's
	// lock, do the tables of a locked view: only a commit changes them).
	cmu    sync.Mutex
	acc    map[string]answer // accepted handoff ids
	idem   map[string]answer // idempotency keys
	blk    map[string]answer // blocked agents (Payload unused)
	hashes map[int64]tlog.Hash
}

// answer is a table lookup's result.
type answer struct {
	entry.Accept
	ok bool
}

var _ ledger.Prefetcher = (*view)(nil)

// cached returns m's answer for key, if read before.
func (v *view) cached(m *map[string]answer, key string) (answer, bool) {
	v.cmu.Lock()
	defer v.cmu.Unlock()
	a, ok := (*m)[key]
	return a, ok
}

func (v *view) remember(m *map[string]answer, key string, a answer) {
	v.cmu.Lock()
	defer v.cmu.Unlock()
	if *m == nil {
		*m = map[string]answer{}
	}
	(*m)[key] = a
}

// Prefetch implements ledger.Prefetcher: it reads the answers to every
// lookup of k in one query, and remembers them.
func (v *view) Prefetch(ctx context.Context, k *ledger.Lookups) error {
	sums := func(keys []string) ([][]byte, map[entry.Hash]string) {
		out := make([][]byte, 0, len(keys))
		by := make(map[entry.Hash]string, len(keys))
		for _, key := range keys {
			s := entry.Sum256([]byte(key))
			if _, dup := by[s]; !dup {
				by[s] = key
				out = append(out, s[:])
			}
		}
		return out, by
	}
	accS, accK := sums(k.Accepted)
	idemS, idemK := sums(k.Idempotent)
	blkS, blkK := sums(k.Blocked)
	limit := tlog.StoredHashIndex(0, int64(v.head.Seq))
	var idx []int64
	for _, i := range k.Hashes {
		if i >= 0 && i < limit {
			idx = append(idx, i)
		}
	}
	type row struct {
		kind         int16
		sum          []byte
		seq          int64
		bytes, agent []byte
	}
	var rows []row
	err := v.query(ctx, "prefetch", func(ctx context.Context, tx querier) error {
		rs, err := tx.Query(ctx, `SELECT 1::smallint, id_sha256, seq, payload, NULL::bytea FROM govledger.accepted WHERE id_sha256 = ANY($1)
UNION ALL SELECT 2, key_sha256, seq, payload, NULL FROM govledger.idempotency WHERE key_sha256 = ANY($2)
UNION ALL SELECT 3, agent_sha256, seq, NULL, agent FROM govledger.blocked WHERE agent_sha256 = ANY($3)
UNION ALL SELECT 4, NULL, idx, hash, NULL FROM govledger.tree WHERE idx = ANY($4)`, accS, idemS, blkS, idx)
		if err != nil {
			return err
		}
		var r row
		_, err = pgx.ForEachRow(rs, []any{&r.kind, &r.sum, &r.seq, &r.bytes, &r.agent}, func() error {
			rows = append(rows, r)
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	acc := make(map[string]answer, len(accK))
	idem := make(map[string]answer, len(idemK))
	blk := make(map[string]answer, len(blkK))
	for _, key := range accK {
		acc[key] = answer{}
	}
	for _, key := range idemK {
		idem[key] = answer{}
	}
	for _, key := range blkK {
		blk[key] = answer{}
	}
	hashes := map[int64]tlog.Hash{}
	for _, r := range rows {
		var sum entry.Hash
		if len(r.sum) == 32 {
			copy(sum[:], r.sum)
		}
		switch r.kind {
		case 1, 2:
			m, keys := acc, accK
			if r.kind == 2 {
				m, keys = idem, idemK
			}
			key, ok := keys[sum]
			if !ok {
				continue
			}
			a, err := v.checkAccept(key, r.seq, r.bytes)
			if err != nil {
				return err
			}
			m[key] = answer{a, true}
		case 3:
			key, ok := blkK[sum]
			if !ok || string(r.agent) != key {
				continue // another agent with the same SHA-256: not this one
			}
			if r.seq < 1 || uint64(r.seq) > v.head.Seq {
				return fmt.Errorf("postgres: blocked %q: seq %d: %w", key, r.seq, ledger.ErrCorrupt)
			}
			blk[key] = answer{entry.Accept{Seq: uint64(r.seq)}, true}
		case 4:
			if len(r.bytes) == 32 {
				var h tlog.Hash
				copy(h[:], r.bytes)
				hashes[r.seq] = h
			}
		}
	}
	v.cmu.Lock()
	defer v.cmu.Unlock()
	for _, t := range []struct {
		dst *map[string]answer
		src map[string]answer
	}{{&v.acc, acc}, {&v.idem, idem}, {&v.blk, blk}} {
		if *t.dst == nil {
			*t.dst = t.src
			continue
		}
		for key, a := range t.src {
			(*t.dst)[key] = a
		}
	}
	if v.hashes == nil {
		v.hashes = hashes
	} else {
		for i, h := range hashes {
			v.hashes[i] = h
		}
	}
	return nil
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
	// The snapshot is taken by the transaction's first query: the head's.
	return d.open(ctx, false)
}

// open begins a view's transaction and reads the head in one round trip:
// a REPEATABLE READ READ ONLY snapshot, or with locked a READ COMMITTED
// transaction that takes the head row's lock (SELECT … FOR UPDATE).
func (d *Driver) open(ctx context.Context, locked bool) (*view, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, wrapErr("view", err)
	}
	v := &view{d: d, conn: conn, locked: locked, ctx: ctx}
	q := &pgx.Batch{}
	if locked {
		q.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
		q.Queue(fmt.Sprintf(`SET LOCAL idle_in_transaction_session_timeout = %d`, max(d.opts.LockTimeout.Milliseconds(), 1)))
		q.Queue(sqlHead + ` FOR UPDATE`)
	} else {
		q.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`)
		q.Queue(sqlHead)
	}
	br := conn.SendBatch(ctx, q)
	for range q.Len() - 1 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err != nil {
		err = wrapErr("view", err)
	} else {
		v.head, _, err = scanHead(br.QueryRow())
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = wrapErr("view", cerr)
	}
	if err != nil {
		v.release(false)
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		v.release(false)
		return nil, ledger.ErrClosed
	}
	d.views[v] = struct{}{}
	d.mu.Unlock()
	return v, nil
}

// querier is what a view's reads use: a pgx.Tx, or a connection inside a
// transaction begun by SQL.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const sqlHead = `SELECT origin, seq, hash, time_s, time_ns, manifest, lock, key FROM govledger.head WHERE id = 1`

// readHead reads the head row and returns the head and the origin.
func readHead(ctx context.Context, q querier) (entry.Head, string, error) {
	return scanHead(q.QueryRow(ctx, sqlHead))
}

// scanHead checks and returns the head row's head and origin.
func scanHead(row pgx.Row) (entry.Head, string, error) {
	var (
		h                    entry.Head
		origin               string
		seq, ts              int64
		tns                  int32
		hash, man, lock, key []byte
	)
	err := row.Scan(&origin, &seq, &hash, &ts, &tns, &man, &lock, &key)
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

// release ends the transaction (unless it ended) and returns the
// connection; with async it does so in the background (Driver.Close
// waits for it), so that the caller does not wait for the round trip.
func (v *view) release(async bool) {
	conn := v.conn
	end := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if !conn.Conn().IsClosed() && conn.Conn().PgConn().TxStatus() != 'I' {
			if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
				// A connection whose transaction could not end is not reused.
				conn.Conn().Close(ctx)
			}
		}
		conn.Release()
	}
	if !async {
		end()
		return
	}
	v.d.bg.Add(1)
	go func() {
		defer v.d.bg.Done()
		end()
	}()
}

// Close ends the view. Closing twice is fine. The transaction's end does
// not wait for the server's answer (a locked view's does: the head's lock
// must be free when Close returns).
func (v *view) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	v.release(!v.locked)
	v.d.mu.Lock()
	delete(v.d.views, v)
	v.d.mu.Unlock()
	return nil
}

// query runs fn on the view's transaction under mu, with ctx bounded by
// Options.Timeout when it has no deadline.
func (v *view) query(ctx context.Context, op string, fn func(ctx context.Context, tx querier) error) error {
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
	if err := fn(ctx, v.conn); err != nil {
		var re *ledger.RecordError
		if errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrNotFound) || errors.As(err, &re) {
			return err
		}
		return wrapErr(op, err)
	}
	return nil
}

func (v *view) accept(m *map[string]answer, sql, key string) (entry.Accept, bool, error) {
	if a, ok := v.cached(m, key); ok {
		return a.Accept, a.ok, nil
	}
	var seq int64
	var payload []byte
	sum := entry.Sum256([]byte(key))
	err := v.query(v.ctx, "read", func(ctx context.Context, tx querier) error {
		return tx.QueryRow(ctx, sql, sum[:]).Scan(&seq, &payload)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		v.remember(m, key, answer{})
		return entry.Accept{}, false, nil
	}
	if err != nil {
		return entry.Accept{}, false, err
	}
	a, err := v.checkAccept(key, seq, payload)
	if err != nil {
		return a, false, err
	}
	v.remember(m, key, answer{a, true})
	return a, true, nil
}

// checkAccept checks a stored acceptance of key.
func (v *view) checkAccept(key string, seq int64, payload []byte) (entry.Accept, error) {
	var a entry.Accept
	if seq < 1 || uint64(seq) > v.head.Seq || len(payload) != 32 {
		return a, fmt.Errorf("postgres: %q: stored acceptance malformed: %w", key, ledger.ErrCorrupt)
	}
	a.Seq = uint64(seq)
	copy(a.Payload[:], payload)
	return a, nil
}

// Accepted implements entry.Tables.
func (v *view) Accepted(handoffID string) (entry.Accept, bool, error) {
	return v.accept(&v.acc, `SELECT seq, payload FROM govledger.accepted WHERE id_sha256 = $1`, handoffID)
}

// Idempotent implements entry.Tables.
func (v *view) Idempotent(key string) (entry.Accept, bool, error) {
	return v.accept(&v.idem, `SELECT seq, payload FROM govledger.idempotency WHERE key_sha256 = $1`, key)
}

// Blocked implements entry.Tables.
func (v *view) Blocked(agent string) (uint64, bool, error) {
	if a, ok := v.cached(&v.blk, agent); ok {
		return a.Seq, a.ok, nil
	}
	var seq int64
	sum := entry.Sum256([]byte(agent))
	err := v.query(v.ctx, "read blocked", func(ctx context.Context, tx querier) error {
		return tx.QueryRow(ctx, `SELECT seq FROM govledger.blocked WHERE agent_sha256 = $1 AND agent = $2`, sum[:], []byte(agent)).Scan(&seq)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		v.remember(&v.blk, agent, answer{})
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if seq < 1 || uint64(seq) > v.head.Seq {
		return 0, false, fmt.Errorf("postgres: blocked %q: seq %d: %w", agent, seq, ledger.ErrCorrupt)
	}
	v.remember(&v.blk, agent, answer{entry.Accept{Seq: uint64(seq)}, true})
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
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	cached := make([]bool, len(indexes))
	v.cmu.Lock()
	for i, idx := range indexes {
		out[i], cached[i] = v.hashes[idx]
		if !cached[i] {
			missing = append(missing, idx)
		}
	}
	v.cmu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	got := make(map[int64][]byte, len(missing))
	err := v.query(v.ctx, "read tree", func(ctx context.Context, tx querier) error {
		rows, err := tx.Query(ctx, `SELECT idx, hash FROM govledger.tree WHERE idx = ANY($1)`, missing)
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
	for i, idx := range indexes {
		if cached[i] {
			continue
		}
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
	err := v.query(v.ctx, "get", func(ctx context.Context, tx querier) error {
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
		err := v.query(ctx, "scan", func(ctx context.Context, tx querier) error {
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
	err := v.query(v.ctx, "blob", func(ctx context.Context, tx querier) error {
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

// Erased returns the seq of the last redaction that erased sum (the head
// of its batch, whose last entry it is).
func (v *view) Erased(sum entry.Hash) (uint64, bool, error) {
	var seq *int64
	err := v.query(v.ctx, "erased", func(ctx context.Context, tx querier) error {
		return tx.QueryRow(ctx, `SELECT (SELECT seq FROM govledger.redacted WHERE sha256 = $1)`, sum[:]).Scan(&seq)
	})
	if err != nil || seq == nil {
		return 0, false, err
	}
	return uint64(*seq), true, nil
}

// Blocks returns every agent blocked at the view's head.
func (v *view) Blocks() (map[string]uint64, error) {
	out := map[string]uint64{}
	err := v.query(v.ctx, "blocks", func(ctx context.Context, tx querier) error {
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
	err := v.query(ctx, "find", func(ctx context.Context, tx querier) error {
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
