package main

import (
	"errors"
	"fmt"
	"sort"

	"github.com/govledger/govledger/govern"
	"github.com/urfave/cli/v2"
)

type statsResult struct {
	Schema string `json:"schema"`
	*govern.Counts
}

func statsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "stats",
		Usage: "count entries by kind, decision, format and reason code",
		Description: `Examples:
  govledger stats
  govledger --output json stats | jq .decisions`,
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("stats takes no arguments")
			}
			l, err := openLedgerRO(g)
			if err != nil {
				return err
			}
			defer l.Close()
			counts, err := govern.Count(c.Context, l)
			if d := (*govern.DamagedError)(nil); errors.As(err, &d) {
				return ledgerReadErr(d.Seq, d.Err)
			} else if err != nil {
				return ledgerReadErr(0, err)
			}
			res := &statsResult{Schema: "govledger.stats/v1", Counts: counts}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			w := g.stdout
			fmt.Fprintf(w, "ledger %s (origin %s)\nentries %d, head %s\n", g.dbName(), res.Origin, res.Entries, res.Head)
			for _, t := range []struct {
				name string
				m    map[string]int
			}{{"kinds", res.Kinds}, {"decisions", res.Decisions}, {"formats", res.Formats}, {"reason codes", res.Codes}, {"blocks by agent", res.Blocked}} {
				if len(t.m) == 0 {
					continue
				}
				fmt.Fprintf(w, "%s:\n", t.name)
				keys := make([]string, 0, len(t.m))
				for k := range t.m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(w, "  %-28s %d\n", k, t.m[k])
				}
			}
			return nil
		},
	}
}
