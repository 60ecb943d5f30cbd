package bolt_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
)

var proveEntries = flag.Int("prove-entries", 1<<12, "ledger size for BenchmarkProve (e.g. 1000000)")

// BenchmarkProve measures inclusion and consistency proofs on a real ledger
// of -prove-entries entries (built once, with 64 concurrent writers).
func BenchmarkProve(b *testing.B) {
	n := uint64(*proveEntries)
	path := filepath.Join(b.TempDir(), "prove.db")
	l, err := bolt.Open(path, &bolt.Options{MaxBatch: 1024})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	per := int(n) / 64
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
					e.Kind, e.Agent, e.Note = entry.KindUnblock, fmt.Sprintf("agent-%d", w), "bench"
					return nil
				}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	size, err := l.TreeSize(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d entries in %s", size, time.Since(start).Round(time.Millisecond))
	b.Run("inclusion", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			seq := 1 + uint64(i*7919)%size
			if _, err := l.ProveInclusion(b.Context(), seq, size); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("consistency", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := l.ProveConsistency(b.Context(), 1+uint64(i*104729)%(size-1), size); err != nil {
				b.Fatal(err)
			}
		}
	})
	l.Close()
}
