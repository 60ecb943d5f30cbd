package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/ledger"
)

type traceResult struct {
	Schema     string      `json:"schema"`
	WorkflowID string      `json:"workflow_id"`
	Steps      []entryView `json:"steps"`
}

func traceCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "trace",
		Usage:     "the handoff chain of a workflow, in order",
		ArgsUsage: "WORKFLOW_ID",
		Description: `Prints every handoff recorded for the workflow, in seq order: who handed what
to whom, and what was decided.

Examples:
  govledger trace swarm-session-20260204-183000-a1b2c3d4
  govledger --output json trace workflow-abc123
  govledger trace --server http://127.0.0.1:8080 workflow-abc123
` + remoteHelp,
		Flags: serverFlags(),
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("trace takes exactly one WORKFLOW_ID")
			}
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				res, err := remoteTrace(c, cl, c.Args().First())
				if err != nil {
					return err
				}
				return renderTrace(g, res)
			}
			l, err := openLedgerRO(g)
			if err != nil {
				return err
			}
			defer l.Close()
			wf := c.Args().First()
			seqs, err := l.Find(ledger.Query{WorkflowID: wf})
			if err != nil {
				return ledgerReadErr(0, err)
			}
			res := &traceResult{Schema: "govledger.trace/v1", WorkflowID: wf, Steps: []entryView{}}
			for _, seq := range seqs {
				e, raw, err := l.Get(seq)
				if err != nil {
					return ledgerReadErr(seq, err)
				}
				res.Steps = append(res.Steps, newEntryView(e, raw))
			}
			return renderTrace(g, res)
		},
	}
}

func renderTrace(g *globals, res *traceResult) error {
	if g.output == "json" {
		return writeJSON(g.stdout, res)
	}
	if len(res.Steps) == 0 {
		fmt.Fprintf(g.stdout, "no handoffs recorded for workflow %q\n", res.WorkflowID)
		return nil
	}
	fmt.Fprintf(g.stdout, "workflow %s: %d handoffs\n", res.WorkflowID, len(res.Steps))
	for i, s := range res.Steps {
		fmt.Fprintf(g.stdout, "%3d. ", i+1)
		renderEntryLine(g.stdout, s)
	}
	return nil
}
