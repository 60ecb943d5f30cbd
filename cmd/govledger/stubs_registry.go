package main

// Temporary: each verb's file replaces its stub here as it lands.

import "github.com/urfave/cli/v2"

func lockCommand(g *globals) *cli.Command { return stub("lock") }
