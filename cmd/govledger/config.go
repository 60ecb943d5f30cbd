package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// decisionFlags are the flags of validate and record.
func decisionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Usage: "handoff format instead of detection: governed/1, swarm/2, skill/1, vbw/1, task/1"},
		&cli.StringFlag{Name: "from", Usage: "source agent, for formats that do not name it (vbw/1, task/1)"},
		&cli.StringFlag{Name: "to", Usage: "target agent, for formats that do not name it (vbw/1, task/1)"},
		&cli.BoolFlag{Name: "strict", Usage: "treat format fallbacks (vbw/1 markdown) as errors"},
		&cli.DurationFlag{Name: "max-age", Value: govern.DefaultMaxAge, Usage: "reject handoffs whose timestamp is older (STALE); 0 disables"},
		&cli.Int64Flag{Name: "max-payload", Value: govern.DefaultMaxPayload, Usage: "record larger documents as PAYLOAD_TOO_LARGE, hash and size only"},
		&cli.StringFlag{Name: "root", Value: ".", Usage: "folder that relative paths in documents resolve against (they may not leave it)"},
		asFlag(),
	}
}

// asFlag is --as, the submitter recorded in the entries a command writes.
func asFlag() cli.Flag {
	return &cli.StringFlag{Name: "as", Usage: "who submits: recorded in each entry as its submitter (default: $GOVLEDGER_AS, else the OS user)"}
}

// submitter is --as, else GOVLEDGER_AS, else the OS user running the
// command.
func submitter(c *cli.Context, g *globals) string {
	if s := strings.TrimSpace(c.String("as")); s != "" {
		return s
	}
	if s := strings.TrimSpace(g.getenv("GOVLEDGER_AS")); s != "" {
		return s
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if s := g.getenv("USER"); s != "" {
		return s
	}
	return "unknown"
}

// loadConfig loads the registry and lock named by the global flags and the
// decision parameters from c. Every failure is an input error (exit 2).
func loadConfig(c *cli.Context, g *globals) (*govern.Config, error) {
	reg, err := manifest.Load(g.manifest)
	if err != nil {
		return nil, inputErr(fmt.Errorf("manifest %s: %w", g.manifest, err))
	}
	lockBytes, err := os.ReadFile(g.lock)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, inputErr(fmt.Errorf("lock %s does not exist: run 'govledger lock' first", g.lock))
		}
		return nil, inputErr(fmt.Errorf("lock: %w", err))
	}
	lk, err := lockfile.Parse(g.lock, lockBytes)
	if err != nil {
		return nil, inputErr(err)
	}
	p := policy.Params{
		Format:     handoff.Format(c.String("format")),
		From:       c.String("from"),
		To:         c.String("to"),
		Strict:     c.Bool("strict"),
		MaxAge:     int64(c.Duration("max-age")),
		MaxPayload: c.Int64("max-payload"),
	}
	if p.Format != "" && !knownFormat(p.Format) {
		return nil, usageErr("--format %q: want one of governed/1, swarm/2, skill/1, vbw/1, task/1", p.Format)
	}
	if p.MaxAge < 0 {
		return nil, usageErr("--max-age must not be negative")
	}
	if p.MaxPayload <= 0 {
		return nil, usageErr("--max-payload must be positive")
	}
	return &govern.Config{Registry: reg, Lock: lk, LockBytes: lockBytes, Params: p, Root: c.String("root"), Now: g.clock()}, nil
}

func knownFormat(f handoff.Format) bool {
	for _, k := range handoff.Formats {
		if k == f {
			return true
		}
	}
	return false
}

// openLedger opens the ledger for writing (record, unblock, redact).
func openLedger(g *globals) (*ledger.Ledger, error) {
	l, err := bolt.Open(g.db, &bolt.Options{Timeout: g.openTimeout(), Origin: g.origin, Now: g.clock()})
	if err != nil {
		return nil, ledgerErr(g.db, err)
	}
	if err := checkOrigin(g, l); err != nil {
		return nil, err
	}
	return l, nil
}

// clock returns the ledger clock: time.Now unless a test pinned it.
func (g *globals) clock() func() time.Time {
	if g.app != nil {
		if now, ok := g.app.Metadata["now"].(func() time.Time); ok {
			return now
		}
	}
	return time.Now
}

// openLedgerRO opens an existing ledger read-only (verify, log, show, …),
// after walking every page of the file: a corrupted file is reported as
// corruption (exit 1) instead of crashing inside bbolt. The walk reads each
// page once.
func openLedgerRO(g *globals) (*ledger.Ledger, error) {
	l, err := bolt.Open(g.db, &bolt.Options{ReadOnly: true, NoCreate: true, Timeout: g.openTimeout(), CheckPages: true})
	if err != nil {
		return nil, ledgerErr(g.db, err)
	}
	if err := checkOrigin(g, l); err != nil {
		return nil, err
	}
	return l, nil
}

// readInputs reads each named document ("-" is standard input).
func readInput(g *globals, name string, max int64) (*govern.Payload, error) {
	if name == "-" {
		return govern.ReadPayload(g.stdin, max)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", name)
	}
	return govern.ReadPayload(f, max)
}
