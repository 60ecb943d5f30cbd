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
		raw, g.payload = genEntry(raw[:0], g.payload[:0], seq, prev, snap, t0)
		if seq > 2 {
			g.sum = entry.Sum256(g.payload)
		}
		prev = entry.LeafHash(raw)
		if err := fn(seq, raw); err != nil {
			return err
		}
	}
	return nil
}

// genEntry appends entry seq of the generated chain to raw, and its
// payload (a handoff's) to payload.
func genEntry(raw, payload []byte, seq uint64, prev, snap entry.Hash, t0 time.Time) ([]byte, []byte) {
	ts := t0.Add(time.Duration(seq) * time.Millisecond).Format(time.RFC3339Nano)
	if seq <= 2 {
		what := "manifest"
		if seq == 2 {
			what = "lock"
		}
		return fmt.Appendf(raw, `{"content_sha256":"%s","kind":"snapshot","prev":"%s","seq":%d,"size":%d,"time":"%s","v":1,"what":"%s"}`,
			snap, prev, seq, len(genSnapshot), ts, what), payload
	}
	payload = fmt.Appendf(payload, `{"n":%d}`, seq)
	return fmt.Appendf(raw, `{"decision":"accepted","format":"governed/1","handoff_id":"00000000-0000-4000-8000-%012d","kind":"handoff","lock_sha256":"%s","manifest_sha256":"%s","payload_sha256":"%s","payload_size":%d,"prev":"%s","reasons":[],"seq":%d,"source":"a","target":"b","time":"%s","v":1,"workflow_id":null}`,
		seq, snap, snap, entry.Sum256(payload), len(payload), prev, seq, ts), payload
}

// entry generates entry seq again (with a zero prev: what a reread is
// asked for is its kind, handoff ID and payload hash), for
// verify.Rereading.
func (g *genSource) entry(_ context.Context, seq uint64) (*entry.Entry, error) {
	if seq == 0 || seq > g.n {
		return nil, fmt.Errorf("entry %d: %w", seq, ledger.ErrNotFound)
	}
	raw, _ := genEntry(nil, nil, seq, entry.Hash{}, entry.Sum256(genSnapshot), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return entry.Decode(raw)
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

// replayHeap replays n generated entries and returns the report, the
// largest live heap (after a forced GC) seen at checkpoints, and the
// smallest seen in the last eighth of the replay (what Replay keeps near
// the end, with the least of the entries in flight). With reread, the
// source reads entries again as a ledger's does (Replay's compact tables).
func replayHeap(tb testing.TB, n uint64, reread bool) (*verify.Report, uint64, uint64) {
	var peak, end uint64
	var ms runtime.MemStats
	every := max(n/64, 1)
	opts := verify.Options{SkipReevaluate: true, Progress: func(seq uint64) {
		if seq%every == 0 {
			runtime.GC() // twice: the first leaves sync.Pools' victims
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			if seq >= n-n/8 && (end == 0 || ms.HeapAlloc < end) {
				end = ms.HeapAlloc
			}
		}
	}}
	g := &genSource{n: n}
	var src verify.Source = g
	if reread {
		src = verify.Rereading(g, g.entry)
	}
	rep, err := verify.Replay(context.Background(), src, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if !rep.OK() || rep.Entries != n {
		tb.Fatalf("Replay(generated %d) = %d entries, findings %v", n, rep.Entries, rep.Findings[:min(len(rep.Findings), 3)])
	}
	return rep, peak, end
}

// TestReplayHeap checks that Replay's memory grows only with the accepted
// handoff IDs, compactly, within a budget of live bytes per accepted
// handoff: with a source that reads entries again (a ledger: 8-byte slots
// of tags, no outcome links) and with one that cannot (an export: a map
// of 64-bit digests and the packed outcome links). BenchmarkReplay/1M
// measures the heap at 1M directly.
func TestReplayHeap(t *testing.T) {
	// The rereading table's shards are 70-88% full (8 bytes a slot: at
	// most 11.4 bytes an entry); a Go map's 16-byte slots take 19-39.
	n := uint64(220_000)
	if testing.Short() || raceEnabled {
		n = 55_000
	}
	for _, c := range []struct {
		name   string
		reread bool
		budget float64 // live bytes per accepted handoff
	}{
		{"rereading", true, 13},
		{"not rereading", false, 36},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			// n/16 entries hold what does not grow with the entries (the
			// workers' windows, caches) and little of the tables.
			_, _, small := replayHeap(t, n/16, c.reread)
			_, _, full := replayHeap(t, n, c.reread)
			perEntry := float64(int64(full)-int64(small)) / float64(n-n/16)
			at1M := float64(full) + perEntry*float64(1_000_000-n)
			t.Logf("live heap: base %.1f MiB, %d entries %.1f MiB, %d entries %.1f MiB; %.1f bytes/entry; extrapolated to 1M: %.1f MiB",
				mib(base), n/16, mib(small), n, mib(full), perEntry, at1M/(1<<20))
			if perEntry > c.budget {
				t.Errorf("live heap grows %.1f bytes an accepted handoff, want <= %.0f", perEntry, c.budget)
			}
		})
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkReplay measures records/s and the peak live heap (MiB) of a
// replay without re-evaluation, for 10k and 1M generated entries, read
// again as a ledger's are.
func BenchmarkReplay(b *testing.B) {
	for _, n := range []uint64{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				_, p, _ := replayHeap(b, n, true)
				peak = max(peak, p)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(mib(peak), "peak-heap-MiB")
		})
	}
}
