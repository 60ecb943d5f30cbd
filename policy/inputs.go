package policy

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

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
	// MaxReasonsBytes bounds the JSON of a decision's reasons: a decision
	// whose reasons take more is recorded compact (ENTRY_TOO_LARGE, see
	// Decide), so its entry fits the 65,535 bytes a tlog-tiles entry bundle
	// carries. 0 means no bound. A recorder decides without it first and
	// sets it only when the reasons exceed DefaultMaxReasonsBytes (see
	// govern), so only the entries it compacted record it.
	MaxReasonsBytes int64 `json:"max_reasons_bytes,omitzero"`
}

// DefaultMaxReasonsBytes is the MaxReasonsBytes recorders apply: 48 KiB of
// reasons leave 16 KiB of the 65,535-byte entry to everything else (ids
// and agents of at most 256 bytes each, hashes, inputs).
const DefaultMaxReasonsBytes = 48 << 10

// Inputs is what a decision depends on besides the payload, the snapshots
// in force, the ledger state and the entry time. Its canonical JSON
// (Marshal) is stored as Entry.Inputs.
type Inputs struct {
	Params Params `json:"params"`
	// Observations are the file-system facts the format rules needed, in
	// the order they were made. Decide answers the rules from them only.
	Observations []handoff.Observation `json:"observations,omitzero"`
	// Rules is the version of the rules the decision was taken by
	// (handoff.Options.Rules): 0, absent, in entries written before
	// versions existed, which are decided by rules 1; CurrentRules for new
	// decisions. Decide applies the rules of this version, so a change of
	// rules leaves earlier entries verifying.
	Rules int `json:"rules,omitzero"`
}

// CurrentRules is the rules version new decisions are taken by.
const CurrentRules = handoff.CurrentRules

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
	if p.MaxReasonsBytes < 0 {
		return fmt.Errorf("%w: params.max_reasons_bytes %d is negative", ErrInputs, p.MaxReasonsBytes)
	}
	switch r := in.Rules; {
	case r > CurrentRules:
		return fmt.Errorf("%w: rules %d is newer than this govledger knows (%d): verify with a newer release", ErrInputs, r, CurrentRules)
	case r < 0 || r == handoff.RulesUnbounded:
		// Rules 1 is written as no "rules" member: one encoding per value.
		return fmt.Errorf("%w: rules %d is not a rules version that is written (0 or %d..%d)", ErrInputs, r, handoff.RulesBounded, CurrentRules)
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
// op is not "file" or "dir" or whose size is negative, a Rules that is
// negative, 1 (written as 0) or above CurrentRules.
func (in Inputs) Marshal() ([]byte, error) {
	if err := in.valid(); err != nil {
		return nil, err
	}
	if len(in.Observations) == 0 {
		in.Observations = nil
	}
	if b, ok := appendInputs(nil, in); ok {
		return b, nil
	}
	b, err := strictjson.Canonical(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInputs, err)
	}
	return b, nil
}

// appendInputs appends the canonical JSON of in (as strictjson.Canonical
// writes it: members in RFC 8785 order, zero values left out as the
// omitzero tags say) to b. It reports false for what it leaves to
// strictjson.Canonical, which words the error: a string that is not valid
// UTF-8 or a number outside +-(2^53-1). FuzzInputsMarshal holds the two
// together.
func appendInputs(b []byte, in Inputs) ([]byte, bool) {
	ok := true
	str := func(s string) {
		if !utf8.ValidString(s) {
			ok = false
			return
		}
		b = appendJCSString(b, s)
	}
	num := func(n int64) {
		if n > strictjson.MaxSafeInteger || n < -strictjson.MaxSafeInteger {
			ok = false
			return
		}
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, '{')
	if in.Observations != nil {
		b = append(b, `"observations":[`...)
		for i, o := range in.Observations {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if o.Err != "" {
				b = append(b, `"err":`...)
				str(o.Err)
				b = append(b, ',')
			}
			if o.Escapes {
				b = append(b, `"escapes":true,`...)
			}
			if o.Exists {
				b = append(b, `"exists":true,`...)
			}
			if o.IsDir {
				b = append(b, `"is_dir":true,`...)
			}
			if o.Names != nil {
				b = append(b, `"names":[`...)
				for j, n := range o.Names {
					if j > 0 {
						b = append(b, ',')
					}
					str(n)
				}
				b = append(b, "],"...)
			}
			b = append(b, `"op":`...)
			str(o.Op)
			b = append(b, `,"path":`...)
			str(o.Path)
			if o.SHA256 != "" {
				b = append(b, `,"sha256":`...)
				str(o.SHA256)
			}
			if o.Size != 0 {
				b = append(b, `,"size":`...)
				num(o.Size)
			}
			b = append(b, '}')
		}
		b = append(b, "],"...)
	}
	p := in.Params
	b = append(b, `"params":{`...)
	if p.Format != "" {
		b = append(b, `"format":`...)
		str(string(p.Format))
		b = append(b, ',')
	}
	if p.From != "" {
		b = append(b, `"from":`...)
		str(p.From)
		b = append(b, ',')
	}
	b = append(b, `"max_age_ns":`...)
	num(p.MaxAge)
	b = append(b, `,"max_payload":`...)
	num(p.MaxPayload)
	if p.MaxReasonsBytes != 0 {
		b = append(b, `,"max_reasons_bytes":`...)
		num(p.MaxReasonsBytes)
	}
	if p.Strict {
		b = append(b, `,"strict":true`...)
	}
	if p.To != "" {
		b = append(b, `,"to":`...)
		str(p.To)
	}
	b = append(b, '}')
	if in.Rules != 0 {
		b = append(b, `,"rules":`...)
		num(int64(in.Rules))
	}
	b = append(b, '}')
	return b, ok
}

// appendJCSString appends s, valid UTF-8, as an RFC 8785 string: only
// '"', '\\' and the control characters escaped, those with a short form
// (\b \t \n \f \r) in it and the others as \u00xx.
func appendJCSString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
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
