package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/govledger/govledger/entry"

	"golang.org/x/mod/sumdb/tlog"
)

// ErrConflict is returned (wrapped) by Driver.Append when the stored head
// is no longer the head the batch was built on: another writer appended
// first. Nothing of the batch was stored. The core reads the entries it
// missed, folds them into its state, decides the affected requests again
// and retries.
var ErrConflict = errors.New("ledger: head moved (compare-and-append conflict)")

// ErrUnavailable is wrapped by a Driver error caused by the store being out
// of reach (a lost connection, a database restarting or refusing
// connections), not by anything wrong with the ledger. An Append that
// returns it stored nothing, unless the error also wraps ErrOutcomeUnknown.
// Either way the core stays writable: its next batch is built on the head
// actually stored, so the chain cannot fork; a server answers 503 and the
// client retries (with its idempotency key, so a batch that did land is
// not appended twice).
var ErrUnavailable = errors.New("ledger: store unavailable")

// ErrOutcomeUnknown is wrapped by an Append error when the batch was sent
// but the driver could not learn whether it was stored.
var ErrOutcomeUnknown = errors.New("ledger: commit outcome unknown")

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
	// when ctx is done. raw is valid only during the call.
	Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error
	// Blob returns the bytes stored under their SHA-256: ErrNotFound when
	// none are, ErrRedacted when a redaction erased them.
	Blob(sum entry.Hash) ([]byte, error)
	// Erased returns the seq of the last redaction entry that erased the
	// bytes whose SHA-256 is sum (ok false when none did). Redaction is
	// per entry: the payload of every entry naming sum with a lower seq
	// stays erased, even when a later entry stores the same bytes again
	// and Blob(sum) reads them (Ledger.EntryBlob).
	Erased(sum entry.Hash) (seq uint64, ok bool, err error)
	// Blocks returns every agent blocked at Head and the seq of the entry
	// that blocked it.
	Blocks() (map[string]uint64, error)
	// Find returns, in ascending order, the seqs of the entries matching
	// every field of q (see Query).
	Find(ctx context.Context, q Query) ([]uint64, error)

	Close() error
}

// A BlobScanner is a View that stores each blob under the seq of the
// first entry naming it, and can deliver it beside that entry in one pass
// over both (Ledger.ScanBlobs), where a Blob lookup per entry would search
// by hash. blob is nil for an entry that stored none; raw and blob are
// valid only during the call. The blob is what is stored: the reader
// checks it against the hash its entry names.
//
// A blob delivered so is the one Blob(sum) answers only if BlobSeq(sum)
// names the entry it was delivered with: a reader must ask, or it would
// take bytes that readers by hash no longer reach (a damaged or
// half-erased index) for the blob.
type BlobScanner interface {
	ScanBlobs(ctx context.Context, from uint64, fn func(seq uint64, raw, blob []byte) error) error
	// BlobSeq returns the seq whose stored blob Blob(sum) reads; ok is
	// false when Blob(sum) reads none by a seq.
	BlobSeq(sum entry.Hash) (seq uint64, ok bool, err error)
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
	// contents. A blob already stored is left as it is. The slices belong
	// to the caller: a driver that keeps them copies them.
	Blobs map[entry.Hash][]byte
	// Erase names blobs a redaction in this batch removes: Erase[i] is the
	// payload_sha256 of the entry Delta.Redactions[i].Of, so the two have
	// the same length. They are removed after Blobs are stored, and a view
	// then answers ErrRedacted for them (until a later batch stores the
	// same bytes again: those are the later entry's, and Erased keeps the
	// redacted entry's payload erased). A redaction is the last entry of
	// its batch (the core ends a batch there), so b.Head.Seq is its seq.
	// After Append returns, their bytes must not be
	// readable through any new view, and the driver removes them from
	// freed pages or dead rows as soon as no older view can still read
	// them: bbolt rewrites the file when its last older view closes;
	// PostgreSQL vacuums once no older snapshot remains on any replica.
	// What the storage copied elsewhere (write-ahead log, backups,
	// standbys) is outside a driver's reach; each driver documents it.
	Erase []entry.Hash
	// Hashes are the tree's new stored hashes, in tlog storage order,
	// starting at index tlog.StoredHashIndex(0, int64(At.Seq)).
	Hashes []tlog.Hash
	// Delta is what the entries changed in the derived tables.
	Delta entry.Delta
}

// Check reports whether b is a well-formed extension of its own At: seqs
// follow At.Seq without a gap, each entry's prev is the hash before it and
// its hash is the leaf hash of its bytes, Head names the last entry, there
// are as many stored hashes as the tree gains, and one erased blob per
// redaction. A driver calls it before storing b: it stores what the core
// builds, but must not store a broken chain. Errors wrap ErrCorrupt.
func (b *Batch) Check() error {
	if len(b.Entries) == 0 || b.Head.Seq != b.At.Seq+uint64(len(b.Entries)) {
		return fmt.Errorf("%w: batch of %d entries from seq %d to %d", ErrCorrupt, len(b.Entries), b.At.Seq, b.Head.Seq)
	}
	prev := b.At.Hash
	for i, a := range b.Entries {
		if a.Entry == nil || a.Entry.Seq != b.At.Seq+uint64(i)+1 || a.Entry.Prev != prev || entry.LeafHash(a.Raw) != a.Hash {
			return fmt.Errorf("%w: batch entry %d does not continue the chain", ErrCorrupt, b.At.Seq+uint64(i)+1)
		}
		prev = a.Hash
	}
	if prev != b.Head.Hash {
		return fmt.Errorf("%w: batch head hash is not its last entry's", ErrCorrupt)
	}
	if want := tlog.StoredHashIndex(0, int64(b.Head.Seq)) - tlog.StoredHashIndex(0, int64(b.At.Seq)); int64(len(b.Hashes)) != want {
		return fmt.Errorf("%w: batch has %d tree hashes, want %d", ErrCorrupt, len(b.Hashes), want)
	}
	if len(b.Erase) != len(b.Delta.Redactions) {
		return fmt.Errorf("%w: batch erases %d blobs for %d redactions", ErrCorrupt, len(b.Erase), len(b.Delta.Redactions))
	}
	return nil
}
