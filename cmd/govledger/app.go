package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/ledger"
)

// env is the process environment as a lookup function, so tests can set it.
type env func(string) string

// run is the whole CLI as a function of its inputs. It never calls os.Exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	return runWithClock(ctx, args, stdin, stdout, stderr, getenv, time.Now)
}

// runWithClock is run with the ledger clock injected (tests pin it).
func runWithClock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env, now func() time.Time) int {
	if n := len(args); n > 2 && args[n-1] == completeFlag && args[n-2] == "--" {
		// urfave/cli turns completion off after "--"; a word "--" being
		// completed asks for the long flags, which "-" lists too.
		args = append(slices.Clone(args[:n-2]), "-", completeFlag)
	}
	out := &trackWriter{w: stdout}
	app := newApp(stdin, out, stderr, getenv)
	app.Metadata = map[string]any{"now": now, "args": args}
	return finish(outputErr(app.RunContext(ctx, args), out), stderr)
}

// outputErr makes a command whose output could not be written (standard
// output on a full disk, a closed file) an I/O failure, exit 3, whatever
// else it found: a report that never reached its reader is not a result.
func outputErr(err error, out *trackWriter) error {
	if out.err == nil || exitCode(err) == exitInternal && !errors.Is(err, out.err) {
		return err
	}
	return internalErr(fmt.Errorf("writing standard output: %w (the output is incomplete)", out.err))
}

