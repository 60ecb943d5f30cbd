package ui_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ui"
)

// synthLedger is a read-only ledger of n synthetic entries made on demand
// (entry seq is the same bytes every time), so a benchmark can hold a
// million entries without storing them. Its Entries walks back from the
// head as a ledger's seq index does: the UI's cost is what is measured.
type synthLedger struct {
	*memLedger
	n uint64
}

func (s *synthLedger) make(seq uint64) server.EntryView {
	i := int(seq)
	rs := []reason.Reason{}
	if i%4 == 0 {
		rs = append(rs, reason.Reason{Code: reason.Stale, Severity: reason.Error, Field: "timestamp", Message: "document older than the maximum age"})
	}
	e := handoffEntry("governed/1", uuidN(i), []string{"planner", "coder", "reviewer"}[i%3], "deployer", fmt.Sprintf("wf-%d", i/50), "ci-bot", rs)
	e.V, e.Seq, e.Time = entry.Version, seq, entry.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second)}
	sum, size := entry.Sum256([]byte(fmt.Sprint(seq))), int64(100)
	e.PayloadSHA256, e.PayloadSize = &sum, &size
	e.Prev = entry.Sum256([]byte(fmt.Sprint(seq - 1)))
	canon, err := e.Canonical()
	if err != nil {
		panic(err)
	}
	return server.EntryView{Seq: seq, Hash: entry.LeafHash(canon).String(), Entry: jsontext.Value(canon)}
}

func (s *synthLedger) Entries(ctx context.Context, q server.Query) (*server.Page, error) {
	if q.Agent != "" || q.Decision != "" || q.Code != "" || q.Format != "" || q.Workflow != "" || q.Kind != "" || !q.Since.IsZero() || !q.Until.IsZero() {
		return nil, fmt.Errorf("%w: the synthetic ledger has no indexes", server.ErrBadInput)
	}
	p := &server.Page{}
	top := s.n
	if q.Before != 0 {
		top = min(top, q.Before-1)
	}
	for seq := top; seq >= 1 && len(p.Entries) < q.Limit; seq-- {
		p.Entries = append(p.Entries, s.make(seq))
	}
	if last := len(p.Entries); last == q.Limit && p.Entries[last-1].Seq > 1 {
		p.Next = p.Entries[last-1].Seq
	}
	return p, nil
}

// timelineHandler returns the server's handler with the viewer over a
// synthetic ledger of n entries, and a session cookie for it.
func timelineHandler(b *testing.B, n uint64) (http.Handler, *http.Cookie) {
	led, vkey := newMemLedger(b)
	return viewerHandler(b, &synthLedger{memLedger: led, n: n}, vkey)
}

// viewerHandler returns the server's handler with the viewer over
// backend, and the session cookie of a ledger:read principal.
func viewerHandler(b testing.TB, syn server.Backend, vkey string) (http.Handler, *http.Cookie) {
	f := &server.TokensFile{Version: server.TokensVersion}
	tok, hash, err := server.NewToken(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Add(server.TokenEntry{Name: "reader", Hash: hash, Scopes: []server.Scope{server.ScopeLedgerRead}, Created: time.Now()}); err != nil {
		b.Fatal(err)
	}
	store := server.NewTokenStore(f, nil)
	u, err := ui.New(ui.Config{Backend: syn, Tokens: store, VerifierKey: vkey})
	if err != nil {
		b.Fatal(err)
	}
	m, err := server.NewMetrics(nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Backend: syn, Tokens: store, UI: u, Metrics: m})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/login", nil))
	m1 := csrfField.FindStringSubmatch(rec.Body.String())
	if m1 == nil {
		b.Fatalf("login page: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"csrf": {m1[1]}, "token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == ui.SessionCookie {
			return h, c
		}
	}
	b.Fatalf("login: %d %s", rec.Code, rec.Body)
	return nil, nil
}

// BenchmarkTimelineFirstPage renders the timeline's first page (50 rows)
// of a ledger of 1,000 and of 1,000,000 entries in the same run, and
// reports both and their ratio: the first page costs the same at any size.
func BenchmarkTimelineFirstPage(b *testing.B) {
	sizes := []uint64{1_000, 1_000_000}
	hs := make([]http.Handler, len(sizes))
	cs := make([]*http.Cookie, len(sizes))
	for i, n := range sizes {
		hs[i], cs[i] = timelineHandler(b, n)
	}
	var spent [2]time.Duration
	var bytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % 2
		req := httptest.NewRequest("GET", "/ui/timeline", nil)
		req.AddCookie(cs[k])
		rec := httptest.NewRecorder()
		start := time.Now()
		hs[k].ServeHTTP(rec, req)
		spent[k] += time.Since(start)
		if rec.Code != 200 || strings.Count(rec.Body.String(), "<tr data-seq=") != 50 {
			b.Fatalf("timeline of %d entries: %d, %d rows", sizes[k], rec.Code, strings.Count(rec.Body.String(), "<tr data-seq="))
		}
		if want := fmt.Sprintf(`<tr data-seq="%d">`, sizes[k]); !strings.Contains(rec.Body.String(), want) {
			b.Fatalf("timeline of %d entries does not start at the head", sizes[k])
		}
		bytes += int64(rec.Body.Len())
	}
	per := float64(b.N) / 2
	small, large := float64(spent[0].Nanoseconds())/per, float64(spent[1].Nanoseconds())/per
	b.ReportMetric(small, "ns/page@1k")
	b.ReportMetric(large, "ns/page@1M")
	b.ReportMetric(large/small, "ratio_1M/1k")
	b.SetBytes(bytes / int64(b.N))
}
