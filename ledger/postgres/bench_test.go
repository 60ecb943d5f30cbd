package postgres_test

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAppend measures one writer's commits of batches of 1, 16 and 64
// handoffs (building the batch is not timed): the cost of a transaction
// (row lock, pipelined inserts, WAL flush) and its share per entry.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			ctx := context.Background()
			d, _ := open(b, nil)
			appendAll(b, d, snapshots()...)
			payload := make([]byte, 1400)
			b.ReportAllocs()
			b.SetBytes(int64(size * len(payload)))
			n := 0
			for b.Loop() {
				b.StopTimer()
				var rs []req
				for range size {
					n++
					copy(payload, fmt.Sprintf("%d-", n))
					rs = append(rs, handoff(fmt.Sprint(n), "a", "b", "wf", true, append([]byte(nil), payload...)))
				}
				v, err := d.View(ctx)
				if err != nil {
					b.Fatal(err)
				}
				batch, _ := build(b, v, rs...)
				v.Close()
				b.StartTimer()
				if err := d.Append(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
