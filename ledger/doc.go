// Package ledger is govledger's append-only, hash-chained store of
// governance decisions: the storage-neutral core (group commit, the
// decisions' state, every read) over a Driver that stores batches.
//
// # Model
//
//   - entry.Entry is one record. Its stored bytes are its RFC 8785 canonical JSON
//     form, and its hash is entry.LeafHash(bytes) = SHA-256(0x00 || bytes): the
//     RFC 6962 leaf hash. Each entry carries the hash of the previous one in
//     "prev", so the entries form a chain, and the same hashes are the leaves
//     of a Merkle tree (TreeHash, ProveInclusion, ProveConsistency).
//   - Driver stores one ledger (ledger/bolt: a bbolt file; ledger/memory;
//     ledger/postgres). Its write is compare-and-append: store this Batch
//     if the head is still the one it was built on. Its View is a
//     consistent snapshot. ledger/ledgertest is the suite every driver
//     passes.
//   - Ledger is an open ledger over a Driver. New returns one (bolt.Open
//     opens a file); Close releases it.
//   - Request is what a caller asks Append to record: snapshots to bring
//     into force, payload bytes, and a Build function that fills in the
//     entry's kind and fields. Build sees State, the ledger's derived state
//     (accepted handoff IDs, blocked agents, snapshots in force) as of just
//     before the entry: an entry.State, the one fold of the entries.
//   - Result lists the entries an Append wrote (Appended: entry, canonical
//     bytes, hash).
//   - Finding is one inconsistency reported by a driver's store check.
//
// # Guarantees
//
// No fork, no gap. Every Append goes through one committer goroutine,
// which builds each batch — seq, prev, time, the decisions of Build, the
// tree's stored hashes — on a View of the stored head H, outside any
// storage lock, then asks the driver to append it if the head is still H.
// When another writer of a shared store appended first (ErrConflict), the
// committer reads the new head and builds the batch again, so Build runs
// again on the new state (Options.MaxRetries times at most).
//
// Durable before acknowledged. Append returns only after the driver
// reported the batch stored durably; concurrent Appends share one batch
// (group commit, at most Options.MaxBatch requests). If the driver fails
// otherwise, every request of that batch gets the error and the Ledger
// refuses all later writes with ErrFailed: the outcome of a failed commit
// is unknown (the bytes may be stored), so only a reopen may decide.
//
// Append-only. No method updates or deletes an entry. Redact removes a
// payload's bytes but keeps its hash, and records that it did so as an
// entry of its own; the driver makes the bytes unrecoverable from its
// storage.
//
// Derived state comes from entries only. The accepted-handoff and
// idempotency tables, the blocked agents and the snapshots in force are
// the fold's Delta, stored in the same batch as the entries that change
// them; a driver's check rebuilds them from the chain and compares.
//
// Bytes returned by any method are copies; they stay valid after the call.
//
// What the ledger alone cannot see. A chain stored on the same machine
// detects edits that break it, but not a truncated tail or a rewritten
// suffix: those need a checkpoint (tree size and hash) kept elsewhere. See
// TreeHash and ProveConsistency.
package ledger
