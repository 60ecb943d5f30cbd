package ledgerbackend_test

import (
	"context"
	"flag"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

var benchEntries = flag.Int("bench-entries", 50000, "entries of the ledger BenchmarkAgentEvents reads")

// BenchmarkAgentEvents measures the three queries of the viewer's agent
// page (blocks, unblocks, lifts) on a ledger of -bench-entries entries:
// filters the filter index answers, where a walk of the ledger was needed.
func BenchmarkAgentEvents(b *testing.B) {
	be, _ := newBackend(&testing.T{}, 0)
	ctx := context.Background()
	var wg sync.WaitGroup
	per := *benchEntries / 64
	for w := range 64 {
		wg.Go(func() {
			for i := range per {
				be.Submit(ctx, vbw(w*per+i))
			}
		})
	}
	wg.Wait()
	qs := []server.Query{{Agent: "domain-03-technical", Code: string(reason.HashMismatch), Limit: 1000},
		{Agent: "domain-03-technical", Kind: entry.KindUnblock, Limit: 1000}, {Kind: entry.KindSnapshot, Limit: 1000}}
	start := time.Now()
	for _, q := range qs { // the first query builds the filter index
		if _, err := be.Entries(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	build := time.Since(start)
	b.ResetTimer()
	for b.Loop() {
		for _, q := range qs {
			if _, err := be.Entries(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(build.Milliseconds()), "first-build-ms")
}
