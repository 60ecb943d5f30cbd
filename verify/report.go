package verify

import (
	"fmt"
	"slices"

	"github.com/govledger/govledger/entry"
)

// Finding kinds. They are stable: scripts and golden files match on them.
const (
	KindGap            = "gap"             // a seq is missing, repeated, or stored under another key
	KindPrev           = "prev"            // an entry's prev is not the hash of the entry before it
	KindHash           = "hash"            // an entry's bytes do not hash to what the next entry (or the head, or the export line) commits to
	KindNotCanonical   = "not_canonical"   // the bytes parse but are not the canonical form
	KindMalformed      = "malformed"       // the bytes are not a valid entry
	KindPayload        = "payload"         // the payload bytes do not match payload_sha256 / payload_size
	KindPayloadMissing = "payload_missing" // the payload or snapshot bytes are gone and no redaction entry explains it
	KindSnapshot       = "snapshot"        // snapshot bytes wrong or unparseable, or a handoff names snapshots not in force
	KindTimeBackwards  = "time_backwards"  // warning: an entry's time is before the previous entry's
	KindDecision       = "decision"        // re-evaluation gives another decision
	KindReasons        = "reasons"         // re-evaluation gives other reason codes or severities
	// KindMessage (warning): re-evaluation gives the same codes, severities
	// and fields but another message text. Messages are covered by the
	// hash chain; their wording may improve between govledger versions, so
	// a difference alone must not fail the verification of an old ledger.
	KindMessage    = "message"
	KindBlocks     = "blocks"      // re-evaluation blocks other agents
	KindState      = "state"       // an entry breaks a rule of the state fold: a lock's lifts, a key rotation, an idempotency key
	KindIndex      = "index"       // structural: an index disagrees with the chain
	KindMetaHead   = "meta_head"   // the stored head disagrees with the chain
	KindUnknownKey = "unknown_key" // structural: a bucket or key that has no place in a ledger
	KindTree       = "tree"        // structural: a stored tree hash disagrees with the chain
	KindCorrupt    = "corrupt"     // the file could not be read (a recovered panic, a damaged page)
	KindExportLine = "export_line" // an export line is not valid
	KindUnredacted = "unredacted"  // a payload a redaction erased is readable again
	KindOutcome    = "outcome"     // an outcome does not follow an accepted handoff of its agent and workflow, or is its second
	// KindEntryTooLarge (warning): the entry's bytes are longer than the
	// 65,535 a tlog-tiles entry bundle carries (tiles.MaxEntrySize): the
	// tile API answers 422 for its bundle, and publish --entries stops
	// there. Entries recorded before ENTRY_TOO_LARGE existed can be so.
	KindEntryTooLarge = "entry_too_large"
)

// Finding is one inconsistency. It is self-contained: Seq, Kind, and the
// expected and found values are evidence that needs no other context.
type Finding struct {
	// Seq is the entry concerned; 0 when the finding concerns no entry
	// (an unknown bucket, for instance).
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	// Want is the value the replay computed or expected, Got the value
	// stored. Either may be empty.
	Want    string `json:"want,omitempty"`
	Got     string `json:"got,omitempty"`
	Message string `json:"message"`
	// Structural is true for a finding of Options.Structural (the store's
	// own check of its buckets, indexes and tables), false for one the
	// replay of the chain made.
	Structural bool `json:"structural,omitempty"`
}

// Warning reports whether f is only a warning: it does not make the report
// fail and does not count for FirstBad.
func (f Finding) Warning() bool {
	return f.Kind == KindTimeBackwards || f.Kind == KindMessage || f.Kind == KindEntryTooLarge
}

func (f Finding) String() string {
	s := fmt.Sprintf("seq %d: %s: %s", f.Seq, f.Kind, f.Message)
	if f.Want != "" || f.Got != "" {
		s += fmt.Sprintf(" (want %s, got %s)", orDash(f.Want), orDash(f.Got))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Report is the result of a replay.
type Report struct {
	// Entries is the number of entries read.
	Entries uint64 `json:"entries"`
	// LastSeq is the seq of the last entry read (0 for none).
	LastSeq uint64 `json:"last_seq"`
	// Head is the hash of the last entry's stored bytes, recomputed; the
	// zero hash for an empty source.
	Head entry.Hash `json:"head"`
	// FirstBad is the lowest seq with a finding that is not a warning; 0
	// when there is none. Structural findings count only when the replay
	// of the chain found nothing: indexes and tables are derived from the
	// chain, so once an entry is damaged, their disagreement with it is a
	// consequence, not the first bad entry.
	FirstBad uint64 `json:"first_bad"`
	// Findings are ordered by seq (findings without a seq first), and in
	// the order they were found within one seq.
	Findings []Finding `json:"findings"`
	// Redacted lists, in ascending order, the seqs whose payload or
	// snapshot bytes are missing because a redaction entry removed them
	// (or removed the same bytes for another entry). They are not findings.
	Redacted []uint64 `json:"redacted"`
	// Counts counts entries by kind ("handoff", "snapshot", "unblock",
	// "redaction", "key_rotation"), handoffs by decision ("accepted",
	// "rejected"), and "reevaluated" / "not_reevaluated" handoffs.
	Counts map[string]int `json:"counts"`
}

// OK reports whether the report has no finding other than warnings.
func (r *Report) OK() bool {
	for _, f := range r.Findings {
		if !f.Warning() {
			return false
		}
	}
	return true
}

// finish orders the findings and computes FirstBad.
func (r *Report) finish() {
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	r.FirstBad = 0
	for _, structural := range []bool{false, true} {
		for _, f := range r.Findings {
			if f.Structural == structural && !f.Warning() && f.Seq != 0 && (r.FirstBad == 0 || f.Seq < r.FirstBad) {
				r.FirstBad = f.Seq
			}
		}
		if r.FirstBad != 0 {
			break
		}
	}
	slices.Sort(r.Redacted)
	r.Redacted = slices.Compact(r.Redacted)
}
