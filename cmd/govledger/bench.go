package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/cmd/govledger/internal/bench"
	"github.com/govledger/govledger/handoff"
)

func benchCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure record and verify against raw bbolt on this disk",
		Description: `Generates N governed hand-offs (or --format F) and measures, in one run on the
same disk, each path against yardsticks that do the same work without the
ledger, the best a competent user would write:
  record, 1 writer    raw bbolt, one fsync'd Update per value; a plain file,
                      append + fdatasync per value (the disk's limit)
  record, W writers   raw bbolt, W writers and one committer draining the
                      queue into one Update (group commit); a plain file, the
                      same with one append + fdatasync per drained queue
  verify              a raw bbolt scan that SHA-256s each value of the same
                      documents; the same scan of the ledger's entries and
                      blobs; SHA-256 of those in memory (the hashing limit)
Every ratio names its yardstick (text and JSON alike); goals are shown beside
them. Ratios measured side by side hold on a noisy machine; absolute rates do
not. The record rows and their yardsticks take turns in 3 rounds, each on a
third of the documents; verify (full, full with GOMAXPROCS=1, chain only) and
its yardsticks take turns in 3 rounds; each rate is the best of its rounds.
--verify-n measures verify on a larger ledger, written for it by 64 writers
sharing commits. --grow-n N adds the stream rows: "govledger record -" (this
executable, as a child process, its open included) appending an NDJSON stream
to a ledger of N entries against the same on a new ledger (appends must not
slow as the ledger grows), and against the in-process record path with one
writer, the three taking turns in 3 rounds on a third of the documents each.

With --server it measures the service instead: for each number of --clients,
submitting over loopback HTTP (keep-alive, an Idempotency-Key per document) to
an in-process govledger serve, beside the direct record path and raw bbolt
written by as many writers sharing commits (one committer draining the queue),
the three taking turns, with p50/p99 latency per document. --postgres URL adds,
for each number of clients, HTTP to one and to two in-process replicas sharing
a fresh PostgreSQL database (created and dropped in the server URL names; the
role needs CREATEDB), the two forwarding their submissions to the one holding
the writer role (as serve --forward-addr does), against HTTP to the bbolt server.

Examples:
  govledger bench
  govledger bench --n 5000 --dir /var/lib/govledger/bench
  govledger bench --n 300 --verify-n 100000
  govledger bench --n 3000 --grow-n 1000000
  govledger --output json bench --format swarm/2
  govledger bench --server --clients 1,8,64
  govledger bench --server --postgres postgres://bench@127.0.0.1:5432/postgres
  govledger bench --server --clients 64 --cpuprofile cpu.out && go tool pprof -top cpu.out`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: 1000, Usage: "documents per measurement"},
			&cli.IntFlag{Name: "writers", Value: 8, Usage: "concurrent writers for the group-commit run"},
			&cli.StringFlag{Name: "format", Value: string(handoff.Governed), Usage: "document format: governed/1, swarm/2, skill/1, vbw/1, task/1, a2a/1"},
			&cli.StringFlag{Name: "dir", Usage: "scratch folder on the disk to measure (default: a temporary folder)"},
			&cli.IntFlag{Name: "verify-n", Usage: "entries of the ledger verify is measured on (default: the --n of the sequential record run)"},
			&cli.IntFlag{Name: "grow-n", Usage: "entries of the grown ledger the stream rows append to (0: no stream rows)"},
			&cli.BoolFlag{Name: "server", Usage: "measure submitting over HTTP to govledger serve against record and raw bbolt"},
			&cli.IntSliceFlag{Name: "clients", Value: cli.NewIntSlice(1, 8, 64), Usage: "with --server: numbers of concurrent clients"},
			&cli.StringFlag{Name: "postgres", Usage: "with --server: a postgres:// URL where the bench may create databases, to measure one and two replicas on PostgreSQL"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole run to this file (go tool pprof reads it)"},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("bench takes no arguments")
			}
			f := handoff.Format(c.String("format"))
			if !knownFormat(f) {
				return usageErr("--format %q: want one of governed/1, swarm/2, skill/1, vbw/1, task/1, a2a/1", f)
			}
			if c.Int("n") <= 0 || c.Int("writers") <= 0 || c.Int("verify-n") < 0 || c.Int("grow-n") < 0 {
				return usageErr("--n and --writers must be positive, --verify-n and --grow-n not negative")
			}
			if path := c.String("cpuprofile"); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			if c.Bool("server") {
				return benchServer(c, g, f)
			}
			res, err := bench.Run(c.Context, bench.Options{
				N: c.Int("n"), Writers: c.Int("writers"), Format: f, Dir: c.String("dir"), VerifyN: c.Int("verify-n"),
				GrowN: c.Int("grow-n"), Run: runSelf,
				VerifyGC: g.getenv("GOGC") == "" && g.getenv("GOMEMLIMIT") == "",
				Stage:    func(s string) { fmt.Fprintf(g.stderr, "bench: %s…\n", s) },
			})
			if err != nil {
				return internalErr(err)
			}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			writeBenchText(g.stdout, res)
			return nil
		},
	}
}

// runSelf runs this executable with args and stdin, its output discarded
// but for the end of its standard error, which an error carries.
func runSelf(ctx context.Context, args []string, stdin io.Reader) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = stdin, &stderr
	if err := cmd.Run(); err != nil {
		tail := stderr.Bytes()
		if len(tail) > 2048 {
			tail = tail[len(tail)-2048:]
		}
		return fmt.Errorf("govledger %s: %w: %s", strings.Join(args, " "), err, tail)
	}
	return nil
}

