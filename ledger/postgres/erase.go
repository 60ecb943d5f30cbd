package postgres

import (
	"context"
	"fmt"
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
// So an erasing Append hands its transaction id to a background eraser,
// which waits until no snapshot older than that transaction remains in the
// database, then vacuums the blobs table (VACUUM FULL with
// Options.VacuumFull). WaitErased waits for it.

// eraseJob is an erasure to vacuum (xid: the erasing transaction's 32-bit
// id) or, with done set, a WaitErased marker.
type eraseJob struct {
	xid  int64
	done chan struct{}
}

// erased queues the vacuum of an erasure committed by transaction xid.
func (d *Driver) erased(xid int64) {
	d.eraseOnce.Do(d.startEraser)
	select {
	case d.eraseQ <- eraseJob{xid: xid}:
	case <-d.eraseCtx.Done():
	}
}

// WaitErased waits until every erasure appended so far was vacuumed: no
// snapshot older than it remained and VACUUM ran. It returns ctx's error
// when ctx ends first, and ledger.ErrClosed after Close.
func (d *Driver) WaitErased(ctx context.Context) error {
	d.eraseOnce.Do(d.startEraser)
	done := make(chan struct{})
	select {
	case d.eraseQ <- eraseJob{done: done}:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.eraseCtx.Done():
		return fmt.Errorf("postgres: %w", ledger.ErrClosed)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.eraseCtx.Done():
		return fmt.Errorf("postgres: %w", ledger.ErrClosed)
	}
}

func (d *Driver) startEraser() {
	d.eraseWG.Add(1)
	go func() {
		defer d.eraseWG.Done()
		var pending []int64         // erasures not vacuumed yet
		var waiters []chan struct{} // WaitErased calls
		take := func(job eraseJob) {
			if job.done == nil {
				pending = append(pending, job.xid)
			} else {
				waiters = append(waiters, job.done)
			}
		}
		for {
			select {
			case job := <-d.eraseQ:
				take(job)
			case <-d.eraseCtx.Done():
				return
			}
		drain:
			for {
				select {
				case job := <-d.eraseQ:
					take(job)
				default:
					break drain
				}
			}
			for len(pending) > 0 {
				err := d.vacuumAfter(pending)
				if err == nil {
					pending = pending[:0]
					break
				}
				if d.eraseCtx.Err() != nil {
					d.log.Warn("postgres: closed before vacuuming erased blobs; autovacuum will reclaim their rows", "erasures", len(pending))
					return
				}
				d.log.Error("postgres: vacuum after an erasure failed; retrying", "err", err)
				select {
				case <-time.After(time.Second):
				case <-d.eraseCtx.Done():
				}
			}
			for _, w := range waiters {
				close(w)
			}
			waiters = waiters[:0]
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
