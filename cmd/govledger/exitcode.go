package main

import (
	"errors"
	"fmt"
)

// Exit codes, the same for every command and every output format.
const (
	exitOK       = 0 // success: in sync, accepted, verified
	exitFound    = 1 // the check found something: drift, a rejected handoff, tampering
	exitUsage    = 2 // usage error or unreadable/invalid input
	exitInternal = 3 // internal failure: the ledger could not be opened or written
)

const exitCodeTable = `Exit codes:
  0  ok: in sync, every handoff accepted, ledger verified
  1  the check found something: drift, a rejected handoff, tampering
  2  usage error, or unreadable or invalid input (manifest, lock, flags)
  3  internal failure: the ledger could not be opened or written
`

// exitError carries an exit code. Commands return one; only main exits.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// errFound is returned (wrapped) when a command completed and found something;
// its report has already been written, so nothing more is printed.
var errFound = errors.New("found")

func found() error { return &exitError{code: exitFound, err: errFound} }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func inputErr(err error) error { return &exitError{code: exitUsage, err: err} }

func internalErr(err error) error { return &exitError{code: exitInternal, err: err} }

// exitCode maps an error returned by a command to its exit code. Errors
// without a code are usage errors when urfave/cli produced them (bad flags)
// and internal failures otherwise; commands wrap their own errors.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var c interface{ ExitCode() int }
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return exitUsage
}
