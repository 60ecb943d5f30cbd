package checkpoint

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// CheckLedger reports whether ledger l extends checkpoint cp: same origin,
// at least cp.Size entries, and the same root over the first cp.Size
// entries. It fails with an *AnchorError (KindOrigin, KindTruncated or
// KindRewritten) when it does not, and with another error when l cannot be
// read. A ledger with zero entries under another origin fails with
// KindOrigin; under the same origin it fails with KindTruncated unless
// cp.Size is 0.
//
// CheckLedger trusts l.TreeHash to be computed from l's entries; a
// verifier that replays the entries must also check that the stored tree
// matches them (see RootFromLeaves).
func CheckLedger(ctx context.Context, l TreeReader, cp *Checkpoint) error {
	if got := l.Origin(); got != cp.Origin {
		return &AnchorError{Kind: KindOrigin, Size: cp.Size, Want: cp.Origin, Got: got}
	}
	n, err := l.TreeSize(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: ledger tree size: %w", err)
	}
	if n < cp.Size {
		return &AnchorError{Kind: KindTruncated, Size: cp.Size,
			Want: strconv.FormatUint(cp.Size, 10), Got: strconv.FormatUint(n, 10)}
	}
	h, err := l.TreeHash(ctx, cp.Size)
	if err != nil {
		return fmt.Errorf("checkpoint: ledger tree hash at %d: %w", cp.Size, err)
	}
	if h != cp.Hash {
		return &AnchorError{Kind: KindRewritten, Size: cp.Size,
			Want: base64.StdEncoding.EncodeToString(cp.Hash[:]), Got: base64.StdEncoding.EncodeToString(h[:])}
	}
	return nil
}

// RootFromLeaves returns the RFC 6962 root over leaf hashes computed by
// leaf(i) for i in [0, size), without trusting any stored tree. It holds
// O(size) hashes in memory and checks ctx every 4096 leaves.
func RootFromLeaves(ctx context.Context, size uint64, leaf func(i uint64) (tlog.Hash, error)) (tlog.Hash, error) {
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("checkpoint: hash index %d out of range", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for i := uint64(0); i < size; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return tlog.Hash{}, err
			}
		}
		h, err := leaf(i)
		if err != nil {
			return tlog.Hash{}, err
		}
		hs, err := tlog.StoredHashesForRecordHash(int64(i), h, r)
		if err != nil {
			return tlog.Hash{}, err
		}
		stored = append(stored, hs...)
	}
	return tlog.TreeHash(int64(size), r)
}

// An AnchorReport says what VerifyAnchor confirmed.
type AnchorReport struct {
	Origin         string   `json:"origin"`
	CheckpointSize uint64   `json:"checkpoint_size"`
	CheckpointRoot string   `json:"checkpoint_root"` // base64, as in the checkpoint
	Signers        []string `json:"signers"`         // verified "name+hash"
	LedgerSize     uint64   `json:"ledger_size"`
	// Consistent is true when the ledger extends the checkpoint (and the
	// stored state, when one was given).
	Consistent bool `json:"consistent"`
	// StateSize is the size of the newest checkpoint in the state directory
	// after the check (0 without a state directory).
	StateSize uint64 `json:"state_size,omitzero"`
	// StateUpdated is true when the checkpoint became the state's newest.
	StateUpdated bool `json:"state_updated"`
}

// VerifyAnchor checks ledger l against the signed checkpoint cpFile:
//
//  1. verifierKey (a note verifier key, or an OpenSSH ed25519 public key
//     named after the checkpoint's origin; see ParseVerifier) must have
//     signed cpFile (ErrUnknownKey, ErrBadSignature; ErrKeyFormat for a bad
//     key; ErrMalformed for a bad checkpoint);
//  2. l must extend the checkpoint (CheckLedger: *AnchorError);
//  3. with stateDir != "", l must also extend the newest checkpoint kept
//     for its origin in stateDir (*StateError wrapping ErrRollback when l is
//     older, ErrFork when it diverges), and the checkpoint must be
//     consistent with it (a consistency proof from l, checked against both
//     roots); a newer checkpoint then replaces the stored one atomically
//     (see State.Update). An older but consistent checkpoint is accepted
//     and leaves the state as it is.
//
// The report is returned with every error after step 1 so callers can show
// what was confirmed. VerifyAnchor waits at most DefaultLockWait for the
// state's lock; VerifyAnchorContext takes a ctx instead.
func VerifyAnchor(l TreeReader, cpFile []byte, verifierKey string, stateDir string) (*AnchorReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultLockWait)
	defer cancel()
	return VerifyAnchorContext(ctx, l, cpFile, verifierKey, stateDir)
}

