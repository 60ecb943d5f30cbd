package postgres_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// roleUntil polls cond every 10ms for up to limit and fails t with what
// when it never holds.
func roleUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holder returns the index of the one role of rs that holds the writer
// role, or -1 when none or several do.
func holder(rs ...*postgres.Role) int {
	h := -1
	for i, r := range rs {
		if r.Held() {
			if h >= 0 {
				return -1
			}
			h = i
		}
	}
	return h
}

// TestRole: of two replicas campaigning on one database one holds the
// writer role and the other reads its address and secret from the
// writer row; when the holder's session ends (its Role closed, or its
// backend terminated as a crash would) the other takes the role within
// seconds, in a new tenure with a new secret; a replica on another
// database never sees it.
func TestRole(t *testing.T) {
	srv := pgtest.Shared(t)
	d1, dsn := open(t, nil)
	d2 := openDSN(t, dsn, nil)
	o := &postgres.RoleOptions{Poll: 50 * time.Millisecond, Lapse: time.Second}
	r1, err := d1.Campaign("127.0.0.1:1001", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := d2.Campaign("127.0.0.1:1002", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	other, _ := open(t, nil) // another ledger: its own role
	r3, err := other.Campaign("127.0.0.1:1003", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	roleUntil(t, 10*time.Second, "the other database's replica holds its own role", r3.Held)

	rs := []*postgres.Role{r1, r2}
	addrs := []string{"127.0.0.1:1001", "127.0.0.1:1002"}
	// agree waits until exactly one holds the role, in tenure epoch or
	// later, and the other names it.
	agree := func(epoch int64) (h int, w postgres.Writer) {
		t.Helper()
		roleUntil(t, 10*time.Second, "one replica holds the role and the other names it", func() bool {
			h = holder(rs...)
			if h < 0 {
				return false
			}
			own, self, ok := rs[h].Writer()
			seen, oself, ook := rs[1-h].Writer()
			w = own
			return self && ok && !oself && ook && own.Epoch >= epoch && seen.Addr == addrs[h] && own.Addr == addrs[h] &&
				seen.Epoch == own.Epoch && bytes.Equal(seen.Secret, own.Secret) && len(own.Secret) == 32
		})
		return h, w
	}
	h, w := agree(1)
	// The holder's session ends as in a crash: the other takes over.
	db := dbName(dsn)
	if out, err := srv.Psql(db, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name = 'govledger writer role' AND datname = current_database()
  AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	start := time.Now()
	h2, w2 := agree(w.Epoch + 1)
	if h2 == h {
		// The terminated holder may win again only if it reconnected
		// first; the tenure is new either way.
		t.Logf("replica %d took the role back after its session ended", h)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the role was handed over in %s, want within seconds", took)
	}
	if w2.Epoch != w.Epoch+1 || bytes.Equal(w2.Secret, w.Secret) {
		t.Errorf("after the holder's session ended: epoch %d (was %d), secret changed %t; want the next epoch and a new secret",
			w2.Epoch, w.Epoch, !bytes.Equal(w2.Secret, w.Secret))
	}
	// The holder closes: the other takes over.
	if err := rs[h2].Close(); err != nil {
		t.Fatal(err)
	}
	if rs[h2].Held() {
		t.Fatal("a closed Role still holds the role")
	}
	next := rs[1-h2]
	roleUntil(t, 5*time.Second, "the remaining replica takes the role after the holder closed", next.Held)
	if w3, self, ok := next.Writer(); !self || !ok || w3.Epoch != w2.Epoch+1 || w3.Addr != addrs[1-h2] {
		t.Errorf("Writer() = %+v, %t, %t; want this replica's own tenure %d", w3, self, ok, w2.Epoch+1)
	}
}

// TestRoleReadOnly: a read-only driver cannot campaign, nor can one
// with a negative poll.
func TestRoleReadOnly(t *testing.T) {
	w, dsn := open(t, nil)
	d := openDSN(t, dsn, &postgres.Options{ReadOnly: true})
	if _, err := d.Campaign("127.0.0.1:1", nil); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("Campaign on a read-only driver = %v, want ErrReadOnly", err)
	}
	if _, err := w.Campaign("127.0.0.1:1", &postgres.RoleOptions{Poll: -1}); !errors.Is(err, ledger.ErrBadOptions) {
		t.Fatalf("Campaign with a negative Poll = %v, want ErrBadOptions", err)
	}
}
