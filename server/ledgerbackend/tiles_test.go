package ledgerbackend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/tiles"
)

// TestTileAnswers maps the ledger's tile errors to the statuses the tile
// API answers: a tile beyond the head is 404, a bundle holding an entry
// longer than a bundle carries is 422 naming the entry, and its hash tile
// is served.
func TestTileAnswers(t *testing.T) {
	b, l := newBackend(t, 0)
	ctx := context.Background()
	// New brought the registry and lock into force: seqs 1 and 2.
	for i, note := range []string{"short", strings.Repeat("n", tiles.MaxEntrySize+1)} {
		if _, err := l.Append(ctx, &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
			e.Kind, e.Agent, e.Note = entry.KindUnblock, "agent", note
			return nil
		}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if data, err := b.Tile(ctx, tiles.Tile{Width: 4}); err != nil || len(data) != 4*tiles.HashSize {
		t.Errorf("hash tile 0/000.p/4: %d bytes, %v", len(data), err)
	}
	if _, err := b.Tile(ctx, tiles.Tile{Entries: true, Width: 3}); err != nil {
		t.Errorf("bundle of the short entry: %v", err)
	}
	_, err := b.Tile(ctx, tiles.Tile{Entries: true, Width: 4})
	if !errors.Is(err, server.ErrUnprocessable) || !strings.Contains(err.Error(), "seq 4") {
		t.Errorf("bundle with a %d-byte entry: %v, want ErrUnprocessable naming seq 4", tiles.MaxEntrySize+1, err)
	}
	if _, err := b.Tile(ctx, tiles.Tile{Width: 5}); !errors.Is(err, server.ErrNotFound) {
		t.Errorf("tile beyond the head: %v, want ErrNotFound", err)
	}
}
