package bench_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/govledger/govledger/cmd/govledger/internal/bench"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// TestRunSmall runs every measurement of "govledger bench" on a few
// documents of each format: every document must be accepted and the
// fresh ledger must verify (bench.Run fails otherwise).
func TestRunSmall(t *testing.T) {
	for _, f := range handoff.Formats {
		t.Run(string(f), func(t *testing.T) {
			res, err := bench.Run(context.Background(), bench.Options{N: 20, Writers: 4, Format: f, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Accepted != 40 || res.Rejected != 0 {
				t.Errorf("accepted %d, rejected %d; want 40, 0", res.Accepted, res.Rejected)
			}
			// The sequential rounds write one ledger: 20 documents after
			// the two snapshot entries, verified whole.
			if res.RecordRounds != 3 || res.VerifyEntries != 22 {
				t.Errorf("record rounds %d, verified entries %d; want 3, 22", res.RecordRounds, res.VerifyEntries)
			}
			for name, v := range map[string]float64{"record": res.RecordPerSec, "concurrent": res.ConcurrentPerSec,
				"raw": res.RawBboltPerSec, "raw group commit": res.RawGroupPerSec, "file": res.RawFilePerSec,
				"file group commit": res.RawFileGroupPerSec, "sha256": res.HashPerSec,
				"verify": res.VerifyPerSec, "verify one core": res.VerifyOneCorePerSec, "verify chain": res.VerifyChainPerSec,
				"scan": res.RawScanPerSec, "ledger scan": res.RawLedgerScanPerSec, "ledger sha256": res.LedgerHashPerSec,
				"verify allocation bytes": res.VerifyAllocBytesPerEntry, "verify allocations": res.VerifyAllocsPerEntry} {
				if v <= 0 {
					t.Errorf("%s rate = %v, want > 0", name, v)
				}
			}
			checkRatios(t, res)
		})
	}
}

// checkRatios checks that every ratio names its path and yardstick, is
// measured, and that each goal of the issue has its row.
func checkRatios(t *testing.T, res *bench.Result) {
	t.Helper()
	goals := map[string]float64{}
	for _, r := range res.Ratios {
		if r.Path == "" || r.Yardstick == "" || r.Ratio <= 0 {
			t.Errorf("ratio %+v: a name or the figure is missing", r)
		}
		if r.Goal > 0 {
			goals[r.Path+" / "+r.Yardstick] = r.Goal
		}
	}
	want := map[string]float64{
		"record, 1 writer / raw bbolt, one fsync'd Update per value":                                           0.8,
		"record, 4 writers / raw bbolt, 4 writers, one committer draining the queue into one Update":           0.8,
		"verify, chain + Merkle / raw bbolt scan + SHA-256 of the same documents":                              0.5,
		fmt.Sprintf("verify, full, GOMAXPROCS=%d / raw bbolt scan + SHA-256 of the same documents", res.Cores): 0.15,
	}
	if res.Cores > 1 {
		want[fmt.Sprintf("verify, full, GOMAXPROCS=%d / verify, full, GOMAXPROCS=1", res.Cores)] = 1.6
	}
	if !maps.Equal(goals, want) {
		t.Errorf("ratios with goals = %v, want %v", goals, want)
	}
}

// BenchmarkRun is the whole "govledger bench" run, for profiling.
func BenchmarkRun(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := bench.Run(context.Background(), bench.Options{N: 300, Dir: b.TempDir()}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunServerSmall runs "govledger bench --server" on a few documents of
// each format: every HTTP submission must be answered 201 accepted
// (RunServer fails otherwise) and every figure must be measured.
func TestRunServerSmall(t *testing.T) {
	for _, f := range handoff.Formats {
		t.Run(string(f), func(t *testing.T) {
			res, err := bench.RunServer(context.Background(), bench.ServerOptions{N: 16, Clients: []int{1, 4}, Format: f, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Runs) != 2 || res.Runs[1].Clients != 4 {
				t.Fatalf("runs %+v, want 1 and 4 clients", res.Runs)
			}
			for _, r := range res.Runs {
				if r.HTTPPerSec <= 0 || r.RecordPerSec <= 0 || r.RawBboltPerSec <= 0 || r.HTTPP50Ms <= 0 || r.HTTPP99Ms < r.HTTPP50Ms || r.HTTPVsRecord <= 0 {
					t.Errorf("run %+v: a figure is missing", r)
				}
			}
		})
	}
}

// TestRunServerPostgres runs "bench --server --postgres" against a real
// PostgreSQL: one and two replicas on a fresh database answer every
// submission 201 accepted, every figure is measured, and the databases
// the bench created are dropped afterwards.
func TestRunServerPostgres(t *testing.T) {
	s := pgtest.Shared(t)
	res, err := bench.RunServer(context.Background(), bench.ServerOptions{N: 16, Clients: []int{4}, Dir: t.TempDir(), Postgres: s.DSN("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if r.PG1PerSec <= 0 || r.PG2PerSec <= 0 || r.PG1VsBbolt <= 0 || r.PG2VsBbolt <= 0 || r.PG2P99Ms < r.PG2P50Ms || r.PG2P50Ms <= 0 {
		t.Errorf("run %+v: a PostgreSQL figure is missing", r)
	}
	out, err := s.Psql("postgres", "SELECT count(*) FROM pg_database WHERE datname LIKE 'gl_bench_%'")
	if err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("bench databases left behind: %q %v", out, err)
	}
}

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
