// Package bench measures govledger's record and verify paths against raw
// bbolt on the same disk, in one run, so the figures are ratios that hold
// on a noisy shared machine. It backs "govledger bench".
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/govledger/govledger/cmd/govledger/internal/gcbudget"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/perf"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// Options configure a run.
type Options struct {
	N       int            // documents per measurement (default 1000)
	Writers int            // concurrent writers (default 8)
	Format  handoff.Format // "" = governed/1
	Dir     string         // scratch folder on the disk to measure (default: a temp dir)
	// VerifyN, if > 0, is the number of entries of the ledger verify is
	// measured on, written for it by verifyWriters concurrent writers
	// (with a raw file of the same documents for the scan); 0: verify
	// reads the N-entry ledger of the sequential record run.
	VerifyN int
	// GrowN, if > 0, adds the stream rows (grown.go): "govledger record -"
	// on a ledger of GrowN entries against the same on a new ledger, and
	// against the in-process record path. They need Run.
	GrowN int
	// Run runs the govledger command line args with stdin as its standard
	// input, as a user runs it (the CLI runs its own executable).
	Run func(ctx context.Context, args []string, stdin io.Reader) error
	// VerifyGC: each verify sets the collector as "govledger verify" does
	// when the user set neither GOGC nor GOMEMLIMIT (gcbudget.Verify).
	VerifyGC bool
	// Stage, if set, is told what is being measured.
	Stage func(string)
}

// Result holds absolute rates (per second) and Ratios, each of which
// names its yardstick.
type Result struct {
	Schema          string `json:"schema"`
	Format          string `json:"format"`
	N               int    `json:"n"`
	Writers         int    `json:"writers"`
	AvgPayloadBytes int    `json:"avg_payload_bytes"`

	// The record path, with one writer and with Writers.
	RecordPerSec     float64 `json:"record_per_sec"`
	ConcurrentPerSec float64 `json:"concurrent_record_per_sec"`
	// Yardsticks of the record rows, on the same documents and disk:
	// raw bbolt, one fsync'd Update per value (one writer); raw bbolt,
	// Writers writers and one committer draining the queue into one
	// Update (perf.RawBboltGroupAppend); a plain file, append and
	// fdatasync per value (one writer) and per drained queue (Writers);
	// SHA-256 of the documents in memory.
	RawBboltPerSec     float64 `json:"raw_bbolt_per_sec"`
	RawGroupPerSec     float64 `json:"raw_bbolt_group_commit_per_sec"`
	RawFilePerSec      float64 `json:"raw_file_per_sec"`
	RawFileGroupPerSec float64 `json:"raw_file_group_commit_per_sec"`
	HashPerSec         float64 `json:"sha256_per_sec"`

	// Verify of VerifyEntries entries: full (with Cores and with one
	// core) and chain only.
	VerifyPerSec        float64 `json:"verify_per_sec"`
	VerifyOneCorePerSec float64 `json:"verify_one_core_per_sec"`
	VerifyChainPerSec   float64 `json:"verify_chain_only_per_sec"`
	// Yardsticks of the verify rows: a raw bbolt scan of the same
	// documents that SHA-256s each value; the same scan of the verified
	// ledger's own entries and blobs (bbolt buckets "entries" and
	// "blobs"), per entry; SHA-256 of those entries and blobs in memory,
	// per entry.
	RawScanPerSec       float64 `json:"raw_scan_per_sec"`
	RawLedgerScanPerSec float64 `json:"raw_ledger_scan_per_sec"`
	LedgerHashPerSec    float64 `json:"ledger_sha256_per_sec"`

	// Ratios: every path against each of its yardsticks.
	Ratios []Ratio `json:"ratios"`

	VerifyHeapPeakMiB float64 `json:"verify_heap_peak_mib"`
	// What a full verify allocates per entry (bytes and objects; the
	// least of its rounds, with every core): what the collector works
	// through.
	VerifyAllocBytesPerEntry float64 `json:"verify_alloc_bytes_per_entry"`
	VerifyAllocsPerEntry     float64 `json:"verify_allocs_per_entry"`

	// The stream rows (Options.GrowN): "govledger record -" appending to a
	// ledger of GrownEntries entries and to a new one, and the in-process
	// record path with one writer in the same rounds.
	GrownEntries       int     `json:"grown_entries,omitzero"`
	StreamGrownPerSec  float64 `json:"stream_grown_per_sec,omitzero"`
	StreamNewPerSec    float64 `json:"stream_new_per_sec,omitzero"`
	RecordBesidePerSec float64 `json:"record_beside_stream_per_sec,omitzero"`
	Accepted           int     `json:"accepted"`
	Rejected           int     `json:"rejected"`

	Cores         int `json:"cores"`          // GOMAXPROCS of the other verify runs
	VerifyEntries int `json:"verify_entries"` // entries of the verified ledger
	VerifyRounds  int `json:"verify_rounds"`  // each verify rate and the raw scan's is the best of this many runs
	RecordRounds  int `json:"record_rounds"`  // each record rate and the raw append's is the best of this many runs
}

