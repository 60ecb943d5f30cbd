package gcbudget_test

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/govledger/govledger/cmd/govledger/internal/gcbudget"
)

func TestMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		want int64
	}{
		{0, 32 << 20},
		{100_000, 32<<20 + 1_600_000},
		{1_000_000, 32<<20 + 16_000_000}, // 47.3 MiB: under the 64 MiB heap budget at 1,000,000 entries
		{math.MaxUint64, math.MaxInt64},
	} {
		if got := gcbudget.MemoryLimit(tt.n); got != tt.want {
			t.Errorf("MemoryLimit(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
	if got := gcbudget.MemoryLimit(1_000_000); got > 64<<20 {
		t.Errorf("MemoryLimit(1,000,000) = %d, over 64 MiB", got)
	}
}

// TestVerifyRestores: Verify sets GOGC=400 under the limit, and its
// restore puts back what it found.
func TestVerifyRestores(t *testing.T) {
	gc0 := debug.SetGCPercent(150)
	lim0 := debug.SetMemoryLimit(1 << 40)
	defer func() {
		debug.SetGCPercent(gc0)
		debug.SetMemoryLimit(lim0)
	}()
	restore := gcbudget.Verify(1_000)
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	// The limit is above what the process held already (the test
	// binary's few MiB).
	if lim := debug.SetMemoryLimit(-1); gc != 400 || lim <= gcbudget.MemoryLimit(1_000) || lim > gcbudget.MemoryLimit(1_000)+256<<20 {
		t.Errorf("under Verify: GOGC %d, limit %d; want 400, a little above %d", gc, lim, gcbudget.MemoryLimit(1_000))
	}
	restore()
	gc = debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	if lim := debug.SetMemoryLimit(-1); gc != 150 || lim != 1<<40 {
		t.Errorf("restored: GOGC %d, limit %d; want 150, %d", gc, lim, int64(1<<40))
	}
}
