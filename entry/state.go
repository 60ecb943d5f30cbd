package entry

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/govledger/govledger/reason"
)

// This file holds the one state fold of the ledger: the rules by which
// entries change the derived state (accepted handoff ids, idempotency keys,
// blocked agents, snapshots in force, redactions, the checkpoint key). The
// ledger core applies it to every entry it appends, a store's consistency
// check applies it to every entry it holds, and verify applies it to every
// entry it replays; nothing else implements these rules.

// Errors returned by State.Apply. Each wraps ErrFold.
var (
	// ErrFold is the family of an entry that cannot follow the state it
	// is applied to.
	ErrFold = errors.New("entry does not follow the ledger state")
	// ErrChain: seq, prev or time do not continue the chain.
	ErrChain = fmt.Errorf("%w: chain", ErrFold)
	// ErrNotInForce: a handoff names snapshots that are not in force.
	ErrNotInForce = fmt.Errorf("%w: snapshots not in force", ErrFold)
	// ErrNotBlocked: a lock's lift names an agent that is not blocked.
	ErrNotBlocked = fmt.Errorf("%w: agent not blocked", ErrFold)
	// ErrKeyChain: a key rotation's old key is not the key in force.
	ErrKeyChain = fmt.Errorf("%w: key rotation", ErrFold)
	// ErrIdempotencyKey: an idempotency key was used before for other bytes.
	ErrIdempotencyKey = fmt.Errorf("%w: idempotency key reused", ErrFold)
)

// Accept is the first entry that accepted a handoff id, or the first
// entry that used an idempotency key.
type Accept struct {
	Seq     uint64
	Payload Hash // the entry's payload_sha256
}

// Tables answers questions about derived state as a store holds it. A nil
// Tables is an empty ledger. Errors mean the store could not answer
// (ErrCorrupt and the like); State keeps the first and reports it from Err.
type Tables interface {
	Accepted(handoffID string) (Accept, bool, error)
	Idempotent(key string) (Accept, bool, error)
	Blocked(agent string) (seq uint64, ok bool, err error)
}

// Head is the position of a state in the chain and its scalar parts.
type Head struct {
	Seq  uint64    // entries folded (0: empty)
	Hash Hash      // hash of entry Seq (ZeroHash when empty)
	Time time.Time // time of entry Seq (zero when empty)

	Manifest, Lock       Hash // content hashes of the snapshots in force
	HasManifest, HasLock bool
	Key                  string // checkpoint verifier key in force ("" none)
}

// Delta is what a State's applied entries changed in its Tables. A store
// persists it in the same transaction as the entries.
type Delta struct {
	Accepted   map[string]Accept // first acceptances of handoff ids
	Idempotent map[string]Accept // first uses of idempotency keys
	Blocked    map[string]uint64 // agents blocked (agent -> blocking seq)
	Unblocked  map[string]bool   // agents of the base tables unblocked
	// ClearBlocked: a lock snapshot without a lifts list (written before
	// lifts existed) lifted every block of the base tables.
	ClearBlocked bool
	// Redactions lists the redaction entries applied, in order.
	Redactions []Redaction
}

// Redaction is a redaction entry (Seq) and the entry whose payload bytes
// it removed (Of).
type Redaction struct{ Seq, Of uint64 }

// ApplyBlocked makes blocked (agent -> seq of the entry that blocked it),
// the blocked table of the state d was folded on, the table after d:
// emptied when d cleared every block, then without the agents d
// unblocked and with those it blocked.
func (d *Delta) ApplyBlocked(blocked map[string]uint64) {
	if d.ClearBlocked {
		clear(blocked)
	}
	for a := range d.Unblocked {
		delete(blocked, a)
	}
	for a, seq := range d.Blocked {
		blocked[a] = seq
	}
}

// Empty reports whether d changes nothing.
func (d *Delta) Empty() bool {
	return len(d.Accepted) == 0 && len(d.Idempotent) == 0 && len(d.Blocked) == 0 &&
		len(d.Unblocked) == 0 && !d.ClearBlocked && len(d.Redactions) == 0
}

