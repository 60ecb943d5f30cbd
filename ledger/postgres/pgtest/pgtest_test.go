package pgtest_test

import (
	"strings"
	"testing"

	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

func TestStartRestart(t *testing.T) {
	s := pgtest.Start(t)
	out, err := s.Psql("postgres", "SELECT current_setting('port'), current_user, current_setting('fsync')")
	if err != nil {
		t.Fatalf("psql: %v: %s", err, out)
	}
	if want := "postgres|on"; !strings.Contains(out, want) {
		t.Fatalf("psql = %q, want it to contain %q", out, want)
	}
	if err := s.RestartImmediate(); err != nil {
		t.Fatal(err)
	}
	if out, err := s.Psql("postgres", "SELECT 1"); err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("after restart: %q, %v", out, err)
	}
}
