package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/govledger/govledger/entry"
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
	Blob(ctx context.Context, sum entry.Hash) ([]byte, error)
}

// An EntryBlobSource is a Source that answers for the entry naming the
// bytes (ledger.Ledger.EntryBlob): redaction is per entry, so the payload
// of a redacted entry stays erased when a later entry stores the same
// bytes again. Replay and WriteExport read each entry's bytes with
// EntryBlob when the source has it, and with Blob otherwise.
type EntryBlobSource interface {
	Source
	EntryBlob(ctx context.Context, seq uint64, sum entry.Hash) ([]byte, error)
}

// blobOf reads the bytes entry seq names by sum from src.
func blobOf(ctx context.Context, src Source, seq uint64, sum entry.Hash) ([]byte, error) {
	if es, ok := src.(EntryBlobSource); ok {
		return es.EntryBlob(ctx, seq, sum)
	}
	return src.Blob(ctx, sum)
}

// entryReader is implemented by sources that can read an entry again by
// seq. Replay uses it to confirm a match of its compact handoff-ID table.
type entryReader interface {
	entry(ctx context.Context, seq uint64) (*entry.Entry, error)
}

// emitter is implemented by the package's sources, which find problems of
// their own while reading (an export's line syntax, a damaged key). Replay
// sets the function that adds such findings to its report.
type emitter interface{ setEmit(func(Finding)) }

// LedgerSource returns a Source reading l. Replay through it is read-only.
//
// Entries walks the entries bucket in key order (ledger.Ledger.Scan from
// key 0). If the walk fails on a damaged key (an error wrapping
// ledger.ErrCorrupt), it goes on seq by seq with Get from the first seq it
// did not deliver up to the stored head, so that the rest of the chain is
// still judged; inside Replay the damage becomes a finding of kind
// "corrupt" (outside, Entries returns the error after the walk). One
// LedgerSource serves one Replay at a time.
func LedgerSource(l *ledger.Ledger) Source { return &ledgerSource{l: l} }

type ledgerSource struct {
	l    *ledger.Ledger
	emit func(Finding) // set by Replay

	// During a Replay, blobs are read from a view shared by the workers
	// and replaced after viewReads reads (opening a view costs more than
	// reading a blob); outside, each Blob reads its own.
	mu     sync.Mutex
	shared bool
	cur    *lentView

	// blob is the blob stored under the seq of the entry being delivered
	// (Ledger.ScanBlobs), nil when none is: a copy that stays valid.
	blob []byte
}

// storedBlob returns the blob stored under the seq of the entry being
// delivered, nil when none is. Replay uses it when it hashes to the sum
// the entry names and reaches(sum, seq), and asks Blob otherwise.
func (s *ledgerSource) storedBlob() []byte { return s.blob }

// reaches reports whether Blob(sum) reads the blob stored under seq, as
// the ledger's readers reach it: through the shared view, like Blob.
func (s *ledgerSource) reaches(sum entry.Hash, seq uint64) bool {
	lv := s.lend()
	if lv == nil {
		return false
	}
	defer s.giveBack(lv)
	bs, ok := lv.v.(ledger.BlobScanner)
	if !ok {
		return false
	}
	at, ok, err := bs.BlobSeq(sum)
	if err != nil || !ok || at != seq {
		return false
	}
	// Not for an erased payload (EntryBlob answers for it).
	r, erased, err := lv.v.Erased(sum)
	return err == nil && !(erased && seq < r)
}

// viewReads is how many blobs one shared view serves: enough to spread
// the cost of opening it, few enough that no read transaction lives long
// (a writer is never held up by a verify).
const viewReads = 256

// lentView is a view and the reads it serves.
type lentView struct {
	v           ledger.View
	reads, refs int
}

// concurrentBlob: a ledger's Blob is safe for concurrent use, and answers
// for any entry.
func (s *ledgerSource) concurrentBlob() {}

func (s *ledgerSource) setEmit(f func(Finding)) { s.emit = f }

func (s *ledgerSource) beginReplay() {
	s.mu.Lock()
	s.shared = true
	s.mu.Unlock()
}