// Ratio is a measured path against one yardstick: Ratio is the path's
// rate over the yardstick's, and Goal, when set, the least the path is
// meant to reach.
type Ratio struct {
	Path      string  `json:"path"`
	Yardstick string  `json:"yardstick"`
	Ratio     float64 `json:"ratio"`
	Goal      float64 `json:"goal,omitzero"`
}

// The names of the rows, as Ratio and the text output give them.
const (
	PathRecord        = "record, 1 writer"
	PathRecordWriters = "record, %d writers"
	PathVerify        = "verify, full, GOMAXPROCS=%d"
	PathVerifyOneCore = "verify, full, GOMAXPROCS=1"
	PathVerifyChain   = "verify, chain + Merkle"

	YardRawBbolt     = "raw bbolt, one fsync'd Update per value"
	YardRawGroup     = "raw bbolt, %d writers, one committer draining the queue into one Update"
	YardRawFile      = "plain file, append + fdatasync per value"
	YardRawFileGroup = "plain file, %d writers, one append + fdatasync per drained queue"
	YardHash         = "SHA-256 of the documents in memory"
	YardRawScan      = "raw bbolt scan + SHA-256 of the same documents"
	YardLedgerScan   = "raw bbolt scan + SHA-256 of the ledger's entries and blobs"
	YardLedgerHash   = "SHA-256 of the ledger's entries and blobs in memory"
)

