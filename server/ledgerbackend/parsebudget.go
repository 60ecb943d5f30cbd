package ledgerbackend

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/govledger/govledger/server"
)

// Defaults of the parse budget and of a batch's concurrency.
const (
	// DefaultMaxParseBytes is Options.MaxParseBytes's default: the bytes of
	// documents being decided at once, server-wide. Under the parse caps
	// of handoff.RulesBounded a document costs at most about 8x its size
	// while it is read.
	DefaultMaxParseBytes = 64 << 20
	// DefaultParseWait is Options.ParseWait's default: how long a document
	// waits for room in the budget before the answer is 503.
	DefaultParseWait = 2 * time.Second
	// DefaultBatchWorkers is Options.BatchWorkers's default: the documents
	// of one batch decided at once.
	DefaultBatchWorkers = 8
)

// parseBudget bounds the bytes of documents being parsed and decided at
// once. A document takes its size (at most the whole budget, so any
// document can be taken alone) and gives it back when its decision is
// taken; one that finds no room waits up to a bound, then is refused.
type parseBudget struct {
	max  int64
	wait time.Duration

	mu      sync.Mutex
	used    int64
	waiters int           // acquires waiting for room
	freed   chan struct{} // closed and replaced by every release
}

func newParseBudget(max int64, wait time.Duration) *parseBudget {
	return &parseBudget{max: max, wait: wait, freed: make(chan struct{})}
}

// ParseBudgetError is the refusal of a document the parse budget had no
// room for within its wait: 503 with Retry-After (it wraps
// server.ErrOverloaded), nothing written.
type ParseBudgetError struct {
	Size, Used, Max int64
	Wait            time.Duration
}

func (e *ParseBudgetError) Error() string {
	return fmt.Sprintf("parse budget full: %d bytes of documents are being decided (--max-parse-bytes %d), no room for %d more within %s; nothing written, retry later",
		e.Used, e.Max, e.Size, e.Wait)
}

func (e *ParseBudgetError) Unwrap() error { return server.ErrOverloaded }

// acquire takes n bytes of the budget (capped at its size), waiting up to
// b.wait for room; it returns what it took, for release.
func (b *parseBudget) acquire(ctx context.Context, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	n = min(n, b.max)
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return n, nil
		}
		freed, used := b.freed, b.used
		b.waiters++
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(b.wait)
			defer t.Stop()
			timeout = t.C
		}
		var err error
		select {
		case <-freed:
		case <-timeout:
			err = &ParseBudgetError{Size: n, Used: used, Max: b.max, Wait: b.wait}
		case <-ctx.Done():
			err = fmt.Errorf("%w: %v while waiting for the parse budget; nothing written", server.ErrUnavailable, ctx.Err())
		}
		b.mu.Lock()
		b.waiters--
		b.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
}

// waiting is the number of acquires waiting for room.
func (b *parseBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters
}

func (b *parseBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes being parsed now.
func (b *parseBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
