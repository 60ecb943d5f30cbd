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
	openCreate   openMode = iota // write; create the ledger when there is none (record, unblock, serve)
	openExisting                 // write an existing ledger (redact, checkpoint rotate)
	openReadOnly                 // read an existing ledger, never write (verify, log, show, ...)
)

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
		case openExisting:
			o.NoCreate = true
		case openReadOnly:
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
	switch mode {
	case openCreate:
		o.Origin = origin
	case openExisting:
		o.NoCreate = true
	case openReadOnly:
		o.ReadOnly = true
	}
	d, err := postgres.Open(ctx, dsn, o)
	if err != nil {
		if errors.Is(err, postgres.ErrUnavailable) {
			err = fmt.Errorf("cannot reach the database server %s: %w", postgres.HostPort(dsn), err)
		}
		return nil, err
	}
	l, err := ledger.New(d, &ledger.Options{ReadOnly: mode == openReadOnly, Now: g.clock()})
	if err != nil {
		d.Close()
	}
	return l, err
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
