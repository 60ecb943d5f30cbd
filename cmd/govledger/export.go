package main

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/internal/atomicfile"
	"github.com/govledger/govledger/verify"
)

func exportCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write the ledger as JSON Lines an auditor can verify without govledger",
		Description: `Writes one line per entry, in seq order:
  {"entry": <canonical entry>, "hash": "<hex>", "payload_b64": "<base64>"}
The README's "Verify an export independently" explains how to check it with a
short script; 'govledger verify --export FILE' does the same.

Examples:
  govledger export > audit.jsonl
  govledger export --out audit.jsonl && govledger verify --export audit.jsonl`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write to this file (atomically) instead of standard output"},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("export takes no arguments (use --out FILE)")
			}
			l, err := openLedgerRO(g)
			if err != nil {
				return err
			}
			defer l.Close()
			head, _, err := l.Head()
			if err != nil {
				return ledgerReadErr(0, err)
			}
			prog, done := progress(g, head, "export")
			defer done()
			src := &countingSource{Source: verify.LedgerSource(l), progress: prog}
			if out := c.String("out"); out != "" {
				err := atomicfile.Write(out, 0o644, func(f *os.File) error {
					return verify.WriteExport(c.Context, f, src)
				})
				if err != nil {
					return ledgerReadErr(src.last, fmt.Errorf("export: %w", err))
				}
				fmt.Fprintf(g.stderr, "exported %d entries to %s\n", src.n, out)
				return nil
			}
			w := bufio.NewWriter(g.stdout)
			if err := verify.WriteExport(c.Context, w, src); err != nil {
				return ledgerReadErr(src.last, fmt.Errorf("export: %w", err))
			}
			return w.Flush()
		},
	}
}

// countingSource reports export progress as entries stream by.
type countingSource struct {
	verify.Source
	progress func(seq uint64)
	n, last  uint64
}

func (s *countingSource) Entries(ctx context.Context, fn func(seq uint64, raw []byte) error) error {
	return s.Source.Entries(ctx, func(seq uint64, raw []byte) error {
		s.n, s.last = s.n+1, seq
		if s.progress != nil {
			s.progress(seq)
		}
		return fn(seq, raw)
	})
}
