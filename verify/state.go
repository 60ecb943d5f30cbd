package verify

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"

	"github.com/govledger/govledger/entry"
)

// state holds the tables of the ledger state the replay rebuilds from the
// entries (entry.Tables, folded by entry.State), as of just before the
// entry being judged.
//
// Accepted handoff IDs are kept compactly, 8 bytes a value: a 64-bit keyed
// digest of the ID maps to the seq of the first acceptance (40 bits) and a
// 24-bit keyed digest of its payload hash. The key is random per replay, so
// nobody can choose IDs or payloads that collide. Where the source can read
// an entry again (a ledger), a hit is confirmed against the stored entry and
// the exact payload hash is used; otherwise two IDs are taken as equal when
// their 64-bit digests are (a false match among a million IDs has
// probability about 2^-25), and an accepted ID resubmitted with other bytes
// passes for a replay of the same bytes with probability 2^-24 (a spurious
// "reasons" finding, never a missed one).
type state struct {
	key      [16]byte
	accepted map[uint64]uint64       // digest(id) -> seq<<24 | digest(payload)&0xffffff
	overflow map[string]acceptedSeq  // IDs whose seq does not fit in 40 bits
	blocked  map[string]uint64       // agent -> seq of the entry that blocked it
	idem     map[uint64]entry.Accept // digest(idempotency key) -> first use

	reader       entryReader     // may be nil
	ctx          context.Context // for reader
	current      entry.Hash      // payload hash of the handoff being judged
	approximated bool            // Accepted returned a payload hash that is not the stored one
}

type acceptedSeq struct {
	seq     uint64
	payload entry.Hash
}

const maxPackedSeq = 1<<40 - 1

func newState(ctx context.Context, r entryReader) *state {
	s := &state{accepted: make(map[uint64]uint64), blocked: make(map[string]uint64), idem: map[uint64]entry.Accept{}, reader: r, ctx: ctx}
	rand.Read(s.key[:])
	return s
}

func (s *state) digest(b []byte) uint64 {
	var buf [128]byte
	if len(b) <= len(buf)-len(s.key) {
		// SHA-256(key || b) without a hash.Hash to allocate.
		n := copy(buf[:], s.key[:])
		n += copy(buf[n:], b)
		sum := sha256.Sum256(buf[:n])
		return binary.BigEndian.Uint64(sum[:])
	}
	h := sha256.New()
	h.Write(s.key[:])
	h.Write(b)
	var sum [32]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}

// accept records the first acceptance of id.
func (s *state) accept(id string, seq uint64, payload entry.Hash) {
	if _, _, ok := s.lookup(id); ok {
		return
	}
	if _, ok := s.overflow[id]; ok {
		return
	}
	if seq > maxPackedSeq {
		if s.overflow == nil {
			s.overflow = map[string]acceptedSeq{}
		}
		s.overflow[id] = acceptedSeq{seq, payload}
		return
	}
	s.accepted[s.digest([]byte(id))] = seq<<24 | s.digest(payload[:])&0xffffff
}

// lookup returns the packed record of id's first acceptance.
func (s *state) lookup(id string) (seq, payload24 uint64, ok bool) {
	v, ok := s.accepted[s.digest([]byte(id))]
	if !ok {
		return 0, 0, false
	}
	return v >> 24, v & 0xffffff, true
}

// Accepted implements entry.Tables. The payload hash it returns is exact
// when the source can read the original entry again; otherwise it is the
// hash of the handoff being judged when the keyed digests match, and a
// different hash when they do not (what the REPLAY / ID_CONFLICT rule
// compares; reason messages are not compared by the replay).
func (s *state) Accepted(id string) (entry.Accept, bool, error) {
	if a, ok := s.overflow[id]; ok {
		return entry.Accept{Seq: a.seq, Payload: a.payload}, true, nil
	}
	seq, p24, ok := s.lookup(id)
	if !ok {
		return entry.Accept{}, false, nil
	}
	if s.reader != nil {
		e, err := s.reader.entry(s.ctx, seq)
		if err == nil && e.Kind == entry.KindHandoff && e.HandoffID.Valid && e.PayloadSHA256 != nil {
			if e.HandoffID.S != id {
				return entry.Accept{}, false, nil
			}
			return entry.Accept{Seq: seq, Payload: *e.PayloadSHA256}, true, nil
		}
	}
	if p24 == s.digest(s.current[:])&0xffffff {
		return entry.Accept{Seq: seq, Payload: s.current}, true, nil
	}
	other := s.current
	other[0] ^= 0xff
	s.approximated = true
	return entry.Accept{Seq: seq, Payload: other}, true, nil
}

// Idempotent implements entry.Tables (keys are told apart by a 64-bit
// keyed digest, as handoff ids are).
func (s *state) Idempotent(key string) (entry.Accept, bool, error) {
	a, ok := s.idem[s.digest([]byte(key))]
	return a, ok, nil
}

// Blocked implements entry.Tables.
func (s *state) Blocked(agent string) (uint64, bool, error) {
	seq, ok := s.blocked[agent]
	return seq, ok, nil
}

// commit takes in what one entry's fold changed.
func (s *state) commit(d *entry.Delta) {
	for id, a := range d.Accepted {
		s.accept(id, a.Seq, a.Payload)
	}
	for k, a := range d.Idempotent {
		s.idem[s.digest([]byte(k))] = a
	}
	d.ApplyBlocked(s.blocked)
}
