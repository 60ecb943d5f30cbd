// Package postgres is the PostgreSQL driver of the ledger (a
// ledger.Driver): several govledger processes, on several machines, share
// one ledger in one PostgreSQL database.
//
// # Layout
//
// Every table lives in the schema "govledger", created and upgraded by the
// embedded, versioned migrations (migrations/*.sql, recorded in
// govledger.schema_version). A one-row table, head, holds the ledger's
// origin and stored head; entries holds the canonical bytes of every entry
// with the columns Find filters on; blobs, redacted, tree, accepted,
// idempotency and blocked hold what their names say.
//
// # Sequencing
//
// Append is one transaction sent in one round trip (one pipeline, run by
// PostgreSQL as one implicit transaction): govledger.advance (migration
// 002) locks the head row, compares its seq and hash with the batch's At
// and moves it, and only then are the entries, blobs, tree hashes and
// table changes inserted, so two writers (two processes, two machines)
// can never fork the chain or leave a gap: the second waits for the
// first's lock, sees a head that moved, stores nothing and returns an
// error wrapping ledger.ErrConflict. A commit returns after PostgreSQL
// flushed its WAL (synchronous_commit is forced on for the driver's
// sessions).
//
// The driver is a ledger.Locker: Lock returns a view that holds the head
// row's lock (SELECT … FOR UPDATE in a READ COMMITTED transaction), on
// which the core builds a commit again after a conflict, so that the
// retry cannot lose; its Append commits the batch in the same
// transaction.
//
// # Writer role
//
// Campaign starts a replica's campaign for the writer role (Role): a
// session-level advisory lock on a connection of the Role's own, which
// PostgreSQL gives to one replica at a time and releases when that
// session ends (the process died, the connection broke, or it stayed
// silent past RoleOptions.Lapse). Its holder publishes the address where
// it takes the submissions the other replicas forward to it, and a
// per-tenure secret, in govledger.writer (migration 3); server/forward
// does the forwarding. The role only routes work: commits stay
// compare-and-append, so a moment with two holders costs conflicts, never
// a fork.
//
// # Views
//
// A View is a REPEATABLE READ, READ ONLY transaction on a connection of its
// own, begun together with the head's read in one round trip and ended in
// the background: every read of the view, of any table, answers from one
// snapshot taken when the view opened. It is a ledger.Prefetcher: the
// lookups of a commit's build are read in one query, and it remembers
// every answer. Reads bounded by the head seq alone would
// not be consistent: the tables the state fold reads (blocked, accepted,
// idempotency) and the blobs change in place. A view holds a pooled
// connection until it is closed, and its snapshot holds back VACUUM.
//
// # Errors
//
// Errors wrap ledger's sentinels (ErrConflict, ErrNotFound, ErrRedacted,
// ErrCorrupt, ErrClosed, ErrNotExist, ErrVersionMismatch). A lost
// connection, a server restarting or refusing connections wraps
// ErrUnavailable (an HTTP server answers 503).
package postgres

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/govledger/govledger/ledger"
)

// SchemaVersion is the newest schema version this build knows: the number
// of embedded migrations. Open refuses a database whose schema is newer
// (ledger.ErrVersionMismatch).
var SchemaVersion = len(migrationNames())

//go:embed migrations/*.sql
var migrationsFS embed.FS