// Run performs the measurements. Every document of the record runs is
// expected to be accepted; a rejection is reported in the result.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.N <= 0 {
		o.N = 1000
	}
	if o.Writers <= 0 {
		o.Writers = 8
	}
	if o.Format == "" {
		o.Format = handoff.Governed
	}
	stage := o.Stage
	if stage == nil {
		stage = func(string) {}
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "govledger-bench-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	g, err := newGenerator(dir, o.Format)
	if err != nil {
		return nil, err
	}
	res := &Result{Schema: "govledger.bench/v2", Format: string(o.Format), N: o.N, Writers: o.Writers}

	docs := func(base int) [][]byte {
		out := make([][]byte, o.N)
		now := time.Now().UTC()
		total := 0
		for i := range out {
			out[i] = g.doc(base+i, now)
			total += len(out[i])
		}
		res.AvgPayloadBytes = total / o.N
		return out
	}

	// 1-3. The record rows and their raw bbolt baselines take turns in
	// recordRounds rounds, each writing its share of the documents into
	// its own file, so a burst of other work on a shared machine falls on
	// all four alike; each rate is the best of its rounds.
	rawPath, seqPath := filepath.Join(dir, "raw.db"), filepath.Join(dir, "record.db")
	rawDocs, seqDocs, concDocs := docs(0), docs(o.N), docs(2*o.N)
	seqL, err := openRecordLedger(ctx, seqPath, g.cfg)
	if err != nil {
		return nil, err
	}
	defer seqL.Close()
	concL, err := openRecordLedger(ctx, filepath.Join(dir, "concurrent.db"), g.cfg)
	if err != nil {
		return nil, err
	}
	defer concL.Close()
	res.RecordRounds = recordRounds
	for r := range recordRounds {
		lo, hi := r*o.N/recordRounds, (r+1)*o.N/recordRounds
		if hi == lo {
			continue
		}
		best := func(rate *float64, d time.Duration) { *rate = max(*rate, float64(hi-lo)/d.Seconds()) }
		round := fmt.Sprintf(" (round %d of %d)", r+1, recordRounds)

		// Raw bbolt: one fsync'd transaction per value, one writer.
		stage("raw bbolt append" + round)
		d, err := perf.RawBboltAppend(rawPath, rawDocs[lo:hi], 1)
		if err != nil {
			return nil, err
		}
		best(&res.RawBboltPerSec, d)

		// Raw bbolt, the same writers, one committer draining the queue.
		stage(fmt.Sprintf("raw bbolt append, %d writers, group commit%s", o.Writers, round))
		if d, err = perf.RawBboltGroupAppend(filepath.Join(dir, "raw-group.db"), rawDocs[lo:hi], o.Writers); err != nil {
			return nil, err
		}
		best(&res.RawGroupPerSec, d)

		// A plain file: append + fdatasync, one writer and the writers
		// sharing commits.
		stage("plain file append + fdatasync" + round)
		if d, err = perf.RawFileAppend(filepath.Join(dir, "raw.log"), rawDocs[lo:hi], 1); err != nil {
			return nil, err
		}
		best(&res.RawFilePerSec, d)
		stage(fmt.Sprintf("plain file append + fdatasync, %d writers, group commit%s", o.Writers, round))
		if d, err = perf.RawFileAppend(filepath.Join(dir, "raw-group.log"), rawDocs[lo:hi], o.Writers); err != nil {
			return nil, err
		}
		best(&res.RawFileGroupPerSec, d)
		best(&res.HashPerSec, perf.SHA256Values(rawDocs[lo:hi]))

		// The record path, sequential.
		stage("record, sequential" + round)
		if d, err = record(ctx, seqL, g.cfg, seqDocs[lo:hi], lo, 1, res); err != nil {
			return nil, err
		}
		best(&res.RecordPerSec, d)

		// The record path, concurrent writers (group commit).
		stage(fmt.Sprintf("record, %d writers%s", o.Writers, round))
		if d, err = record(ctx, concL, g.cfg, concDocs[lo:hi], o.N+lo, o.Writers, res); err != nil {
			return nil, err
		}
		best(&res.ConcurrentPerSec, d)
	}
	if err := seqL.Close(); err != nil {
		return nil, err
	}
	if err := concL.Close(); err != nil {
		return nil, err
	}

	// 4. Verify a ledger against a raw scan of the same documents that
	// SHA-256s each value.
	verifyPath, scanPath := seqPath, rawPath
	if o.VerifyN > 0 {
		stage(fmt.Sprintf("writing a %d-entry ledger for verify (%d writers)", o.VerifyN, verifyWriters))
		verifyPath, scanPath = filepath.Join(dir, "verify.db"), filepath.Join(dir, "verify-raw.db")
		if err := writeVerifyLedger(ctx, verifyPath, scanPath, g, o.VerifyN, 3*o.N); err != nil {
			return nil, err
		}
	}
	if err := measureVerify(ctx, verifyPath, scanPath, o.VerifyGC, res, stage); err != nil {
		return nil, err
	}

	if o.GrowN > 0 {
		if err := measureStream(ctx, o, dir, g, res, stage); err != nil {
			return nil, err
		}
	}

	res.ratios()
	return res, nil
}

