package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
)

// logCursor is the last line of log's JSON output when --limit cut the
// list: the flag and seq that show the next page.
type logCursor struct {
	Schema string `json:"schema"`
	Before uint64 `json:"before,omitzero"` // newest first: --before
	After  uint64 `json:"after,omitzero"`  // --reverse: --after
}

// logChunk is how many entries log asks the ledger for at a time.
const logChunk = 256

func logCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "list ledger entries, filtered, newest first",
		Description: `Lists entries newest first (--reverse: oldest first), one per line
(--output json: one JSON object per line). Filters combine (AND).

--limit N shows the first N (the newest N; with --reverse the oldest N).
When more entries match, a last line gives the cursor of the next page:
"more: --before SEQ" (text) or {"schema": "govledger.log.next/v1",
"before": SEQ} (JSON; "after" with --reverse). Run the same command with
that flag added to see the next page. --before SEQ and --after SEQ bound
the seqs shown (exclusive). Pages are read through the ledger's indexes:
their cost follows the page size, not the ledger's.

Examples:
  govledger log --limit 20
  govledger log --limit 20 --before 981
  govledger log --reverse --after 100 --limit 50
  govledger log --decision rejected
  govledger log --agent domain-05-product --since 2026-11-01T00:00:00Z
  govledger log --code HASH_MISMATCH --output json | jq .seq
  govledger log --server http://127.0.0.1:8080 --decision rejected
` + remoteHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "source or target agent"},
			&cli.StringFlag{Name: "decision", Usage: "accepted or rejected"},
			&cli.StringFlag{Name: "code", Usage: "reason code, e.g. HASH_MISMATCH"},
			&cli.StringFlag{Name: "workflow", Usage: "workflow id"},
			&cli.StringFlag{Name: "kind", Usage: "entry kind: handoff, snapshot, unblock, redaction, key_rotation, outcome"},
			&cli.TimestampFlag{Name: "since", Layout: time.RFC3339, Usage: "entries at or after this RFC 3339 time"},
			&cli.TimestampFlag{Name: "until", Layout: time.RFC3339, Usage: "entries before this RFC 3339 time"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many entries (0: all); a cursor names the next page"},
			&cli.BoolFlag{Name: "reverse", Usage: "oldest first"},
			&cli.Uint64Flag{Name: "before", Usage: "only entries with a lower seq (the cursor of the next page, newest first)"},
			&cli.Uint64Flag{Name: "after", Usage: "only entries with a higher seq (the cursor of the next page with --reverse)"},
		}, serverFlags()...),
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
			limit := c.Int("limit")
			if limit < 0 {
				return usageErr("--limit must not be negative")
			}
			if c.IsSet("before") && c.Uint64("before") == 0 {
				return usageErr("--before 0: no entry has a lower seq; want a seq of 1 or more")
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
			newest := !c.Bool("reverse")
			q := ledger.Query{Agent: c.String("agent"), WorkflowID: c.String("workflow"), Decision: dec,
				Before: c.Uint64("before"), After: c.Uint64("after"), Newest: newest}
			if t := c.Timestamp("since"); t != nil {
				q.Since = *t
			}
			if t := c.Timestamp("until"); t != nil {
				q.Until = *t
			}
			kind, code := c.String("kind"), c.String("code")
			shown, last, more := 0, uint64(0), false
		pages:
			for {
				// Without filters of its own, one more than the page
				// tells whether another page follows.
				q.Limit = logChunk
				if limit > 0 && kind == "" && code == "" {
					q.Limit = min(logChunk, limit-shown+1)
				}
				seqs, err := l.Find(c.Context, q)
				if err != nil {
					return ledgerReadErr(0, err)
				}
				if newest {
					slices.Reverse(seqs)
				}
				for _, seq := range seqs {
					e, raw, err := l.Get(c.Context, seq)
					if err != nil {
						return ledgerReadErr(seq, err)
					}
					if kind != "" && e.Kind != kind || code != "" && !hasCode(e, code) {
						continue
					}
					if limit > 0 && shown == limit {
						more = true
						break pages
					}
					v := newEntryView(e, raw)
					if g.output == "json" {
						v.Schema = "govledger.log/v1"
						if err := writeJSONLine(g.stdout, v); err != nil {
							return internalErr(err)
						}
					} else {
						renderEntryLine(g.stdout, v)
					}
					shown, last = shown+1, seq
				}
				if len(seqs) < q.Limit {
					break
				}
				if newest {
					q.Before = seqs[len(seqs)-1]
				} else {
					q.After = seqs[len(seqs)-1]
				}
			}
			if shown == 0 && g.output != "json" {
				// An empty answer says so (on stderr, so a script reading
				// the lines still reads none); JSON stays zero lines.
				fmt.Fprintln(g.stderr, "no entries match")
				return nil
			}
			if !more {
				return nil
			}
			if err := writeLogCursor(g, newest, last); err != nil {
				return internalErr(err)
			}
			return nil
		},
	}
}

// writeLogCursor writes the line that names the next page: after seq last,
// newest first or (with --reverse) oldest first.
func writeLogCursor(g *globals, newest bool, last uint64) error {
	cur := logCursor{Schema: "govledger.log.next/v1"}
	flag := "--before"
	if newest {
		cur.Before = last
	} else {
		cur.After, flag = last, "--after"
	}
	if g.output == "json" {
		return writeJSONLine(g.stdout, cur)
	}
	_, err := fmt.Fprintf(g.stdout, "more: %s %d\n", flag, last)
	return err
}
