package bolt_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/perf"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

var benchPayload = bytes.Repeat([]byte(`{"k":"v"}`), 100) // 900 bytes

func benchHandoff(i int) *ledger.Request {
	h := handoff(i)
	h.Payload = append(append([]byte(nil), benchPayload...), fmt.Sprint(i)...)
	return h.Build()
}

func recordsPerSec(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkAppend: durable appends of ~1 KiB handoffs, one at a time and
// from 8 goroutines (group commit); raw bbolt (one fsynced Update per
// value, no hashing or indexes) alongside.
func BenchmarkAppend(b *testing.B) {
	for _, workers := range []int{1, 8} {
		name := "sync"
		if workers > 1 {
			name = fmt.Sprintf("concurrent%d", workers)
		}
		b.Run(name, func(b *testing.B) {
			l := bolttest.MustCreate(b, nil)
			bolttest.AppendHandoff(b, l, handoff(-1))
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + workers - 1) / workers
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						if _, err := l.Append(context.Background(), benchHandoff(w*per+i)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			recordsPerSec(b, per*workers)
		})
		b.Run("raw-bbolt-"+name, func(b *testing.B) {
			values := make([][]byte, b.N)
			for i := range values {
				values[i] = append(append([]byte(nil), benchPayload...), fmt.Sprint(i)...)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			b.ResetTimer()
			if _, err := perf.RawBboltAppend(filepath.Join(b.TempDir(), "raw.db"), values, workers); err != nil {
				b.Fatal(err)
			}
			recordsPerSec(b, b.N)
		})
	}
}

const scanN = 2000

// BenchmarkScanVerify: read every entry, decode it strictly, recompute its
// hash and check the prev link; raw bbolt scan + SHA-256 alongside.
func BenchmarkScanVerify(b *testing.B) {
	l := bolttest.MustCreate(b, nil)
	const batch = 100
	var size int64
	for i := 0; i < scanN; i += batch {
		var wg sync.WaitGroup
		for j := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := l.Append(context.Background(), benchHandoff(i+j)); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	n, _, _ := l.Head(b.Context())
	l.Scan(context.Background(), 1, func(_ uint64, raw []byte) error { size += int64(len(raw)); return nil })
	b.Run("ledger", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(size)
		for range b.N {
			prev := entry.ZeroHash
			err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
				e, err := entry.Decode(raw)
				if err != nil {
					return err
				}
				if e.Prev != prev {
					return fmt.Errorf("seq %d: prev", seq)
				}
				prev = entry.LeafHash(raw)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		recordsPerSec(b, int(n)*b.N)
	})
	b.Run("raw-bbolt", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "raw.db")
		values := make([][]byte, 0, n)
		l.Scan(context.Background(), 1, func(_ uint64, raw []byte) error { values = append(values, raw); return nil })
		if _, err := perf.RawBboltAppend(path, values, 16); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(size)
		b.ResetTimer()
		for range b.N {
			if got, _, err := perf.RawBboltScanSHA256(path); err != nil || got != int(n) {
				b.Fatal(got, err)
			}
		}
		recordsPerSec(b, int(n)*b.N)
	})
}
