package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBoundedCopy: a download that stalls is cut after the idle timeout,
// one over the cap is cut at the cap, and a whole one is copied.
func TestBoundedCopy(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stall":
			w.Write([]byte("first line\n"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/big":
			for range 64 {
				if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<10)); err != nil {
					return
				}
			}
		default:
			w.Write([]byte("all of it\n"))
		}
	}))
	defer srv.Close()
	defer close(release)
	open := func(path string) func(context.Context) (io.ReadCloser, error) {
		return func(ctx context.Context) (io.ReadCloser, error) {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
			res, err := srv.Client().Do(req)
			if err != nil {
				return nil, err
			}
			return res.Body, nil
		}
	}
	var buf bytes.Buffer
	n, err := boundedCopy(context.Background(), &buf, 1<<20, 200*time.Millisecond, open("/stall"))
	if !errors.Is(err, errDownloadIdle) || n != int64(len("first line\n")) {
		t.Errorf("stalled download: %d bytes, %v; want the first line then %v", n, err, errDownloadIdle)
	}
	buf.Reset()
	n, err = boundedCopy(context.Background(), &buf, 10<<10, time.Minute, open("/big"))
	if !errors.Is(err, errDownloadTooLarge) || n > 10<<10 || !strings.Contains(err.Error(), "--max-download") {
		t.Errorf("64 KiB download, cap 10 KiB: %d bytes, %v; want %v", n, err, errDownloadTooLarge)
	}
	buf.Reset()
	n, err = boundedCopy(context.Background(), &buf, 1<<20, time.Minute, open("/"))
	if err != nil || buf.String() != "all of it\n" || n != 10 {
		t.Errorf("whole download: %d bytes %q, %v", n, buf.String(), err)
	}
}
