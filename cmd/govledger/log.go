package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
)

func logCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "list ledger entries, filtered",
		Description: `Lists entries in seq order, one per line (--output json: one JSON object per
line). Filters combine (AND).

Examples:
  govledger log --decision rejected
  govledger log --agent domain-05-product --since 2026-11-01T00:00:00Z
  govledger log --code HASH_MISMATCH --output json | jq .seq
  govledger log --server http://127.0.0.1:8080 --decision rejected
` + remoteHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "source or target agent"},
			&cli.StringFlag{Name: "decision", Usage: "accepted or rejected"},
			&cli.StringFlag{Name: "code", Usage: "reason code, e.g. HASH_MISMATCH"},
			&cli.StringFlag{Name: "workflow", Usage: "workflow id"},
			&cli.StringFlag{Name: "kind", Usage: "entry kind: handoff, snapshot, unblock, redaction, key_rotation"},
			&cli.TimestampFlag{Name: "since", Layout: time.RFC3339, Usage: "entries at or after this RFC 3339 time"},
			&cli.TimestampFlag{Name: "until", Layout: time.RFC3339, Usage: "entries before this RFC 3339 time"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many entries (0: all)"},
			serverFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("log takes no arguments")
			}
			dec := c.String("decision")
			if dec != "" && dec != reason.Accepted && dec != reason.Rejected {
				return usageErr("--decision %q: want accepted or rejected", dec)
			}
			if c.Int("limit") < 0 {
				return usageErr("--limit must not be negative")
			}
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				return remoteLog(c, g, cl)
			}
			l, err := openLedgerRO(g)
			if err != nil {
				return err
			}
			defer l.Close()
			q := ledger.Query{Agent: c.String("agent"), WorkflowID: c.String("workflow"), Decision: dec}
			if t := c.Timestamp("since"); t != nil {
				q.Since = *t
			}
			if t := c.Timestamp("until"); t != nil {
				q.Until = *t
			}
			seqs, err := l.Find(q)
			if err != nil {
				return ledgerReadErr(0, err)
			}
			n := 0
			for _, seq := range seqs {
				e, raw, err := l.Get(seq)
				if err != nil {
					return ledgerReadErr(seq, err)
				}
				if k := c.String("kind"); k != "" && e.Kind != k {
					continue
				}
				if code := c.String("code"); code != "" && !hasCode(e, code) {
					continue
				}
				v := newEntryView(e, raw)
				if g.output == "json" {
					v.Schema = "govledger.log/v1"
					if err := writeJSONLine(g.stdout, v); err != nil {
						return err
					}
				} else {
					renderEntryLine(g.stdout, v)
				}
				n++
				if lim := c.Int("limit"); lim > 0 && n >= lim {
					break
				}
			}
			return nil
		},
	}
}
