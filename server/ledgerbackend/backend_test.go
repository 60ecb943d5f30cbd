package ledgerbackend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ledgerbackend"
)

// newBackend opens a ledger in a temporary folder with the demo registry.
func newBackend(t *testing.T, maxQueue int) (*ledgerbackend.Backend, *ledger.Ledger) {
	t.Helper()
	dir := t.TempDir()
	if err := demo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Config(dir, "registry"); err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(filepath.Join(dir, "l.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b, err := ledgerbackend.New(l, ledgerbackend.Options{MaxQueue: maxQueue, Root: filepath.Join(dir, "root"),
		Load: ledgerbackend.LoadFiles(filepath.Join(dir, "registry", "prompt-manifest.json"), filepath.Join(dir, "registry-lock.json"))})
	if err != nil {
		t.Fatal(err)
	}
	return b, l
}

func vbw(i int) server.SubmitRequest {
	return server.SubmitRequest{Body: fmt.Appendf(nil, "## Status\nstep %d", i), From: "domain-03-technical", To: "domain-02-analysis", Submitter: "w"}
}

// TestWatchNeverSkips: a watcher started at 0 while 8 writers append sees
// every seq once, in order.
func TestWatchNeverSkips(t *testing.T) {
	b, _ := newBackend(t, 0)
	const n = 200
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan uint64, n+8)
	done := make(chan error, 1)
	go func() {
		done <- b.Watch(ctx, 0, func(v server.EntryView) error { got <- v.Seq; return nil })
	}()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if _, err := b.Submit(ctx, vbw(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	want := uint64(n + 2) // and the manifest and lock snapshots
	for seq := uint64(1); seq <= want; seq++ {
		select {
		case s := <-got:
			if s != seq {
				t.Fatalf("watch delivered seq %d, want %d", s, seq)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch stopped at seq %d of %d", seq-1, want)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch returned %v, want context.Canceled", err)
	}
}

// TestExportStopsAtHead: entries appended during an export are not in it.
func TestExportStopsAtHead(t *testing.T) {
	b, _ := newBackend(t, 0)
	ctx := context.Background()
	for i := range 5 {
		if _, err := b.Submit(ctx, vbw(i)); err != nil {
			t.Fatal(err)
		}
	}
	var lines [][]byte
	err := b.Export(ctx, 2, func(line []byte) error {
		if len(lines) == 0 {
			if _, err := b.Submit(ctx, vbw(99)); err != nil { // lands during the export
				return err
			}
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil || len(lines) != 5 || !bytes.HasPrefix(lines[0], []byte(`{"entry":{`)) || !bytes.Contains(lines[0], []byte(`"seq":3,`)) {
		t.Fatalf("export after 2 of a 7-entry ledger: %v, %d lines, want seqs 3..7", err, len(lines))
	}
}

// TestRefusalsWriteNothing: another agent's handoff, a conflicting
// idempotency key and a full queue are refused with their sentinel, and
// the ledger does not grow.
func TestRefusalsWriteNothing(t *testing.T) {
	b, l := newBackend(t, 2)
	ctx := context.Background()
	r := vbw(1)
	r.IdempotencyKey = "k"
	first, err := b.Submit(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Submit(ctx, r)
	if err != nil || !again.Replayed || again.Seq != first.Seq || again.EntryHash != first.EntryHash {
		t.Fatalf("retry: %+v %v, want seq %d replayed", again, err, first.Seq)
	}
	other := r
	other.Submitter = "v" // keys are per principal
	if res, err := b.Submit(ctx, other); err != nil || res.Replayed {
		t.Fatalf("another principal's key k: %+v %v", res, err)
	}
	head, _ := l.TreeSize(ctx)
	moved := r
	moved.To = "domain-05-product"
	restricted := vbw(2)
	restricted.Sources = []string{"domain-05-product"}
	for _, c := range []struct {
		what string
		fn   func() error
		want error
	}{
		{"same key, other to", func() error { _, err := b.Submit(ctx, moved); return err }, server.ErrIdempotencyConflict},
		{"another agent's handoff", func() error { _, err := b.Submit(ctx, restricted); return err }, server.ErrForbiddenSource},
		{"unknown format", func() error { r := vbw(3); r.Format = "x/1"; _, err := b.Submit(ctx, r); return err }, server.ErrBadInput},
		{"3 documents, queue of 2", func() error {
			_, err := b.SubmitBatch(ctx, []server.SubmitRequest{vbw(4), vbw(5), vbw(6)})
			return err
		}, server.ErrOverloaded},
		{"unblock of an agent not blocked", func() error { _, err := b.Unblock(ctx, "domain-02-analysis", "x", "op"); return err }, server.ErrNotFound},
	} {
		if err := c.fn(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
		}
	}
	if h, _ := l.TreeSize(ctx); h != head {
		t.Fatalf("refusals wrote entries: head %d -> %d", head, h)
	}
}

// TestRedactionStays: the same bytes submitted again after a redaction
// are the new entry's; /payload and the export keep the redacted entry's
// payload out (410), and serve the new entry's.
func TestRedactionStays(t *testing.T) {
	b, l := newBackend(t, 0)
	ctx := context.Background()
	seqOf := func(i int) uint64 {
		t.Helper()
		if _, err := b.Submit(ctx, vbw(i)); err != nil {
			t.Fatal(err)
		}
		head, err := l.TreeSize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return head
	}
	red := seqOf(7)
	if _, err := l.Redact(ctx, red, "erasure"); err != nil {
		t.Fatal(err)
	}
	again := seqOf(7)
	if _, err := b.Payload(ctx, red); !errors.Is(err, server.ErrRedacted) {
		t.Errorf("Payload(%d), redacted, after the same bytes came again = %v, want ErrRedacted", red, err)
	}
	want, err := b.Payload(ctx, again)
	if err != nil || !bytes.Contains(want, []byte("step 7")) {
		t.Fatalf("Payload(%d), the later entry's = %q %v", again, want, err)
	}
	lines := map[uint64][]byte{}
	if err := b.Export(ctx, 0, func(line []byte) error {
		switch {
		case bytes.Contains(line, fmt.Appendf(nil, `"seq":%d,`, red)):
			lines[red] = line
		case bytes.Contains(line, fmt.Appendf(nil, `"seq":%d,`, again)):
			lines[again] = line
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if l := lines[red]; l == nil || bytes.Contains(l, []byte(`"payload_b64"`)) {
		t.Errorf("export line of the redacted seq %d: %s, want one without payload_b64", red, l)
	}
	if l := lines[again]; l == nil || !bytes.Contains(l, []byte(`"payload_b64"`)) {
		t.Errorf("export line of seq %d: %s, want its payload_b64", again, l)
	}
}
