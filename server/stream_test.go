package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data string
}

// sseClient reads events from a stream.
type sseClient struct {
	t      *testing.T
	res    *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

func (h *harness) events(t *testing.T, as string, headers map[string]string, query string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, _ := http.NewRequestWithContext(ctx, "GET", h.url+"/v1/events"+query, nil)
	hr.Header.Set("Authorization", "Bearer "+h.tokens[as])
	for k, v := range headers {
		hr.Header.Set(k, v)
	}
	res, err := (&http.Client{}).Do(hr)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	c := &sseClient{t: t, res: res, events: make(chan sseEvent, 100), cancel: cancel}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" {
					c.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			case strings.HasPrefix(line, ":"):
				c.events <- sseEvent{event: "comment"}
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() { c.cancel(); c.res.Body.Close() }

// next returns the next entry event, skipping comments; ok is false when
// the stream ended or nothing came within wait.
func (c *sseClient) next(wait time.Duration) (sseEvent, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return ev, false
			}
			if ev.event == "comment" {
				continue
			}
			return ev, true
		case <-timer.C:
			return sseEvent{}, false
		}
	}
}

func TestEvents(t *testing.T) {
	// Short read and write timeouts: a stream must outlive both.
	h := start(t, func(c *server.Config) {
		c.ReadTimeout, c.WriteTimeout, c.Heartbeat = 300*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond
	})
	submit := func(doc string) server.SubmitResult {
		r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: doc})
		if r.status != 201 {
			t.Fatalf("submit: %d %s", r.status, r.body)
		}
		return decode[server.SubmitResult](t, r.body)
	}
	submit(docAB)
	c := h.events(t, pReader, nil, "")
	ev, ok := c.next(2 * time.Second)
	if !ok || ev.id != "1" || ev.event != "entry" {
		t.Fatalf("first event %+v, %v; want entry 1", ev, ok)
	}
	if v := decode[server.EntryView](t, []byte(ev.data)); v.Seq != 1 {
		t.Fatalf("event data %s", ev.data)
	}
	// Outlive ReadTimeout and WriteTimeout, then a new entry arrives.
	time.Sleep(700 * time.Millisecond)
	res := submit(docBA)
	ev, ok = c.next(2 * time.Second)
	if !ok || ev.id != "2" {
		t.Fatalf("event after 700ms idle: %+v, %v; want entry 2", ev, ok)
	}
	if v := decode[server.EntryView](t, []byte(ev.data)); v.Hash != res.EntryHash {
		t.Fatalf("event hash %s, want %s", v.Hash, res.EntryHash)
	}
	c.close()
	// Entries committed while disconnected arrive on resume, none twice.
	submit(docUnknown)
	submit(docAB)
	for _, resume := range []struct {
		headers map[string]string
		query   string
	}{{map[string]string{"Last-Event-ID": "2"}, ""}, {nil, "?after=2"}} {
		c = h.events(t, pReader, resume.headers, resume.query)
		var ids []string
		for range 2 {
			ev, ok := c.next(2 * time.Second)
			if !ok {
				t.Fatalf("resume %+v: stream ended after %v", resume, ids)
			}
			ids = append(ids, ev.id)
		}
		if strings.Join(ids, ",") != "3,4" {
			t.Fatalf("resume %+v: ids %v, want 3,4", resume, ids)
		}
		if ev, ok := c.next(200 * time.Millisecond); ok {
			t.Fatalf("resume %+v: extra event %+v", resume, ev)
		}
		c.close()
	}
	if r := h.do(req{method: "GET", path: "/v1/events", as: pReader, headers: map[string]string{"Last-Event-ID": "x"}}); r.status != 400 {
		t.Fatalf("bad Last-Event-ID: %d", r.status)
	}
	// Heartbeats flow on an idle stream.
	c = h.events(t, pReader, nil, "?after=4")
	deadline := time.After(2 * time.Second)
	for comments := 0; comments < 3; {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.event == "comment" {
				comments++
			}
		case <-deadline:
			t.Fatalf("%d heartbeats in 2s, want 3", comments)
		}
	}
}

// TestShutdown checks that Serve drains: a write in flight is answered,
// an event stream is closed, and Serve returns.
func TestShutdown(t *testing.T) {
	h := start(t, nil)
	c := h.events(t, pReader, nil, "")
	done := make(chan resp, 1)
	go func() { done <- h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docFault("slow")}) }()
	// Shut down only once the slow write is in the backend: a fixed sleep
	// let a slow scheduler start the shutdown first (the POST then found
	// the listener closed).
	select {
	case <-h.fake.slowing:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow write did not reach the backend within 10s")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	if r := <-done; r.status != 201 {
		t.Fatalf("write in flight during shutdown: %d %s", r.status, r.body)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	// The stream delivered the entry, then ended.
	deadline := time.After(3 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-c.events:
			if !ok {
				ended = true
			} else if ev.event == "entry" && ev.id != "1" {
				t.Fatalf("unexpected event %+v", ev)
			}
		case <-deadline:
			t.Fatal("the event stream was not closed by the shutdown")
		}
	}
	if _, err := http.Get(h.url + "/livez"); err == nil {
		t.Fatal("the server still accepts connections after Serve returned")
	}
}