// finish reports err, unless its report was already written, and returns
// the exit code.
func finish(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if !errors.Is(err, errFound) {
		fmt.Fprintf(stderr, "govledger: %s\n", oneLine(err.Error()))
	}
	return exitCode(err)
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

Shell completion: see "govledger completion --help".

` + exitCodeTable,
		Writer:          stdout,
		ErrWriter:       stderr,
		Reader:          stdin,
		HideHelpCommand: true,
		// Candidates come from completer, which reads the command line run
		// was given rather than os.Args.
		EnableBashCompletion: true,
		// Only main exits: urfave/cli would otherwise call os.Exit for ExitCoders.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "manifest", Value: "prompt-manifest.json", EnvVars: envFlag("GOVLEDGER_MANIFEST", ""),
				Usage: "agent registry: a prompt-manifest.json file or a folder of */SKILL.md skills", Destination: &g.manifest},
			&cli.StringFlag{Name: "lock", Value: "prompt-lock.json", EnvVars: envFlag("GOVLEDGER_LOCK", ""),
				Usage: "prompt lockfile", Destination: &g.lock},
			&cli.StringFlag{Name: "db", Value: "govledger.db", EnvVars: envFlag("GOVLEDGER_DB", ""),
				Usage: "ledger database: a bbolt file, or a postgres:// URL", Destination: &g.db},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", EnvVars: envFlag("GOVLEDGER_OUTPUT", ""),
				Usage: "output format: text or json; lock check adds github and sarif, validate and record seed-error", Destination: &g.output},
			&cli.StringFlag{Name: "origin", EnvVars: envFlag("GOVLEDGER_ORIGIN", ""),
				Usage: "identity of a ledger created by this command (checkpoints name it); default govledger.local/<random>", Destination: &g.origin},
			&cli.BoolFlag{Name: "exit-codes", Usage: "print the exit-code table and exit"},
			&cli.BoolFlag{Name: "version", Usage: "print the version (module version and VCS revision) and exit"},
		},
		HideVersion: true, // --version is ours: text or JSON, from the build information
		Action: func(c *cli.Context) error {
			switch {
			case c.Bool("version"):
				if err := checkOutput("", g.output); err != nil {
					return err
				}
				if g.output == outJSON {
					return writeJSON(g.stdout, buildVersion())
				}
				return renderVersion(g.stdout, buildVersion())
			case c.Bool("exit-codes"):
				_, err := fmt.Fprint(c.App.Writer, exitCodeTable)
				return err
			case c.Args().Present():
				return unknownCommand("", c.Args().First(), c.App.Commands)
			}
			return cli.ShowAppHelp(c)
		},
		Commands: commands(g),
	}
	app.OnUsageError = func(c *cli.Context, err error, isSub bool) error {
		return usageErr("%v%s", err, flagSuggestion(err, app.Flags))
	}
	app.BashComplete = completer(g, "", app.Flags, app.Commands)
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
		return nil
	}
	g.app = app
	rootAction := app.Action
	app.Action = func(c *cli.Context) error { return classify(rootAction(c)) }
	for _, cmd := range app.Commands {
		wire(cmd, "", g)
	}
	return app
}

// wire gives cmd and its subcommands what every command shares: the
// global flags after the command name, usage errors with suggestions,
// the --output check against the outputs table, exit-code classification
// of what the action returns, and shell completion.
func wire(cmd *cli.Command, parent string, g *globals) {
	path := strings.TrimSpace(parent + " " + cmd.Name)
	addGlobalFlags(cmd, g)
	cmd.OnUsageError = func(c *cli.Context, err error, isSub bool) error {
		return usageErr("%s: %v%s", path, err, flagSuggestion(err, cmd.Flags))
	}
	if cmd.Action != nil {
		action := cmd.Action
		if len(cmd.Subcommands) > 0 {
			// A word that is no subcommand is a typo, not an argument.
			own, subs := cmd.Action, cmd.Subcommands
			action = func(c *cli.Context) error {
				if w := c.Args().First(); w != "" && !strings.HasPrefix(w, "-") {
					return unknownCommand(path, w, subs)
				}
				return own(c)
			}
		}
		cmd.Action = withChecks(g, path, action)
	}
	cmd.BashComplete = completer(g, path, cmd.Flags, cmd.Subcommands)
	for _, sub := range cmd.Subcommands {
		wire(sub, path, g)
	}
}

// withChecks runs action after checking --output against the outputs
// table, and gives an error without an exit code its class.
func withChecks(g *globals, path string, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := checkOutput(path, g.output); err != nil {
			return err
		}
		return classify(action(c))
	}
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
		if before != nil {
			return before(c)
		}
		return nil
	}
}

// commands lists every verb; each lives in its own file.
func commands(g *globals) []*cli.Command {
	return []*cli.Command{
		lockCommand(g),
		validateCommand(g),
		handoffCommand(g),
		recordCommand(g),
		hookCommand(g),
		verifyCommand(g),
		logCommand(g),
		showCommand(g),
		traceCommand(g),
		exportCommand(g),
		copyCommand(g),
		statsCommand(g),
		unblockCommand(g),
		blocksCommand(g),
		demoCommand(g),
		benchCommand(g),
		keygenCommand(g),
		checkpointCommand(g),
		publishCommand(g),
		proveCommand(g),
		verifyProofCommand(g),
		monitorCommand(g),
		redactCommand(g),
		registryCommand(g),
		tokenCommand(g),
		serveCommand(g),
		completionCommand(g),
	}
}

// noFlagsAfterArgs rejects a positional argument that looks like a flag:
// urfave/cli v2 stops parsing flags at the first positional argument, so
// "verify x.db --output json" would otherwise ignore --output silently.
// commandPath is the command's name as the user typed it, from the top:
// "token create", "lock check" (Command.FullName is only "create").
func commandPath(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" && (c.App == nil || l.Command.Name != c.App.Name) {
			names = append(names, l.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

func noFlagsAfterArgs(c *cli.Context) error {
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") && a != "-" {
			return usageErr("%s: flag %q after an argument: put flags before arguments", commandPath(c), a)
		}
	}
	return nil
}

// ledgerWait is how long a command waits for another process holding
// the ledger before it gives up (exit 3).
const ledgerWait = 5 * time.Second

// openTimeout is ledgerWait unless a test shortened it.
func (g *globals) openTimeout() time.Duration {
	if g.app != nil {
		if d, ok := g.app.Metadata["open-timeout"].(time.Duration); ok {
			return d
		}
	}
	return ledgerWait
}

// checkOrigin refuses an --origin (or GOVLEDGER_ORIGIN) that differs from
// the opened ledger's: the origin names a ledger when it is created and
// never changes, so a different one means the wrong ledger or the wrong
// setting. It closes l when it refuses.
func checkOrigin(g *globals, l *ledger.Ledger) error {
	if g.origin == "" || l.Origin() == g.origin {
		return nil
	}
	l.Close()
	return usageErr("--origin %q differs from the origin %q of ledger %s (an origin is fixed when the ledger is created)",
		g.origin, l.Origin(), g.dbName())
}
