package ledger

import (
	"context"
	"errors"

	"github.com/govledger/govledger/entry"

	"golang.org/x/mod/sumdb/tlog"
)

// ErrConflict is returned (wrapped) by Driver.Append when the stored head
// is no longer the head the batch was built on: another writer appended
// first. Nothing of the batch was stored. The core reads the entries it
// missed, folds them into its state, decides the affected requests again
// and retries.
var ErrConflict = errors.New("ledger: head moved (compare-and-append conflict)")

// A Driver stores one ledger: its canonical entries, the blobs they name
// (payloads, snapshot bytes), the Merkle tree's stored hashes, the derived
// tables the state fold reads (entry.Tables) and whatever indexes serve
// Find. It makes no decisions and knows no policy: the core (Ledger)
// builds every entry, folds it with entry.State, and hands the driver a
// finished Batch.
//
// A driver must be safe for concurrent use. bbolt (ledger/bolt), memory
// (ledger/memory) and PostgreSQL (ledger/postgres) implement it; the
// suite in ledger/ledgertest holds each to the contract below.
type Driver interface {
	// Origin is the ledger's identity, fixed when it was created.
	Origin() string

	// View opens a consistent, read-only view of the ledger as of the
	// stored head at the time of the call. Every read of the view answers
	// as of that head, however many batches are appended meanwhile. The
	// caller must Close it; a view may hold storage resources (a bbolt
	// read transaction, a PostgreSQL snapshot).
	View(ctx context.Context) (View, error)

	// Append stores b atomically and durably if, and only if, the stored
	// head is still b.At (seq and hash): compare-and-append. When the head
	// moved it stores nothing and returns an error wrapping ErrConflict.
	// When it returns nil the batch survives a crash of the process and
	// of the machine. Any other error leaves the outcome unknown (the
	// batch may or may not be stored); the core then refuses writes until
	// the ledger is opened again.
	Append(ctx context.Context, b *Batch) error

	// Close releases the storage. Views still open fail afterwards.
	Close() error
}

// A View is a consistent read-only snapshot of a stored ledger at one
// head. It implements entry.Tables (the answers as of Head) and
// tlog.HashReader (the stored hashes of the first Head().Seq leaves). Its
// methods are safe for concurrent use.
type View interface {
	entry.Tables
	tlog.HashReader

	// Head is the stored head and the scalars of the state at it.
	Head() entry.Head

	// Entry returns the canonical bytes of entry seq (1 <= seq <=
	// Head().Seq; otherwise an error wrapping ErrNotFound). Reads of every
	// method wrap ErrCorrupt when the stored bytes are damaged.
	Entry(seq uint64) ([]byte, error)
	// Scan calls fn with each entry from seq from through Head().Seq in
	// order, stopping at the first error fn returns (returned as is) or
	// when ctx is done.
	Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error
	// Blob returns the bytes stored under their SHA-256: ErrNotFound when
	// none are, ErrRedacted when a redaction erased them.
	Blob(sum entry.Hash) ([]byte, error)
	// Blocks returns every agent blocked at Head and the seq of the entry
	// that blocked it.
	Blocks() (map[string]uint64, error)
	// Find returns, in ascending order, the seqs of the entries matching
	// every field of q (see Query).
	Find(ctx context.Context, q Query) ([]uint64, error)

	Close() error
}

// A Batch is one commit: entries At.Seq+1 … Head.Seq, chained to At.Hash,
// with everything the driver stores beside them, all or nothing.
type Batch struct {
	// At is the head the batch extends. Only At.Seq and At.Hash are
	// compared with the stored head.
	At entry.Head
	// Head is the head after the batch, with the state scalars
	// (snapshots in force, checkpoint key) as the fold left them.
	Head entry.Head
	// Entries are the new entries in seq order, each with its canonical
	// bytes, decoded form and leaf hash.
	Entries []Appended
	// Blobs are bytes to store under their SHA-256: payloads and snapshot
	// contents. A blob already stored is left as it is.
	Blobs map[entry.Hash][]byte
	// Erase names blobs a redaction in this batch removes. After Append
	// returns, their bytes must not be recoverable from the storage: not
	// from the live data, and not from freed pages or dead rows the
	// storage keeps (bbolt rewrites the file; PostgreSQL vacuums).
	Erase []entry.Hash
	// Hashes are the tree's new stored hashes, in tlog storage order,
	// starting at index tlog.StoredHashIndex(0, int64(At.Seq)).
	Hashes []tlog.Hash
	// Delta is what the entries changed in the derived tables.
	Delta entry.Delta
}
