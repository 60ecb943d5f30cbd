package ledgerbackend_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

// TestFilterIndex: filters on reason code, format and kind (answered from
// the in-memory filter index) give exactly what a walk of every entry
// gives, page by page, including entries appended after the index was
// built and snapshot entries of a reload.
func TestFilterIndex(t *testing.T) {
	b, _ := newBackend(t, 0)
	ctx := context.Background()
	submit := func(r server.SubmitRequest) {
		t.Helper()
		if _, err := b.Submit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	docs := []string{"01-product-to-analysis.json", "03-content-to-security.json"}
	round := func(n int) {
		for i := range n {
			submit(vbw(i))
			doc, err := demo.Document(docs[i%len(docs)])
			if err != nil {
				t.Fatal(err)
			}
			submit(server.SubmitRequest{Body: doc, Submitter: "w"})
			if i%3 == 0 { // an unknown agent: rejected with its codes
				submit(server.SubmitRequest{Body: fmt.Appendf(nil, "## Status\n%d", i), From: "nobody", To: "domain-02-analysis", Submitter: "w"})
			}
		}
	}
	// all returns every entry, newest first, decoded.
	all := func() []*entry.Entry {
		var out []*entry.Entry
		q := server.Query{Limit: 1000}
		for {
			p, err := b.Entries(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range p.Entries {
				e, err := entry.Decode(v.Entry)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, e)
			}
			if p.Next == 0 {
				return out
			}
			q.Before = p.Next
		}
	}
	check := func(stage string) {
		t.Helper()
		es := all()
		codes, formats := map[string]bool{}, map[string]bool{}
		for _, e := range es {
			formats[e.Format.S] = true
			if e.Reasons != nil {
				for _, r := range *e.Reasons {
					codes[string(r.Code)] = true
				}
			}
		}
		var qs []server.Query
		for c := range codes {
			qs = append(qs, server.Query{Code: c}, server.Query{Code: c, Agent: "domain-02-analysis"})
		}
		for f := range formats {
			if f != "" {
				qs = append(qs, server.Query{Format: f}, server.Query{Format: f, Decision: "rejected"})
			}
		}
		qs = append(qs, server.Query{Kind: entry.KindSnapshot}, server.Query{Kind: entry.KindHandoff, Code: "UNKNOWN_AGENT"})
		if len(codes) < 2 || len(formats) < 2 {
			t.Fatalf("%s: fixture too plain: codes %v formats %v", stage, codes, formats)
		}
		for _, q := range qs {
			var want []uint64
			for _, e := range es {
				hasCode := q.Code == "" || e.Reasons != nil && slices.ContainsFunc(*e.Reasons, func(r reason.Reason) bool { return string(r.Code) == q.Code })
				if hasCode && (q.Format == "" || e.Format.S == q.Format) && (q.Kind == "" || e.Kind == q.Kind) &&
					(q.Decision == "" || e.Decision == q.Decision) &&
					(q.Agent == "" || e.Source.S == q.Agent || e.Target.S == q.Agent || e.Agent == q.Agent) {
					want = append(want, e.Seq)
				}
			}
			var got []uint64
			q.Limit = 3
			for range 1000 {
				p, err := b.Entries(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range p.Entries {
					got = append(got, v.Seq)
				}
				if p.Next == 0 {
					break
				}
				q.Before = p.Next
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: Entries(%+v) = %v, want %v", stage, q, got, want)
			}
		}
	}
	round(6)
	if _, err := b.Reload(ctx, "op"); err != nil {
		t.Fatal(err)
	}
	check("first build")
	round(5) // appended after the index was built
	check("caught up")
}
