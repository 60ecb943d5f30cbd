package policy

import (
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

// Fill writes d, taken by Decide(in), into e as a "handoff" entry: kind,
// format, decision, reasons (an empty list, never absent), handoff_id,
// source, target, workflow_id (null where unknown, or where the document's
// value is not valid UTF-8), payload_sha256, payload_size,
// manifest_sha256, lock_sha256, blocks and inputs. It leaves v, seq, prev
// and time to the ledger.
//
// The manifest and lock hashes are the snapshots in force according to
// in.State, the ledger's own record: Fill returns ErrNoPolicy when
// in.State is nil or has none. When in.Registry carries its Snapshot bytes,
// their SHA-256 must be the manifest in force (ErrPolicyMismatch), so an
// entry never names a manifest other than the one it was decided with.
// (A lockfile.Lock carries no bytes, so the lock is not cross-checked here:
// the caller brings the lock it decided with into force.)
//
// Fill also returns ErrPayloadMismatch when in.Payload is kept but its
// length or SHA-256 differ from in.PayloadSize / in.PayloadSHA256, or the
// size is negative; ErrDecisionMismatch when d.Decision is not
// reason.Decide(d.Reasons); and ErrInputs when in.Inputs cannot be
// marshaled. On error e is unchanged.
func (d *Decision) Fill(e *entry.Entry, in Input) error {
	if d == nil || e == nil {
		return fmt.Errorf("%w: nil decision or entry", ErrDecisionMismatch)
	}
	if got := reason.Decide(d.Reasons); d.Decision != got {
		return fmt.Errorf("%w: decision %q, reasons say %q", ErrDecisionMismatch, d.Decision, got)
	}
	if in.PayloadSize < 0 {
		return fmt.Errorf("%w: negative size %d", ErrPayloadMismatch, in.PayloadSize)
	}
	if in.Payload != nil {
		if int64(len(in.Payload)) != in.PayloadSize {
			return fmt.Errorf("%w: %d bytes kept, size says %d", ErrPayloadMismatch, len(in.Payload), in.PayloadSize)
		}
		if h := entry.Sum256(in.Payload); h != in.PayloadSHA256 {
			return fmt.Errorf("%w: bytes hash to %s, PayloadSHA256 says %s", ErrPayloadMismatch, h, in.PayloadSHA256)
		}
	}
	if in.State == nil {
		return ErrNoPolicy
	}
	man, lock, ok := in.State.InForce()
	if !ok {
		return ErrNoPolicy
	}
	if in.Registry != nil && len(in.Registry.Snapshot) > 0 {
		if h := entry.Sum256(in.Registry.Snapshot); h != man {
			return fmt.Errorf("%w: registry snapshot %s, manifest in force %s", ErrPolicyMismatch, h, man)
		}
	}
	inputs, err := in.Inputs.Marshal()
	if err != nil {
		return err
	}

	rs := make([]reason.Reason, len(d.Reasons))
	copy(rs, d.Reasons)
	var blocks []string
	if len(d.Blocks) > 0 {
		blocks = append(blocks, d.Blocks...)
	}
	size, sum := in.PayloadSize, in.PayloadSHA256

	e.Kind = entry.KindHandoff
	e.Decision = d.Decision
	e.Reasons = &rs
	e.Format, e.HandoffID, e.Source, e.Target, e.WorkflowID = entry.Null(), entry.Null(), entry.Null(), entry.Null(), entry.Null()
	if r := d.Record; r != nil {
		e.Format = str(string(r.Format))
		e.HandoffID = str(r.HandoffID)
		e.Source = str(r.Source.ID)
		e.Target = str(r.Target.ID)
		e.WorkflowID = str(r.WorkflowID)
	}
	e.PayloadSHA256 = &sum
	e.PayloadSize = &size
	e.ManifestSHA256 = &man
	e.LockSHA256 = &lock
	e.Blocks = blocks
	e.Inputs = jsontext.Value(inputs)
	return nil
}

// str is entry.StrOrNull, except that a value that is not valid UTF-8 is
// null: every string in an entry is valid UTF-8 (the value stays in the
// payload).
func str(s string) entry.NullString {
	if !utf8.ValidString(s) {
		return entry.Null()
	}
	return entry.StrOrNull(s)
}
