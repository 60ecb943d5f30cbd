// Package checkpoint makes and checks signed checkpoints of a govledger
// ledger, so that an outsider holding one can detect what a hash chain
// alone cannot: a truncated tail, a rewritten and re-hashed suffix, a
// rollback to an older copy, a fork, or a whole new ledger swapped in.
//
// A checkpoint is a C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint):
// a signed note (https://c2sp.org/signed-note, golang.org/x/mod/sumdb/note)
// whose text is
//
//	<origin>\n
//	<tree size, decimal, no leading zeros>\n
//	<base64 RFC 6962 root hash of entries 1..size>\n
//	[<extension line>\n ...]
//
// The tree's leaf i is the hash of entry seq i+1, SHA-256(0x00 || canonical
// entry bytes) (tlog.RecordHash), so a checkpoint commits to every entry's
// bytes in order.
//
// The package holds:
//
//   - keys (keys.go): [GenerateKey], [LoadSigner], [ParseSigner],
//     [ParseVerifier]; signer keys in note format or OpenSSH ed25519.
//   - the checkpoint format (checkpoint.go): [Checkpoint], [Make], [Sign],
//     [Open] (verifies signatures), [Parse] (does not).
//   - anchor checks (anchor.go): [CheckLedger] and [VerifyAnchor] tell
//     whether a ledger extends a checkpoint, failing with *[AnchorError].
//   - verifier state (state.go): [State] keeps the newest verified
//     checkpoint per origin in a directory and refuses to go backwards or
//     to a fork (*[StateError] wrapping [ErrRollback] or [ErrFork]).
//
// Offline proof bundles (inclusion and consistency proofs that an outsider
// checks without the database) are in the sub-package bundle.
//
// The package never prints, exits, or reads flags or the environment.
// Making a checkpoint reads the ledger and never adds an entry to it.
package checkpoint
