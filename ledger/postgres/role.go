package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govledger/govledger/ledger"
)

// writerLock is the session-level advisory lock whose holder is the
// writer: the replica the others forward their commit groups to.
const writerLock = 0x676f766c77726974 // "govlwrit"

// Writer is the replica holding the writer role, as its row
// (govledger.writer) names it.
type Writer struct {
	Addr   string // where it takes forwarded commit groups (host:port)
	Secret []byte // what a forwarding replica presents; random per tenure
	Epoch  int64  // counts the tenures: each new holder adds one
}

// RoleOptions configure Campaign. A nil *RoleOptions means the zero
// RoleOptions.
type RoleOptions struct {
	// Poll is how often a replica that does not hold the role asks for
	// it and reads who holds it, and how often the holder checks that its
	// session is alive (default 250ms).
	Poll time.Duration
	// Lapse bounds how long the holder's session may stay silent before
	// PostgreSQL ends it and so releases the role (idle_session_timeout;
	// default 3s, at least 4 Polls): a writer whose process hangs or
	// whose machine vanished loses the role within about Lapse.
	Lapse time.Duration
}

// A Role is one replica's campaign for the writer role. The role is a
// session-level advisory lock held on a connection of the Role's own:
// PostgreSQL gives it to one session at a time and releases it when that
// session ends (the process exited or was killed, the connection broke,
// the session stayed silent past RoleOptions.Lapse), after which the next
// replica's poll takes it. The role only routes work: every commit still
// goes through the head row's compare-and-append, so two replicas that
// both believe they hold it for a moment (one that has not yet noticed
// its session ended) cost conflicts, never a fork or a lost entry.
//
// Its methods are safe for concurrent use.
type Role struct {
	d    *Driver
	addr string
	opts RoleOptions

	held atomic.Bool
	mu   sync.Mutex
	self Writer // this replica's tenure, while held
	cur  Writer // the writer another replica holds, as last read
	ok   bool   // cur names a live holder

	cancel context.CancelFunc
	done   chan struct{}
}

// Campaign starts campaigning for the writer role: addr is where this
// replica takes forwarded commit groups, written in the writer row while
// it holds the role. The campaign runs until Close. It fails with
// ledger.ErrReadOnly on a read-only driver.
func (d *Driver) Campaign(addr string, o *RoleOptions) (*Role, error) {
	if d.opts.ReadOnly {
		return nil, fmt.Errorf("postgres: writer role: %w", ledger.ErrReadOnly)
	}
	var opts RoleOptions
	if o != nil {
		opts = *o
	}
	if opts.Poll < 0 || opts.Lapse < 0 {
		return nil, fmt.Errorf("%w: RoleOptions.Poll and Lapse must not be negative", ledger.ErrBadOptions)
	}
	if opts.Poll == 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Lapse == 0 {
		opts.Lapse = 3 * time.Second
	}
	opts.Lapse = max(opts.Lapse, 4*opts.Poll, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	r := &Role{d: d, addr: addr, opts: opts, cancel: cancel, done: make(chan struct{})}
	go r.run(ctx)
	return r, nil
}

// Held reports whether this replica holds the writer role.
func (r *Role) Held() bool { return r.held.Load() }

// Writer returns the writer: this replica's own tenure (self true) while
// it holds the role, else the one another replica holds as last read (ok
// false when none holds it or it could not be read).
func (r *Role) Writer() (w Writer, self, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held.Load() {
		return r.self, true, true
	}
	return r.cur, false, r.ok
}

// Close ends the campaign and releases the role (its session ends).
func (r *Role) Close() error {
	r.cancel()
	<-r.done
	return nil
}

// run campaigns on a connection of its own, reconnecting after any
// failure, until ctx ends.
func (r *Role) run(ctx context.Context) {
	defer close(r.done)
	defer r.lose()
	for ctx.Err() == nil {
		cfg := r.d.pool.Config().ConnConfig.Copy()
		cfg.RuntimeParams["application_name"] = "govledger writer role"
		cfg.RuntimeParams["idle_session_timeout"] = fmt.Sprint(r.opts.Lapse.Milliseconds())
		cctx, cancel := context.WithTimeout(ctx, r.opts.Lapse)
		conn, err := pgx.ConnectConfig(cctx, cfg)
		cancel()
		if err == nil {
			r.campaign(ctx, conn)
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Close(cctx) // ends the session: the lock goes with it
			cancel()
		}
		r.lose()
		r.wait(ctx)
	}
}

// campaign asks for the role every Poll and, once it holds it, checks
// every Poll that its session is alive; it returns when the connection
// fails or ctx ends.
func (r *Role) campaign(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		qctx, cancel := context.WithTimeout(ctx, r.opts.Lapse)
		err := r.step(qctx, conn)
		cancel()
		if err != nil {
			return
		}
		r.wait(ctx)
	}
}

// step is one poll: take the role if free (and write the writer row), or
// read who holds it; the holder only proves its session alive.
func (r *Role) step(ctx context.Context, conn *pgx.Conn) error {
	if r.held.Load() {
		_, err := conn.Exec(ctx, `SELECT 1`)
		return err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(writerLock)).Scan(&got); err != nil {
		return err
	}
	if got {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return err
		}
		var epoch int64
		err := conn.QueryRow(ctx, `INSERT INTO govledger.writer (id, addr, secret, epoch, since) VALUES (1, $1, $2, 1, now())
ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, secret = excluded.secret, epoch = govledger.writer.epoch + 1, since = now()
RETURNING epoch`, r.addr, secret).Scan(&epoch)
		if err != nil {
			return err // the session ends, and the lock with it
		}
		r.mu.Lock()
		r.self = Writer{Addr: r.addr, Secret: secret, Epoch: epoch}
		r.held.Store(true)
		r.mu.Unlock()
		return nil
	}
	var w Writer
	err := conn.QueryRow(ctx, `SELECT w.addr, w.secret, w.epoch FROM govledger.writer w
WHERE w.id = 1 AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1)`, uint32(writerLock>>32), uint32(writerLock&0xffffffff)).Scan(&w.Addr, &w.Secret, &w.Epoch)
	ok := err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	r.mu.Lock()
	r.cur, r.ok = w, ok
	r.mu.Unlock()
	return err
}

// lose records that this replica holds no role and knows no writer.
func (r *Role) lose() {
	r.mu.Lock()
	r.held.Store(false)
	r.self, r.cur, r.ok = Writer{}, Writer{}, false
	r.mu.Unlock()
}

func (r *Role) wait(ctx context.Context) {
	t := time.NewTimer(r.opts.Poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
