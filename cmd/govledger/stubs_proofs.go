package main

// Temporary: each verb's file replaces its stub here as it lands.

import "github.com/urfave/cli/v2"

func keygenCommand(g *globals) *cli.Command      { return stub("keygen") }
func checkpointCommand(g *globals) *cli.Command  { return stub("checkpoint") }
func proveCommand(g *globals) *cli.Command       { return stub("prove") }
func verifyProofCommand(g *globals) *cli.Command { return stub("verify-proof") }
func redactCommand(g *globals) *cli.Command      { return stub("redact") }