// writeBenchText renders a bench result as text: the rates, then every
// ratio with the yardstick it is against.
func writeBenchText(w io.Writer, res *bench.Result) {
	fmt.Fprintf(w, "%d %s documents (avg %d bytes), %d concurrent writers, best of %d rounds\n", res.N, res.Format, res.AvgPayloadBytes, res.Writers, res.RecordRounds)
	row := func(name string, v float64) { fmt.Fprintf(w, "  %-72s %10.0f /s\n", name, v) }
	row(bench.PathRecord, res.RecordPerSec)
	row(fmt.Sprintf(bench.PathRecordWriters, res.Writers), res.ConcurrentPerSec)
	row(bench.YardRawBbolt, res.RawBboltPerSec)
	row(fmt.Sprintf(bench.YardRawGroup, res.Writers), res.RawGroupPerSec)
	row(bench.YardRawFile, res.RawFilePerSec)
	row(fmt.Sprintf(bench.YardRawFileGroup, res.Writers), res.RawFileGroupPerSec)
	row(bench.YardHash, res.HashPerSec)
	fmt.Fprintf(w, "verify: %d entries, best of %d rounds\n", res.VerifyEntries, res.VerifyRounds)
	row(fmt.Sprintf(bench.PathVerify, res.Cores), res.VerifyPerSec)
	row(bench.PathVerifyOneCore, res.VerifyOneCorePerSec)
	row(bench.PathVerifyChain, res.VerifyChainPerSec)
	row(bench.YardRawScan, res.RawScanPerSec)
	row(bench.YardLedgerScan, res.RawLedgerScanPerSec)
	row(bench.YardLedgerHash, res.LedgerHashPerSec)
	if res.GrownEntries > 0 {
		fmt.Fprintf(w, "stream: best of 3 rounds\n")
		row(fmt.Sprintf(bench.PathStreamGrown, res.GrownEntries), res.StreamGrownPerSec)
		row(bench.PathStreamNew, res.StreamNewPerSec)
		row(bench.PathRecordBeside, res.RecordBesidePerSec)
	}
	fmt.Fprintf(w, "  %-72s %10.1f MiB\n", "verify heap peak", res.VerifyHeapPeakMiB)
	fmt.Fprintf(w, "  %-72s %10.0f B in %.0f objects\n", "verify allocations per entry", res.VerifyAllocBytesPerEntry, res.VerifyAllocsPerEntry)
	fmt.Fprintf(w, "ratios:\n")
	for _, r := range res.Ratios {
		goal := ""
		if r.Goal > 0 {
			goal = fmt.Sprintf("   (goal >= %g)", r.Goal)
		}
		fmt.Fprintf(w, "  %-28s %7.3fx  %s%s\n", r.Path, r.Ratio, r.Yardstick, goal)
	}
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usageErr("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, internalErr(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func benchServer(c *cli.Context, g *globals, f handoff.Format) error {
	for _, n := range c.IntSlice("clients") {
		if n <= 0 {
			return usageErr("--clients must be positive")
		}
	}
	res, err := bench.RunServer(c.Context, bench.ServerOptions{
		N: c.Int("n"), Clients: c.IntSlice("clients"), Format: f, Dir: c.String("dir"), Postgres: c.String("postgres"),
		Stage: func(s string) { fmt.Fprintf(g.stderr, "bench: %s…\n", s) },
	})
	if err != nil {
		return internalErr(err)
	}
	if g.output == "json" {
		return writeJSON(g.stdout, res)
	}
	w := g.stdout
	fmt.Fprintf(w, "%d %s documents (avg %d bytes) per measurement; HTTP over loopback to an in-process server\n", res.N, res.Format, res.AvgPayloadBytes)
	fmt.Fprintf(w, "raw bbolt: as many writers, one committer draining the queue into one Update\n")
	fmt.Fprintf(w, "%7s %12s %12s %12s %9s %9s %15s %15s\n", "clients", "raw bbolt/s", "record/s", "HTTP/s", "HTTP/rec", "HTTP/raw", "record p50/p99", "HTTP p50/p99")
	for _, r := range res.Runs {
		fmt.Fprintf(w, "%7d %12.0f %12.0f %12.0f %8.2fx %8.2fx %6.2f/%6.2fms %6.2f/%6.2fms\n", r.Clients, r.RawBboltPerSec, r.RecordPerSec,
			r.HTTPPerSec, r.HTTPVsRecord, r.HTTPVsRawBbolt, r.RecordP50Ms, r.RecordP99Ms, r.HTTPP50Ms, r.HTTPP99Ms)
	}
	if c.String("postgres") == "" {
		return nil
	}
	fmt.Fprintf(w, "\nHTTP to servers on one PostgreSQL database, against HTTP to the bbolt server (goal: 2 replicas >= 0.5x at 64 clients)\n")
	fmt.Fprintf(w, "%7s %12s %12s %10s %12s %10s %15s %17s %14s\n", "clients", "bbolt HTTP/s", "PG 1 rep/s", "1 rep/bb", "PG 2 reps/s", "2 reps/bb", "2 reps p50/p99",
		"entries/commit 1/2", "2 reps retries")
	for _, r := range res.Runs {
		fmt.Fprintf(w, "%7d %12.0f %12.0f %9.2fx %12.0f %9.2fx %6.2f/%6.2fms %8.1f/%8.1f %13.2f\n", r.Clients, r.HTTPPerSec, r.PG1PerSec, r.PG1VsBbolt,
			r.PG2PerSec, r.PG2VsBbolt, r.PG2P50Ms, r.PG2P99Ms, r.PG1EntriesPerCommit, r.PG2EntriesPerCommit, r.PG2ConflictsPerCommit)
	}
	return nil
}
