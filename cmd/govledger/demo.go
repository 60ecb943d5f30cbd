package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/cmd/govledger/internal/story"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
)

type demoResult struct {
	Schema string `json:"schema"`
	*story.Story
}

func demoCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run the whole flow on embedded example data",
		Description: `Writes an example registry, its lock and a dozen hand-offs (accepted, hash
mismatch, blocked agent, boundary violation, replay, garbage bytes, one of each
format) to a temporary folder, records them in a fresh ledger, verifies it,
then verifies a copy an insider tampered with. The ledger clock is pinned, so
every run prints the same hashes.

Examples:
  govledger demo
  govledger demo --keep ./demo-out     # keep the files to explore with log/show/verify
  govledger --output json demo`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keep", Usage: "write the demo files to this folder (must not exist) and keep them"},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("demo takes no arguments")
			}
			dir := c.String("keep")
			if dir != "" {
				if _, err := os.Stat(dir); err == nil {
					return usageErr("demo --keep %s: already exists", dir)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return inputErr(err)
				}
			} else {
				d, err := os.MkdirTemp("", "govledger-demo-*")
				if err != nil {
					return internalErr(err)
				}
				defer os.RemoveAll(d)
				dir = d
			}
			st, err := story.Run(c.Context, dir)
			if err != nil {
				return internalErr(fmt.Errorf("demo: %w", err))
			}
			if c.String("keep") == "" {
				st.Dir = "" // removed when the demo ends
			}
			if g.output == "json" {
				if err := writeJSON(g.stdout, demoResult{Schema: "govledger.demo/v1", Story: st}); err != nil {
					return err
				}
			} else {
				renderDemo(g.stdout, st, c.String("keep") != "")
			}
			if !st.Verified.OK() || st.TamperCheck == nil || st.TamperCheck.OK() {
				return found()
			}
			return nil
		},
	}
}

func renderDemo(w io.Writer, st *story.Story, kept bool) {
	fmt.Fprintf(w, "govledger demo: registry of %d agents, prompts locked, ledger clock pinned to %s\n\n",
		st.Agents, demo.Epoch.Format("2006-01-02T15:04:05Z"))
	for _, s := range st.Steps {
		if s.Kind == entry.KindSnapshot {
			fmt.Fprintf(w, "seq %2d  SNAPSHOT  %s\n", s.Seq, s.Story)
			continue
		}
		if s.Kind == entry.KindUnblock {
			fmt.Fprintf(w, "seq %2d  UNBLOCK   %s — %s\n", s.Seq, s.Target, s.Story)
			continue
		}
		var codes []string
		for _, r := range s.Reasons {
			codes = append(codes, string(r.Code))
		}
		fmt.Fprintf(w, "seq %2d  %-9s %-10s %s\n", s.Seq, strings.ToUpper(s.Decision), orDash(s.Format), s.Story)
		if len(codes) > 0 {
			fmt.Fprintf(w, "                            %s\n", strings.Join(codes, ", "))
		}
	}
	v := st.Verified
	fmt.Fprintf(w, "\nverify: %d entries, chain intact, every decision re-evaluated: ", v.Entries)
	if v.OK() {
		fmt.Fprintf(w, "OK (head %s)\n", v.Head)
	} else {
		fmt.Fprintf(w, "FAILED (%s)\n", count(len(v.Findings), "finding"))
	}
	fmt.Fprintf(w, "tamper: an insider edits seq %d in a copy (%s)\n", st.TamperSeq, st.TamperWhat)
	t := st.TamperCheck
	switch {
	case t == nil:
		fmt.Fprintln(w, "verify of the copy: the file no longer opens (corruption detected)")
	case t.OK():
		fmt.Fprintln(w, "verify of the copy: NOT DETECTED (this is a bug)")
	default:
		fmt.Fprintf(w, "verify of the copy: DETECTED, first bad entry seq %d (%s)\n", t.FirstBad, count(len(t.Findings), "finding"))
		for i, f := range t.Findings {
			if i == 3 {
				fmt.Fprintf(w, "  … %d more\n", len(t.Findings)-3)
				break
			}
			fmt.Fprintf(w, "  seq %d: %s: %s\n", f.Seq, f.Kind, f.Message)
		}
	}
	if kept {
		fmt.Fprintf(w, "\nfiles kept in %s: try  govledger --db %s/demo.db log\n", st.Dir, st.Dir)
	}
}
