package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/govledger/govledger/ledger"
)

// ErrUnavailable is wrapped by errors caused by the database being out of
// reach: a refused or lost connection, a server shutting down, restarting
// or still recovering, too many connections. Nothing about the ledger is
// wrong; a server answers 503 and the caller retries later. An Append that
// returns it stored nothing, unless the error also says the outcome is
// unknown (ErrOutcomeUnknown).
var ErrUnavailable = ledger.ErrUnavailable

// ErrOutcomeUnknown is wrapped by an Append error when the commit was sent
// but its answer was lost and the driver could not find out, within
// Options.Timeout, whether it landed. The batch may or may not be stored.
var ErrOutcomeUnknown = ledger.ErrOutcomeUnknown

// wrapErr names op and marks err ErrUnavailable when it is about the
// connection or the server's state, not the ledger. nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if unavailable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// unavailable reports whether err is a connection or server-state failure.
func unavailable(err error) bool {
	if errors.Is(err, ledger.ErrClosed) || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "53"), // insufficient resources
			pgErr.Code == "57P01",               // admin_shutdown
			pgErr.Code == "57P02",               // crash_shutdown
			pgErr.Code == "57P03",               // cannot_connect_now
			pgErr.Code == "57P05",               // idle_session_timeout
			pgErr.Code == "25P03",               // idle_in_transaction_session_timeout
			pgErr.Code == "25006":               // read_only_sql_transaction: a standby
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || isClosedConn(err)
}

// isClosedConn recognises pgx's errors for a connection it already closed.
func isClosedConn(err error) bool {
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "connection reset") ||
		strings.Contains(s, "broken pipe") || strings.Contains(s, "unexpected EOF")
}