// migrationNames lists the embedded migrations in order; file NNN_*.sql
// is version NNN.
func migrationNames() []string {
	ents, _ := migrationsFS.ReadDir("migrations")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// Options configure Open. A nil *Options means the zero Options.
type Options struct {
	// Origin names a NEW ledger (default ledger.DefaultOriginPrefix and 16
	// random hex digits); an existing ledger keeps its own.
	Origin string
	// NoCreate refuses a database holding no ledger (ledger.ErrNotExist)
	// instead of creating one.
	NoCreate bool
	// ReadOnly opens without migrating or creating anything; Append fails
	// with ledger.ErrReadOnly. The schema must be this build's.
	ReadOnly bool
	// MaxConns bounds the connection pool (default 16). Every open View
	// holds one connection.
	MaxConns int32
	// Timeout bounds each read a View makes without a context (Tables,
	// Entry, Blob, ...) and the time Append spends finding out whether a
	// commit whose answer was lost landed (default 30s).
	Timeout time.Duration
	// LockTimeout bounds how long a view from Lock may hold the head row
	// idle between its statements (default 10s): the server ends a
	// session past it (idle_in_transaction_session_timeout), so that a
	// writer whose machine died or hangs while it holds the head does not
	// stop every other writer. Its Append then fails with ErrUnavailable.
	LockTimeout time.Duration
	// VacuumFull makes an Append that erases blobs rewrite the blobs table
	// (VACUUM FULL) instead of vacuuming it: the erased bytes then leave
	// the data files too, at the price of an exclusive lock on the table
	// for the rewrite (see docs/guides/postgresql.md).
	VacuumFull bool
	// Now gives the creation time of a new ledger (default time.Now).
	Now func() time.Time
	// Logger receives what cannot be returned: a failed VACUUM after an
	// erasing commit (default: discarded).
	Logger *slog.Logger
}

func (o Options) String() string {
	return fmt.Sprintf("{Origin: %q, NoCreate: %t, ReadOnly: %t, MaxConns: %d, Timeout: %s, LockTimeout: %s, VacuumFull: %t}",
		o.Origin, o.NoCreate, o.ReadOnly, o.MaxConns, o.Timeout, o.LockTimeout, o.VacuumFull)
}

func (o *Options) valid() error {
	if o.MaxConns < 0 || o.Timeout < 0 || o.LockTimeout < 0 {
		return fmt.Errorf("%w: MaxConns, Timeout and LockTimeout must not be negative", ledger.ErrBadOptions)
	}
	if o.NoCreate && o.Origin != "" {
		return fmt.Errorf("%w: Origin names a new ledger, NoCreate forbids one", ledger.ErrBadOptions)
	}
	if o.Origin != "" {
		if err := checkOrigin(o.Origin); err != nil {
			return fmt.Errorf("%w: %v", ledger.ErrBadOptions, err)
		}
	}
	return nil
}

// checkOrigin holds an origin to the rule the bbolt driver applies.
func checkOrigin(s string) error {
	if len(s) == 0 || len(s) > 255 || !utf8.ValidString(s) {
		return fmt.Errorf("origin %q: want 1-255 bytes of UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("origin %q contains a space or control character", s)
		}
	}
	return nil
}

// Driver is a ledger stored in a PostgreSQL database. It implements
// ledger.Driver and is safe for concurrent use, by several processes too.
type Driver struct {
	pool   *pgxpool.Pool
	origin string
	opts   Options
	log    *slog.Logger

	mu     sync.Mutex
	closed bool
	views  map[*view]struct{}

	stats struct {
		appends, conflicts, unknown atomic.Uint64
	}

	// The eraser (erase.go): started by the first erasure, stopped by
	// Close.
	erase       eraser
	eraseCtx    context.Context
	eraseCancel context.CancelFunc
	eraseWG     sync.WaitGroup

	bg sync.WaitGroup // views ending in the background
}

var (
	_ ledger.Driver = (*Driver)(nil)
	_ ledger.Locker = (*Driver)(nil)
)

// Open connects to the database dsn names (a postgres:// URL or a libpq
// key=value string), brings its schema up to this build's version unless
// o.ReadOnly, creates the ledger if the database holds none (unless
// o.NoCreate) and returns the driver. Errors wrap ledger.ErrNotExist (no
// ledger and NoCreate or ReadOnly), ledger.ErrVersionMismatch (a newer
// schema), ledger.ErrBadOptions, or ErrUnavailable.
func Open(ctx context.Context, dsn string, o *Options) (*Driver, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if err := opts.valid(); err != nil {
		return nil, err
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 16
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: %v", ledger.ErrBadOptions, redactDSN(err))
	}
	cfg.MaxConns = opts.MaxConns
	// Every acknowledged commit is on disk, whatever the server's or the
	// role's default says.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	cfg.ConnConfig.RuntimeParams["application_name"] = "govledger"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrapErr("connect", err)
	}
	d := &Driver{pool: pool, opts: opts, log: log, views: map[*view]struct{}{}}
	d.erase.kick = make(chan struct{}, 1)
	d.eraseCtx, d.eraseCancel = context.WithCancel(context.Background())
	if err := d.init(ctx); err != nil {
		d.eraseCancel()
		pool.Close()
		return nil, err
	}
	return d, nil
}

// redactDSN keeps a password out of a parse error.
func redactDSN(err error) error {
	return errors.New(strings.SplitN(err.Error(), "(", 2)[0])
}

