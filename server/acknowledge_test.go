package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/govledger/govledger/server"
)

// TestAcknowledge: with Config.Acknowledge (serve --witness-mode
// fail-closed), a write whose entry is not witnessed is answered 503
// NOT_WITNESSED, written "yes", with the entry's seq and Location; the
// entry stays, and a retry with the same Idempotency-Key is answered 201
// once it is witnessed. A batch's stored documents are answered so too.
func TestAcknowledge(t *testing.T) {
	var witnessed atomic.Uint64
	var asked atomic.Uint64
	h := start(t, func(c *server.Config) {
		c.Acknowledge = func(ctx context.Context, seq uint64) error {
			asked.Store(seq)
			if seq > witnessed.Load() {
				return errors.New("witnesses unreachable")
			}
			return nil
		}
	})
	post := func() resp {
		return h.do(req{method: "POST", path: "/v1/handoffs", as: pWriterA, body: docAB, ctype: "application/json",
			headers: map[string]string{"Idempotency-Key": "k-1"}})
	}
	r := post()
	if r.status != 503 {
		t.Fatalf("unwitnessed write: %d %s", r.status, r.body)
	}
	p := h.problem(r)
	if p.Code != server.CodeNotWitnessed || p.Written != "yes" || p.Seq != 1 || r.header.Get("Location") != "/v1/entries/1" ||
		r.header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "witnesses unreachable") || !strings.Contains(p.Detail, "Idempotency-Key") {
		t.Fatalf("unwitnessed write: %+v, Location %q, Retry-After %q", p, r.header.Get("Location"), r.header.Get("Retry-After"))
	}
	if h.fake.count() != 1 || asked.Load() != 1 {
		t.Fatalf("%d entries (want the one stored), acknowledgement asked for %d", h.fake.count(), asked.Load())
	}
	if r := h.do(req{method: "GET", path: "/v1/entries/1", as: pReader}); r.status != 200 {
		t.Fatalf("the unwitnessed entry: %d %s", r.status, r.body)
	}
	witnessed.Store(1)
	r = post()
	if r.status != 201 || !bytes.Contains(r.body, []byte(`"replayed":true`)) || h.fake.count() != 1 {
		t.Fatalf("retry once witnessed: %d %s (%d entries)", r.status, r.body, h.fake.count())
	}

	// A batch of two: both stored, the acknowledgement asked for the last.
	r = h.do(req{method: "POST", path: "/v1/handoffs:batch", as: pWriterA, body: docAB + "\n" + docAB + "\n", ctype: "application/x-ndjson"})
	if r.status != 200 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	var seqs []uint64
	for sc.Scan() {
		l := decode[struct {
			Status  int    `json:"status"`
			Code    string `json:"code"`
			Written string `json:"written"`
			Seq     uint64 `json:"seq"`
		}](t, sc.Bytes())
		if l.Status != 503 || l.Code != server.CodeNotWitnessed || l.Written != "yes" {
			t.Errorf("batch line %s", sc.Bytes())
		}
		seqs = append(seqs, l.Seq)
	}
	if fmt.Sprint(seqs) != "[2 3]" || asked.Load() != 3 || h.fake.count() != 3 {
		t.Errorf("batch seqs %v (want [2 3]), acknowledgement asked for %d (want 3), %d entries", seqs, asked.Load(), h.fake.count())
	}
	witnessed.Store(3)
	r = h.do(req{method: "POST", path: "/v1/handoffs:batch", as: pWriterA, body: docAB + "\n", ctype: "application/x-ndjson"})
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"status":503`)) || asked.Load() != 4 {
		t.Errorf("batch of entry 4, witnessed 3: %s", r.body)
	}
	witnessed.Store(5)
	r = h.do(req{method: "POST", path: "/v1/handoffs:batch", as: pWriterA, body: docAB + "\n", ctype: "application/x-ndjson"})
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"status":201`)) {
		t.Errorf("batch of entry 5, witnessed 5: %s", r.body)
	}

	// The operator's writes: a redaction (entry 6) and a reload (7).
	for _, c := range []struct{ path, body string }{{"/v1/entries/1/redact", `{"reason":"pii"}`}, {"/v1/reload", ""}} {
		n := uint64(h.fake.count() + 1)
		r := h.do(req{method: "POST", path: c.path, as: pOperator, body: c.body, ctype: "application/json"})
		if p := h.problem(r); r.status != 503 || p.Code != server.CodeNotWitnessed || p.Seq != n || p.Written != "yes" || asked.Load() != n {
			t.Errorf("%s, unwitnessed: %d %s (asked for %d)", c.path, r.status, r.body, asked.Load())
		}
	}

	// An outcome (entry 8) of the accepted handoff at seq 2.
	n := uint64(h.fake.count() + 1)
	r = h.do(req{method: "POST", path: "/v1/outcomes", as: pAll, body: `{"decision_seq":2,"status":"succeeded"}`, ctype: "application/json"})
	if p := h.problem(r); r.status != 503 || p.Code != server.CodeNotWitnessed || p.Seq != n || p.Written != "yes" || asked.Load() != n {
		t.Errorf("outcome, unwitnessed: %d %s (asked for %d)", r.status, r.body, asked.Load())
	}
}
