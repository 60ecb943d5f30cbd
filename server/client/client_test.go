package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer good":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"urn:govledger:problem:unauthenticated","title":"Authentication required","status":401,"code":"UNAUTHENTICATED","detail":"no bearer token","request_id":"r1"}`)
		case r.URL.Path == "/v1/blocks":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, "<html>bad gateway</html>")
		case r.URL.Path == "/v1/entries/3/proof":
			// A server signing at the size asked for: no consistency proof.
			io.WriteString(w, `{"seq":3,"tree_size":4,"leaf_hash":"","root_hash":"","hashes":[],"checkpoint":""}`)
		case r.URL.Path == "/v1/entries/7":
			io.WriteString(w, `{"seq":8,"hash":"00","entry":{}}`)
		default:
			io.WriteString(w, `not json`)
		}
	}))
	defer srv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	ctx := context.Background()
	anon, _ := New(srv.URL, "", nil)
	good, _ := New(srv.URL, "good", nil)
	gone, _ := New(closed, "good", nil)
	for _, c := range []struct {
		what   string
		err    error
		status int
		code   string
		is     error
		text   string
	}{
		{"401 problem", func() error { _, err := anon.Blocks(ctx); return err }(), 401, "UNAUTHENTICATED", nil, "401 UNAUTHENTICATED: no bearer token (request id r1)"},
		{"502 from a proxy", func() error { _, err := good.Blocks(ctx); return err }(), 502, "", nil, "502: <html>bad gateway</html>"},
		{"wrong seq", func() error { _, err := good.Entry(ctx, 7); return err }(), 0, "", ErrAnswer, "answered seq 8"},
		{"not JSON", func() error { _, err := good.Workflow(ctx, "a/b"); return err }(), 0, "", ErrAnswer, "GET /v1/workflows/a%2Fb"},
		{"proof without consistency", func() error { _, err := good.Proof(ctx, 3, 4); return err }(), 0, "", ErrAnswer, "no consistency proof from 4"},
		{"nothing listening", func() error { _, err := gone.Checkpoint(ctx); return err }(), 0, "", ErrTransport, "no answer"},
	} {
		var pe *ProblemError
		switch {
		case c.err == nil:
			t.Errorf("%s: no error", c.what)
		case c.status != 0 && (!errors.As(c.err, &pe) || pe.Status() != c.status || pe.Problem.Code != c.code):
			t.Errorf("%s: %v, want status %d code %q", c.what, c.err, c.status, c.code)
		case c.is != nil && !errors.Is(c.err, c.is):
			t.Errorf("%s: %v, want %v", c.what, c.err, c.is)
		case !strings.Contains(c.err.Error(), c.text):
			t.Errorf("%s: %q, want %q in it", c.what, c.err, c.text)
		}
	}
	for _, u := range []string{"ftp://x", "http://", "http://h/?q=1", "http://u:p@h", "::"} {
		if _, err := New(u, "", nil); err == nil {
			t.Errorf("New(%q): no error", u)
		}
	}
}

func FuzzParseProblem(f *testing.F) {
	f.Add(401, "application/problem+json", []byte(`{"type":"t","title":"x","status":401,"code":"UNAUTHENTICATED"}`))
	f.Add(502, "text/html", []byte("<html>"))
	f.Add(503, "application/problem+json; charset=utf-8", []byte(`{"status":503,"status":503}`))
	f.Fuzz(func(t *testing.T, status int, ct string, body []byte) {
		p := ParseProblem(status, ct, body)
		if p.Status != status || len(p.Detail) > 64<<10 {
			t.Fatalf("status %d -> %d", status, p.Status)
		}
		_ = (&ProblemError{Problem: p}).Error()
	})
}
