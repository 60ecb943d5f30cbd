package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults of Limits' zero fields, the bounds of a Client made with a nil
// *http.Client.
const (
	DefaultIdle        = 60 * time.Second
	DefaultMaxDownload = 8 << 30 // bytes of one answer
)

// Errors of an answer cut by Limits (wrapped, with ErrTransport, by the
// Client's errors).
var (
	// ErrIdle: no byte of the answer arrived for Limits.Idle.
	ErrIdle = errors.New("the server sent nothing for too long")
	// ErrTooLarge: the answer is longer than Limits.Max bytes.
	ErrTooLarge = errors.New("the answer is larger than its cap")
)

// Limits bound every answer read through their Transport, so that a
// server that stops sending, or sends without end, cannot hold a client
// forever or fill its disk.
type Limits struct {
	// Idle cuts a request when no byte of its answer arrives for this
	// long, the wait for the answer's headers included (0: DefaultIdle).
	Idle time.Duration
	// Max cuts an answer's body beyond this many bytes (0:
	// DefaultMaxDownload). Answers read whole are capped at MaxAnswer
	// besides.
	Max int64
}

// Transport returns base (nil: http.DefaultTransport) under the limits:
// the errors of a cut answer wrap ErrIdle or ErrTooLarge.
func (l Limits) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if l.Idle <= 0 {
		l.Idle = DefaultIdle
	}
	if l.Max <= 0 {
		l.Max = DefaultMaxDownload
	}
	return &limitedTransport{base: base, l: l}
}

type limitedTransport struct {
	base http.RoundTripper
	l    Limits
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	idle := t.l.Idle
	timer := time.AfterFunc(idle, func() { cancel(fmt.Errorf("%w: %s without a byte", ErrIdle, idle)) })
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		c := context.Cause(ctx)
		cancel(nil)
		if errors.Is(c, ErrIdle) {
			return nil, c
		}
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, ctx: ctx, cancel: cancel, timer: timer, idle: idle, left: t.l.Max, max: t.l.Max}
	return resp, nil
}

// limitedBody is an answer's body under limitedTransport.
type limitedBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
	max    int64
	left   int64 // bytes still allowed

	once sync.Once
}

func (b *limitedBody) Read(p []byte) (int, error) {
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
		b.stop()
		return n, fmt.Errorf("%w: over %d bytes", ErrTooLarge, b.max)
	}
	b.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		if c := context.Cause(b.ctx); errors.Is(c, ErrIdle) {
			return n, c
		}
	}
	return n, err
}

func (b *limitedBody) stop() {
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
}

func (b *limitedBody) Close() error {
	err := b.rc.Close()
	b.stop()
	return err
}
