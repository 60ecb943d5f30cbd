package policy_test

import (
	"testing"

	"github.com/govledger/govledger/ledger"
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
			e := &ledger.Entry{V: ledger.Version, Seq: 1, Time: ledger.Time{Time: now}}
			if err := policy.Decide(in).Fill(e, in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	})
}
