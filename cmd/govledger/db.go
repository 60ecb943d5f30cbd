package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/postgres"
)

// openMode is how a command opens the --db ledger.
type openMode int

const (
	openCreate   openMode = iota // write; create the ledger when there is none (record, unblock)
	openExisting                 // write an existing ledger (redact, checkpoint rotate)
	openReadOnly                 // read parts of an existing ledger, never write (log, show, trace, prove, ...)
	openReadAll                  // read all of an existing ledger, never write (verify, export, copy)
	openServe                    // openCreate for a long-running server
)

// A bbolt file is checked against page damage that would crash bbolt
// (bolt.Options.CheckPages): a command that reads all of it, and serve at
// start-up, walk every page once at open; the others check only the pages
// their reads visit, so a point read costs the same on any size of ledger.

// pgOpenWait bounds how long opening a PostgreSQL ledger may take:
// connecting, and waiting for another process's schema migration.
const pgOpenWait = 30 * time.Second

// openDB opens the --db ledger: a PostgreSQL database when --db is a
// postgres:// or postgresql:// URL, else a bbolt file. Every command opens
// its ledger here, so both drivers serve every command. Errors are
// classified (ledgerErr) and never show a password.
func openDB(ctx context.Context, g *globals, mode openMode) (*ledger.Ledger, error) {
	l, err := openAt(ctx, g, g.db, mode, g.origin)
	if err != nil {
		return nil, err
	}
	if err := checkOrigin(g, l); err != nil {
		return nil, err
	}
	return l, nil
}

// openAt opens the ledger db names (a bbolt path or a PostgreSQL URL);
// origin names it if this creates it.
func openAt(ctx context.Context, g *globals, db string, mode openMode, origin string) (*ledger.Ledger, error) {
	var l *ledger.Ledger
	var err error
	if postgres.IsDSN(db) {
		l, err = openPostgres(ctx, g, db, mode, origin)
	} else {
		// A running serve holds the file: say so at once (servefile.go).
		held := liveSidecar(db)
		o := &bolt.Options{Timeout: g.openTimeout(), Now: g.clock()}
		if held != nil {
			o.Timeout = min(heldProbe, o.Timeout)
		}
		switch mode {
		case openCreate:
			o.Origin = origin
		case openServe:
			o.Origin, o.CheckPages = origin, true
		case openExisting:
			o.NoCreate = true
		case openReadOnly:
			o.ReadOnly, o.NoCreate = true, true
		case openReadAll:
			o.ReadOnly, o.NoCreate, o.CheckPages = true, true, true
		}
		l, err = bolt.Open(db, o)
		if held != nil && errors.Is(err, ledger.ErrLocked) {
			return nil, heldError(db, held)
		}
	}
	if err != nil {
		return nil, ledgerErr(dbName(db), err)
	}
	return l, nil
}

func openPostgres(ctx context.Context, g *globals, dsn string, mode openMode, origin string) (*ledger.Ledger, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, pgOpenWait)
	defer cancel()
	o := &postgres.Options{Now: g.clock()}
	readOnly := mode == openReadOnly || mode == openReadAll
	switch {
	case mode == openCreate || mode == openServe:
		o.Origin = origin
	case mode == openExisting:
		o.NoCreate = true
	case readOnly:
		o.ReadOnly = true
	}
	d, err := postgres.Open(ctx, dsn, o)
	if err != nil {
		if errors.Is(err, postgres.ErrUnavailable) {
			err = fmt.Errorf("cannot reach the database server %s: %w", postgres.HostPort(dsn), err)
		}
		return nil, err
	}
	l, err := ledger.New(d, &ledger.Options{ReadOnly: readOnly, Now: g.clock()})
	if err != nil {
		d.Close()
	}
	return l, err
}

// openLedgerAll opens an existing ledger read-only for a command that
// reads all of it (verify, export): a bbolt file has every page checked
// at open, once.
func openLedgerAll(g *globals) (*ledger.Ledger, error) {
	return openDB(context.Background(), g, openReadAll)
}

// dbName is --db as messages show it: a PostgreSQL URL without its
// password.
func (g *globals) dbName() string { return dbName(g.db) }

// dbName names a ledger in messages: a PostgreSQL URL without its
// password, a bbolt path as it is.
func dbName(db string) string {
	if postgres.IsDSN(db) {
		return postgres.Redact(db)
	}
	return db
}
