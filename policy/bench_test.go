package policy_test

import (
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/policy"
)

// BenchmarkDecide measures one decision on a valid governed/1 document, as
// it runs inside the ledger's write transaction, with and without Fill.
func BenchmarkDecide(b *testing.B) {
	in := input(b, governed(b))
	b.Run("decide", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in.Payload)))
		for b.Loop() {
			policy.Decide(in)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	})
	b.Run("decide+fill", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in.Payload)))
		for b.Loop() {
			e := &entry.Entry{V: entry.Version, Seq: 1, Time: entry.Time{Time: now}}
			if err := policy.Decide(in).Fill(e, in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	})
}