// State is the derived state after Head.Seq entries: a store's Tables with
// the changes of the entries applied on top of them (Delta). It answers the
// questions a decision asks (it implements policy.State). A State is not
// safe for concurrent use.
type State struct {
	Head
	base  Tables
	Delta Delta
	err   error
}

// NewState returns the state at head h whose tables are base (nil: none).
func NewState(h Head, base Tables) *State {
	return &State{Head: h, base: base}
}

// Reset makes s the state at head h on the same tables, with nothing
// applied: as NewState(h, base) but keeping the Delta's maps (cleared), so
// that a checker folding one entry at a time into its own tables does not
// allocate them again for every entry. What s.Delta held is gone.
func (s *State) Reset(h Head) {
	d := &s.Delta
	clear(d.Accepted)
	clear(d.Idempotent)
	clear(d.Blocked)
	clear(d.Unblocked)
	*s = State{Head: h, base: s.base, Delta: Delta{Accepted: d.Accepted, Idempotent: d.Idempotent,
		Blocked: d.Blocked, Unblocked: d.Unblocked, Redactions: d.Redactions[:0]}}
}

// Err returns the first error a table lookup returned. Answers given after
// an error may be wrong; callers must not use a State with an Err.
func (s *State) Err() error { return s.err }

func (s *State) fail(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}

// Accepted reports the first acceptance of handoffID.
func (s *State) Accepted(handoffID string) (seq uint64, payload Hash, ok bool) {
	if a, ok := s.Delta.Accepted[handoffID]; ok {
		return a.Seq, a.Payload, true
	}
	if s.base == nil {
		return 0, Hash{}, false
	}
	a, ok, err := s.base.Accepted(handoffID)
	s.fail(err)
	return a.Seq, a.Payload, ok && err == nil
}

// Idempotent reports the first entry that used the idempotency key.
func (s *State) Idempotent(key string) (Accept, bool) {
	if a, ok := s.Delta.Idempotent[key]; ok {
		return a, true
	}
	if s.base == nil {
		return Accept{}, false
	}
	a, ok, err := s.base.Idempotent(key)
	s.fail(err)
	return a, ok && err == nil
}

// Blocked reports the seq of the entry that blocked agent, if it is
// blocked now.
func (s *State) Blocked(agent string) (uint64, bool) {
	if seq, ok := s.Delta.Blocked[agent]; ok {
		return seq, true
	}
	if s.Delta.ClearBlocked || s.Delta.Unblocked[agent] || s.base == nil || agent == "" {
		return 0, false
	}
	seq, ok, err := s.base.Blocked(agent)
	s.fail(err)
	return seq, ok && err == nil
}

// InForce returns the content hashes of the snapshots in force; ok is false
// until both a manifest and a lock snapshot were recorded.
func (s *State) InForce() (manifest, lock Hash, ok bool) {
	return s.Manifest, s.Lock, s.HasManifest && s.HasLock
}

// KeyInForce returns the checkpoint verifier key the last key rotation
// brought into force ("" before the first).
func (s *State) KeyInForce() string { return s.Key }

