package policy

import "github.com/govledger/govledger/entry"

// State is the part of the ledger a decision reads, as of just before the
// entry being decided. A ledger.State satisfies it.
type State interface {
	// Accepted reports the seq and payload SHA-256 of the accepted handoff
	// entry with this handoff_id, if there is one.
	Accepted(handoffID string) (seq uint64, payload entry.Hash, ok bool)
	// Blocked reports the seq of the entry that blocked agent (a
	// HASH_MISMATCH), if the agent is blocked now (not since unblocked and
	// no new lock brought into force).
	Blocked(agent string) (seq uint64, ok bool)
	// InForce reports the SHA-256 of the manifest and lock snapshots in
	// force, if both are.
	InForce() (manifest, lock entry.Hash, ok bool)
}
