package govern

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// The operator's entries: unblock and key rotation. Their rules are
// checked inside the commit, against the state the entry is appended to,
// so two operators racing cannot both lift one block or fork the chain of
// keys. The CLI and the server both call these.

// ErrNotBlocked is returned by Unblock for an agent that is not blocked.
var ErrNotBlocked = errors.New("agent is not blocked")

// ErrKeyRotation is wrapped by RotateKey's refusals: the old key is not
// the key in force, is missing while a key is in force, or the new key is
// already in force.
var ErrKeyRotation = errors.New("key rotation refused")

// ErrNoReason is returned when an operator entry has no reason.
var ErrNoReason = errors.New("a reason is required")

// Unblocked is an unblock entry and the entry whose block it lifted.
type Unblocked struct {
	ledger.Appended
	BlockedBy uint64
}

// Unblock appends an unblock entry for agent, recording why and, as its
// submitter, operator. It fails with ErrNotBlocked (nothing appended)
// when the agent is not blocked at the head the entry would extend.
func Unblock(ctx context.Context, l *ledger.Ledger, agent, why, operator string) (*Unblocked, error) {
	why = strings.TrimSpace(why)
	if why == "" {
		return nil, ErrNoReason
	}
	var by uint64
	res, err := l.Append(ctx, &ledger.Request{Build: func(st ledger.State, e *entry.Entry) error {
		seq, ok := st.Blocked(agent)
		if !ok {
			return fmt.Errorf("%w: %q", ErrNotBlocked, agent)
		}
		by = seq
		e.Kind, e.Agent, e.Note, e.Submitter = entry.KindUnblock, agent, why, operator
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return &Unblocked{Appended: *res.Last(), BlockedBy: by}, nil
}

// RotateKey appends a key_rotation entry bringing the checkpoint verifier
// key newKey into force, retiring oldKey. The chain of keys must not fork:
// oldKey must be the key in force ("" only before the first rotation),
// and newKey must differ from it. Refusals wrap ErrKeyRotation and append
// nothing. Keys are verifier keys as checkpoint.ParseVerifier returns them.
func RotateKey(ctx context.Context, l *ledger.Ledger, oldKey, newKey, why, submitter string) (*ledger.Appended, error) {
	why = strings.TrimSpace(why)
	switch {
	case why == "":
		return nil, ErrNoReason
	case newKey == "":
		return nil, fmt.Errorf("%w: no new key", ErrKeyRotation)
	case oldKey == newKey:
		return nil, fmt.Errorf("%w: old and new keys are the same", ErrKeyRotation)
	}
	res, err := l.Append(ctx, &ledger.Request{Build: func(st ledger.State, e *entry.Entry) error {
		switch inForce := st.KeyInForce(); {
		case inForce == newKey:
			return fmt.Errorf("%w: %s is already in force", ErrKeyRotation, newKey)
		case inForce != "" && oldKey == "":
			return fmt.Errorf("%w: the old key is required: %s is in force", ErrKeyRotation, inForce)
		case inForce != "" && oldKey != inForce:
			return fmt.Errorf("%w: the old key %s is not the key in force (%s)", ErrKeyRotation, oldKey, inForce)
		}
		e.Kind, e.OldKey, e.NewKey, e.Note, e.Submitter = entry.KindKeyRotation, oldKey, newKey, why, submitter
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return res.Last(), nil
}
