package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/checkpoint/bundle"
	"github.com/govledger/govledger/ledger"
)

func proveCommand(g *globals) *cli.Command {
	var keyFile, keyName, cpFile, out, consistency, format string
	return &cli.Command{
		Name:      "prove",
		Usage:     "write an offline proof bundle: entry SEQ is in the ledger, or the ledger extends an old checkpoint",
		ArgsUsage: "SEQ",
		Description: `prove writes a JSON proof bundle that "govledger verify-proof" (or a short script,
see docs/threat-model.md, "Offline proofs") checks without the database.

An inclusion bundle ("govledger.proof/v1") holds the entry's canonical bytes,
its hash, its payload (unless redacted), the RFC 6962 audit path and a signed
checkpoint. A consistency bundle ("govledger.consistency/v1") holds the old and
new checkpoints and the consistency proof between them. Hashes are lowercase hex.
--format tlog-proof writes an inclusion proof as c2sp.org/tlog-proof@v1 instead:
the entry's canonical bytes (extra line), its index (seq-1), the audit path and
the checkpoint with every cosignature it carries (use --checkpoint with a
cosigned checkpoint, e.g. the one serve publishes), checked by verify-proof
--policy or any tlog-proof reader (see docs/witnessing.md).
Give --key (sign a fresh checkpoint at the current size; adds no entry) or
--checkpoint (prove against an existing checkpoint of this ledger).

Examples:
  govledger prove --key ledger.key --out entry42.proof.json 42
  govledger prove --checkpoint published.txt 42        # against a published checkpoint
  govledger prove --consistency old.txt --key ledger.key --out grew.proof.json
  govledger prove --format tlog-proof --checkpoint cosigned.txt --out 42.tlog-proof 42`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "signer key file: sign a new checkpoint to prove against", Destination: &keyFile},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for an OpenSSH key (default: the ledger origin)", Destination: &keyName},
			&cli.StringFlag{Name: "checkpoint", Usage: "prove against this existing signed checkpoint instead", Destination: &cpFile},
			&cli.StringFlag{Name: "consistency", Usage: "OLD_CHECKPOINT file: prove the ledger extends it (no SEQ)", Destination: &consistency},
			&cli.StringFlag{Name: "out", Usage: "write the bundle to this file (atomically) instead of stdout", Destination: &out},
			&cli.StringFlag{Name: "format", Value: "json", Usage: "json (a govledger bundle) or tlog-proof (c2sp.org/tlog-proof@v1; inclusion only)", Destination: &format},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if (keyFile == "") == (cpFile == "") {
				return usageErr("prove: give exactly one of --key and --checkpoint")
			}
			if format != "json" && format != "tlog-proof" {
				return usageErr("prove: --format %q, want json or tlog-proof", format)
			}
			if format == "tlog-proof" && consistency != "" {
				return usageErr("prove: --format tlog-proof proves inclusion only (no --consistency)")
			}
			var seq uint64
			if consistency == "" {
				if c.NArg() != 1 {
					return usageErr("prove: want one SEQ (or --consistency OLD_CHECKPOINT)")
				}
				n, err := strconv.ParseUint(c.Args().First(), 10, 64)
				if err != nil || n == 0 {
					return usageErr("prove: SEQ %q is not a positive integer", c.Args().First())
				}
				seq = n
			} else if c.NArg() != 0 {
				return usageErr("prove --consistency takes no SEQ")
			}
			l, err := openLedgerRead(g)
			if err != nil {
				return err
			}
			defer l.Close()
			opts := &bundle.Options{}
			if keyFile != "" {
				if opts.Signer, err = loadSigner(keyFile, keyName, l.Origin()); err != nil {
					return err
				}
			} else if opts.Checkpoint, err = os.ReadFile(cpFile); err != nil {
				return inputErr(err)
			}
			var b any
			if consistency != "" {
				old, err := os.ReadFile(consistency)
				if err != nil {
					return inputErr(err)
				}
				b, err = bundle.ProveConsistency(c.Context, l, old, opts)
				if err != nil {
					return proveErr(err)
				}
			} else {
				b, err = bundle.Prove(c.Context, l, seq, opts)
				if err != nil {
					return proveErr(err)
				}
			}
			var data []byte
			if in, ok := b.(*bundle.Inclusion); ok && format == "tlog-proof" {
				data = tlogProof(in).Format()
			} else if data, err = bundle.Marshal(b); err != nil {
				return internalErr(err)
			}
			if out == "" {
				_, err := g.stdout.Write(data)
				return err
			}
			if err := checkpoint.WriteFileAtomic(out, data, 0o644); err != nil {
				return internalErr(err)
			}
			if g.output == "json" {
				return writeJSON(g.stdout, proveResult{Schema: "govledger.prove/v1", Out: out, Bytes: len(data)})
			}
			fmt.Fprintf(g.stdout, "wrote proof bundle to %s\n", out)
			return nil
		},
	}
}

// tlogProof turns an inclusion bundle into a c2sp.org/tlog-proof whose
// extra line is the entry's canonical bytes.
func tlogProof(in *bundle.Inclusion) *checkpoint.Proof {
	p := &checkpoint.Proof{Extra: []byte(in.Entry), Index: in.LeafIndex, Checkpoint: []byte(in.Checkpoint)}
	for _, h := range in.InclusionProof {
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	return p
}

type proveResult struct {
	Schema string `json:"schema"`
	Out    string `json:"out"`
	Bytes  int    `json:"bytes"`
}

// proveErr maps a proving failure to its exit code: a bad SEQ or a
// malformed checkpoint file is the user's input (2); a ledger that does not
// extend the given checkpoint is a finding (1); the rest is internal (3).
func proveErr(err error) error {
	switch {
	case errors.Is(err, bundle.ErrSeqRange), errors.Is(err, ledger.ErrNotFound),
		errors.Is(err, checkpoint.ErrMalformed):
		return inputErr(err)
	case errors.Is(err, checkpoint.ErrAnchor), errors.Is(err, bundle.ErrInvalid):
		return &exitError{code: exitFound, err: err}
	}
	return ledgerReadErr(0, err)
}