// Apply folds e, whose hash is h, into the state. It checks that e
// continues the chain (seq is Head.Seq+1, prev is Head.Hash, time is not
// earlier than Head.Time) and follows the state:
//
//   - handoff: its manifest_sha256 and lock_sha256 are the snapshots in
//     force; an accepted handoff id is remembered (its first acceptance);
//     its idempotency key, if any, is remembered (a key used before must
//     name the same payload); every agent in blocks becomes blocked by
//     this entry.
//   - snapshot: a manifest comes into force; a lock comes into force and
//     lifts the blocks it lists (each must be blocked), or every block
//     when it has no lifts list (entries written before lifts existed).
//   - unblock: the agent's block ends (an unblock of an agent that is not
//     blocked changes nothing; the appenders refuse to write one).
//   - redaction: the redacted entry's payload is removed (recorded in
//     Delta.Redactions; that the entry exists and has a payload is the
//     appender's check, which has the store).
//   - key_rotation: old_key must be the key in force, once one is (the
//     first rotation names the key first used out of band); new_key comes
//     into force.
//
// On error the state is unchanged. Apply does not validate e's fields
// (Validate, Decode and Canonical do).
func (s *State) Apply(e *Entry, h Hash) error {
	if e.Seq != s.Seq+1 {
		return fmt.Errorf("%w: seq %d follows seq %d", ErrChain, e.Seq, s.Seq)
	}
	if e.Prev != s.Hash {
		return fmt.Errorf("%w: seq %d: prev %s is not the hash of seq %d (%s)", ErrChain, e.Seq, e.Prev, s.Seq, s.Hash)
	}
	if e.Time.Before(s.Time) {
		return fmt.Errorf("%w: seq %d: time %s is before the previous entry's %s", ErrChain, e.Seq,
			e.Time.Format(time.RFC3339Nano), s.Time.Format(time.RFC3339Nano))
	}
	switch e.Kind {
	case KindHandoff:
		if !s.HasManifest || *e.ManifestSHA256 != s.Manifest || !s.HasLock || *e.LockSHA256 != s.Lock {
			return fmt.Errorf("%w: seq %d: manifest_sha256/lock_sha256 are not the snapshots in force", ErrNotInForce, e.Seq)
		}
		if e.IdempotencyKey != "" {
			if a, ok := s.Idempotent(e.IdempotencyKey); ok && a.Payload != *e.PayloadSHA256 {
				return fmt.Errorf("%w: seq %d: key first used by seq %d for other bytes", ErrIdempotencyKey, e.Seq, a.Seq)
			}
		}
	case KindSnapshot:
		if e.Lifts != nil {
			for _, a := range *e.Lifts {
				if _, ok := s.Blocked(a); !ok {
					return fmt.Errorf("%w: seq %d lifts the block of %q", ErrNotBlocked, e.Seq, a)
				}
			}
		}
	case KindKeyRotation:
		if s.Key != "" && e.OldKey != s.Key {
			return fmt.Errorf("%w: seq %d: old_key is not the key in force", ErrKeyChain, e.Seq)
		}
	}
	if s.err != nil {
		return s.err
	}
	// Checks passed: change the state. Strings kept as keys are cloned:
	// Decode gives an entry's strings one backing array, which a kept
	// substring would keep alive whole (a fold over 1,000,000 entries then
	// held every decoded entry).
	d := &s.Delta
	switch e.Kind {
	case KindHandoff:
		if e.Decision == reason.Accepted && e.HandoffID.Valid {
			if _, _, ok := s.Accepted(e.HandoffID.S); !ok {
				setMap(&d.Accepted, strings.Clone(e.HandoffID.S), Accept{e.Seq, *e.PayloadSHA256})
			}
		}
		if e.IdempotencyKey != "" {
			if _, ok := s.Idempotent(e.IdempotencyKey); !ok {
				setMap(&d.Idempotent, strings.Clone(e.IdempotencyKey), Accept{e.Seq, *e.PayloadSHA256})
			}
		}
		for _, a := range e.Blocks {
			setMap(&d.Blocked, strings.Clone(a), e.Seq) // the latest block is the one on record
		}
	case KindUnblock:
		s.unblock(e.Agent)
	case KindSnapshot:
		if e.What == SnapshotManifest {
			s.Manifest, s.HasManifest = *e.ContentSHA256, true
			break
		}
		s.Lock, s.HasLock = *e.ContentSHA256, true
		if e.Lifts == nil {
			d.ClearBlocked = true
			d.Blocked, d.Unblocked = nil, nil
		} else {
			for _, a := range *e.Lifts {
				s.unblock(a)
			}
		}
	case KindRedaction:
		d.Redactions = append(d.Redactions, Redaction{Seq: e.Seq, Of: e.RedactedSeq})
	case KindKeyRotation:
		s.Key = e.NewKey
	}
	s.Seq, s.Hash, s.Time = e.Seq, h, e.Time.Time
	return s.err
}

