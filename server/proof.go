package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/govledger/govledger/checkpoint"
)

// LatestProof is the answer to a reader's proof request: the inclusion
// proof of entry seq against the signed checkpoint cp (the latest one the
// server serves; nil when the server has no key: then against the head,
// with no checkpoint) and, when oldSize is not 0, the consistency proof
// from oldSize to that checkpoint's size. No checkpoint is signed here:
// a reader that holds a tree of an older size checks it against the
// latest through the consistency proof, so the server never signs a
// checkpoint of a size a reader chooses.
//
// An entry past cp's size fails with ErrNotFound, an oldSize past it with
// ErrUnprocessable; a malformed cp with an error that is not one of
// errors.go's (500).
func LatestProof(ctx context.Context, b Backend, cp []byte, seq, oldSize uint64) (*Proof, error) {
	var size uint64 // 0: the head, for a server without key
	if cp != nil {
		c, err := checkpoint.Parse(cp)
		if err != nil {
			return nil, fmt.Errorf("the latest checkpoint: %w", err)
		}
		size = c.Size
		if seq > size {
			return nil, fmt.Errorf("%w: entry %d is not in the latest checkpoint (size %d)", ErrNotFound, seq, size)
		}
		if oldSize > size {
			return nil, fmt.Errorf("%w: tree_size %d is beyond the latest checkpoint (size %d)", ErrUnprocessable, oldSize, size)
		}
	}
	pf, err := b.Proof(ctx, seq, size)
	if err != nil {
		return nil, err
	}
	if cp != nil && pf.TreeSize != size {
		return nil, fmt.Errorf("the backend proved entry %d in a tree of %d entries, not %d", seq, pf.TreeSize, size)
	}
	pf.Checkpoint = string(cp)
	if pf.Hashes == nil {
		pf.Hashes = []string{}
	}
	if oldSize != 0 {
		if oldSize > pf.TreeSize {
			return nil, fmt.Errorf("%w: tree_size %d is beyond the head %d", ErrUnprocessable, oldSize, pf.TreeSize)
		}
		hs, err := b.Consistency(ctx, oldSize, pf.TreeSize)
		if err != nil {
			return nil, err
		}
		if hs == nil {
			hs = []string{}
		}
		pf.Consistency = &Consistency{From: oldSize, To: pf.TreeSize, Hashes: hs}
	}
	return pf, nil
}

// latestCheckpoint returns the checkpoint readers are served: the
// cosigned one of TilesConfig.Checkpoint when there is one, else (unless
// TilesConfig.CosignedOnly, which answers ErrUnavailable) the backend's
// checkpoint of its head; nil (and no error) when the server
// has no signing key. minSize > 0 asks for one that covers that many
// entries: a cosigned checkpoint older than that gives way to the
// backend's, which is of the head (the latest size, never a past one).
func (s *Server) latestCheckpoint(ctx context.Context, minSize uint64) ([]byte, error) {
	if b := s.cosignedCheckpoint(); b != nil {
		if minSize == 0 {
			return b, nil
		}
		if c, err := checkpoint.Parse(b); err == nil && c.Size >= minSize {
			return b, nil
		}
	}
	if s.cfg.Tiles != nil && s.cfg.Tiles.CosignedOnly {
		if minSize > 0 {
			return nil, fmt.Errorf("%w: no checkpoint cosigned by the witness policy's quorum covers %d entries yet, and only a cosigned one is served", ErrUnavailable, minSize)
		}
		return nil, fmt.Errorf("%w: no checkpoint has been cosigned by the witness policy's quorum yet, and only a cosigned one is served", ErrUnavailable)
	}
	b, err := s.cfg.Backend.Checkpoint(ctx)
	if errors.Is(err, ErrUnavailable) && minSize > 0 {
		return nil, nil
	}
	return b, err
}
