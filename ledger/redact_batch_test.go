package ledger_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/ledger/memory"
)

// gated is a driver whose Append waits while gate is held.
type gated struct {
	*memory.Driver
	gate    sync.Mutex
	entered chan struct{}
}

func (g *gated) Append(ctx context.Context, b *ledger.Batch) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	g.gate.Lock() // held by the test until both requests are queued
	defer g.gate.Unlock()
	return g.Driver.Append(ctx, b)
}

// TestRedactionEndsBatch: a redaction and the same bytes submitted right
// after it, queued together, go to different commits: the later entry's
// bytes are stored after the erasure and read as its own.
func TestRedactionEndsBatch(t *testing.T) {
	ctx := context.Background()
	md, err := memory.New("")
	if err != nil {
		t.Fatal(err)
	}
	d := &gated{Driver: md, entered: make(chan struct{}, 1)}
	l, err := ledger.New(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	data := []byte(`{"handoff_id":"x","secret":"s"}`)
	h := func(id string) *ledger.Request {
		return bolttest.Handoff{ID: id, Source: "a", Target: "b", Payload: data}.Build()
	}
	res, err := l.Append(ctx, h("x"))
	if err != nil {
		t.Fatal(err)
	}
	red := res.Last().Entry.Seq
	<-d.entered
	d.gate.Lock()
	var wg sync.WaitGroup
	var rres, tres *ledger.Result
	var rerr, terr error
	wg.Go(func() { _, _ = l.Append(ctx, h("filler")) }) // holds the committer in the driver
	<-d.entered
	queued := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); l.Stats().Queued < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d requests queued, want %d", l.Stats().Queued, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	wg.Go(func() { rres, rerr = l.Redact(ctx, red, "erasure") })
	queued(1)
	wg.Go(func() { tres, terr = l.Append(ctx, h("y")) })
	queued(2)
	d.gate.Unlock()
	wg.Wait()
	if rerr != nil || terr != nil {
		t.Fatalf("Redact = %v, Append = %v", rerr, terr)
	}
	r, seq := rres.Last().Entry.Seq, tres.Last().Entry.Seq
	if seq < r {
		t.Fatalf("the later request got seq %d, before the redaction %d", seq, r)
	}
	if got, err := l.EntryBlob(ctx, seq, entry.Sum256(data)); err != nil || !bytes.Equal(got, data) {
		t.Errorf("EntryBlob(%d), stored right after the redaction %d = %q %v, want its bytes", seq, r, got, err)
	}
	if st := l.Stats(); st.Commits < 4 {
		t.Errorf("%d commits, want the redaction and the later entry in two", st.Commits)
	}
}
