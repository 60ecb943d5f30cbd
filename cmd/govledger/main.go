// Command govledger validates AI-agent handoffs against a registry and a
// prompt lock, and records every decision in a tamper-evident ledger.
//
// Run "govledger --help" for the commands and "govledger --exit-codes" for
// the exit-code table.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if err := setFaults(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "govledger:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
