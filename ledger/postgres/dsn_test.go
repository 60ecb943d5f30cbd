package postgres_test

import (
	"strings"
	"testing"

	"github.com/govledger/govledger/ledger/postgres"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		dsn, want string
		dsnOK     bool
	}{
		{"postgres://gov:s3cret@db.internal:5432/ledger?sslmode=verify-full", "postgres://gov:xxxxx@db.internal:5432/ledger?sslmode=verify-full", true},
		{"postgresql://gov@db/ledger?password=s3cret&sslmode=disable", "postgresql://gov@db/ledger?password=xxxxx&sslmode=disable", true},
		{"postgres://db/ledger?sslkey=%2Fk%2Fs3cret.key&sslpassword=s3cret", "postgres://db/ledger?sslkey=xxxxx&sslpassword=xxxxx", true},
		{"postgres://gov:s3cret@[::1", "postgres://[::1]:5432/…", true},
		{"postgres://gov:s3cret@a:5433,b/x?password=s3cret", "postgres://a:5433,b:5432/…", true},
		{"govledger.db", "govledger.db", false},
		{"host=db password=s3cret", "(a database)", false},
	} {
		got := postgres.Redact(tc.dsn)
		if strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q: the secret is still there", tc.dsn, got)
		}
		if postgres.IsDSN(tc.dsn) != tc.dsnOK {
			t.Errorf("IsDSN(%q) = %t", tc.dsn, !tc.dsnOK)
		}
		if tc.dsnOK && got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

func TestHostPort(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://gov:s3cret@db.internal:6432/ledger": "db.internal:6432",
		"postgres://db/ledger":                          "db:5432",
		"postgresql:///ledger":                          "localhost:5432",
		"postgres://[::1]:7000/x":                       "[::1]:7000",
		"postgres://a:5433,b/x":                         "a:5433,b:5432",
	} {
		if got := postgres.HostPort(dsn); got != want {
			t.Errorf("HostPort(%q) = %q, want %q", dsn, got, want)
		}
	}
}
