package main

import (
	"fmt"
	"sort"

	"github.com/govledger/govledger/entry"
	"github.com/urfave/cli/v2"
)

type statsResult struct {
	Schema    string         `json:"schema"`
	Origin    string         `json:"origin"`
	Entries   uint64         `json:"entries"`
	Head      string         `json:"head"`
	Kinds     map[string]int `json:"kinds"`
	Decisions map[string]int `json:"decisions"`
	Formats   map[string]int `json:"formats"`
	Codes     map[string]int `json:"codes"`
	Blocked   map[string]int `json:"blocked_by_agent"`
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
			res := &statsResult{Schema: "govledger.stats/v1", Origin: l.Origin(), Head: entry.ZeroHash.String(),
				Kinds: map[string]int{}, Decisions: map[string]int{}, Formats: map[string]int{}, Codes: map[string]int{}, Blocked: map[string]int{}}
			err = l.Scan(c.Context, 1, func(seq uint64, raw []byte) error {
				e, err := entry.Decode(raw)
				if err != nil {
					return ledgerReadErr(seq, err)
				}
				res.Entries++
				res.Head = entry.LeafHash(raw).String()
				res.Kinds[e.Kind]++
				if e.Kind == entry.KindHandoff {
					res.Decisions[e.Decision]++
					f := e.Format.String()
					if f == "" {
						f = "unknown"
					}
					res.Formats[f]++
					for _, r := range reasonsOf(e) {
						res.Codes[string(r.Code)]++
					}
					for _, a := range e.Blocks {
						res.Blocked[a]++
					}
				}
				return nil
			})
			if err != nil {
				return ledgerReadErr(0, err)
			}
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
