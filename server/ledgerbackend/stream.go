package ledgerbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/verify"
)

// Export implements server.Backend: the lines are exactly those of
// "govledger export" (verify.WriteExport), for the entries after seq
// after up to the head as of the call.
func (b *Backend) Export(ctx context.Context, after uint64, fn func(line []byte) error) error {
	head, err := b.l.TreeSize(ctx)
	if err != nil {
		return readErr(err)
	}
	w := &lineWriter{fn: fn}
	if err := verify.WriteExport(ctx, w, &exportSource{l: b.l, from: after + 1, head: head}); err != nil {
		return err
	}
	if len(w.buf) > 0 {
		return fmt.Errorf("export: a line without its newline (%d bytes)", len(w.buf))
	}
	return nil
}

// exportSource reads entries from through head (a verify.Source).
type exportSource struct {
	l          *ledger.Ledger
	from, head uint64
}

var errPastHead = errors.New("past the head")

func (s *exportSource) Entries(ctx context.Context, fn func(seq uint64, raw []byte) error) error {
	if s.from > s.head {
		return nil
	}
	err := s.l.Scan(ctx, s.from, func(seq uint64, raw []byte) error {
		if seq > s.head {
			return errPastHead
		}
		return fn(seq, raw)
	})
	if errors.Is(err, errPastHead) {
		return nil
	}
	return err
}

func (s *exportSource) Blob(ctx context.Context, sum entry.Hash) ([]byte, error) {
	return s.l.Blob(ctx, sum)
}

// EntryBlob makes the export answer per entry (verify.EntryBlobSource): a
// redacted entry's payload stays out of it.
func (s *exportSource) EntryBlob(ctx context.Context, seq uint64, sum entry.Hash) ([]byte, error) {
	return s.l.EntryBlob(ctx, seq, sum)
}

// lineWriter calls fn with each complete line written to it, without its
// newline.
type lineWriter struct {
	fn  func([]byte) error
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := slices.Clone(w.buf[:i])
		w.buf = w.buf[i+1:]
		if err := w.fn(line); err != nil {
			return 0, err
		}
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

// Watch implements server.Backend. It subscribes to the next append before
// it reads the head, so an entry committed while it delivers the backlog
// wakes it: no entry is skipped. With Options.Poll it also reads the head
// that often, for entries other processes committed.
func (b *Backend) Watch(ctx context.Context, after uint64, fn func(server.EntryView) error) error {
	var poll <-chan time.Time
	if b.o.Poll > 0 {
		t := time.NewTicker(b.o.Poll)
		defer t.Stop()
		poll = t.C
	}
	for {
		next := b.subscribe()
		head, err := b.l.TreeSize(ctx)
		if err != nil {
			return readErr(err)
		}
		for after < head {
			after++
			_, v, err := b.view(ctx, after)
			if err != nil {
				return err
			}
			if err := fn(v); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-next:
		case <-poll:
		case <-b.failed:
			// No append will come; keep serving reads until ctx ends.
			<-ctx.Done()
			return ctx.Err()
		}
	}
}
