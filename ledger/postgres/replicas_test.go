package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// psqlUntil runs sql in db until it prints want, for up to 10 seconds.
func psqlUntil(t *testing.T, srv *pgtest.Server, db, sql, want string) {
	t.Helper()
	var out string
	var err error
	for range 200 {
		if out, err = srv.Psql(db, sql); err == nil && strings.TrimSpace(out) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %q (%v), want %q", sql, out, err, want)
}

// TestPrefetch: a view answers every lookup Prefetch loaded as a view
// without Prefetch does, and without a round trip: after Prefetch the
// view's server process is terminated, the loaded answers still come,
// a lookup that was not loaded fails with ErrUnavailable.
func TestPrefetch(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Shared(t)
	d, dsn := open(t, nil)
	appendAll(t, d, snapshots()...)
	keyed := handoff("k", "c", "d", "", true, []byte("3"))
	keyed.e.IdempotencyKey = "key-1"
	appendAll(t, d, handoff("x", "a", "b", "", false, []byte("1")), handoff("y", "b", "c", "", true, []byte("2")), keyed)
	appendAll(t, d, handoff("z", "e", "f", "", false, []byte("4")), unblock("e"))

	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ids, keys, agents := []string{"x", "y", "k", "z", "nope"}, []string{"key-1", "key-2"}, []string{"a", "b", "e", "nobody"}
	n := int64(v.Head().Seq)
	var idx []int64
	for i := range tlog.StoredHashIndex(0, n) {
		idx = append(idx, i)
	}
	if err := v.(ledger.Prefetcher).Prefetch(ctx, &ledger.Lookups{Accepted: ids, Idempotent: keys, Blocked: agents, Hashes: idx}); err != nil {
		t.Fatal(err)
	}
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	// Once the views of appendAll have ended (in the background), v is
	// the only transaction open on the database: end its server process.
	inTx := `FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'govledger' AND state LIKE 'idle in transaction%'`
	psqlUntil(t, srv, db, `SELECT count(*) `+inTx, "1")
	psqlUntil(t, srv, db, `SELECT count(pg_terminate_backend(pid)) `+inTx, "1")
	fresh, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if fresh.Head() != v.Head() {
		t.Fatal("the head moved")
	}
	for _, id := range ids {
		wa, wok, werr := fresh.Accepted(id)
		a, ok, err := v.Accepted(id)
		if err != nil || werr != nil || a != wa || ok != wok {
			t.Errorf("Accepted(%s) = %+v %t %v, want %+v %t %v", id, a, ok, err, wa, wok, werr)
		}
	}
	for _, k := range keys {
		wa, wok, werr := fresh.Idempotent(k)
		a, ok, err := v.Idempotent(k)
		if err != nil || werr != nil || a != wa || ok != wok {
			t.Errorf("Idempotent(%s) = %+v %t %v, want %+v %t %v", k, a, ok, err, wa, wok, werr)
		}
	}
	for _, ag := range agents {
		ws, wok, werr := fresh.Blocked(ag)
		s, ok, err := v.Blocked(ag)
		if err != nil || werr != nil || s != ws || ok != wok {
			t.Errorf("Blocked(%s) = %d %t %v, want %d %t %v", ag, s, ok, err, ws, wok, werr)
		}
	}
	want, werr := fresh.ReadHashes(idx)
	got, err := v.ReadHashes(idx)
	if err != nil || werr != nil || len(got) != len(want) {
		t.Fatalf("ReadHashes = %d hashes, %v; want %d, %v", len(got), err, len(want), werr)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stored hash %d: prefetched %s, stored %s", idx[i], got[i], want[i])
		}
	}
	// Not loaded: a round trip, on a connection that is gone.
	if _, _, err := v.Accepted("not-prefetched"); !errors.Is(err, postgres.ErrUnavailable) {
		t.Fatalf("Accepted(not prefetched) after the backend ended = %v, want ErrUnavailable", err)
	}
}

