package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/export"
	"github.com/govledger/govledger/internal/atomicfile"
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
			if out := c.String("out"); out != "" {
				var n uint64
				err := atomicfile.Write(out, 0o644, func(f *os.File) error {
					var werr error
					n, werr = export.Write(c.Context, l, f, prog)
					return werr
				})
				if err != nil {
					return internalErr(fmt.Errorf("export: %w", err))
				}
				fmt.Fprintf(g.stderr, "exported %d entries to %s\n", n, out)
				return nil
			}
			w := bufio.NewWriter(g.stdout)
			if _, err := export.Write(c.Context, l, w, prog); err != nil {
				return internalErr(fmt.Errorf("export: %w", err))
			}
			return w.Flush()
		},
	}
}
