package verify

import (
	"context"

	"github.com/govledger/govledger/ledger"
)

// Source is what Replay reads. Both an open ledger (LedgerSource) and an
// export (ExportSource) satisfy it.
type Source interface {
	// Entries calls fn for every stored entry in stored order (a ledger:
	// key order) with the seq it is stored under and its stored bytes. raw
	// is valid only during the call. Entries stops and returns fn's error
	// if fn fails, and ctx.Err() when ctx is done.
	Entries(ctx context.Context, fn func(seq uint64, raw []byte) error) error
	// Blob returns the payload or snapshot bytes whose SHA-256 is sum, as
	// recorded. It returns an error wrapping ledger.ErrNotFound or
	// ledger.ErrRedacted when the bytes are not there. Replay calls it only
	// from inside fn, for the blobs the entry being processed names.
	Blob(sum ledger.Hash) ([]byte, error)
}

// entryReader is implemented by sources that can read an entry again by
// seq. Replay uses it to confirm a match of its compact handoff-ID table.
type entryReader interface {
	entry(seq uint64) (*ledger.Entry, error)
}

// LedgerSource returns a Source reading l. Replay through it is read-only.
func LedgerSource(l *ledger.Ledger) Source { return ledgerSource{l} }

type ledgerSource struct{ l *ledger.Ledger }

func (s ledgerSource) Entries(ctx context.Context, fn func(seq uint64, raw []byte) error) error {
	return s.l.Scan(ctx, 0, fn)
}

func (s ledgerSource) Blob(sum ledger.Hash) ([]byte, error) { return s.l.Blob(sum) }

func (s ledgerSource) entry(seq uint64) (*ledger.Entry, error) {
	e, _, err := s.l.Get(seq)
	return e, err
}
