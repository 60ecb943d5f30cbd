package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

// blockView is one active block as blocks renders it.
type blockView struct {
	Agent     string `json:"agent"`
	Since     uint64 `json:"since_seq"`
	Submitter string `json:"submitter"`
	Code      string `json:"code"`
	Field     string `json:"field,omitzero"`
	Message   string `json:"message"`
	Time      string `json:"time"`
}

type blocksReport struct {
	Schema string      `json:"schema"`
	Blocks []blockView `json:"blocks"`
}

func blocksCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "blocks",
		Usage: "list the agents blocked now, with the entry and submitter that caused each",
		Description: `Lists every active block: the agent, the seq of the entry that blocked it
(a handoff with a HASH_MISMATCH), who submitted that entry, and its reason.
A block ends only by an entry: 'govledger unblock --reason ...', or a new lock
in force that changed the agent's prompt hash (its snapshot entry lists the
blocks it lifted). Exit 0 whether or not agents are blocked.

Examples:
  govledger blocks
  govledger --output json blocks | jq -r '.blocks[].agent'
  govledger blocks --server http://127.0.0.1:8080
` + remoteHelp,
		Flags: serverFlags(),
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 0 {
				return usageErr("blocks takes no arguments")
			}
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				rep, err := remoteBlocks(c, cl)
				if err != nil {
					return err
				}
				return renderBlocks(g, rep)
			}
			l, err := openLedgerRO(g)
			if err != nil {
				return err
			}
			defer l.Close()
			bs, err := l.Blocks(c.Context)
			if err != nil {
				return ledgerErr(g.dbName(), err)
			}
			rep := &blocksReport{Schema: "govledger.blocks/v1", Blocks: []blockView{}}
			for _, b := range bs {
				rep.Blocks = append(rep.Blocks, newBlockView(b.Agent, b.Seq, b.Entry))
			}
			return renderBlocks(g, rep)
		},
	}
}

// newBlockView renders the block of agent by entry e (seq).
func newBlockView(agent string, seq uint64, e *entry.Entry) blockView {
	v := blockView{Agent: agent, Since: seq, Submitter: e.Submitter,
		Time: e.Time.Format("2006-01-02T15:04:05.999999999Z07:00")}
	if v.Submitter == "" {
		v.Submitter = "(not recorded)"
	}
	if e.Reasons != nil {
		for _, r := range *e.Reasons {
			if r.Code == reason.HashMismatch && r.Severity == reason.Critical {
				v.Code, v.Field, v.Message = string(r.Code), r.Field, r.Message
				break
			}
		}
	}
	return v
}

func renderBlocks(g *globals, rep *blocksReport) error {
	if g.output == "json" {
		return writeJSON(g.stdout, rep)
	}
	if len(rep.Blocks) == 0 {
		fmt.Fprintln(g.stdout, "no agent is blocked")
		return nil
	}
	for _, v := range rep.Blocks {
		fmt.Fprintf(g.stdout, "%s  blocked since seq %d (%s) by %s\n  %s %s\n", v.Agent, v.Since, v.Time, v.Submitter, v.Code, reasonText(reason.Reason{Field: v.Field, Message: v.Message}))
	}
	return nil
}
