package policy

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/strictjson"
)

// Params are the caller's settings for a decision. They are recorded in
// every handoff entry (inside Inputs) so verify re-runs the decision with
// the same settings.
type Params struct {
	// Format forces a handoff format (--format); "" auto-detects.
	Format handoff.Format `json:"format,omitzero"`
	// From and To name the source and target agents for formats that do not
	// carry them (vbw/1, task/1).
	From string `json:"from,omitzero"`
	To   string `json:"to,omitzero"`
	// Strict turns the formats' lenient cases into errors (--strict).
	Strict bool `json:"strict,omitzero"`
	// MaxAge is the STALE window in nanoseconds; 0 disables the check.
	MaxAge int64 `json:"max_age_ns"`
	// MaxPayload is the largest payload, in bytes, that is parsed; larger
	// ones are rejected with PAYLOAD_TOO_LARGE. 0 means no limit.
	MaxPayload int64 `json:"max_payload"`
}

// Inputs is what a decision depends on besides the payload, the snapshots
// in force, the ledger state and the entry time. Its canonical JSON
// (Marshal) is stored as Entry.Inputs.
type Inputs struct {
	Params Params `json:"params"`
	// Observations are the file-system facts the format rules needed, in
	// the order they were made. Decide answers the rules from them only.
	Observations []handoff.Observation `json:"observations,omitzero"`
}

func (in Inputs) valid() error {
	p := in.Params
	if p.Format != "" && !slices.Contains(handoff.Formats, p.Format) {
		return fmt.Errorf("%w: params.format %q is not a known format", ErrInputs, p.Format)
	}
	if p.MaxAge < 0 {
		return fmt.Errorf("%w: params.max_age_ns %d is negative", ErrInputs, p.MaxAge)
	}
	if p.MaxPayload < 0 {
		return fmt.Errorf("%w: params.max_payload %d is negative", ErrInputs, p.MaxPayload)
	}
	for i, o := range in.Observations {
		if o.Op != "file" && o.Op != "dir" {
			return fmt.Errorf("%w: observations[%d].op %q is not file or dir", ErrInputs, i, o.Op)
		}
		if o.Size < 0 {
			return fmt.Errorf("%w: observations[%d].size %d is negative", ErrInputs, i, o.Size)
		}
	}
	return nil
}

// Marshal returns the RFC 8785 canonical JSON of in, the bytes stored as
// Entry.Inputs. Empty Observations are omitted, so one Inputs value has
// one encoding. It fails (ErrInputs) for values ParseInputs would refuse:
// an unknown format, a negative MaxAge or MaxPayload, an observation whose
// op is not "file" or "dir" or whose size is negative.
func (in Inputs) Marshal() ([]byte, error) {
	if err := in.valid(); err != nil {
		return nil, err
	}
	if len(in.Observations) == 0 {
		in.Observations = nil
	}
	b, err := strictjson.Canonical(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInputs, err)
	}
	return b, nil
}

// ParseInputs parses bytes written by Marshal. It is strict: the bytes must
// pass strictjson (one value, no duplicate or unknown names, valid UTF-8),
// satisfy the rules Marshal enforces, and be exactly the canonical form
// Marshal would write (so "params.max_age_ns" and "params.max_payload" are
// required, and an empty "observations" array is refused). Errors wrap
// ErrInputs and, for malformed JSON, a *strictjson.Error.
func ParseInputs(data []byte) (Inputs, error) {
	var in Inputs
	if err := strictjson.Unmarshal("inputs", data, &in); err != nil {
		return Inputs{}, fmt.Errorf("%w: %w", ErrInputs, err)
	}
	if err := in.valid(); err != nil {
		return Inputs{}, err
	}
	c, err := in.Marshal()
	if err != nil {
		return Inputs{}, err
	}
	if !bytes.Equal(c, data) {
		return Inputs{}, fmt.Errorf("%w: not in canonical form (want %s)", ErrInputs, truncate(string(c), 256))
	}
	return in, nil
}
