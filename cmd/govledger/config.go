package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// decisionFlags are the flags of validate and record.
func decisionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Usage: "handoff format instead of detection: governed/1, swarm/2, skill/1, vbw/1, task/1, a2a/1"},
		&cli.StringFlag{Name: "from", Usage: "source agent, for formats that do not name it (vbw/1, task/1; a2a/1 without metadata.govledger)"},
		&cli.StringFlag{Name: "to", Usage: "target agent, for formats that do not name it (vbw/1, task/1; a2a/1 without metadata.govledger)"},
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
// command. A name that could not be shown as it is (control characters,
// line breaks, invisible format characters, invalid UTF-8, more than 256
// bytes) is refused (exit 2): it is recorded in the entry and shown by
// blocks, log and the viewer.
func submitter(c *cli.Context, g *globals) (string, error) {
	if s := c.String("as"); strings.TrimSpace(s) != "" {
		return checkSubmitter("--as", s)
	}
	if s := g.getenv("GOVLEDGER_AS"); strings.TrimSpace(s) != "" {
		return checkSubmitter("GOVLEDGER_AS", s)
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return checkSubmitter("the OS user name", u.Username)
	}
	if s := g.getenv("USER"); s != "" {
		return checkSubmitter("USER", s)
	}
	return "unknown", nil
}

// maxSubmitter is the longest submitter an entry holds, in bytes.
const maxSubmitter = 256

// checkSubmitter trims s and accepts 1 to 256 bytes of UTF-8 without
// control or format characters. The refusal shows s escaped and cut, never
// raw.
func checkSubmitter(from, s string) (string, error) {
	s = strings.TrimSpace(s)
	shown := s
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	bad := func(why string) error {
		return usageErr("%s %+q: %s; want 1 to %d bytes of printable UTF-8", from, shown, why, maxSubmitter)
	}
	if !utf8.ValidString(s) {
		for i, r := range s {
			if r == utf8.RuneError {
				if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
					return "", bad(fmt.Sprintf("invalid UTF-8 at byte %d", i+1))
				}
			}
		}
	}
	if len(s) > maxSubmitter {
		return "", usageErr("%s is %d bytes long; want 1 to %d bytes of printable UTF-8", from, len(s), maxSubmitter)
	}
	for i, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return "", bad(fmt.Sprintf("%U at byte %d is a control or format character", r, i+1))
		}
	}
	return s, nil
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
		return nil, usageErr("--format %q: want one of governed/1, swarm/2, skill/1, vbw/1, task/1, a2a/1", p.Format)
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
	return openDB(context.Background(), g, openCreate)
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

// openLedgerRO opens an existing ledger read-only (log, show, trace, …).
// Each read checks the pages it visits (bolt.Options.CheckPages): a
// corrupted file is reported as corruption (exit 1) instead of crashing
// inside bbolt, and a read costs the same on any size of ledger.
func openLedgerRO(g *globals) (*ledger.Ledger, error) {
	return openDB(context.Background(), g, openReadOnly)
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
