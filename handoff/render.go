package handoff

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/govledger/govledger/reason"
)

// ErrNotRejected is returned by SeedError when no reason rejects.
var ErrNotRejected = errors.New("handoff: no rejecting reason to render")

// Seed 000 error codes (its "Error Response Format").
const (
	SeedInvalidPayload   = "INVALID_PAYLOAD"
	SeedTargetNotFound   = "TARGET_NOT_FOUND"
	SeedValidationFailed = "VALIDATION_FAILED"
)

type seedError struct {
	Error struct {
		Code    string `yaml:"code"`
		Message string `yaml:"message"`
		Details struct {
			MissingFields    []string `yaml:"missing_fields,omitempty"`
			ValidationErrors []string `yaml:"validation_errors,omitempty"`
			TargetSkill      string   `yaml:"target_skill,omitempty"`
		} `yaml:"details"`
		Recoverable      bool   `yaml:"recoverable"`
		PayloadPreserved string `yaml:"payload_preserved"`
	} `yaml:"error"`
}

// SeedError renders a rejection in seed 000's "Error Response Format"
// (YAML). rs are all the reasons of the decision (format and policy). The
// code is TARGET_NOT_FOUND when a rejecting UNKNOWN_AGENT or
// INELIGIBLE_TARGET concerns the target; else INVALID_PAYLOAD when the
// document is unparseable, of unknown format or lacks required fields
// (details.missing_fields); else VALIDATION_FAILED. details.validation_errors
// lists every rejecting reason as "CODE field: message". recoverable is
// false when any reason is critical (a hash mismatch needs an operator).
// payload_preserved is the session directory's handoff-payload.yaml when
// the record names a session, else "". It returns ErrNotRejected when no
// reason rejects.
func SeedError(r *Record, rs []reason.Reason) ([]byte, error) {
	var e seedError
	var rejecting []reason.Reason
	recoverable := true
	for _, x := range rs {
		if x.Rejects() {
			rejecting = append(rejecting, x)
		}
		if x.Severity == reason.Critical {
			recoverable = false
		}
	}
	if len(rejecting) == 0 {
		return nil, ErrNotRejected
	}
	d := &e.Error.Details
	for _, x := range rejecting {
		d.ValidationErrors = append(d.ValidationErrors, describe(x))
	}
	target := ""
	if r != nil {
		target = r.Target.ID
		d.MissingFields = r.MissingFields
		if r.SessionPath != "" {
			e.Error.PayloadPreserved = path.Join(r.SessionPath, "handoff-payload.yaml")
		}
	}
	e.Error.Code = SeedValidationFailed
	for _, x := range rejecting {
		if (x.Code == reason.UnknownAgent || x.Code == reason.IneligibleTarget) && strings.Contains(x.Field, "target") {
			e.Error.Code = SeedTargetNotFound
			d.TargetSkill = target
			break
		}
		if x.Code == reason.Unparseable || x.Code == reason.UnknownFormat {
			e.Error.Code = SeedInvalidPayload
		}
	}
	if e.Error.Code == SeedValidationFailed && len(d.MissingFields) > 0 {
		e.Error.Code = SeedInvalidPayload
	}
	switch e.Error.Code {
	case SeedTargetNotFound:
		e.Error.Message = fmt.Sprintf("target skill %s not found or not eligible", quote(target))
	case SeedInvalidPayload:
		e.Error.Message = "invalid handoff payload: " + describe(rejecting[0])
	default:
		e.Error.Message = fmt.Sprintf("handoff validation failed: %d error(s), first: %s", len(rejecting), describe(rejecting[0]))
	}
	e.Error.Recoverable = recoverable
	return yaml.Marshal(&e)
}

func describe(x reason.Reason) string {
	return fmt.Sprintf("%s %s", x.Code, x.Message)
}

// StopMessage renders seed 002's "On Validation Failure" block for a
// rejected skill/1 handoff (any format works): the rejecting reasons
// joined by "; ", the source and target skills ("(unknown)" when the
// record has none) and the three options. It returns "" when no reason
// rejects.
func StopMessage(r *Record, rs []reason.Reason) string {
	var errs []string
	for _, x := range rs {
		if x.Rejects() {
			errs = append(errs, describe(x))
		}
	}
	if len(errs) == 0 {
		return ""
	}
	src, dst := "(unknown)", "(unknown)"
	if r != nil && r.Source.ID != "" {
		src = r.Source.ID
	}
	if r != nil && r.Target.ID != "" {
		dst = r.Target.ID
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Handoff validation failed: %s\n", strings.Join(errs, "; "))
	fmt.Fprintf(&b, "Source skill: %s\nTarget skill: %s\n\n", src, dst)
	b.WriteString("Options:\n(A) Regenerate handoff from source skill\n(B) Manually fix handoff document\n(C) Abort workflow (preserve completed outputs)\n")
	return b.String()
}
