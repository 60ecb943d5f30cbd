package ledgerbackend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/govledger/govledger/server"
)

// TestParseBudget: a document takes its size; one that finds no room
// waits for a release, or is refused with a 503-worthy error naming the
// budget once its wait is over; a document larger than the budget is
// taken alone.
func TestParseBudget(t *testing.T) {
	ctx := context.Background()
	b := newParseBudget(100, 50*time.Millisecond)
	a, err := b.acquire(ctx, 60)
	if err != nil || a != 60 {
		t.Fatalf("acquire(60) = %d, %v", a, err)
	}
	// No room for 50 more: refused after the wait.
	_, err = b.acquire(ctx, 50)
	var be *ParseBudgetError
	if !errors.As(err, &be) || !errors.Is(err, server.ErrOverloaded) || be.Used != 60 || be.Max != 100 {
		t.Fatalf("acquire(50) over the budget = %v, want a *ParseBudgetError wrapping ErrOverloaded", err)
	}
	// A waiter is let in by a release.
	b.wait = time.Hour
	got := make(chan error, 1)
	go func() {
		n, err := b.acquire(ctx, 50)
		if err == nil && n != 50 {
			err = errors.New("took the wrong size")
		}
		got <- err
	}()
	for b.waiting() == 0 { // bounded by the test's deadline
		time.Sleep(time.Millisecond)
	}
	b.release(a)
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if u := b.inUse(); u != 50 {
		t.Fatalf("in use %d, want 50", u)
	}
	b.release(50)
	// Larger than the whole budget: taken alone, as the budget's size.
	if n, err := b.acquire(ctx, 1000); err != nil || n != 100 {
		t.Fatalf("acquire(1000) = %d, %v; want 100", n, err)
	}
	// A cancelled request stops waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.acquire(cctx, 1); !errors.Is(err, server.ErrUnavailable) {
		t.Fatalf("acquire with a cancelled context = %v", err)
	}
}