// TestLock: a locked view holds the head. Another writer's Append waits
// for it and then conflicts (it would have stored its batch had it not
// waited: the head had not moved when it was sent); the locked view's
// Append stores its own batch. Closing a locked view without Append
// releases the head, storing nothing; a plain view cannot Append.
func TestLock(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Shared(t)
	d, dsn := open(t, nil)
	appendAll(t, d, snapshots()...)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]

	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := build(t, v, handoff("other", "a", "b", "", true, []byte("other")))
	v.Close()
	if err := v.(ledger.LockedView).Append(ctx, other); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("Append on a plain view = %v, want ErrReadOnly", err)
	}

	lv, err := d.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := build(t, lv, handoff("mine", "a", "b", "", true, []byte("mine")))
	done := make(chan error, 1)
	go func() { done <- d.Append(ctx, other) }()
	// The other Append waits for the head row's lock.
	psqlUntil(t, srv, db, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'govledger' AND wait_event_type = 'Lock'`, "1")
	if err := lv.Append(ctx, mine); err != nil {
		t.Fatalf("locked Append = %v", err)
	}
	if err := <-done; !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("the other writer's Append = %v, want ErrConflict", err)
	}
	lv.Close()
	es := checkChain(t, d)
	if len(es) != 3 || es[2].HandoffID.S != "mine" {
		t.Fatalf("chain: %d entries, last %q; want the locked view's", len(es), es[len(es)-1].HandoffID.S)
	}

	// Close without Append: nothing stored, the head free again.
	lv, err = d.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unused, _ := build(t, lv, handoff("unused", "a", "b", "", true, []byte("unused")))
	lv.Close()
	if err := lv.Append(ctx, unused); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	appendAll(t, d, handoff("after", "a", "b", "", true, []byte("after")))
	if es := checkChain(t, d); len(es) != 4 || es[3].HandoffID.S != "after" {
		t.Fatalf("chain: %d entries; want 4, the last %q", len(es), "after")
	}
	if st := d.Stats(); st.Conflicts != 1 || st.Appends < 4 {
		t.Fatalf("Stats = %+v, want 1 conflict and at least 4 appends", st)
	}
	ro := openDSN(t, dsn, &postgres.Options{ReadOnly: true})
	if _, err := ro.Lock(ctx); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("read-only Lock = %v, want ErrReadOnly", err)
	}
}

// TestUpgrade: a database at schema version 1 (no govledger.advance) is
// brought to this build's version by the next writer's Open, and
// appends work.
func TestUpgrade(t *testing.T) {
	srv := pgtest.Shared(t)
	d, dsn := open(t, nil)
	appendAll(t, d, snapshots()...)
	d.Close()
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	if out, err := srv.Psql(db, `DROP FUNCTION govledger.advance; DROP TABLE govledger.writer; DELETE FROM govledger.schema_version WHERE version > 1`); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := postgres.Open(context.Background(), dsn, &postgres.Options{ReadOnly: true}); !errors.Is(err, ledger.ErrVersionMismatch) {
		t.Fatalf("read-only Open of version 1 = %v, want ErrVersionMismatch", err)
	}
	d = openDSN(t, dsn, nil)
	appendAll(t, d, handoff("x", "a", "b", "", true, []byte("x")))
	if es := checkChain(t, d); len(es) != 3 {
		t.Fatalf("%d entries, want 3", len(es))
	}
	if out, err := srv.Psql(db, "SELECT max(version) FROM govledger.schema_version"); err != nil || strings.TrimSpace(out) != fmt.Sprint(postgres.SchemaVersion) {
		t.Fatalf("schema_version = %q (%v), want %d", out, err, postgres.SchemaVersion)
	}
}

// TestLockTimeout: a writer that holds the head and goes silent (a
// machine that died, a process that hangs) does not stop the others for
// longer than Options.LockTimeout: the server ends its session, another
// writer's Append goes through, and the silent one's Append fails with
// ErrUnavailable, storing nothing.
func TestLockTimeout(t *testing.T) {
	ctx := context.Background()
	d, dsn := open(t, &postgres.Options{LockTimeout: 300 * time.Millisecond})
	appendAll(t, d, snapshots()...)
	// The silent writer's batch is built on a plain view of the same
	// head before it takes the lock: built on the locked view, its
	// lookups are statements of the locked session, and a pause of 300ms
	// between two of them (a loaded machine) ended the session before the
	// test meant it to go silent.
	pv, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := build(t, pv, handoff("mine", "a", "b", "", true, []byte("mine")))
	pv.Close()
	lv, err := d.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	if lv.Head() != mine.At {
		t.Fatalf("locked head %+v, the batch was built on %+v", lv.Head(), mine.At)
	}
	other := openDSN(t, dsn, nil)
	done := make(chan error, 1)
	go func() {
		v, err := other.View(ctx)
		if err != nil {
			done <- err
			return
		}
		b, _, err := tryBuild(v, handoff("other", "a", "b", "", true, []byte("other")))
		v.Close()
		if err == nil {
			err = other.Append(ctx, b)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the other writer's Append = %v, want it stored once the silent writer's session ended", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the other writer still waits for the head after 20s")
	}
	if err := lv.Append(ctx, mine); !errors.Is(err, postgres.ErrUnavailable) || errors.Is(err, ledger.ErrOutcomeUnknown) {
		t.Fatalf("the silent writer's Append = %v, want ErrUnavailable (nothing stored)", err)
	}
	if es := checkChain(t, d); len(es) != 3 || es[2].HandoffID.S != "other" {
		t.Fatalf("chain: %d entries; want the other writer's last", len(es))
	}
}
