package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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
docs/reference/entry-encoding.md, "Verify an export independently", shows how to check it with a
short script; 'govledger verify --export FILE' does the same.

Examples:
  govledger export > audit.jsonl
  govledger export --out audit.jsonl && govledger verify --export audit.jsonl
  govledger export --server http://127.0.0.1:8080 --out audit.jsonl
` + remoteHelp + ` The token needs ledger:read and payload:read.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write to this file (atomically) instead of standard output"},
		}, serverFlags()...),
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("export takes no arguments (use --out FILE)")
			}
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				return remoteExport(c, g, cl)
			}
			l, err := openLedgerAll(g)
			if err != nil {
				return err
			}
			defer l.Close()
			head, _, err := l.Head(c.Context)
			if err != nil {
				return ledgerReadErr(0, err)
			}
			prog, done := progress(g, head, "export")
			defer done()
			src := &countingSource{Source: verify.LedgerSource(l), progress: prog}
			if out := c.String("out"); out != "" {
				var tw *trackWriter
				err := atomicfile.Write(out, 0o644, func(f *os.File) error {
					tw = &trackWriter{w: f}
					return verify.WriteExport(c.Context, tw, src)
				})
				if err != nil {
					return exportErr(tw, src.last, err)
				}
				fmt.Fprintf(g.stderr, "exported %d entries to %s\n", src.n, out)
				return nil
			}
			tw := &trackWriter{w: g.stdout}
			w := bufio.NewWriter(tw)
			if err := verify.WriteExport(c.Context, w, src); err != nil {
				return exportErr(tw, src.last, err)
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

// trackWriter remembers its first write error, so a failed export can be
// told apart: the output could not be written (exit 3), or the ledger's
// stored data is damaged (exit 1).
type trackWriter struct {
	w   io.Writer
	err error
}

func (t *trackWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// exportErr classifies a failed export: an output file that cannot be
// created is classified by its cause, a write error or an interrupt is an
// internal failure, and anything else came from the stored entries.
func exportErr(tw *trackWriter, seq uint64, err error) error {
	switch {
	case tw == nil: // the output file could not be created (a missing folder: exit 2)
		return classify(fmt.Errorf("export: %w", err))
	case tw.err != nil:
		return internalErr(fmt.Errorf("export: %w", err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return internalErr(fmt.Errorf("export: %w", err))
	}
	return damaged(seq, err)
}
