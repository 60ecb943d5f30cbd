package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
)

// benchLedger builds a ledger of n handoff entries (after the two
// snapshots) with 64 concurrent writers: 16 source agents, 50 workflows
// (10 of the first 1,000 handoffs form a workflow of their own,
// "wf-trace", the same size in every ledger), one rejection in 7. A ledger already at the
// path (-log-bench-dir) is used as it is.
func benchLedger(b *testing.B, dir string, n int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("ledger-%d.db", n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	l, err := bolt.Open(path, &bolt.Options{Origin: testOrigin, MaxBatch: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	const writers = 64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				payload := []byte(fmt.Sprintf(`{"handoff_id":"h-%d","note":"benchmark handoff"}`, i))
				_, err := l.Append(context.Background(), &ledger.Request{
					Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: []byte("m")}, {What: entry.SnapshotLock, Bytes: []byte("l")}},
					Payload:   payload,
					Build: func(st ledger.State, e *entry.Entry) error {
						m, lk, _ := st.InForce()
						sum, sz, rs := entry.Sum256(payload), int64(len(payload)), []reason.Reason{}
						if i%7 == 0 {
							rs = []reason.Reason{{Code: reason.BoundaryViolation, Severity: reason.Error, Field: "target_agent", Message: "outside the boundaries"}}
						}
						e.Kind, e.Format, e.Decision, e.Reasons = entry.KindHandoff, entry.Str("governed/1"), reason.Decide(rs), &rs
						wf := fmt.Sprintf("wf-%d", i%50)
						if i%100 == 49 && i < 1000 {
							wf = "wf-trace"
						}
						e.HandoffID, e.WorkflowID = entry.Str(fmt.Sprintf("h-%d", i)), entry.Str(wf)
						e.Source, e.Target = entry.Str(fmt.Sprintf("agent-%d", i%16)), entry.Str("agent-target")
						e.PayloadSHA256, e.PayloadSize, e.ManifestSHA256, e.LockSHA256 = &sum, &sz, &m, &lk
						return nil
					}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d entries in %s", n+2, time.Since(start).Round(time.Millisecond))
	return path
}

var (
	logBenchEntries = flag.Int("log-bench-entries", 100000, "size of the large ledger of BenchmarkLogLimit (the small one has 1,000)")
	logBenchDir     = flag.String("log-bench-dir", "", "keep BenchmarkLogLimit's ledgers in this directory and reuse them (default: a temporary directory)")
)

// BenchmarkLogLimit measures "log --limit 20" and its neighbours (a
// filtered page, a page deep in the ledger, a time-bounded page, show,
// trace, prove) on ledgers of 1,000 and -log-bench-entries entries, side
// by side in each iteration, and reports the ratio of their times
// ("ratio"; near 1 when the cost does not grow with the ledger):
//
//   - "cmd/…" runs the whole command as a user does: open read-only, which
//     checks the pages each read visits (the guard against a corrupted
//     file sending bbolt into endless recursion), then the query;
//   - "query/…" is the read itself on an open ledger: ledger.Find with the
//     limit and the Get of each entry, as log does.
func BenchmarkLogLimit(b *testing.B) {
	dir := *logBenchDir
	if dir == "" {
		dir = b.TempDir()
	}
	keyPrefix := filepath.Join(b.TempDir(), "k")
	if code := run(context.Background(), []string{"govledger", "keygen", "--out", keyPrefix, testOrigin}, strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }); code != 0 {
		b.Fatalf("keygen: exit %d", code)
	}
	sizes := [2]int{1000, *logBenchEntries}
	var paths [2]string
	for i, n := range sizes {
		paths[i] = benchLedger(b, dir, n)
	}
	cmds := []struct {
		name string
		args func(n int) []string
	}{
		{"log --limit 20", func(int) []string { return []string{"log", "--limit", "20"} }},
		{"log --agent --limit 20", func(int) []string { return []string{"log", "--agent", "agent-3", "--limit", "20"} }},
		{"log --before mid --limit 20", func(n int) []string { return []string{"log", "--before", fmt.Sprint(n / 2), "--limit", "20"} }},
		{"log --reverse --since --limit 20", func(int) []string {
			return []string{"log", "--reverse", "--since", "2000-01-01T00:00:00Z", "--limit", "20"}
		}},
		{"log --limit 5", func(int) []string { return []string{"log", "--limit", "5"} }},
		{"show mid", func(n int) []string { return []string{"show", fmt.Sprint(n / 2)} }},
		{"trace wf-trace", func(int) []string { return []string{"trace", "wf-trace"} }},
		{"prove mid", func(n int) []string { return []string{"prove", "--key", keyPrefix + ".key", fmt.Sprint(n / 2)} }},
	}
	// side runs op on both ledgers in each iteration and reports the
	// ratio of the total times, and of the median times ("ratio-median":
	// on a shared machine a few runs slowed by other load move the totals,
	// not the medians).
	side := func(b *testing.B, op func(i int)) {
		var took [2]time.Duration
		var each [2][]time.Duration
		for range b.N {
			for i := range sizes {
				t0 := time.Now()
				op(i)
				d := time.Since(t0)
				took[i] += d
				each[i] = append(each[i], d)
			}
		}
		b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "ns-small/op")
		b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "ns-large/op")
		b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
		for i := range each {
			slices.Sort(each[i])
		}
		b.ReportMetric(float64(each[1][b.N/2])/float64(each[0][b.N/2]), "ratio-median")
	}
	for _, c := range cmds {
		b.Run("cmd/"+c.name, func(b *testing.B) {
			side(b, func(i int) {
				args := append([]string{"govledger", "--db", paths[i], "--output", "json"}, c.args(sizes[i])...)
				if code := run(context.Background(), args, strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }); code != 0 {
					b.Fatalf("%v: exit %d", args, code)
				}
			})
		})
	}
	var ls [2]*ledger.Ledger
	for i := range sizes {
		l, err := bolt.Open(paths[i], &bolt.Options{ReadOnly: true, NoCreate: true})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		ls[i] = l
	}
	queries := []struct {
		name string
		q    func(n int) ledger.Query
	}{
		{"newest 20", func(int) ledger.Query { return ledger.Query{Limit: 20, Newest: true} }},
		{"agent newest 20", func(int) ledger.Query { return ledger.Query{Agent: "agent-3", Limit: 20, Newest: true} }},
		{"before mid 20", func(n int) ledger.Query { return ledger.Query{Before: uint64(n / 2), Limit: 20, Newest: true} }},
		{"since oldest 20", func(int) ledger.Query {
			return ledger.Query{Since: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), Limit: 20}
		}},
		{"workflow newest 20", func(int) ledger.Query { return ledger.Query{WorkflowID: "wf-7", Limit: 20, Newest: true} }},
	}
	for _, c := range queries {
		b.Run("query/"+c.name, func(b *testing.B) {
			side(b, func(i int) {
				seqs, err := ls[i].Find(b.Context(), c.q(sizes[i]))
				if err != nil || len(seqs) != 20 {
					b.Fatalf("Find: %d seqs, %v", len(seqs), err)
				}
				for _, seq := range seqs {
					if _, _, err := ls[i].Get(b.Context(), seq); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