// ratios sets res.Ratios from the rates.
func (res *Result) ratios() {
	w, c := res.Writers, res.Cores
	add := func(path string, rate float64, yard string, yrate float64, goal float64) {
		res.Ratios = append(res.Ratios, Ratio{Path: path, Yardstick: yard, Ratio: ratio(rate, yrate), Goal: goal})
	}
	writers := fmt.Sprintf(PathRecordWriters, w)
	add(PathRecord, res.RecordPerSec, YardRawBbolt, res.RawBboltPerSec, 0.8)
	add(PathRecord, res.RecordPerSec, YardRawFile, res.RawFilePerSec, 0)
	add(writers, res.ConcurrentPerSec, fmt.Sprintf(YardRawGroup, w), res.RawGroupPerSec, 0.8)
	add(writers, res.ConcurrentPerSec, fmt.Sprintf(YardRawFileGroup, w), res.RawFileGroupPerSec, 0)
	add(writers, res.ConcurrentPerSec, YardRawBbolt, res.RawBboltPerSec, 0)
	chain, full := PathVerifyChain, fmt.Sprintf(PathVerify, c)
	add(chain, res.VerifyChainPerSec, YardRawScan, res.RawScanPerSec, 0.5)
	add(full, res.VerifyPerSec, YardRawScan, res.RawScanPerSec, 0.15)
	add(PathVerifyOneCore, res.VerifyOneCorePerSec, YardRawScan, res.RawScanPerSec, 0)
	if c > 1 {
		add(full, res.VerifyPerSec, PathVerifyOneCore, res.VerifyOneCorePerSec, 1.6)
	}
	add(chain, res.VerifyChainPerSec, YardLedgerScan, res.RawLedgerScanPerSec, 0)
	add(full, res.VerifyPerSec, YardLedgerScan, res.RawLedgerScanPerSec, 0)
	add(chain, res.VerifyChainPerSec, YardLedgerHash, res.LedgerHashPerSec, 0)
	add(full, res.VerifyPerSec, YardLedgerHash, res.LedgerHashPerSec, 0)
	if res.GrownEntries > 0 {
		grown := fmt.Sprintf(PathStreamGrown, res.GrownEntries)
		add(grown, res.StreamGrownPerSec, PathStreamNew, res.StreamNewPerSec, 0.9)
		add(PathStreamNew, res.StreamNewPerSec, PathRecordBeside, res.RecordBesidePerSec, 0.8)
	}
}

// verifyRounds is how many times each verify measurement and the raw scan
// run, interleaved; each rate is the best of its runs, so that a burst of
// other work on a shared machine does not decide a ratio.
const verifyRounds = 3

// verifyWriters write the ledger of Options.VerifyN (group commit).
const verifyWriters = 64

// measureVerify measures, verifyRounds times in turn: the raw scan of
// scanPath, the full verify of the ledger at path with every core and
// with one, and the chain-only verify. It records the best rates and the
// peak heap of the full verifies.
//
// Each verify is timed as "govledger verify" runs it: the Open that walks
// every page of the file first (bolt.Options.CheckPages), the replay, and
// for the full verify the store's own consistency check (Ledger.Check) as
// the replay's structural pass. The chain-only verify is the walk and the
// replay without re-evaluation: the hash chain, the Merkle tree and the
// blobs' hashes.
func measureVerify(ctx context.Context, path, scanPath string, gc bool, res *Result, stage func(string)) error {
	res.Cores, res.VerifyRounds = runtime.GOMAXPROCS(0), verifyRounds
	best := func(v *float64, r float64) { *v = max(*v, r) }
	for round := 1; round <= verifyRounds; round++ {
		stage(fmt.Sprintf("raw bbolt scan + SHA-256 (round %d of %d)", round, verifyRounds))
		n, d, err := perf.RawBboltScanSHA256(scanPath)
		if err != nil {
			return err
		}
		best(&res.RawScanPerSec, rate(n, d))
		// The ledger's own buckets (ledger/bolt's layout).
		counts, d, err := perf.RawBboltScanBuckets(path, "entries", "blobs")
		if err != nil {
			return err
		}
		best(&res.RawLedgerScanPerSec, rate(counts[0], d))
		if counts, d, err = perf.SHA256Buckets(path, "entries", "blobs"); err != nil {
			return err
		}
		best(&res.LedgerHashPerSec, rate(counts[0], d))
		for _, m := range []struct {
			name  string
			cores int
			chain bool
			rate  *float64
		}{
			{"verify", 0, false, &res.VerifyPerSec},
			{"verify, chain only", 0, true, &res.VerifyChainPerSec},
			{"verify, GOMAXPROCS=1", 1, false, &res.VerifyOneCorePerSec},
		} {
			stage(fmt.Sprintf("%s (round %d of %d)", m.name, round, verifyRounds))
			entries, d, peak, alloc, err := timeVerify(ctx, path, m.chain, m.cores, gc)
			if err != nil {
				return err
			}
			best(m.rate, rate(entries, d))
			res.VerifyEntries = entries
			if !m.chain {
				res.VerifyHeapPeakMiB = max(res.VerifyHeapPeakMiB, float64(peak)/(1<<20))
			}
			if m.rate == &res.VerifyPerSec && entries > 0 {
				b, n := float64(alloc.bytes)/float64(entries), float64(alloc.objects)/float64(entries)
				if round == 1 || b < res.VerifyAllocBytesPerEntry {
					res.VerifyAllocBytesPerEntry, res.VerifyAllocsPerEntry = b, n
				}
			}
		}
	}
	return nil
}

