package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// TestReadCancelled: every ledger read that touches storage honours its
// context mid-way. Another session holds an ACCESS EXCLUSIVE lock on the
// tables the reads query, so each read waits inside PostgreSQL; cancelling
// its context must end the read at once with context.Canceled, and the
// server must stop running its query (the cancellation reached the
// server, not only the caller). Without the context reaching the view's
// queries, each read would wait for the lock (or the driver's timeout).
func TestReadCancelled(t *testing.T) {
	ctx := context.Background()
	d, dsn := open(t, nil)
	appendAll(t, d, append(snapshots(), handoff("h-1", "a", "b", "w-1", true, []byte("one")))...)
	l, err := ledger.New(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := entry.Sum256([]byte("one"))

	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	// waiting counts the sessions other than the locker's waiting for a lock.
	waiting := func() int {
		var n int
		err := locker.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	for _, tc := range []struct {
		name string
		read func(ctx context.Context) error
	}{
		{"Get", func(ctx context.Context) error { _, _, err := l.Get(ctx, 3); return err }},
		{"Blob", func(ctx context.Context) error { _, err := l.Blob(ctx, payload); return err }},
		{"EntryBlob", func(ctx context.Context) error { _, err := l.EntryBlob(ctx, 3, payload); return err }},
		{"Find", func(ctx context.Context) error { _, err := l.Find(ctx, ledger.Query{WorkflowID: "w-1"}); return err }},
		{"Blocks", func(ctx context.Context) error { _, err := l.Blocks(ctx); return err }},
		{"TreeHash", func(ctx context.Context) error { _, err := l.TreeHash(ctx, 3); return err }},
		{"ProveInclusion", func(ctx context.Context) error { _, err := l.ProveInclusion(ctx, 1, 3); return err }},
		{"ProveConsistency", func(ctx context.Context) error { _, err := l.ProveConsistency(ctx, 1, 3); return err }},
		{"View", func(ctx context.Context) error {
			return l.View(ctx, func(st ledger.State) error { st.Accepted("h-1"); return nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.read(ctx); err != nil {
				t.Fatalf("%s before the lock: %v", tc.name, err)
			}
			tx, err := locker.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `LOCK TABLE govledger.entries, govledger.blobs, govledger.redacted, govledger.tree,
				govledger.accepted, govledger.idempotency, govledger.blocked IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tc.read(rctx) }()

			// Wait (bounded) until the read is blocked inside PostgreSQL,
			// or, after 2 s, blocked at all (under -race in CI a read once
			// waited for a pool connection the previous case's cancelled
			// read had not yet given back): either way it must end at once
			// when cancelled.
			deadline := time.Now().Add(10 * time.Second)
			blockedSince := time.Now()
			for waiting() == 0 && time.Since(blockedSince) < 2*time.Second {
				select {
				case err := <-done:
					t.Fatalf("%s returned %v while the tables were locked, before it was cancelled", tc.name, err)
				default:
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s cancelled = %v, want an error wrapping context.Canceled", tc.name, err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("%s still waiting 2 s after its context was cancelled", tc.name)
			}
			// The server stopped the query too: nobody waits for the lock.
			for n := waiting(); n != 0; n = waiting() {
				if time.Now().After(deadline) {
					t.Fatalf("%d queries still wait for the lock after %s was cancelled", n, tc.name)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			// And the ledger still answers afterwards.
			if err := tc.read(ctx); err != nil {
				t.Fatal(fmt.Errorf("%s after the cancelled read: %w", tc.name, err))
			}
		})
	}
}
