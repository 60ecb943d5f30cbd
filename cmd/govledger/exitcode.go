package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/verify"
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
  1  the check found something: drift, a rejected handoff, tampering or corruption
  2  usage error, or unreadable or invalid input (flags, manifest, lock, a
     missing or empty ledger, a database of something else), or a refusal by the
     --server (401, 403 and other 4xx)
  3  internal failure: the ledger could not be opened (locked, held by a
     running serve, newer format, no permission, a folder) or written,
     standard output could not be written, or the
     --server did not answer or answered 429 or 5xx
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

// errorClass maps a library sentinel to the exit code it means. The tables
// below are tried in order with errors.Is; the first match wins.
type errorClass struct {
	err  error
	code int
	why  string // docs/reference/exit-codes.md's wording of the class
}

// openClasses classify a failure to open the --db ledger. Every command
// that opens a ledger goes through ledgerErr, so one condition gives one
// code and one message whichever command met it.
var openClasses = []errorClass{
	// A damaged file is what verify reports as corruption: a finding. A
	// file that is not a bbolt database at all looks the same to the
	// storage layer and is reported the same way.
	{ledger.ErrCorrupt, exitFound, "the file is corrupt"},
	// The user named a path that holds no ledger.
	{ledger.ErrEmptyFile, exitUsage, "the file is empty"},
	// A folder cannot be opened as the ledger's file.
	{syscall.EISDIR, exitInternal, "the ledger path is a folder: it could not be opened"},
	{ledger.ErrNotLedger, exitUsage, "the path is not a ledger (a folder, or a database of something else)"},
	{ledger.ErrNotExist, exitUsage, "the ledger does not exist"},
	{fs.ErrNotExist, exitUsage, "the ledger's folder does not exist"},
	// The ledger is there but cannot be opened now or by this build.
	{ledger.ErrLocked, exitInternal, "another process holds the ledger"},
	{entry.ErrVersionMismatch, exitInternal, "the ledger's format is newer than this build"},
	{fs.ErrPermission, exitInternal, "no permission to open the ledger"},
}

// errorClasses classify any other error a command returns without a code.
var errorClasses = []errorClass{
	{ledger.ErrCorrupt, exitFound, "the ledger is corrupt"},
	{checkpoint.ErrAnchor, exitFound, "the ledger does not extend the checkpoint"},
	{verify.ErrExportLine, exitFound, "an export line is invalid"},
	{checkpoint.ErrMalformed, exitUsage, "a checkpoint file is malformed"},
	{checkpoint.ErrKeyFormat, exitUsage, "a key is not recognised"},
	{checkpoint.ErrKeyPermissions, exitUsage, "a signer key file is readable by others"},
	{fs.ErrNotExist, exitUsage, "an input file does not exist"},
	{ledger.ErrFailed, exitInternal, "a commit failed: run verify, then retry"},
	{ledger.ErrLocked, exitInternal, "another process holds the ledger"},
	{context.Canceled, exitInternal, "interrupted"},
}

func classOf(classes []errorClass, err error, fallback int) int {
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return fallback
}

// damagedClasses are the errors that say a stored entry or the file's
// structure is bad (not the disk, not the process): reading on would give
// wrong answers, and verify names what is wrong.
var damagedClasses = []error{ledger.ErrCorrupt, entry.ErrMalformed, entry.ErrNotCanonical,
	entry.ErrVersionMismatch, entry.ErrBadHash, verify.ErrExportLine}

// ledgerReadErr classifies an error met reading the opened ledger: a
// damaged entry is a finding (exit 1), reported the same way by every
// command; anything else is classified by errorClasses.
func ledgerReadErr(seq uint64, err error) error {
	var c interface{ ExitCode() int }
	if errors.As(err, &c) {
		return err // classified already (inside a Scan callback)
	}
	for _, d := range damagedClasses {
		if errors.Is(err, d) {
			return damaged(seq, err)
		}
	}
	return classify(err)
}

// damaged is the exit-1 error for a damaged stored entry at seq (0 when
// unknown; a *ledger.RecordError in err names it).
func damaged(seq uint64, err error) error {
	var re *ledger.RecordError
	if errors.As(err, &re) && re.Seq != 0 {
		seq = re.Seq
	}
	return &exitError{code: exitFound, err: &damagedError{seq: seq, err: err}}
}

// damagedError prints one message for a damaged ledger whichever command
// met it; the cause stays reachable with errors.Is and errors.As.
type damagedError struct {
	seq uint64
	err error
}

func (e *damagedError) Error() string {
	if e.seq == 0 {
		return "the ledger's stored data is damaged: run 'govledger verify' for the findings"
	}
	return fmt.Sprintf("entry seq %d of the ledger is damaged: run 'govledger verify' for the findings", e.seq)
}

func (e *damagedError) Unwrap() error { return e.err }

// ledgerErr classifies a failure to open the ledger at path (see
// openClasses) and names the path in its message.
func ledgerErr(path string, err error) error {
	if !strings.Contains(err.Error(), path) {
		err = fmt.Errorf("ledger %s: %w", path, err)
	}
	return &exitError{code: classOf(openClasses, err, exitInternal), err: err}
}

// classify gives an error returned by a command's action its exit code:
// one it carries already, else its class in errorClasses, else internal
// failure. Errors that never went through an action (urfave/cli's own:
// flag parsing, missing required flags) have no code and are usage errors.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var c interface{ ExitCode() int }
	if errors.As(err, &c) {
		return err
	}
	return &exitError{code: classOf(errorClasses, err, exitInternal), err: err}
}

// exitCode maps an error that reached run to its exit code.
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