// allocs are the heap allocations of a run, from runtime/metrics.
type allocs struct{ bytes, objects uint64 }

func readAllocs() allocs {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	return allocs{s[0].Value.Uint64(), s[1].Value.Uint64()}
}

// timeVerify opens the ledger at path and verifies it (chain: without
// re-evaluation and the store check), with GOMAXPROCS=cores if cores > 0
// and the collector set as "govledger verify" sets it if gc,
// and returns the entries replayed, the time taken, the peak heap seen and
// the allocations made (by the whole process while it ran: the verify, and
// the sampler's few).
func timeVerify(ctx context.Context, path string, chain bool, cores int, gc bool) (int, time.Duration, uint64, allocs, error) {
	if cores > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cores))
	}
	// What the runs before left behind goes back to the system: the
	// verify starts as in a process of its own.
	debug.FreeOSMemory()
	a0 := readAllocs()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// runtime/metrics, not ReadMemStats: reading it does not stop the
		// world, so sampling does not slow down the replay it watches.
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > peak.Load() {
				peak.Store(v.Uint64())
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	rep, err := func() (*verify.Report, error) {
		l, err := bolt.Open(path, &bolt.Options{ReadOnly: true, NoCreate: true, CheckPages: true})
		if err != nil {
			return nil, err
		}
		defer l.Close()
		if gc {
			head, _, err := l.Head(ctx)
			if err != nil {
				return nil, err
			}
			defer gcbudget.Verify(head)()
		}
		opts := verify.Options{SkipReevaluate: chain}
		if !chain {
			opts.Structural, opts.Head = l.Check, l.Head
		}
		return verify.Replay(ctx, verify.LedgerSource(l), opts)
	}()
	d := time.Since(start)
	close(stop)
	wg.Wait()
	a1 := readAllocs()
	if err != nil {
		return 0, 0, 0, allocs{}, err
	}
	if !rep.OK() {
		return 0, 0, 0, allocs{}, fmt.Errorf("bench: verify of the fresh ledger failed: %d findings, first %+v", len(rep.Findings), rep.Findings[0])
	}
	return int(rep.Entries), d, peak.Load(), allocs{a1.bytes - a0.bytes, a1.objects - a0.objects}, nil
}

