package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/cmd/govledger/internal/bench"
	"github.com/govledger/govledger/handoff"
)

func benchCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure record and verify against raw bbolt on this disk",
		Description: `Generates N governed hand-offs (or --format F) and measures, in one run on the
same disk: the record path against raw bbolt (one fsync'd transaction per
value), the record path with concurrent writers (group commit) against the same
raw figure, and verify against a raw bbolt scan that SHA-256s each value.
Ratios measured side by side hold on a noisy machine; absolute rates do not.

Examples:
  govledger bench
  govledger bench --n 5000 --dir /var/lib/govledger/bench
  govledger --output json bench --format swarm/2`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: 1000, Usage: "documents per measurement"},
			&cli.IntFlag{Name: "writers", Value: 8, Usage: "concurrent writers for the group-commit run"},
			&cli.StringFlag{Name: "format", Value: string(handoff.Governed), Usage: "document format: governed/1, swarm/2, skill/1, vbw/1, task/1"},
			&cli.StringFlag{Name: "dir", Usage: "scratch folder on the disk to measure (default: a temporary folder)"},
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
				return usageErr("--format %q: want one of governed/1, swarm/2, skill/1, vbw/1, task/1", f)
			}
			if c.Int("n") <= 0 || c.Int("writers") <= 0 {
				return usageErr("--n and --writers must be positive")
			}
			res, err := bench.Run(c.Context, bench.Options{
				N: c.Int("n"), Writers: c.Int("writers"), Format: f, Dir: c.String("dir"),
				Stage: func(s string) { fmt.Fprintf(g.stderr, "bench: %s…\n", s) },
			})
			if err != nil {
				return internalErr(err)
			}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			w := g.stdout
			fmt.Fprintf(w, "%d %s documents (avg %d bytes), %d concurrent writers\n", res.N, res.Format, res.AvgPayloadBytes, res.Writers)
			fmt.Fprintf(w, "  raw bbolt, 1 fsync'd tx per value   %10.0f /s\n", res.RawBboltPerSec)
			fmt.Fprintf(w, "  record, sequential                  %10.0f /s   %.2fx raw bbolt (target >= 0.9)\n", res.RecordPerSec, res.RecordVsRawBbolt)
			fmt.Fprintf(w, "  record, %2d writers                  %10.0f /s   %.2fx raw bbolt (target >= 2.5)\n", res.Writers, res.ConcurrentPerSec, res.ConcurrentVsRawBbolt)
			fmt.Fprintf(w, "  raw bbolt scan + SHA-256            %10.0f /s\n", res.RawScanPerSec)
			fmt.Fprintf(w, "  verify (full replay)                %10.0f /s   %.2fx raw scan (target >= 0.5)\n", res.VerifyPerSec, res.VerifyVsRawScan)
			fmt.Fprintf(w, "  verify, chain only (no re-decision)  %10.0f /s   %.2fx raw scan\n", res.VerifyChainPerSec, res.VerifyChainVsRawScan)
			fmt.Fprintf(w, "  verify heap peak                    %10.1f MiB\n", res.VerifyHeapPeakMiB)
			return nil
		},
	}
}
