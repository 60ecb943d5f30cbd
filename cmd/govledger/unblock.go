package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/govledger/govledger/govern"
	"github.com/urfave/cli/v2"
)

type unblockResult struct {
	Schema    string `json:"schema"`
	Agent     string `json:"agent"`
	BlockedBy uint64 `json:"blocked_by_seq"`
	Seq       uint64 `json:"seq"`
	EntryHash string `json:"entry_hash"`
}

func unblockCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "unblock",
		Usage:     "lift an AGENT_BLOCKED after manual verification (recorded as a ledger entry)",
		ArgsUsage: "AGENT",
		Description: `A HASH_MISMATCH blocks the agent: later handoffs from or to it are rejected
with AGENT_BLOCKED until an operator records an unblock with a reason, or a new
lock comes into force. The unblock is itself an entry of the ledger.

Examples:
  govledger unblock --reason "prompt diff reviewed in PR #412; lock regenerated" domain-05-product`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why the block may be lifted (recorded; required)"},
			asFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("unblock takes exactly one AGENT")
			}
			agent := c.Args().First()
			note := strings.TrimSpace(c.String("reason"))
			if note == "" {
				return usageErr("unblock: --reason is required: why the block may be lifted")
			}
			as, err := submitter(c, g)
			if err != nil {
				return err
			}
			l, err := openLedger(g)
			if err != nil {
				return err
			}
			defer l.Close()
			u, err := govern.Unblock(c.Context, l, agent, note, as)
			if errors.Is(err, govern.ErrNotBlocked) {
				return usageErr("unblock: %s is not blocked", agent)
			} else if err != nil {
				return internalErr(err)
			}
			a, by := u.Appended, u.BlockedBy
			out := &unblockResult{Schema: "govledger.unblock/v1", Agent: agent, BlockedBy: by, Seq: a.Entry.Seq, EntryHash: a.Hash.String()}
			if g.output == "json" {
				return writeJSON(g.stdout, out)
			}
			fmt.Fprintf(g.stdout, "unblocked %s (blocked by seq %d): seq %d entry %s\n", agent, by, out.Seq, out.EntryHash)
			return nil
		},
	}
}
