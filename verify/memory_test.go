package verify_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/verify"
)

// genSource generates a valid chain of n entries on the fly (two snapshots,
// then accepted handoffs with distinct IDs), holding none of it: it lets a
// test measure what Replay itself keeps.
type genSource struct {
	n       uint64
	payload []byte
	sum     entry.Hash
}

var genSnapshot = []byte("snapshot")

func (g *genSource) Entries(ctx context.Context, fn func(uint64, []byte) error) error {
	var prev entry.Hash
	snap := entry.Sum256(genSnapshot)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var raw []byte
	for seq := uint64(1); seq <= g.n; seq++ {
		ts := t0.Add(time.Duration(seq) * time.Millisecond).Format(time.RFC3339Nano)
		raw = raw[:0]
		if seq <= 2 {
			what := "manifest"
			if seq == 2 {
				what = "lock"
			}
			raw = fmt.Appendf(raw, `{"content_sha256":"%s","kind":"snapshot","prev":"%s","seq":%d,"size":%d,"time":"%s","v":1,"what":"%s"}`,
				snap, prev, seq, len(genSnapshot), ts, what)
		} else {
			g.payload = fmt.Appendf(g.payload[:0], `{"n":%d}`, seq)
			g.sum = entry.Sum256(g.payload)
			raw = fmt.Appendf(raw, `{"decision":"accepted","format":"governed/1","handoff_id":"00000000-0000-4000-8000-%012d","kind":"handoff","lock_sha256":"%s","manifest_sha256":"%s","payload_sha256":"%s","payload_size":%d,"prev":"%s","reasons":[],"seq":%d,"source":"a","target":"b","time":"%s","v":1,"workflow_id":null}`,
				seq, snap, snap, g.sum, len(g.payload), prev, seq, ts)
		}
		prev = entry.LeafHash(raw)
		if err := fn(seq, raw); err != nil {
			return err
		}
	}
	return nil
}

func (g *genSource) Blob(_ context.Context, sum entry.Hash) ([]byte, error) {
	switch sum {
	case g.sum:
		return g.payload, nil
	case entry.Sum256(genSnapshot):
		return genSnapshot, nil
	}
	return nil, ledger.ErrNotFound
}

// replayHeap replays n generated entries and returns the report and the
// largest live heap (after a forced GC) seen at checkpoints.
func replayHeap(tb testing.TB, n uint64) (*verify.Report, uint64) {
	var peak uint64
	var ms runtime.MemStats
	every := max(n/8, 1)
	opts := verify.Options{SkipReevaluate: true, Progress: func(seq uint64) {
		if seq%every == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}}
	rep, err := verify.Replay(context.Background(), &genSource{n: n}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if !rep.OK() || rep.Entries != n {
		tb.Fatalf("Replay(generated %d) = %d entries, findings %v", n, rep.Entries, rep.Findings[:min(len(rep.Findings), 3)])
	}
	return rep, peak
}

// TestReplayHeap checks that Replay's memory grows only with the accepted
// handoff IDs, compactly: extrapolated to 1M accepted handoffs, the live
// heap stays under 64 MiB (BenchmarkReplay/1M measures it directly).
func TestReplayHeap(t *testing.T) {
	n := uint64(200_000)
	if testing.Short() || raceEnabled {
		n = 40_000
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	_, half := replayHeap(t, n/2)
	_, full := replayHeap(t, n)
	perEntry := float64(int64(full)-int64(half)) / float64(n/2)
	at1M := float64(full) + perEntry*float64(1_000_000-n)
	t.Logf("live heap: base %.1f MiB, %d entries %.1f MiB, %d entries %.1f MiB; %.0f bytes/entry; extrapolated to 1M: %.1f MiB",
		mib(base), n/2, mib(half), n, mib(full), perEntry, at1M/(1<<20))
	if at1M > 64<<20 {
		t.Errorf("extrapolated live heap at 1M entries = %.1f MiB, want <= 64 MiB", at1M/(1<<20))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkReplay measures records/s and the peak live heap (MiB) of a
// replay without re-evaluation, for 10k and 1M generated entries.
func BenchmarkReplay(b *testing.B) {
	for _, n := range []uint64{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				_, p := replayHeap(b, n)
				peak = max(peak, p)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(mib(peak), "peak-heap-MiB")
		})
	}
}
