package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// TestServeAbuse: oversized bodies, slow clients, too many streams, a full
// commit queue, bad and wrong-scope tokens, a token submitting for another
// agent, and a flood beyond the rate each get their status as a problem,
// while an honest client keeps being served and memory stays bounded.
func TestServeAbuse(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start("--max-body", "65536", "--max-batch-body", "65536", "--read-header-timeout", "500ms",
		"--read-timeout", "2s", "--max-streams", "2", "--max-queue", "2", "--rate", "10", "--burst", "30")
	honest := func(what string) {
		t.Helper()
		start := time.Now()
		if a := e.do(s, "GET", "/v1/entries?limit=1", "auditor", nil); a.status != 200 || time.Since(start) > 2*time.Second {
			t.Fatalf("honest client during %s: %d after %s\n%s", what, a.status, time.Since(start), a.body)
		}
	}
	doc := demoDoc(t, "01-product-to-analysis.json")
	if a := e.do(s, "POST", "/v1/handoffs", "product", doc); a.status != 201 {
		t.Fatalf("honest submission: %d %s", a.status, a.body)
	}
	head := e.head(s)

	t.Run("oversized bodies", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), 4<<20)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				// Content-Length known: refused before the body is read.
				a, err := e.try(s, "POST", "/v1/handoffs", "writer", big)
				if err == nil { // the server may also cut the upload off: no answer to check then
					p := wantProblem(t, "4 MiB body", a, 413, server.CodeBodyTooLarge)
					if p["written"] != "no" {
						t.Errorf("413 without written=no: %v", p)
					}
				}
			})
		}
		wg.Wait()
		// Chunked (no Content-Length): cut off by the body limit.
		req, _ := http.NewRequest("POST", s.url+"/v1/handoffs", io.MultiReader(bytes.NewReader(big[:40000]), bytes.NewReader(big[:40000])))
		req.Header.Set("Authorization", "Bearer "+e.tok["writer"])
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantProblem(t, "chunked body over the limit", answer{status: resp.StatusCode, header: resp.Header, body: b}, 413, server.CodeBodyTooLarge)
		batch := append(bytes.Repeat([]byte(`{"document":"`+strings.Repeat("y", 1000)+`"}`+"\n"), 80), '\n')
		wantProblem(t, "batch over the limit", e.do(s, "POST", "/v1/handoffs:batch", "writer", batch, "Content-Type: application/x-ndjson"), 413, server.CodeBodyTooLarge)
		honest("oversized bodies")
		m := regexp.MustCompile(`(?m)^process_resident_memory_bytes (\S+)$`).FindSubmatch(e.do(s, "GET", "/metrics", "", nil).body)
		if m == nil {
			t.Fatal("no process_resident_memory_bytes metric")
		}
		rss, _ := strconv.ParseFloat(string(m[1]), 64)
		if rss > 256<<20 {
			t.Fatalf("resident memory %.0f MiB after 16 parallel 4 MiB bodies: want the bodies refused unread", rss/(1<<20))
		}
		t.Logf("resident memory after the oversized bodies: %.0f MiB", rss/(1<<20))
	})

	t.Run("slow clients", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				conn.Write([]byte("POST /v1/handoffs HTTP/1.1\r\nHost: x\r\n"))
				start := time.Now()
				closed := make(chan struct{})
				go func() { io.Copy(io.Discard, conn); close(closed) }()
				for time.Since(start) < 5*time.Second {
					select {
					case <-closed:
						return // the server hung up on the slow header
					case <-time.After(100 * time.Millisecond):
						conn.Write([]byte("X"))
					}
				}
				t.Error("a client sending one header byte per 100ms was not cut off within 5s")
			})
		}
		time.Sleep(200 * time.Millisecond)
		honest("slow headers")
		wg.Wait()
		// A slow body: the headers arrive, the body never does.
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte("POST /v1/handoffs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e.tok["writer"] + "\r\nContent-Length: 1000\r\n\r\n{"))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 400 && resp.StatusCode != 408 {
				t.Fatalf("slow body answered %d", resp.StatusCode)
			}
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a client that never sends its body was not cut off within 10s")
		}
		honest("a slow body")
	})

	t.Run("too many streams", func(t *testing.T) {
		var stops []func()
		for range 2 {
			_, stop := openEvents(t, e, s, head)
			stops = append(stops, stop)
		}
		a := e.do(s, "GET", "/v1/events", "reader", nil)
		p := wantProblem(t, "third stream", a, 503, server.CodeOverloaded)
		if a.header.Get("Retry-After") == "" || p["retry_after"] == nil {
			t.Fatalf("503 without Retry-After: %v %v", a.header, p)
		}
		honest("two open streams")
		for _, stop := range stops {
			stop()
		}
	})

	t.Run("full commit queue", func(t *testing.T) {
		line := compactJSON(t, doc)
		batch := bytes.Join([][]byte{line, line, line}, []byte("\n"))
		a := e.do(s, "POST", "/v1/handoffs:batch", "writer", batch, "Content-Type: application/x-ndjson")
		p := wantProblem(t, "3 documents over a queue of 2", a, 503, server.CodeOverloaded)
		if p["written"] != "no" || a.header.Get("Retry-After") == "" || e.head(s) != head {
			t.Fatalf("full queue: %v, head %d -> %d", p, head, e.head(s))
		}
	})

	t.Run("credentials", func(t *testing.T) {
		for _, c := range []struct {
			what    string
			who     string
			headers []string
			status  int
			code    string
		}{
			{"garbage token", "", []string{"Authorization: Bearer glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, 401, server.CodeUnauthenticated},
			{"basic auth", "", []string{"Authorization: Basic dXNlcjpwYXNz"}, 401, server.CodeUnauthenticated},
			{"two tokens", "", []string{"Authorization: Bearer a", "Authorization: Bearer b"}, 401, server.CodeUnauthenticated},
			{"expired", "expired", nil, 401, server.CodeUnauthenticated},
			{"read-only token writes", "reader", nil, 403, server.CodeForbiddenScope},
			{"another agent's handoff", "product", nil, 403, server.CodeForbiddenSource},
		} {
			body := doc
			if c.code == server.CodeForbiddenSource {
				body = demoDoc(t, "03-content-to-security.json")
			}
			a := e.do(s, "POST", "/v1/handoffs", c.who, body, c.headers...)
			p := wantProblem(t, c.what, a, c.status, c.code)
			if p["written"] != "no" {
				t.Errorf("%s: written %v", c.what, p["written"])
			}
			if c.status == 401 && a.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: 401 without WWW-Authenticate", c.what)
			}
		}
		if e.head(s) != head {
			t.Fatalf("refused requests wrote entries: head %d -> %d", head, e.head(s))
		}
	})

	t.Run("flood", func(t *testing.T) {
		limited := 0
		for range 80 {
			a := e.do(s, "GET", "/v1/entries?limit=1", "flood", nil)
			if a.status == 429 {
				limited++
				wantProblem(t, "flood", a, 429, server.CodeRateLimited)
				if a.header.Get("Retry-After") == "" {
					t.Fatal("429 without Retry-After")
				}
			}
		}
		if limited == 0 {
			t.Fatal("80 requests at once with --rate 10 --burst 30: none refused")
		}
		honest("a flood by another principal")
		t.Logf("%d of 80 flood requests refused with 429", limited)
	})

	if a := e.do(s, "GET", "/livez", "", nil); a.status != 200 {
		t.Fatalf("livez after the abuse: %d", a.status)
	}
	if code := s.stop(); code != 0 {
		b, _ := os.ReadFile(s.log)
		t.Fatalf("stop: exit %d\n%s", code, b)
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}

}
