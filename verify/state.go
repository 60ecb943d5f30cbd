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
//
// Where the source can read an entry again, the table needs neither the
// whole digest nor the payload's: a slot of tags holds a 24-bit tag of
// the ID's digest and the seq (40 bits), 8 bytes a slot instead of a Go
// map's 16, in open-addressed shards that grow one at a time. Every slot
// whose tag matches is confirmed by reading its entry (a tag shared by
// two IDs costs a read, never a wrong answer).
type state struct {
	key      [16]byte
	accepted map[uint64]uint64       // digest(id) -> seq<<24 | digest(payload)&0xffffff; without reader
	tags     *tagTable               // with reader
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
	s := &state{blocked: make(map[string]uint64), idem: map[uint64]entry.Accept{}, reader: r, ctx: ctx}
	if r != nil {
		s.tags = &tagTable{}
	} else {
		s.accepted = make(map[uint64]uint64)
	}
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
	if _, ok := s.overflow[id]; ok {
		return
	}
	if s.tags != nil {
		// The fold hands over first acceptances only (a tag match is not
		// an ID match, so it is not looked up here).
		if seq != 0 && seq <= maxPackedSeq {
			s.tags.insert(s.digest([]byte(id)), seq)
			return
		}
	} else if _, _, ok := s.lookup(id); ok {
		return
	}
	if seq > maxPackedSeq || seq == 0 {
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
	if s.tags != nil {
		return s.acceptedTag(id)
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

// acceptedTag is Accepted with the table of tags: each slot whose tag
// matches is read again, and the first whose entry is an accepted handoff
// with the ID answers. When a matching slot cannot be read (a damaged
// entry) and no other one answers, the ID is taken as accepted there with
// a payload hash other than the current one, marked approximated.
func (s *state) acceptedTag(id string) (entry.Accept, bool, error) {
	var unread uint64
	var payload entry.Hash
	found, seq := false, uint64(0)
	s.tags.each(s.digest([]byte(id)), func(q uint64) bool {
		e, err := s.reader.entry(s.ctx, q)
		if err != nil || e.Kind != entry.KindHandoff || !e.HandoffID.Valid || e.PayloadSHA256 == nil {
			if unread == 0 {
				unread = q
			}
			return true
		}
		if e.HandoffID.S != id {
			return true
		}
		found, seq, payload = true, q, *e.PayloadSHA256
		return false
	})
	if found {
		return entry.Accept{Seq: seq, Payload: payload}, true, nil
	}
	if unread != 0 {
		other := s.current
		other[0] ^= 0xff
		s.approximated = true
		return entry.Accept{Seq: unread, Payload: other}, true, nil
	}
	return entry.Accept{}, false, nil
}

// tagTable maps 64-bit digests to seqs, 8 bytes a slot: 256 shards of
// linear probing, each grown alone by a quarter when seven eighths full,
// so a shard is 70-88% full and growing never holds more than one shard
// twice. A slot is tag<<40 | seq, seq 0 marking an empty one; a digest's
// top 8 bits choose the shard and the 24 bits below them are the tag,
// which also places the first slot to probe (tag*len/2^24: a slot keeps
// no other bits of the digest, so it is placed again from its tag when
// its shard grows).
type tagTable struct {
	shards [256]tagShard
}

type tagShard struct {
	slots []uint64
	n     int
}

const tagSeqBits = 40

func tagOf(d uint64) uint64 { return d >> 32 & 0xffffff }

func (t *tagTable) insert(d, seq uint64) {
	sh := &t.shards[d>>56]
	if (sh.n+1)*8 > len(sh.slots)*7 {
		sh.grow()
	}
	sh.put(tagOf(d)<<tagSeqBits | seq)
	sh.n++
}

// first is the slot a tag's probe starts at.
func (sh *tagShard) first(tag uint64) int { return int(tag * uint64(len(sh.slots)) >> 24) }

func (sh *tagShard) put(slot uint64) {
	for i := sh.first(slot >> tagSeqBits); ; i++ {
		if i == len(sh.slots) {
			i = 0
		}
		if sh.slots[i] == 0 {
			sh.slots[i] = slot
			return
		}
	}
}

// grow makes the shard a quarter larger, placing each slot again.
func (sh *tagShard) grow() {
	old := sh.slots
	sh.slots = make([]uint64, max(len(old)+len(old)/4, 16))
	for _, v := range old {
		if v != 0 {
			sh.put(v)
		}
	}
}

// each calls fn with the seq of every slot whose tag is d's, until fn
// returns false.
func (t *tagTable) each(d uint64, fn func(seq uint64) bool) {
	sh := &t.shards[d>>56]
	if len(sh.slots) == 0 {
		return
	}
	tag := tagOf(d)
	for i := sh.first(tag); ; i++ {
		if i == len(sh.slots) {
			i = 0
		}
		v := sh.slots[i]
		if v == 0 {
			return
		}
		if v>>tagSeqBits == tag && !fn(v&maxPackedSeq) {
			return
		}
	}
}
