package ui_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/server"
)

// FuzzPageQuery sends arbitrary query strings and path segments to the
// viewer's pages: every answer is a page (200) or a problem (400, 404,
// 422), never a 500 or a panic.
func FuzzPageQuery(f *testing.F) {
	for _, q := range []string{"", "decision=rejected", "agent=coder&before=20", "since=2026-11-24T09:05&until=2026-11-24T09:08:00Z",
		"format=governed%2F1", "code=STALE", "before=0", "%zz", "agent=%ff", "kind=snapshot&workflow=wf-1", "seq=3"} {
		f.Add("timeline", q)
		f.Add("evidence/slice", q)
		f.Add("evidence/bundle", q)
		f.Add("agents/coder", q)
	}
	f.Add("entries/7", "")
	f.Add("workflows/wf%2F1", "")
	f.Add("entries/00", "")
	led, vkey := newMemLedger(f)
	seed(led)
	h, cookie := viewerHandler(f, led, vkey)
	f.Fuzz(func(t *testing.T, path, query string) {
		if strings.ContainsAny(path, "?#") {
			return
		}
		req, err := http.NewRequest("GET", "http://127.0.0.1/ui/"+path+"?"+query, nil)
		if err != nil {
			return
		}
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 301, 303, 307, 308:
		case 400, 404, 405, 422:
			var p server.Problem
			if rec.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != rec.Code {
				t.Fatalf("GET /ui/%s?%s: %d %q %s", path, query, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		default:
			t.Fatalf("GET /ui/%s?%s: %d %s", path, query, rec.Code, rec.Body)
		}
	})
}
