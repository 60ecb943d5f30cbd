package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// TestRestartImmediate restarts PostgreSQL the way a crash does (pg_ctl
// restart -m immediate: no shutdown checkpoint, recovery from WAL) while
// writers on two drivers append. Writes fail with ErrUnavailable while it
// is down, then succeed again on the same drivers; every batch a writer
// saw acknowledged is in the ledger exactly once, and the chain is whole.
func TestRestartImmediate(t *testing.T) {
	const writers, want = 3, 30 // batches each writer lands
	srv := pgtest.Start(t)
	dsn := srv.CreateDB(t)
	ctx := context.Background()
	o := &postgres.Options{Timeout: 20 * time.Second}
	d0 := openDSN(t, dsn, o)
	appendAll(t, d0, snapshots()...)

	var landed atomic.Int64
	var unavailable, conflicts atomic.Int64
	acked := make([][]string, writers)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for w := range writers {
		d := openDSN(t, dsn, o)
		wg.Go(func() {
			for i := 0; i < want; {
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("writer %d: landed %d of %d batches before the deadline", w, i, want)
					return
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				err := func() error {
					v, err := d.View(ctx)
					if err != nil {
						return err
					}
					defer v.Close()
					b, _, err := tryBuild(v, handoff(id, "a", "b", "", true, []byte(id)))
					if err != nil {
						return err
					}
					return d.Append(ctx, b)
				}()
				switch {
				case err == nil:
					acked[w] = append(acked[w], id)
					landed.Add(1)
					i++
				case errors.Is(err, ledger.ErrConflict):
					conflicts.Add(1)
				case errors.Is(err, postgres.ErrOutcomeUnknown):
					errs <- fmt.Errorf("writer %d: %w (the driver could not resolve it)", w, err)
					return
				case errors.Is(err, postgres.ErrUnavailable):
					// Nothing stored: the same handoff is tried again
					// (like a client retrying after a 503).
					unavailable.Add(1)
					time.Sleep(20 * time.Millisecond)
				default:
					errs <- fmt.Errorf("writer %d: %v (not ErrUnavailable)", w, err)
					return
				}
			}
		})
	}
	// Restart once the load is under way.
	for landed.Load() < writers*want/4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	before := landed.Load()
	if err := srv.RestartImmediate(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("restarted after %d batches; %d unavailable errors, %d conflicts", before, unavailable.Load(), conflicts.Load())
	if unavailable.Load() == 0 {
		t.Error("no write failed with ErrUnavailable: the restart did not hit the load")
	}
	es := checkChain(t, d0)
	count := map[string]int{}
	for _, e := range es {
		if e.Kind == entry.KindHandoff {
			count[e.HandoffID.S]++
		}
	}
	for w := range writers {
		for _, id := range acked[w] {
			if count[id] != 1 {
				t.Errorf("acknowledged %s is stored %d times", id, count[id])
			}
		}
	}
	if n := len(es) - 2; n != writers*want {
		t.Errorf("%d handoffs stored, %d acknowledged", n, writers*want)
	}
}

// TestReadErrors: a row deleted below the head or a head row removed is
// reported as ErrCorrupt naming the seq, not as a shorter ledger.
func TestReadErrors(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Shared(t)
	d, dsn := open(t, nil)
	appendAll(t, d, append(snapshots(), handoff("a", "a", "b", "", true, []byte("a")), handoff("b", "a", "b", "", true, []byte("b")))...)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	if out, err := srv.Psql(db, "DELETE FROM govledger.entries WHERE seq = 3"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var re *ledger.RecordError
	err = v.Scan(ctx, 1, func(uint64, []byte) error { return nil })
	if !errors.Is(err, ledger.ErrCorrupt) || !errors.As(err, &re) || re.Seq != 3 {
		t.Fatalf("Scan over a deleted row = %v, want ErrCorrupt naming seq 3", err)
	}
	if _, err := v.Entry(3); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Entry(3) = %v, want ErrCorrupt", err)
	}
	if out, err := srv.Psql(db, "UPDATE govledger.blobs SET bytes = 'x' WHERE sha256 = sha256('b')"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	v2, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if _, err := v2.Blob(entry.Sum256([]byte("b"))); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Blob(rewritten) = %v, want ErrCorrupt", err)
	}
	if out, err := srv.Psql(db, "DELETE FROM govledger.head"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := d.View(ctx); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("View without a head row = %v, want ErrCorrupt", err)
	}
}
