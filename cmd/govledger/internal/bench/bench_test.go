package bench_test

import (
	"context"
	"testing"

	"github.com/govledger/govledger/cmd/govledger/internal/bench"
	"github.com/govledger/govledger/handoff"
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
			for name, v := range map[string]float64{"record": res.RecordPerSec, "concurrent": res.ConcurrentPerSec,
				"raw": res.RawBboltPerSec, "verify": res.VerifyPerSec, "scan": res.RawScanPerSec} {
				if v <= 0 {
					t.Errorf("%s rate = %v, want > 0", name, v)
				}
			}
		})
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
