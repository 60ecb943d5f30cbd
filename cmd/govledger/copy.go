package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
)

type copyResult struct {
	Schema   string `json:"schema"`
	From     string `json:"from"`
	To       string `json:"to"`
	Origin   string `json:"origin"`
	Entries  uint64 `json:"entries"`
	Head     string `json:"head"`
	Batches  int    `json:"batches"`
	Blobs    int    `json:"blobs"`
	Redacted int    `json:"redacted"`
}

func copyCommand(g *globals) *cli.Command {
	var from, to string
	return &cli.Command{
		Name:  "copy",
		Usage: "copy a ledger into an empty one: bbolt file to PostgreSQL, or back",
		Description: `Copies every entry, payload and snapshot of --from into --to, each a bbolt file
or a postgres:// URL. The destination must hold no entries; a missing file or
a database without a ledger is created with the source's origin. Entries keep
their bytes, so both ledgers have the same head hash and Merkle tree: a
checkpoint signed on one verifies on the other, and so does every proof.

Nothing of the source is trusted: each entry is decoded and folded into the
ledger state as verify does, each tree hash recomputed and compared with the
source's, and the destination's tables are derived from the entries. Payloads
a redaction erased stay erased. The source is read in one consistent snapshot
(record may go on meanwhile; the copy ends at the head it started from).

Exit 0 copied, 1 the source is damaged (nothing past the damage is copied),
2 the destination is not empty or has another origin, 3 a ledger could not be
opened or written.

Examples:
  govledger copy --from govledger.db --to postgres://govledger@db.internal/ledger
  govledger copy --from postgres://govledger@db.internal/ledger --to backup.db
  govledger --output json copy --from a.db --to b.db`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "the ledger to copy: a bbolt file or a postgres:// URL", Destination: &from},
			&cli.StringFlag{Name: "to", Usage: "the empty ledger to fill: a bbolt file or a postgres:// URL", Destination: &to},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("copy takes no arguments (use --from and --to)")
			}
			if from == "" || to == "" {
				return usageErr("copy: --from and --to are required")
			}
			if from == to {
				return usageErr("copy: --from and --to name the same ledger")
			}
			src, err := openAt(c.Context, g, from, openReadAll, "")
			if err != nil {
				return err
			}
			defer src.Close()
			created := false
			if !postgres.IsDSN(to) {
				_, serr := os.Stat(to)
				created = errors.Is(serr, os.ErrNotExist)
			}
			dst, err := openAt(c.Context, g, to, openCreate, src.Origin())
			if err != nil {
				return err
			}
			total, _, _ := src.Head(c.Context)
			prog, done := progress(g, total, "copy")
			opts := &ledger.CopyOptions{}
			if prog != nil {
				opts.Progress = func(n, _ uint64) { prog(n) }
			}
			res, err := ledger.Copy(c.Context, dst.Driver(), src.Driver(), opts)
			done()
			if cerr := dst.Close(); err == nil && cerr != nil {
				err = cerr
			}
			if err != nil {
				if created {
					os.Remove(to) // a partial copy in a file this command made
				}
				return copyErr(to, err)
			}
			out := copyResult{Schema: "govledger.copy/v1", From: dbName(from), To: dbName(to), Origin: src.Origin(),
				Entries: res.Entries, Head: res.Head.String(), Batches: res.Batches, Blobs: res.Blobs, Redacted: res.Redacted}
			if g.output == outJSON {
				return writeJSON(g.stdout, out)
			}
			fmt.Fprintf(g.stdout, "copied %d entries of %s from %s to %s: head %s, %d payloads and snapshots, %d redacted payloads stayed erased\n",
				out.Entries, out.Origin, out.From, out.To, out.Head, out.Blobs, out.Redacted)
			return nil
		},
	}
}

// copyErr gives a failed copy its exit code.
func copyErr(to string, err error) error {
	switch {
	case errors.Is(err, ledger.ErrNotEmpty), errors.Is(err, ledger.ErrBadOptions):
		return usageErr("copy to %s: %v", dbName(to), err)
	case errors.Is(err, ledger.ErrCorrupt):
		return &exitError{code: exitFound, err: fmt.Errorf("copy: %w", err)}
	}
	return classify(fmt.Errorf("copy to %s: %w", dbName(to), err))
}
