package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// env is the process environment as a lookup function, so tests can set it.
type env func(string) string

// run is the whole CLI as a function of its inputs. It never calls os.Exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	return runWithClock(ctx, args, stdin, stdout, stderr, getenv, time.Now)
}

// runWithClock is run with the ledger clock injected (tests pin it).
func runWithClock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env, now func() time.Time) int {
	app := newApp(stdin, stdout, stderr, getenv)
	app.Metadata = map[string]any{"now": now}
	err := app.RunContext(ctx, args)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if !errors.Is(err, errFound) {
		fmt.Fprintf(stderr, "govledger: %s\n", oneLine(err.Error()))
	}
	return code
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// globals are the flags every command shares.
type globals struct {
	manifest string
	lock     string
	db       string
	output   string
	origin   string
	app      *cli.App
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	getenv   env
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv env) *cli.App {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	envFlag := func(name, value string) []string { return []string{name} }
	app := &cli.App{
		Name:  "govledger",
		Usage: "governed, tamper-evident ledger of AI-agent handoffs",
		Description: `govledger checks that only registered agents, running reviewed prompts, hand work to
one another, and records every handoff decision in an append-only, hash-chained ledger.

Examples:
  govledger demo                         # the whole flow on embedded example data
  govledger lock                         # pin prompt hashes into prompt-lock.json
  govledger lock check --output github   # CI gate: exit 1 on prompt drift
  govledger record handoff.json          # validate and append to govledger.db
  govledger verify                       # replay the chain, exit 1 on tampering

` + exitCodeTable,
		Writer:          stdout,
		ErrWriter:       stderr,
		Reader:          stdin,
		HideHelpCommand: true,
		// Only main exits: urfave/cli would otherwise call os.Exit for ExitCoders.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "manifest", Value: "prompt-manifest.json", EnvVars: envFlag("GOVLEDGER_MANIFEST", ""),
				Usage: "agent registry: a prompt-manifest.json file or a folder of */SKILL.md skills", Destination: &g.manifest},
			&cli.StringFlag{Name: "lock", Value: "prompt-lock.json", EnvVars: envFlag("GOVLEDGER_LOCK", ""),
				Usage: "prompt lockfile", Destination: &g.lock},
			&cli.StringFlag{Name: "db", Value: "govledger.db", EnvVars: envFlag("GOVLEDGER_DB", ""),
				Usage: "ledger database (bbolt file)", Destination: &g.db},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", EnvVars: envFlag("GOVLEDGER_OUTPUT", ""),
				Usage: "output format: text or json (lock check adds github and sarif)", Destination: &g.output},
			&cli.StringFlag{Name: "origin", EnvVars: envFlag("GOVLEDGER_ORIGIN", ""),
				Usage: "identity of a ledger created by this command (checkpoints name it); default govledger.local/<random>", Destination: &g.origin},
			&cli.BoolFlag{Name: "exit-codes", Usage: "print the exit-code table and exit"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("exit-codes") {
				fmt.Fprint(c.App.Writer, exitCodeTable)
				return nil
			}
			if c.Args().Present() {
				return usageErr("unknown command %q (see govledger --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return usageErr("%v", err)
		},
		Commands: commands(g),
	}
	// urfave/cli reads env vars through os.Getenv; apply ours explicitly so
	// tests and embedders control the environment.
	app.Before = func(c *cli.Context) error {
		for _, f := range []struct{ flag, env string }{
			{"manifest", "GOVLEDGER_MANIFEST"}, {"lock", "GOVLEDGER_LOCK"},
			{"db", "GOVLEDGER_DB"}, {"output", "GOVLEDGER_OUTPUT"}, {"origin", "GOVLEDGER_ORIGIN"},
		} {
			if !c.IsSet(f.flag) {
				if v := getenv(f.env); v != "" {
					if err := c.Set(f.flag, v); err != nil {
						return usageErr("%s: %v", f.env, err)
					}
				}
			}
		}
		switch g.output {
		case "text", "json", "github", "sarif", "seed-error":
		default:
			return usageErr("--output %q: want text or json", g.output)
		}
		return nil
	}
	g.app = app
	for _, cmd := range app.Commands {
		setUsageErrors(cmd)
		addGlobalFlags(cmd, g)
	}
	return app
}

// addGlobalFlags lets the global flags also follow the command
// ("govledger lock check --output github"), as users write them. The
// copies have no defaults, so they never overwrite a value set earlier.
func addGlobalFlags(cmd *cli.Command, g *globals) {
	names := []struct {
		name  string
		alias []string
		dst   *string
	}{{"manifest", nil, &g.manifest}, {"lock", nil, &g.lock}, {"db", nil, &g.db}, {"output", []string{"o"}, &g.output}, {"origin", nil, &g.origin}}
	have := map[string]bool{}
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			have[n] = true
		}
	}
	for _, n := range names {
		if !have[n.name] {
			cmd.Flags = append(cmd.Flags, &cli.StringFlag{Name: n.name, Aliases: n.alias, Usage: "same as the global --" + n.name})
		}
	}
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		for _, n := range names {
			if c.IsSet(n.name) && !have[n.name] {
				*n.dst = c.String(n.name)
			}
		}
		switch g.output {
		case "text", "json", "github", "sarif", "seed-error":
		default:
			return usageErr("--output %q: want text or json", g.output)
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	for _, sub := range cmd.Subcommands {
		addGlobalFlags(sub, g)
	}
}

func setUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(c *cli.Context, err error, isSub bool) error {
		return usageErr("%s: %v", cmd.Name, err)
	}
	for _, sub := range cmd.Subcommands {
		setUsageErrors(sub)
	}
}

// commands lists every verb; each lives in its own file.
func commands(g *globals) []*cli.Command {
	return []*cli.Command{
		lockCommand(g),
		validateCommand(g),
		recordCommand(g),
		verifyCommand(g),
		logCommand(g),
		showCommand(g),
		traceCommand(g),
		exportCommand(g),
		statsCommand(g),
		unblockCommand(g),
		demoCommand(g),
		benchCommand(g),
		keygenCommand(g),
		checkpointCommand(g),
		proveCommand(g),
		verifyProofCommand(g),
		redactCommand(g),
		tokenCommand(g),
	}
}

// noFlagsAfterArgs rejects a positional argument that looks like a flag:
// urfave/cli v2 stops parsing flags at the first positional argument, so
// "verify x.db --output json" would otherwise ignore --output silently.
func noFlagsAfterArgs(c *cli.Context) error {
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") && a != "-" {
			return usageErr("%s: flag %q after an argument: put flags before arguments", c.Command.Name, a)
		}
	}
	return nil
}
