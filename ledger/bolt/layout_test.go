package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// TestLayoutPacked: after 2,000 handoffs of 1,448-byte payloads from 16
// concurrent writers (group commits of varying size), the buckets whose
// keys only grow are packed: entries and blobs leaf pages at least 90%
// full (a commit's last page is split at bbolt's fill, and a page left
// behind is never written again), and no full level-0 tree tile is
// stored. Format 4 kept blobs under their SHA-256 at ~65%.
func TestLayoutPacked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "packed.db")
	d, err := bolt.OpenDriver(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				h := bolttest.Handoff{ID: uuid.NewString(), Source: "a", Target: "b", Workflow: fmt.Sprint("wf-", i%7), Payload: diskPayload(i)}
				if _, err := l.Append(context.Background(), h.Build()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	fill, err := bolt.LeafFill(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"entries", "blobs"} {
		f := fill[name]
		if f[1] == 0 || float64(f[0]) < 0.9*float64(f[1]) {
			t.Errorf("%s: leaf pages hold %d of %d bytes, want at least 90%%", name, f[0], f[1])
		}
	}
	if f := fill["tiles"]; f[0] >= 8192 {
		t.Errorf("tiles hold %d bytes: a full level-0 tile (8,192 bytes) is stored", f[0])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bolttest.MustCheck(t, path)
}
