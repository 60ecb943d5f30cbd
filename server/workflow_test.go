package server_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/client"
)

// TestWorkflowPages: a workflow's answer comes in pages (?limit, ?after,
// next), in seq order, and the client follows them to the whole chain.
func TestWorkflowPages(t *testing.T) {
	h := start(t, nil)
	var want []uint64
	for i := range 7 {
		doc := fmt.Sprintf(`{"source_agent":"agent-a","target_agent":"agent-b","handoff_id":"h-%d","workflow_id":"wf-long"}`, i)
		if i%2 == 1 {
			h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: docBA}) // another workflow between
		}
		r := h.do(req{method: "POST", path: "/v1/handoffs", as: pAll, body: doc})
		if r.status != 201 {
			t.Fatalf("submit: %d %s", r.status, r.body)
		}
		want = append(want, decode[server.SubmitResult](t, r.body).Seq)
	}
	type answer struct {
		WorkflowID string             `json:"workflow_id"`
		Entries    []server.EntryView `json:"entries"`
		Next       uint64             `json:"next"`
	}
	var got []uint64
	path, pages := "/v1/workflows/wf-long?limit=3", 0
	for pages < 10 {
		r := h.do(req{method: "GET", path: path, as: pReader})
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		a := decode[answer](t, r.body)
		pages++
		if len(a.Entries) > 3 {
			t.Fatalf("page of %d entries with limit 3", len(a.Entries))
		}
		for _, v := range a.Entries {
			got = append(got, v.Seq)
		}
		if a.Next == 0 {
			break
		}
		path = fmt.Sprintf("/v1/workflows/wf-long?limit=3&after=%d", a.Next)
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("paged workflow %v in %d pages, want %v in 3", got, pages, want)
	}
	for _, bad := range []string{"?limit=0", "?limit=1001", "?after=-1", "?page=2"} {
		if r := h.do(req{method: "GET", path: "/v1/workflows/wf-long" + bad, as: pReader}); r.status/100 != 4 {
			t.Errorf("%s: %d, want 4xx", bad, r.status)
		}
	}
	cl, err := client.New(h.url, h.tokens[pReader], nil)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := cl.Workflow(context.Background(), "wf-long")
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, v := range vs {
		got = append(got, v.Seq)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("client.Workflow = %v, want %v", got, want)
	}
}
