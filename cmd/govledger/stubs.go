package main

// Temporary: each verb's file replaces its stub here as it lands.

import "github.com/urfave/cli/v2"

func stub(name string) *cli.Command {
	return &cli.Command{Name: name, Hidden: true, Action: func(*cli.Context) error { return usageErr("%s: not built yet", name) }}
}

func validateCommand(g *globals) *cli.Command { return stub("validate") }
func recordCommand(g *globals) *cli.Command   { return stub("record") }
func verifyCommand(g *globals) *cli.Command   { return stub("verify") }
func logCommand(g *globals) *cli.Command      { return stub("log") }
func showCommand(g *globals) *cli.Command     { return stub("show") }
func traceCommand(g *globals) *cli.Command    { return stub("trace") }
func exportCommand(g *globals) *cli.Command   { return stub("export") }
func statsCommand(g *globals) *cli.Command    { return stub("stats") }
func unblockCommand(g *globals) *cli.Command  { return stub("unblock") }
func demoCommand(g *globals) *cli.Command     { return stub("demo") }
func benchCommand(g *globals) *cli.Command    { return stub("bench") }