// init migrates the schema and creates or reads the head row.
func (d *Driver) init(ctx context.Context) error {
	have, err := d.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if have > SchemaVersion {
		return fmt.Errorf("postgres: schema version %d is newer than this build's %d: %w", have, SchemaVersion, ledger.ErrVersionMismatch)
	}
	if d.opts.ReadOnly {
		if have == 0 {
			return fmt.Errorf("postgres: no govledger schema: %w", ledger.ErrNotExist)
		}
		if have != SchemaVersion {
			return fmt.Errorf("postgres: schema version %d, this build reads %d (open it for writing to upgrade): %w", have, SchemaVersion, ledger.ErrVersionMismatch)
		}
	} else if have < SchemaVersion {
		if d.opts.NoCreate && have == 0 {
			return fmt.Errorf("postgres: no govledger schema: %w", ledger.ErrNotExist)
		}
		if err := d.migrate(ctx); err != nil {
			return err
		}
	}
	var origin string
	err = d.pool.QueryRow(ctx, `SELECT origin FROM govledger.head WHERE id = 1`).Scan(&origin)
	if errors.Is(err, pgx.ErrNoRows) {
		if d.opts.NoCreate || d.opts.ReadOnly {
			return fmt.Errorf("postgres: the database holds no ledger: %w", ledger.ErrNotExist)
		}
		origin = d.opts.Origin
		if origin == "" {
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return err
			}
			origin = ledger.DefaultOriginPrefix + hex.EncodeToString(b[:])
		}
		// Two processes creating at once: the first row wins, and both
		// read it back.
		_, err = d.pool.Exec(ctx, `INSERT INTO govledger.head (id, origin, created, seq, hash, time_s, time_ns)
VALUES (1, $1, $2, 0, $3, $4, 0) ON CONFLICT (id) DO NOTHING`,
			origin, d.opts.Now().UTC(), make([]byte, 32), time.Time{}.Unix())
		if err != nil {
			return wrapErr("create head", err)
		}
		err = d.pool.QueryRow(ctx, `SELECT origin FROM govledger.head WHERE id = 1`).Scan(&origin)
	}
	if err != nil {
		return wrapErr("read head", err)
	}
	if err := checkOrigin(origin); err != nil {
		return fmt.Errorf("postgres: head: %w: %v", ledger.ErrCorrupt, err)
	}
	d.origin = origin
	return nil
}

// schemaVersion returns the newest applied migration (0: none).
func (d *Driver) schemaVersion(ctx context.Context) (int, error) {
	var exists bool
	err := d.pool.QueryRow(ctx, `SELECT to_regclass('govledger.schema_version') IS NOT NULL`).Scan(&exists)
	if err != nil || !exists {
		return 0, wrapErr("schema version", err)
	}
	var v int
	err = d.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM govledger.schema_version`).Scan(&v)
	return v, wrapErr("schema version", err)
}

// migrateLock is the advisory lock key under which migrations run, so
// that processes opening one database at once apply each migration once.
const migrateLock = 0x676f766c65646772 // "govledgr"

// migrate applies the migrations the database lacks, each in its own
// transaction holding the advisory lock.
func (d *Driver) migrate(ctx context.Context) error {
	for _, name := range migrationNames() {
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("postgres: migration %s: bad name", name)
		}
		sql, err := migrationsFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS govledger;
CREATE TABLE IF NOT EXISTS govledger.schema_version (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
				return err
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM govledger.schema_version WHERE version = $1)`, v).Scan(&done); err != nil || done {
				return err
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO govledger.schema_version (version) VALUES ($1)`, v)
			return err
		})
		if err != nil {
			return wrapErr("migrate", err)
		}
	}
	return nil
}

// Stats are counters of a Driver's appends since Open.
type Stats struct {
	// Appends counts the commits sent (Append calls that reached the
	// database).
	Appends uint64
	// Conflicts counts the commits refused because another writer moved
	// the head first (ledger.ErrConflict): with several replicas, the
	// commits built again.
	Conflicts uint64
	// Unknown counts the commits whose answer was lost (a broken
	// connection, a server restarting), resolved by reading the head.
	Unknown uint64
}

// Stats returns the driver's counters.
func (d *Driver) Stats() Stats {
	return Stats{Appends: d.stats.appends.Load(), Conflicts: d.stats.conflicts.Load(), Unknown: d.stats.unknown.Load()}
}

// Origin is the ledger's identity, fixed when it was created.
func (d *Driver) Origin() string { return d.origin }

// Close closes every open view, then the connection pool.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	views := make([]*view, 0, len(d.views))
	for v := range d.views {
		views = append(views, v)
	}
	d.mu.Unlock()
	for _, v := range views {
		v.Close()
	}
	d.eraseCancel()
	d.eraseWG.Wait()
	d.bg.Wait()
	d.pool.Close()
	return nil
}
