package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/monitor"
)

func monitorCommand(g *globals) *cli.Command {
	var logURL, stateDir, policyFile, tokenFile string
	var keys cli.StringSlice
	var once, entries bool
	var interval time.Duration
	return &cli.Command{
		Name:  "monitor",
		Usage: "follow a tlog-tiles log (any, not only govledger) and alarm on a fork, rollback or bad signature",
		Description: `monitor reads a C2SP tlog-tiles log at --log (its checkpoint and hash tiles),
trusting nothing it serves: the checkpoint must be signed by --key (or satisfy
--policy: log key and witness quorum), and the log's own tiles, each checked
against the signed root, must prove it extends the last checkpoint monitor saw,
kept in --state. The first run pins the log's origin and checkpoint; every later
one must extend them. --entries also reads the new entry bundles and checks each
entry against its leaf hash (--token-file for a log that keeps them private).

A log that shrank (rollback), serves a tree that does not extend the one seen
(fork: a rewritten tail re-signed with the same key), or a checkpoint that does
not verify stops monitor with exit 1, naming both sizes and roots; the state
keeps the last good checkpoint (it is the evidence). Without --once it checks
every --interval until such a finding; a log it cannot reach is reported on
standard error and tried again.

Every fetch is cut when the log sends nothing for --idle-timeout (default 60s)
or more than --max-download bytes, and after a minute in all.

Exit codes: 0 (with --once) consistent; 1 fork, rollback, bad signature, too few
cosignatures, another origin or a bad entry; 2 usage; 3 the log could not be read.

Examples:
  govledger monitor --log https://ledger.example.com/log --key ledger.pub --state ~/.govledger-monitor --once
  govledger monitor --log https://sum.golang.org --policy sumdb.policy --state st   # any tlog-tiles log`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "log", Usage: "the log's URL prefix (<log>/checkpoint, <log>/tile/...)", Destination: &logURL},
			&cli.StringFlag{Name: "state", Usage: "folder keeping the last checkpoint seen and the pinned origin", Destination: &stateDir},
			&cli.StringFlag{Name: "policy", Usage: "tlog-policy file: log keys, witnesses, quorum", Destination: &policyFile},
			&cli.StringSliceFlag{Name: "key", Usage: "log verifier key, a .pub file or the key itself (repeatable)", Destination: &keys},
			&cli.BoolFlag{Name: "entries", Usage: "also check the new entries against the tree", Destination: &entries},
			&cli.StringFlag{Name: "token-file", Usage: "file holding a bearer token sent with every request (entry bundles of a private log)", Destination: &tokenFile},
			&cli.BoolFlag{Name: "once", Usage: "check once and exit", Destination: &once},
			&cli.DurationFlag{Name: "interval", Value: time.Minute, Usage: "time between checks without --once", Destination: &interval},
		}, downloadFlags("each fetch from --log")...),
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 0 {
				return usageErr("monitor takes no arguments")
			}
			if logURL == "" || stateDir == "" {
				return usageErr("monitor: --log and --state are required")
			}
			if len(keys.Value()) == 0 && policyFile == "" {
				return usageErr("monitor: give --key or --policy: the log key its checkpoints must be signed with")
			}
			if interval <= 0 {
				return usageErr("monitor: --interval must be positive")
			}
			var policy *checkpoint.Policy
			if policyFile != "" {
				var err error
				if policy, err = loadPolicy(policyFile); err != nil {
					return err
				}
			}
			var vs []note.Verifier
			for _, k := range keys.Value() {
				text, err := readVerifierKey(k)
				if err != nil {
					return err
				}
				v, _, err := checkpoint.ParseVerifier([]byte(text), "")
				if err != nil {
					return inputErr(fmt.Errorf("monitor: --key: %w", err))
				}
				vs = append(vs, v)
			}
			hc, err := boundedClient(c, time.Minute)
			if err != nil {
				return err
			}
			o := monitor.Options{Log: logURL, State: stateDir, Policy: withKeys(policy, vs), Entries: entries, Client: hc}
			if tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return inputErr(err)
				}
				o.Header = http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(b))}}
			}
			for {
				res, err := monitor.Check(c.Context, o)
				err = downloadHint(err)
				if err == nil || !errors.Is(err, monitor.ErrFetch) || once {
					if werr := reportMonitor(g, res, err); werr != nil {
						return werr
					}
				}
				switch {
				case err == nil:
				case errors.Is(err, monitor.ErrFetch):
					if once {
						return &exitError{code: exitInternal, err: errFound}
					}
					fmt.Fprintf(g.stderr, "monitor: %v (will retry)\n", err)
				default:
					return found()
				}
				if once {
					return nil
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
}

type monitorResult struct {
	Schema string `json:"schema"`
	OK     bool   `json:"ok"`
	Alarm  string `json:"alarm,omitzero"` // fork, rollback, signature, origin, entries, unreachable
	Error  string `json:"error,omitzero"`
	monitor.Result
}

func reportMonitor(g *globals, res *monitor.Result, err error) error {
	r := monitorResult{Schema: "govledger.monitor/v1", OK: err == nil}
	if res != nil {
		r.Result = *res
	}
	if err != nil {
		r.Error = err.Error()
		switch {
		case errors.Is(err, checkpoint.ErrFork):
			r.Alarm = "fork"
		case errors.Is(err, checkpoint.ErrRollback):
			r.Alarm = "rollback"
		case errors.Is(err, monitor.ErrOrigin):
			r.Alarm = "origin"
		case errors.Is(err, monitor.ErrEntries):
			r.Alarm = "entries"
		case errors.Is(err, monitor.ErrFetch):
			r.Alarm = "unreachable"
		case errors.Is(err, checkpoint.ErrPolicy):
			r.Alarm = "quorum"
		default:
			r.Alarm = "signature"
		}
	}
	if g.output == "json" {
		return writeJSON(g.stdout, r)
	}
	if err != nil {
		fmt.Fprintf(g.stdout, "ALARM %s %s: %s\n  last seen: size %d root %s\n  served:    size %d root %s\n",
			strings.ToUpper(r.Alarm), r.Log, r.Error, r.OldSize, r.OldRoot, r.Size, r.Root)
		return nil
	}
	state := "unchanged"
	if r.Updated && r.OldSize == 0 && r.OldRoot == "" {
		state = "first checkpoint stored"
	} else if r.Updated {
		state = fmt.Sprintf("consistent with size %d", r.OldSize)
	}
	fmt.Fprintf(g.stdout, "OK %s: %s size %d root %s (%s)", r.Log, r.Origin, r.Size, r.Root, state)
	if len(r.Cosigners) > 0 {
		fmt.Fprintf(g.stdout, "; cosigned by %s", strings.Join(r.Cosigners, ", "))
	}
	if r.Entries > 0 {
		fmt.Fprintf(g.stdout, "; %d entries checked", r.Entries)
	}
	fmt.Fprintln(g.stdout)
	return nil
}
