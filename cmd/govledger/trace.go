package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
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
		Usage:     "the handoff chain of a workflow, in order, with the outcome of each handoff",
		ArgsUsage: "WORKFLOW_ID",
		Description: `Prints every handoff recorded for the workflow, in seq order: who handed what
to whom, and what was decided; beside an accepted handoff, its outcome (how
the target finished: "=> succeeded (seq 9, 1234 ms)"), once one is recorded
(POST /v1/outcomes, or the Claude Code hook on SubagentStop). With
--output json, the steps are the workflow's entries in seq order, outcomes
included, and each handoff with an outcome carries it as "outcome".

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
			seqs, err := l.Find(c.Context, ledger.Query{WorkflowID: wf})
			if err != nil {
				return ledgerReadErr(0, err)
			}
			res := &traceResult{Schema: "govledger.trace/v1", WorkflowID: wf, Steps: []entryView{}}
			for _, seq := range seqs {
				e, raw, err := l.Get(c.Context, seq)
				if err != nil {
					return ledgerReadErr(seq, err)
				}
				res.Steps = append(res.Steps, newEntryView(e, raw))
			}
			pairOutcomes(res)
			return renderTrace(g, res)
		},
	}
}

// pairOutcomes sets, on each handoff step of res, the outcome step that
// names it.
func pairOutcomes(res *traceResult) {
	at := map[uint64]int{}
	for i, s := range res.Steps {
		if s.Kind == entry.KindHandoff {
			at[s.Seq] = i
		}
	}
	for _, s := range res.Steps {
		if i, ok := at[s.DecisionSeq]; ok && s.Kind == entry.KindOutcome && res.Steps[i].Outcome == nil {
			res.Steps[i].Outcome = &outcomeView{Seq: s.Seq, Status: s.Status, OutputSHA256: s.OutputSHA256, DurationMS: s.DurationMS}
		}
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
	// An outcome is shown beside its handoff; one whose handoff is not
	// in the workflow gets a line of its own.
	var lines []entryView
	shown := map[uint64]bool{}
	for _, s := range res.Steps {
		if s.Outcome != nil {
			shown[s.Outcome.Seq] = true
		}
	}
	handoffs := 0
	for _, s := range res.Steps {
		if s.Kind == entry.KindHandoff {
			handoffs++
		}
		if !shown[s.Seq] {
			lines = append(lines, s)
		}
	}
	fmt.Fprintf(g.stdout, "workflow %s: %s, %s\n", res.WorkflowID, count(handoffs, "handoff"), count(len(res.Steps)-handoffs, "outcome"))
	for i, s := range lines {
		fmt.Fprintf(g.stdout, "%3d. ", i+1)
		renderEntryLine(g.stdout, s)
	}
	return nil
}
