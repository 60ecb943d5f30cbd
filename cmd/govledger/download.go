package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

// Defaults of the bounds on every download from a server (the answers of
// a --server command, monitor's tiles): a server that stops sending, or
// sends without end, cannot hold the client forever or fill its disk.
const (
	defaultDownloadIdle = 60 * time.Second
	defaultDownloadMax  = 8 << 30 // bytes
)

// errDownloadIdle and errDownloadTooLarge say why a download was cut.
var (
	errDownloadIdle     = errors.New("the server sent nothing for too long")
	errDownloadTooLarge = errors.New("the download is larger than its cap")
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
	idle, max := defaultDownloadIdle, int64(defaultDownloadMax)
	if c.IsSet("idle-timeout") || c.Duration("idle-timeout") != 0 {
		idle = c.Duration("idle-timeout")
	}
	if c.IsSet("max-download") || c.Int64("max-download") != 0 {
		max = c.Int64("max-download")
	}
	if idle <= 0 {
		return nil, usageErr("--idle-timeout must be positive")
	}
	if max <= 0 {
		return nil, usageErr("--max-download must be positive")
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Timeout: timeout, Transport: &boundedTransport{base: base, idle: idle, max: max}}, nil
}

// boundedTransport cuts a request when no byte of its answer arrives for
// idle (from the request on: the wait for the headers counts), and its
// answer's body beyond max bytes.
type boundedTransport struct {
	base http.RoundTripper
	idle time.Duration
	max  int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(t.idle, func() {
		cancel(fmt.Errorf("%w: %s without a byte (raise --idle-timeout)", errDownloadIdle, t.idle))
	})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		c := context.Cause(ctx)
		cancel(nil)
		if errors.Is(c, errDownloadIdle) {
			return nil, c
		}
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, ctx: ctx, cancel: cancel, timer: timer, idle: t.idle, left: t.max, max: t.max}
	return resp, nil
}

// boundedBody is an answer's body under boundedTransport.
type boundedBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
	max    int64
	left   int64 // bytes still allowed

	once sync.Once
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the cap tells a long answer from one of max bytes
	}
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		b.close()
		return n, fmt.Errorf("%w: over %d bytes (raise --max-download)", errDownloadTooLarge, b.max)
	}
	b.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		if c := context.Cause(b.ctx); errors.Is(c, errDownloadIdle) {
			return n, c
		}
	}
	return n, err
}

func (b *boundedBody) close() {
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.close()
	return err
}