func (s *ledgerSource) endReplay() {
	s.mu.Lock()
	s.shared = false
	lv := s.cur
	s.cur = nil
	if lv != nil && lv.refs == 0 {
		lv.v.Close()
	}
	s.mu.Unlock()
}

// lend returns the shared view, opening one when there is none or the
// last one served viewReads reads; nil outside a Replay or when no view
// opens (the ledger's own Blob then answers, and says why).
func (s *ledgerSource) lend() *lentView {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shared {
		return nil
	}
	if s.cur == nil || s.cur.reads >= viewReads {
		old := s.cur
		s.cur = nil
		if old != nil && old.refs == 0 {
			old.v.Close()
		}
		v, err := s.l.Driver().View(context.Background())
		if err != nil {
			return nil
		}
		s.cur = &lentView{v: v}
	}
	s.cur.reads++
	s.cur.refs++
	return s.cur
}

// giveBack ends a read of lv, closing it when it was replaced and this was
// its last read.
func (s *ledgerSource) giveBack(lv *lentView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lv.refs--
	if lv.refs == 0 && lv != s.cur {
		lv.v.Close()
	}
}

func (s *ledgerSource) Entries(ctx context.Context, fn func(seq uint64, raw []byte) error) error {
	var next uint64
	var fnErr error
	err := s.l.ScanBlobs(ctx, 0, func(seq uint64, raw, blob []byte) error {
		next = seq + 1
		s.blob = blob
		fnErr = fn(seq, raw)
		s.blob = nil
		return fnErr
	})
	if err == nil || fnErr != nil || !errors.Is(err, ledger.ErrCorrupt) {
		return err
	}
	if s.emit != nil {
		s.emit(Finding{Seq: 0, Kind: KindCorrupt, Message: fmt.Sprintf("walking the entries: %v; the entries after seq %d were read one by one", err, next-min(next, 1))})
	}
	head, _, herr := s.l.Head(ctx)
	if herr != nil {
		return herr
	}
	for seq := max(next, 1); ; seq++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, raw, gerr := s.l.Get(ctx, seq)
		switch {
		case raw != nil:
			if err := fn(seq, raw); err != nil {
				return err
			}
		case errors.Is(gerr, ledger.ErrNotFound):
			if seq > head {
				if s.emit == nil {
					return err
				}
				return nil
			}
		default:
			return gerr
		}
	}
}

// Blob answers as ledger.Ledger.Blob does.
func (s *ledgerSource) Blob(ctx context.Context, sum entry.Hash) ([]byte, error) {
	lv := s.lend()
	if lv == nil {
		return s.l.Blob(ctx, sum)
	}
	data, err := lv.v.Blob(sum)
	s.giveBack(lv)
	if errors.Is(err, ledger.ErrNotFound) {
		// The view may be older than the entry (a ledger written while it
		// is verified): a view of now answers.
		return s.l.Blob(ctx, sum)
	}
	if err != nil {
		return nil, err
	}
	if got := entry.Sum256(data); got != sum {
		return nil, fmt.Errorf("blob %s: %w: stored bytes hash to %s", sum, ledger.ErrCorrupt, got)
	}
	return data, nil
}

// EntryBlob answers as ledger.Ledger.EntryBlob does.
func (s *ledgerSource) EntryBlob(ctx context.Context, seq uint64, sum entry.Hash) ([]byte, error) {
	lv := s.lend()
	if lv == nil {
		return s.l.EntryBlob(ctx, seq, sum)
	}
	r, ok, err := lv.v.Erased(sum)
	s.giveBack(lv)
	if err != nil {
		return nil, err
	}
	if ok && seq < r {
		return nil, fmt.Errorf("payload of seq %d: %w by seq %d", seq, ledger.ErrRedacted, r)
	}
	return s.Blob(ctx, sum)
}

func (s *ledgerSource) entry(ctx context.Context, seq uint64) (*entry.Entry, error) {
	e, _, err := s.l.Get(ctx, seq)
	return e, err
}
