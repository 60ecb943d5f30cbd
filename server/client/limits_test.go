package client

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

// TestLimits: through Limits.Transport, an answer that never starts, or
// stalls after a line, is cut after the idle timeout; one that never ends
// is cut at the cap; a whole one is read. Through a Client: the errors
// wrap ErrTransport and ErrIdle or ErrTooLarge. The loopback server gives
// up after 15s or 64 MiB, so a broken limit fails the test rather than
// hanging it.
func TestLimits(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := func() {
			select {
			case <-r.Context().Done():
			case <-done:
			case <-time.After(15 * time.Second):
			}
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/stall/"):
			wait()
		case strings.HasPrefix(r.URL.Path, "/stallbody/"):
			w.Write([]byte("first line\n"))
			w.(http.Flusher).Flush()
			wait()
		case strings.HasPrefix(r.URL.Path, "/endless/"):
			chunk := bytes.Repeat([]byte("x"), 1<<10)
			for range 64 << 10 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case strings.HasPrefix(r.URL.Path, "/steady/"):
			for range 15 { // 1.5s in all, a byte every 100ms
				w.Write([]byte("."))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		default:
			w.Write([]byte("all of it\n"))
		}
	}))
	defer srv.Close()
	defer close(done)
	l := Limits{Idle: 200 * time.Millisecond, Max: 10 << 10}
	hc := &http.Client{Transport: l.Transport(nil)}
	get := func(path string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	if b, err := get("/stall/x"); !errors.Is(err, ErrIdle) || b != nil {
		t.Errorf("no answer: %q, %v; want %v", b, err, ErrIdle)
	}
	if b, err := get("/stallbody/x"); !errors.Is(err, ErrIdle) || string(b) != "first line\n" {
		t.Errorf("stalled answer: %q, %v; want the first line then %v", b, err, ErrIdle)
	}
	if b, err := get("/endless/x"); !errors.Is(err, ErrTooLarge) || len(b) != 10<<10 {
		t.Errorf("endless answer, cap 10 KiB: %d bytes, %v; want 10 KiB then %v", len(b), err, ErrTooLarge)
	}
	if b, err := get("/whole/x"); err != nil || string(b) != "all of it\n" {
		t.Errorf("whole answer: %q, %v", b, err)
	}
	// An answer longer than the idle timeout in all, but never idle that
	// long, is read whole: the timeout is on silence, not on the total.
	steady := &http.Client{Transport: Limits{Idle: time.Second}.Transport(nil)}
	if resp, err := steady.Get(srv.URL + "/steady/x"); err != nil {
		t.Errorf("steady answer: %v", err)
	} else {
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != 15 {
			t.Errorf("steady answer over 1.5s, idle timeout 1s: %q, %v; want it whole", b, err)
		}
	}
	// Through a Client.
	ctx := context.Background()
	for _, c := range []struct {
		base string
		is   error
	}{{"/stall", ErrIdle}, {"/endless", ErrTooLarge}} {
		cl, _ := New(srv.URL+c.base, "", hc)
		if _, err := cl.Blocks(ctx); !errors.Is(err, ErrTransport) || !errors.Is(err, c.is) {
			t.Errorf("Blocks from %s: %v, want %v and %v", c.base, err, ErrTransport, c.is)
		}
		body, err := cl.Export(ctx, 0)
		if err == nil {
			_, err = io.Copy(io.Discard, body)
			body.Close()
		}
		if !errors.Is(err, c.is) {
			t.Errorf("Export from %s: %v, want %v", c.base, err, c.is)
		}
	}
	// A Client made without an http.Client has the default limits.
	cl, _ := New(srv.URL, "", nil)
	if tr, ok := cl.hc.Transport.(*limitedTransport); !ok || tr.l.Idle != DefaultIdle || tr.l.Max != DefaultMaxDownload {
		t.Errorf("New(nil) transport = %#v, want the default Limits", cl.hc.Transport)
	}
}
