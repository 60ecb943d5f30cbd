package policy

import "errors"

// Errors returned by ParseInputs and Decision.Fill. Test with errors.Is.
var (
	// ErrInputs is returned by ParseInputs for bytes that are not a valid,
	// canonical Inputs object.
	ErrInputs = errors.New("invalid policy inputs")
	// ErrNoPolicy is returned by Fill when Input.State is nil or has no
	// manifest and lock snapshot in force: a handoff entry must name both.
	ErrNoPolicy = errors.New("no manifest and lock snapshot in force")
	// ErrPolicyMismatch is returned by Fill when the registry the decision
	// was taken with is not the manifest snapshot in force.
	ErrPolicyMismatch = errors.New("registry is not the manifest snapshot in force")
	// ErrPayloadMismatch is returned by Fill when Input.Payload does not
	// match Input.PayloadSize or Input.PayloadSHA256.
	ErrPayloadMismatch = errors.New("payload bytes do not match their size or hash")
	// ErrDecisionMismatch is returned by Fill when the Decision is not the
	// one Decide gives for its reasons (a Decision built or edited by hand).
	ErrDecisionMismatch = errors.New("decision contradicts its reasons")
)
