// Package ledger is govledger's append-only, hash-chained store of
// governance decisions, kept in one bbolt file.
//
// # Model
//
//   - entry.Entry is one record. Its stored bytes are its RFC 8785 canonical JSON
//     form, and its hash is entry.LeafHash(bytes) = SHA-256(0x00 || bytes): the
//     RFC 6962 leaf hash. Each entry carries the hash of the previous one in
//     "prev", so the entries form a chain, and the same hashes are the leaves
//     of a Merkle tree (TreeHash, ProveInclusion, ProveConsistency).
//   - Ledger is an open file. Open returns one; Close releases it.
//   - Request is what a caller asks Append to record: snapshots to bring
//     into force, payload bytes, and a Build function that fills in the
//     entry's kind and fields. Build sees State, the ledger's derived state
//     (accepted handoff IDs, blocked agents, snapshots in force) as of just
//     before the entry.
//   - Result lists the entries an Append wrote (Appended: entry, canonical
//     bytes, hash).
//   - Finding is one structural inconsistency reported by Check.
//
// # Guarantees
//
// Single writer. Only one process may open a ledger for writing: Open takes
// an exclusive file lock (read-only opens take a shared one) and gives up
// after Options.Timeout with an error wrapping ErrLocked. Inside the
// process, every Append goes through one committer goroutine that computes
// seq, prev and time inside the write transaction from the stored head, so
// concurrent appends can neither fork the chain nor leave a gap.
//
// Durable before acknowledged. Append returns only after the transaction
// holding its entries was committed and fsynced; concurrent Appends share
// one commit (group commit, at most Options.MaxBatch requests). If a commit
// fails, every request of that commit gets the error and the Ledger refuses
// all later writes with ErrFailed: the outcome of a failed commit is
// unknown (the bytes may be on disk), so only a reopen may decide.
//
// Append-only. No method updates or deletes an entry. Redact removes a
// payload's bytes but keeps its hash, and records that it did so as an
// entry of its own.
//
// Derived state comes from entries only. Indexes, the blocked-agent table,
// the accepted-handoff table and the snapshots in force are maintained in
// the same transaction as the entry that changes them, and Check rebuilds
// them from the chain and compares.
//
// Bytes returned by any method are copies; they stay valid after the call.
//
// Corruption never panics. bbolt can panic on a damaged file; every method
// that reads the file recovers such a panic and returns an error wrapping
// ErrCorrupt.
//
// What the ledger alone cannot see. A chain stored on the same machine
// detects edits that break it, but not a truncated tail or a rewritten
// suffix: those need a checkpoint (tree size and hash) kept elsewhere. See
// TreeHash and ProveConsistency.
package ledger
