package ledgerbackend_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/server"
)

// hostileFlow is a YAML flow sequence of size bytes attributed to swarm/2:
// without the parse caps it costs yaml.v3 about 400 bytes per byte.
func hostileFlow(size int) []byte {
	head := []byte("handoff:\n  source:\n    skill: perspective-swarm\n  flow: [")
	return append(append(head, bytes.Repeat([]byte("1,"), (size-len(head))/2)...), "1]\n"...)
}

func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestParseCapRecorded: a document over a parse cap, from a principal
// that may submit for any agent, is recorded rejected with PARSE_LIMIT
// (its bytes, hash and size kept), at a cost of a few times its size.
func TestParseCapRecorded(t *testing.T) {
	b, _ := newBackend(t, 0)
	doc := hostileFlow(512 << 10)
	var res *server.SubmitResult
	var err error
	a := allocated(func() {
		res, err = b.Submit(context.Background(), server.SubmitRequest{Body: doc, Submitter: "w"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq == 0 || res.Decision != "rejected" || len(res.Reasons) == 0 || res.Reasons[0].Code != "PARSE_LIMIT" {
		t.Fatalf("Submit = %+v, want a recorded rejection with PARSE_LIMIT", res)
	}
	if p, err := b.Payload(context.Background(), res.Seq); err != nil || !bytes.Equal(p, doc) {
		t.Fatalf("payload of seq %d: %d bytes, %v; want the document kept", res.Seq, len(p), err)
	}
	if a > 8*uint64(len(doc))+8<<20 {
		t.Errorf("Submit allocated %d bytes for a %d-byte document", a, len(doc))
	}
}

// TestScopedOverMaxPayloadNotParsed: a document over --max-payload from a
// principal scoped to some agents is refused (403, nothing written)
// without being parsed; under it, a document over a parse cap names no
// source and is refused too.
func TestScopedOverMaxPayloadNotParsed(t *testing.T) {
	b, l := newBackend(t, 0)
	before := l.Stats().Entries
	// Its own source, padded over the default --max-payload of 1 MiB: it
	// is refused all the same, as its source is not read.
	swarm, err := demo.Document("11-swarm-to-litpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := append(append(swarm, "\n# "...), bytes.Repeat([]byte("x"), 2<<20)...)
	a := allocated(func() {
		_, err = b.Submit(context.Background(), server.SubmitRequest{Body: doc, Submitter: "w", Sources: []string{"perspective-swarm"}})
	})
	if !errors.Is(err, server.ErrForbiddenSource) {
		t.Fatalf("Submit = %v, want ErrForbiddenSource", err)
	}
	if a > uint64(len(doc))/2 {
		t.Errorf("refusing a %d-byte document allocated %d bytes: it was parsed", len(doc), a)
	}
	// Another agent's document under --max-payload: its source is read
	// without a parse, and it is refused for little more than its size.
	other := append(append(swarm, "\n# "...), bytes.Repeat([]byte("x"), 900<<10)...)
	a = allocated(func() {
		_, err = b.Submit(context.Background(), server.SubmitRequest{Body: other, Submitter: "w", Sources: []string{"lit-pm"}})
	})
	if !errors.Is(err, server.ErrForbiddenSource) {
		t.Fatalf("Submit of another agent's document = %v, want ErrForbiddenSource", err)
	}
	if a > uint64(len(other))*3/2 {
		t.Errorf("refusing another agent's %d-byte document allocated %d bytes: it was parsed", len(other), a)
	}
	_, err = b.Submit(context.Background(), server.SubmitRequest{Body: hostileFlow(512 << 10), Submitter: "w", Sources: []string{"perspective-swarm"}})
	if !errors.Is(err, server.ErrForbiddenSource) {
		t.Fatalf("Submit of a capped document from a scoped principal = %v, want ErrForbiddenSource", err)
	}
	if after := l.Stats().Entries; after != before {
		t.Fatalf("%d entries written by refused submissions", after-before)
	}
}
