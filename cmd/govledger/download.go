package main

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/server/client"
)

// Defaults of the bounds on every download from a server (the answers of
// a --server command, monitor's fetches): a server that stops sending, or
// sends without end, cannot hold the client forever or fill its disk.
const (
	defaultDownloadIdle = client.DefaultIdle
	defaultDownloadMax  = client.DefaultMaxDownload
)

// downloadFlags are --idle-timeout and --max-download, the bounds of the
// downloads of a command that talks to a server (what names it, e.g.
// "with --server").
func downloadFlags(what string) []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "idle-timeout", Value: defaultDownloadIdle,
			Usage: what + ": cut an answer (or export) when the server sends nothing for this long, waiting for it included"},
		&cli.Int64Flag{Name: "max-download", Value: defaultDownloadMax,
			Usage: what + ": cut an answer (or export) beyond this many bytes (JSON answers are also capped at 64 MiB)"},
	}
}

// boundedClient returns an HTTP client whose every answer is cut after
// --idle-timeout without a byte or beyond --max-download bytes (the
// defaults where the command has no such flag). timeout, when not 0,
// bounds each whole request too.
func boundedClient(c *cli.Context, timeout time.Duration) (*http.Client, error) {
	l := client.Limits{Idle: defaultDownloadIdle, Max: defaultDownloadMax}
	if c.IsSet("idle-timeout") || c.Duration("idle-timeout") != 0 {
		l.Idle = c.Duration("idle-timeout")
	}
	if c.IsSet("max-download") || c.Int64("max-download") != 0 {
		l.Max = c.Int64("max-download")
	}
	if l.Idle <= 0 {
		return nil, usageErr("--idle-timeout must be positive")
	}
	if l.Max <= 0 {
		return nil, usageErr("--max-download must be positive")
	}
	return &http.Client{Timeout: timeout, Transport: l.Transport(http.DefaultTransport.(*http.Transport).Clone())}, nil
}

// downloadHint names the flag that bounds a download err was cut by.
func downloadHint(err error) error {
	switch {
	case errors.Is(err, client.ErrIdle):
		return fmt.Errorf("%w (raise --idle-timeout)", err)
	case errors.Is(err, client.ErrTooLarge):
		return fmt.Errorf("%w (raise --max-download)", err)
	}
	return err
}