// unblock ends agent's block: a block of this Delta is dropped, one of the
// base tables is marked for removal.
func (s *State) unblock(agent string) {
	delete(s.Delta.Blocked, agent)
	if !s.Delta.ClearBlocked {
		setMap(&s.Delta.Unblocked, strings.Clone(agent), true)
	}
}

func setMap[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}

// Fork returns a State on top of s: it answers as s does, and its applied
// entries change only itself until s.Merge takes them. An appender applies
// each request to a fork, so a request that fails leaves s as it was.
func (s *State) Fork() *State {
	return &State{Head: s.Head, base: forkTables{s}}
}

// Merge takes into s the entries applied to child, a Fork of s made
// after s last changed.
func (s *State) Merge(child *State) {
	s.fail(child.err)
	s.Head = child.Head
	d, c := &s.Delta, &child.Delta
	if c.ClearBlocked {
		d.ClearBlocked, d.Blocked, d.Unblocked = true, nil, nil
	}
	for a := range c.Unblocked {
		s.unblock(a)
	}
	for a, seq := range c.Blocked {
		setMap(&d.Blocked, a, seq)
	}
	for k, v := range c.Accepted {
		setMap(&d.Accepted, k, v)
	}
	for k, v := range c.Idempotent {
		setMap(&d.Idempotent, k, v)
	}
	d.Redactions = append(d.Redactions, c.Redactions...)
}

// forkTables makes a State the Tables of its forks.
type forkTables struct{ s *State }

func (f forkTables) Accepted(id string) (Accept, bool, error) {
	seq, p, ok := f.s.Accepted(id)
	return Accept{seq, p}, ok, f.s.err
}

func (f forkTables) Idempotent(key string) (Accept, bool, error) {
	a, ok := f.s.Idempotent(key)
	return a, ok, f.s.err
}

func (f forkTables) Blocked(agent string) (uint64, bool, error) {
	seq, ok := f.s.Blocked(agent)
	return seq, ok, f.s.err
}

// PositionAt returns h moved to just before e: on e's own seq and prev,
// and no later than e's time. A checker that judges the chain itself (with
// blame) folds e at that position, so the fold judges only the state
// rules and one broken link is not reported again at every later entry.
func PositionAt(h Head, e *Entry) Head {
	h.Seq, h.Hash = e.Seq-1, e.Prev
	if e.Time.Before(h.Time) {
		h.Time = e.Time.Time
	}
	return h
}

// Judge folds e (hash h) as a checker does: a handoff whose snapshots are
// not in force (reported by the checker) is applied as ApplyNotInForce
// does, and when e breaks a state rule the error is returned and the head
// still moves to e, so the checker goes on with the entries after it. It
// is the one way the store checks and verify fold what they read.
func (s *State) Judge(e *Entry, h Hash) error {
	err := s.Apply(e, h)
	if errors.Is(err, ErrNotInForce) {
		err = ApplyNotInForce(s, e, h)
	}
	if err != nil {
		s.Seq, s.Hash, s.Time = e.Seq, h, e.Time.Time
	}
	return err
}

// ApplyNotInForce applies a handoff entry that Apply refused with
// ErrNotInForce as if its snapshots were in force, then puts back the
// snapshots that are: a checker that reported the entry goes on with the
// state its effects imply, and judges the next entries against the
// snapshots really in force.
func ApplyNotInForce(s *State, e *Entry, h Hash) error {
	m, l, hm, hl := s.Manifest, s.Lock, s.HasManifest, s.HasLock
	s.Manifest, s.HasManifest = *e.ManifestSHA256, true
	s.Lock, s.HasLock = *e.LockSHA256, true
	err := s.Apply(e, h)
	s.Manifest, s.Lock, s.HasManifest, s.HasLock = m, l, hm, hl
	return err
}