// writeVerifyLedger writes n fresh documents, verifyWriters at a time, to
// a ledger at path, and the same documents to a raw file at rawPath, in
// chunks so that only one chunk of documents is held at a time. Every
// document must be accepted.
func writeVerifyLedger(ctx context.Context, path, rawPath string, g *generator, n, base int) error {
	const chunk = 10_000
	l, err := openRecordLedger(ctx, path, g.cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	now := time.Now().UTC()
	for from := 0; from < n; from += chunk {
		docs := make([][]byte, min(chunk, n-from))
		for i := range docs {
			docs[i] = g.doc(base+from+i, now)
		}
		if err := perf.RawBboltLoad(rawPath, docs); err != nil {
			return err
		}
		var scratch Result
		if _, err := record(ctx, l, g.cfg, docs, base+from, verifyWriters, &scratch); err != nil {
			return err
		}
		if scratch.Rejected > 0 {
			return fmt.Errorf("bench: %d documents of the verify ledger rejected", scratch.Rejected)
		}
	}
	return l.Close()
}

// recordRounds is how many turns the record rows and their raw baselines
// take, each on its share of the documents.
const recordRounds = 3

// openRecordLedger creates the ledger a record row writes, with the
// snapshots in force (outside the timed loops).
func openRecordLedger(ctx context.Context, path string, cfg *govern.Config) (*ledger.Ledger, error) {
	l, err := bolt.Open(path, nil)
	if err != nil {
		return nil, err
	}
	if _, err := l.Append(ctx, &ledger.Request{Snapshots: []ledger.Snapshot{
		{What: entry.SnapshotManifest, Bytes: cfg.Registry.Snapshot},
		{What: entry.SnapshotLock, Bytes: cfg.LockBytes},
	}}); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// record records docs (document numbers base, base+1, ...) into l from
// writers goroutines and returns the wall time.
func record(ctx context.Context, l *ledger.Ledger, cfg *govern.Config, docs [][]byte, base, writers int, res *Result) (time.Duration, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(docs) {
					return
				}
				p, err := govern.ReadPayload(bytes.NewReader(docs[i]), cfg.Params.MaxPayload)
				if err == nil {
					var out *govern.Outcome
					out, err = govern.Record(ctx, l, cfg, "bench-"+strconv.Itoa(base+i), p)
					if err == nil {
						mu.Lock()
						if out.Decision.Decision == reason.Accepted {
							res.Accepted++
						} else {
							res.Rejected++
							if res.Rejected == 1 {
								firstErr = fmt.Errorf("bench: document %d rejected: %v", base+i, out.Decision.Reasons)
							}
						}
						mu.Unlock()
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	return d, firstErr
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return float64(int(a/b*1000+0.5)) / 1000
}

// generator makes distinct, valid documents of one format.
type generator struct {
	cfg *govern.Config
	doc func(i int, now time.Time) []byte
}

func newGenerator(dir string, f handoff.Format) (*generator, error) {
	if err := demo.Unpack(filepath.Join(dir, "data")); err != nil {
		return nil, err
	}
	regName := "registry"
	if f == handoff.Swarm || f == handoff.Skill {
		regName = "skills"
	}
	cfg, err := demo.Config(filepath.Join(dir, "data"), regName)
	if err != nil {
		return nil, err
	}
	g := &generator{cfg: cfg}
	var tmpl []byte
	switch f {
	case handoff.Governed:
		tmpl, err = demo.Document("01-product-to-analysis.json")
		g.doc = func(i int, now time.Time) []byte {
			b := bytes.Replace(tmpl, []byte("550e8400-e29b-41d4-a716-446655440000"), []byte(uuid.NewString()), 1)
			b = bytes.Replace(b, []byte("2026-02-11T00:45:02Z"), []byte(now.Format(time.RFC3339)), 1)
			return bytes.Replace(b, []byte("validate product hypothesis"), []byte("validate product hypothesis #"+strconv.Itoa(i)), 1)
		}
	case handoff.Swarm, handoff.Skill:
		name := "11-swarm-to-litpm.yaml"
		if f == handoff.Skill {
			name = "12-researcher-to-synthesizer.yaml"
		}
		tmpl, err = demo.Document(name)
		g.doc = func(i int, now time.Time) []byte {
			return demo.Retime(tmpl, now, "bench-"+strconv.Itoa(i))
		}
	case handoff.VBW:
		cfg.Params.From, cfg.Params.To = "domain-03-technical", "domain-02-analysis"
		tmpl, err = demo.Document("09-qa-result.vbw.json")
		g.doc = func(i int, now time.Time) []byte {
			return bytes.Replace(tmpl, []byte("line 42"), []byte("line "+strconv.Itoa(i)), 1)
		}
	case handoff.Task:
		cfg.Params.From, cfg.Params.To = "orchestrator", "domain-04-content"
		tmpl, err = demo.Document("10-task-handoff.md")
		g.doc = func(i int, now time.Time) []byte {
			return bytes.Replace(tmpl, []byte("Task 014"), []byte("Task "+strconv.Itoa(i)), 1)
		}
	case handoff.A2A:
		// An A2A 0.3.0 message naming the governed/1 example's agents.
		g.doc = func(i int, now time.Time) []byte {
			return fmt.Appendf(nil, `{"kind": "message", "messageId": %q, "contextId": "bench", "role": "user", `+
				`"parts": [{"kind": "text", "text": "validate product hypothesis #%d"}], `+
				`"metadata": {"govledger": {"source": "domain-05-product", "target": "domain-02-analysis"}}}`, uuid.NewString(), i)
		}
	default:
		return nil, fmt.Errorf("bench: unknown format %q", f)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}