// DefaultLockWait bounds VerifyAnchor's wait for the state directory's lock.
const DefaultLockWait = 30 * time.Second

// VerifyAnchorContext is VerifyAnchor with ctx bounding the wait for the
// state's lock.
func VerifyAnchorContext(ctx context.Context, l TreeReader, cpFile []byte, verifierKey string, stateDir string) (*AnchorReport, error) {
	// An OpenSSH verifier key has no note name: it takes the origin's,
	// the name govledger gives OpenSSH signer keys by default.
	name := ""
	if pc, err := Parse(cpFile); err == nil {
		name = pc.Origin
	}
	v, _, err := ParseVerifier([]byte(verifierKey), name)
	if err != nil {
		return nil, err
	}
	cp, err := Open(cpFile, note.VerifierList(v), "")
	if err != nil {
		return nil, err
	}
	rep := &AnchorReport{Origin: cp.Origin, CheckpointSize: cp.Size,
		CheckpointRoot: base64.StdEncoding.EncodeToString(cp.Hash[:]), Signers: cp.Signers}
	if n, err := l.TreeSize(ctx); err == nil {
		rep.LedgerSize = n
	}
	if err := CheckLedger(ctx, l, cp); err != nil {
		return rep, err
	}
	if stateDir == "" {
		rep.Consistent = true
		return rep, nil
	}
	st, err := OpenState(stateDir)
	if err != nil {
		return rep, err
	}
	// Two tries: a concurrent verifier may store a newer checkpoint between
	// our read and our update; the update then reports a rollback and the
	// ledger is re-checked against that newer checkpoint.
	for try := 0; ; try++ {
		stored, err := st.Latest(cp.Origin)
		if err != nil && !errors.Is(err, ErrNoState) {
			return rep, err
		}
		if stored != nil {
			rep.StateSize = stored.Size
			if err := checkLedgerAgainstState(ctx, l, stored, rep.LedgerSize); err != nil {
				return rep, err
			}
			if stored.Size >= cp.Size {
				// l extends both, so they are consistent; keep the newer.
				rep.Consistent = true
				return rep, nil
			}
		}
		updated, err := st.Update(ctx, cp, func(oldSize, newSize uint64) (tlog.TreeProof, error) {
			return l.ProveConsistency(ctx, oldSize, newSize)
		})
		if errors.Is(err, ErrRollback) && try == 0 {
			continue
		}
		if err != nil {
			return rep, err
		}
		rep.StateUpdated = updated
		rep.StateSize = cp.Size
		rep.Consistent = true
		return rep, nil
	}
}

// checkLedgerAgainstState turns an anchor failure against the stored
// checkpoint into a StateError carrying the stored checkpoint.
func checkLedgerAgainstState(ctx context.Context, l TreeReader, stored *Checkpoint, ledgerSize uint64) error {
	err := CheckLedger(ctx, l, stored)
	var ae *AnchorError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Kind {
	case KindTruncated:
		return &StateError{Err: ErrRollback, Stored: stored, LedgerSize: ledgerSize,
			Detail: "ledger is older than the last seen checkpoint"}
	case KindRewritten:
		return &StateError{Err: ErrFork, Stored: stored, LedgerSize: ledgerSize,
			Detail: fmt.Sprintf("ledger root at size %d is %s, last seen checkpoint has %s", ae.Size, ae.Got, ae.Want)}
	}
	return err
}
