package verify

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"

	"github.com/govledger/govledger/ledger"
)

// state is the ledger state the replay rebuilds from the entries, as of
// just before the entry being judged. It implements policy.State.
//
// Accepted handoff IDs are kept compactly: a 64-bit keyed digest of the ID
// maps to the seq of the first acceptance and a 64-bit keyed digest of its
// payload hash. The key is random per replay, so nobody can choose IDs that
// collide; where the source can read an entry again (a ledger), a hit is
// confirmed against the stored entry.
type state struct {
	key      [16]byte
	accepted map[uint64]accepted
	blocked  map[string]uint64 // agent -> seq of the entry that blocked it

	manifest, lock       ledger.Hash
	hasManifest, hasLock bool

	reader       entryReader // may be nil
	current      ledger.Hash // payload hash of the handoff being judged
	approximated bool        // Accepted returned a payload hash that is not the stored one
}

type accepted struct {
	seq     uint64
	payload uint64
}

func newState(r entryReader) *state {
	s := &state{accepted: make(map[uint64]accepted), blocked: make(map[string]uint64), reader: r}
	rand.Read(s.key[:])
	return s
}

func (s *state) digest(b []byte) uint64 {
	h := sha256.New()
	h.Write(s.key[:])
	h.Write(b)
	var sum [32]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}

// accept records the first acceptance of id.
func (s *state) accept(id string, seq uint64, payload ledger.Hash) {
	k := s.digest([]byte(id))
	if _, ok := s.accepted[k]; !ok {
		s.accepted[k] = accepted{seq: seq, payload: s.digest(payload[:])}
	}
}

// Accepted implements policy.State. The payload hash it returns is exact
// when the source can read the original entry again; otherwise it is the
// hash of the handoff being judged when the keyed digests match, and a
// different hash when they do not (what the REPLAY / ID_CONFLICT rule
// compares; reason messages are not compared by the replay).
func (s *state) Accepted(id string) (uint64, ledger.Hash, bool) {
	a, ok := s.accepted[s.digest([]byte(id))]
	if !ok {
		return 0, ledger.Hash{}, false
	}
	if s.reader != nil {
		e, err := s.reader.entry(a.seq)
		if err == nil && e.Kind == ledger.KindHandoff && e.HandoffID.Valid && e.PayloadSHA256 != nil {
			if e.HandoffID.S != id {
				return 0, ledger.Hash{}, false
			}
			return a.seq, *e.PayloadSHA256, true
		}
	}
	if a.payload == s.digest(s.current[:]) {
		return a.seq, s.current, true
	}
	other := s.current
	other[0] ^= 0xff
	s.approximated = true
	return a.seq, other, true
}

// Blocked implements policy.State.
func (s *state) Blocked(agent string) (uint64, bool) {
	seq, ok := s.blocked[agent]
	return seq, ok
}

// InForce implements policy.State.
func (s *state) InForce() (manifest, lock ledger.Hash, ok bool) {
	return s.manifest, s.lock, s.hasManifest && s.hasLock
}
