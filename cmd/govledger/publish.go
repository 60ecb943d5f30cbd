package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/tiles"
)

func publishCommand(g *globals) *cli.Command {
	var to, keyFile, keyName string
	var entries bool
	return &cli.Command{
		Name:  "publish",
		Usage: "write the ledger as a static C2SP tlog-tiles log (checkpoint and tiles) into a folder",
		Description: `publish writes the ledger's Merkle tree under --to as the static files of a
C2SP tlog-tiles log: checkpoint, tile/<L>/<N>[.p/<W>] and, with --entries,
tile/entries/<N>[.p/<W>]. Copy or serve the folder from any static host: a
tlog-tiles client (Tessera's, torchwood's, "govledger monitor") reads it.

It is incremental: it writes only what the tree gained since the folder's
checkpoint, each file atomically, and the signed checkpoint last, so an
interrupted publish leaves the old checkpoint valid. It refuses a folder whose
checkpoint the ledger does not extend (another ledger's, a larger tree, or a
different root: exit 1, nothing written).

Entry bundles make every entry public (agents, decisions, reasons; payloads
stay out: they are blobs named by hash): publish them only if the ledger is
public. It adds no entry to the ledger.

Examples:
  govledger publish --key ledger.key --to public/log
  govledger publish --key ledger.key --to public/log --entries`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "folder to write the log into (created if missing)", Destination: &to},
			&cli.StringFlag{Name: "key", Usage: "checkpoint signer key file (see keygen)", Destination: &keyFile},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for an OpenSSH key (default: the ledger origin)", Destination: &keyName},
			&cli.BoolFlag{Name: "entries", Usage: "also write the entry bundles (makes every entry public)", Destination: &entries},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErr("publish: unexpected argument %q", c.Args().First())
			}
			if to == "" || keyFile == "" {
				return usageErr("publish: --to DIR and --key SIGNER_KEY_FILE are required")
			}
			l, err := openLedgerRead(g)
			if err != nil {
				return err
			}
			defer l.Close()
			s, err := loadSigner(keyFile, keyName, l.Origin())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := tiles.Publish(ctx, l, to, tiles.PublishOptions{Signer: s, Entries: entries})
			switch {
			case errors.Is(err, tiles.ErrPublishedFork), errors.Is(err, tiles.ErrEntryTooLarge):
				return &exitError{code: exitFound, err: err}
			case err != nil:
				return internalErr(err)
			}
			out := publishResult{Schema: "govledger.publish/v1", To: to, Origin: l.Origin(), OldSize: res.OldSize, Size: res.Size,
				Tiles: res.Tiles, Bundles: res.Bundles, Entries: entries}
			if g.output == "json" {
				return writeJSON(g.stdout, out)
			}
			_, err = fmt.Fprintf(g.stdout, "published %s: size %d (was %d), %d tiles and %d entry bundles written to %s\n",
				out.Origin, out.Size, out.OldSize, out.Tiles, out.Bundles, to)
			return err
		},
	}
}

type publishResult struct {
	Schema  string `json:"schema"`
	To      string `json:"to"`
	Origin  string `json:"origin"`
	OldSize uint64 `json:"old_size"`
	Size    uint64 `json:"size"`
	Tiles   int    `json:"tiles"`
	Bundles int    `json:"bundles"`
	Entries bool   `json:"entries"`
}
