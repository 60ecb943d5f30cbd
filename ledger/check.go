package ledger

import "fmt"

// Finding is one structural inconsistency found by a store's consistency
// check (Checker; bolt's Check). Seq is the entry
// concerned, or 0 when none is. Want and Got are the expected and the stored
// value (or a description), as text.
type Finding struct {
	Seq  uint64
	Kind string // one of the Find* constants
	Want string
	Got  string
}

func (f Finding) String() string {
	return fmt.Sprintf("seq %d: %s: want %s, got %s", f.Seq, f.Kind, f.Want, f.Got)
}

// Finding kinds.
const (
	FindUnknownBucket = "unknown_bucket"    // a bucket the format does not have
	FindMissingBucket = "missing_bucket"    // a bucket of the format is absent
	FindUnknownKey    = "unknown_key"       // a key (or nested bucket) the format does not have
	FindBadValue      = "bad_value"         // a stored value of the wrong shape
	FindSeqGap        = "seq_gap"           // entry keys are not 1, 2, 3, ...
	FindUndecodable   = "undecodable"       // entry bytes do not decode (entry.Decode)
	FindSeqMismatch   = "seq_mismatch"      // an entry's seq differs from its key
	FindPrevLink      = "prev_link"         // an entry's prev is not the previous entry's hash
	FindTimeOrder     = "time_order"        // an entry's time is before the previous one's
	FindMetaHead      = "meta_head"         // meta head is not the last entry
	FindTreeHash      = "tree_hash"         // a stored tree hash differs from the recomputed one
	FindTreeExtra     = "tree_extra"        // a stored tree hash beyond the tree
	FindIndexMissing  = "index_missing"     // an index key the chain implies is absent
	FindIndexExtra    = "index_extra"       // an index key no entry implies
	FindAccepted      = "accepted_state"    // idx_accepted differs from the chain
	FindBlocked       = "blocked_state"     // the blocked table differs from the chain
	FindRedacted      = "redacted_state"    // the redacted table differs from the chain
	FindInForce       = "in_force"          // meta's snapshots in force differ from the chain
	FindBlobHash      = "blob_hash"         // stored bytes do not hash to their key
	FindBlobOrphan    = "blob_orphan"       // stored bytes no entry refers to
	FindBlobMissing   = "blob_missing"      // snapshot bytes absent
	FindBlobUnremoved = "blob_not_redacted" // bytes a redaction removed are present
	FindStateRule     = "state_rule"        // an entry breaks a rule of the state fold (entry.State.Apply)
	FindKey           = "key_state"         // meta key differs from the key rotations
)
