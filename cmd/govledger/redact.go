package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/ledger"
)

func redactCommand(g *globals) *cli.Command {
	var why string
	return &cli.Command{
		Name:      "redact",
		Usage:     "remove the stored payload bytes of handoff entry SEQ (its hash stays) and record why",
		ArgsUsage: "SEQ",
		Description: `redact deletes the payload bytes of a handoff entry (for example personal data),
keeping the entry, its payload_sha256 and the hash chain intact, and appends a
redaction entry with --reason. Proof bundles of a redacted entry still verify;
they carry "redacted": true instead of the payload.

Examples:
  govledger redact --reason "GDPR erasure request #1182" 42`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why the payload is removed (recorded in the redaction entry)", Destination: &why},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("redact: want exactly one SEQ")
			}
			if strings.TrimSpace(why) == "" {
				return usageErr("redact: --reason is required")
			}
			seq, err := strconv.ParseUint(c.Args().First(), 10, 64)
			if err != nil || seq == 0 {
				return usageErr("redact: SEQ %q is not a positive integer", c.Args().First())
			}
			l, err := openDB(c.Context, g, openExisting)
			if err != nil {
				return err
			}
			defer l.Close()
			target, _, err := l.Get(c.Context, seq)
			if err != nil {
				if errors.Is(err, ledger.ErrNotFound) {
					return inputErr(fmt.Errorf("redact: no entry %d", seq))
				}
				return internalErr(err)
			}
			res, err := l.Redact(c.Context, seq, why)
			switch {
			case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrNotRedactable), errors.Is(err, ledger.ErrRedacted):
				return inputErr(fmt.Errorf("redact: %w", err))
			case err != nil:
				return internalErr(err)
			}
			a := res.Last()
			out := redactResult{Schema: "govledger.redact/v1", Seq: seq, RedactionSeq: a.Entry.Seq, RedactionHash: a.Hash.String(), Reason: why}
			if target.PayloadSHA256 != nil {
				out.PayloadSHA256 = target.PayloadSHA256.String()
			}
			if target.PayloadSize != nil {
				out.PayloadSize = *target.PayloadSize
			}
			if target.HandoffID.Valid {
				out.HandoffID = target.HandoffID.S
			}
			if g.output == "json" {
				return writeJSON(g.stdout, out)
			}
			fmt.Fprintf(g.stdout, "redacted payload of seq %d (handoff %q, %d bytes, sha256 %s); recorded as seq %d (entry %s): %s\n",
				seq, out.HandoffID, out.PayloadSize, out.PayloadSHA256, out.RedactionSeq, out.RedactionHash, why)
			return nil
		},
	}
}

type redactResult struct {
	Schema        string `json:"schema"`
	Seq           uint64 `json:"seq"`
	HandoffID     string `json:"handoff_id,omitzero"`
	PayloadSHA256 string `json:"payload_sha256"`
	PayloadSize   int64  `json:"payload_size"`
	RedactionSeq  uint64 `json:"redaction_seq"`
	RedactionHash string `json:"redaction_hash"`
	Reason        string `json:"reason"`
}
