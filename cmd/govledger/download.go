package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Defaults of the bounds on a download from a server (verify --server's
// export): a server that stops sending, or sends without end, cannot hold
// the client forever or fill its disk.
const (
	defaultDownloadIdle = 60 * time.Second
	defaultDownloadMax  = 8 << 30 // bytes
)

// errDownloadIdle and errDownloadTooLarge say why a download was cut.
var (
	errDownloadIdle     = errors.New("the server sent nothing for too long")
	errDownloadTooLarge = errors.New("the download is larger than its cap")
)

// boundedCopy copies what open returns into dst, cutting it when no byte
// arrives for idle, or when more than max bytes arrive. open is given a
// context that is cancelled when the download is cut, so the request
// ends with it. It returns the bytes copied.
func boundedCopy(ctx context.Context, dst io.Writer, max int64, idle time.Duration, open func(context.Context) (io.ReadCloser, error)) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(idle, func() { cancel(fmt.Errorf("%w (%s)", errDownloadIdle, idle)) })
	defer timer.Stop()
	body, err := open(ctx)
	if err != nil {
		if c := context.Cause(ctx); errors.Is(c, errDownloadIdle) {
			return 0, c
		}
		return 0, err
	}
	defer body.Close()
	var n int64
	buf := make([]byte, 64<<10)
	for {
		timer.Reset(idle)
		k, rerr := body.Read(buf)
		if k > 0 {
			if n+int64(k) > max {
				return n, fmt.Errorf("%w: over %d bytes (raise --max-download)", errDownloadTooLarge, max)
			}
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
		}
		if errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil {
			if c := context.Cause(ctx); errors.Is(c, errDownloadIdle) {
				return n, c
			}
			return n, rerr
		}
	}
}
