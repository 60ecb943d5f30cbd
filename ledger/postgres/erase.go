package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/govledger/govledger/ledger"
)

// Erasing bytes from PostgreSQL. DELETE makes a blob's row invisible to
// every snapshot taken after the commit, but its bytes stay in the table's
// pages as a dead row for as long as any older snapshot (a View opened
// before the erasure, on any process, a replica's hot_standby_feedback, a
// replication slot) may still read it; only then can VACUUM reclaim them.
// Plain VACUUM marks the space free without overwriting it; VACUUM FULL
// writes a new copy of the table without the dead rows and deletes the old
// files.
//
// So an erasing Append hands its transaction id to a background eraser
// (without waiting),
// which waits until no snapshot older than that transaction remains in the
// database, then vacuums the blobs table (VACUUM FULL with
// Options.VacuumFull). WaitErased waits for it.

// eraser is the state of the background eraser, under mu.
type eraser struct {
	mu       sync.Mutex
	pending  []int64         // erasing transactions (32-bit ids) not vacuumed yet
	waiters  []chan struct{} // WaitErased calls
	inflight bool            // a round is vacuuming
	started  bool
	kick     chan struct{} // capacity 1: a round is due
}

// erased queues the vacuum of an erasure committed by transaction xid. It
// never blocks.
func (d *Driver) erased(xid int64) {
	e := &d.erase
	e.mu.Lock()
	e.pending = append(e.pending, xid)
	d.startEraser()
	e.mu.Unlock()
	d.kickEraser()
}

func (d *Driver) kickEraser() {
	select {
	case d.erase.kick <- struct{}{}:
	default:
	}
}

// WaitErased waits until every erasure appended so far was vacuumed: no
// snapshot older than it remained and VACUUM ran. It returns ctx's error
// when ctx ends first, and ledger.ErrClosed after Close.
func (d *Driver) WaitErased(ctx context.Context) error {
	e := &d.erase
	e.mu.Lock()
	if len(e.pending) == 0 && !e.inflight {
		e.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	e.waiters = append(e.waiters, done)
	e.mu.Unlock()
	d.kickEraser()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.eraseCtx.Done():
		return fmt.Errorf("postgres: %w", ledger.ErrClosed)
	}
}

// startEraser starts the eraser goroutine once; e.mu is held.
func (d *Driver) startEraser() {
	e := &d.erase
	if e.started {
		return
	}
	e.started = true
	d.eraseWG.Add(1)
	go func() {
		defer d.eraseWG.Done()
		for {
			select {
			case <-e.kick:
			case <-d.eraseCtx.Done():
				e.mu.Lock()
				if n := len(e.pending); n > 0 {
					d.log.Warn("postgres: closed before vacuuming erased blobs; autovacuum will reclaim their rows", "erasures", n)
				}
				e.mu.Unlock()
				return
			}
			e.mu.Lock()
			xids, waiters := e.pending, e.waiters
			e.pending, e.waiters, e.inflight = nil, nil, len(xids) > 0
			e.mu.Unlock()
			for len(xids) > 0 {
				err := d.vacuumAfter(xids)
				if err == nil {
					break
				}
				if d.eraseCtx.Err() != nil {
					e.mu.Lock()
					e.pending = append(xids, e.pending...)
					e.mu.Unlock()
					break
				}
				d.log.Error("postgres: vacuum after an erasure failed; retrying", "err", err)
				select {
				case <-time.After(time.Second):
				case <-d.eraseCtx.Done():
				}
			}
			e.mu.Lock()
			e.inflight = false
			e.mu.Unlock()
			if d.eraseCtx.Err() == nil {
				for _, w := range waiters {
					close(w)
				}
			}
		}
	}()
}

// vacuumAfter waits until no snapshot in the database is older than any
// of the transactions xids (so VACUUM may remove the rows they deleted),
// then runs VACUUM (FULL) on the blobs table.
func (d *Driver) vacuumAfter(xids []int64) error {
	ctx := d.eraseCtx
	for {
		var older int
		err := d.pool.QueryRow(ctx, `SELECT count(*) FROM (
    SELECT backend_xmin AS x FROM pg_stat_activity
     WHERE backend_xmin IS NOT NULL AND (datname = current_database() OR backend_type = 'walsender')
    UNION ALL SELECT xmin FROM pg_replication_slots WHERE xmin IS NOT NULL
    UNION ALL SELECT transaction FROM pg_prepared_xacts
) s WHERE age(s.x) >= (SELECT min(age(p::text::xid)) FROM unnest($1::bigint[]) p)`, xids).Scan(&older)
		if err != nil {
			return wrapErr("erase: snapshots", err)
		}
		if older == 0 {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sql := `VACUUM govledger.blobs`
	if d.opts.VacuumFull {
		sql = `VACUUM FULL govledger.blobs`
	}
	_, err := d.pool.Exec(ctx, sql)
	return wrapErr("erase: vacuum", err)
}
