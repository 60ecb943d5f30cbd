package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

// TestTagTable checks that every inserted digest's seq is found again as
// the shards grow, and that a digest never inserted finds only slots of
// its own tag.
func TestTagTable(t *testing.T) {
	var tt tagTable
	r := rand.New(rand.NewPCG(1, 2))
	ds := make([]uint64, 200_000)
	for i := range ds {
		ds[i] = r.Uint64()
		tt.insert(ds[i], uint64(i+1))
	}
	for i, d := range ds {
		found := false
		tt.each(d, func(seq uint64) bool { found = seq == uint64(i+1); return !found })
		if !found {
			t.Fatalf("digest %d (%#x): seq %d not found", i, d, i+1)
		}
	}
	for range 1000 {
		d := r.Uint64()
		tt.each(d, func(seq uint64) bool {
			if tagOf(ds[seq-1]) != tagOf(d) || ds[seq-1]>>56 != d>>56 {
				t.Fatalf("digest %#x: slot of seq %d has another tag", d, seq)
			}
			return true
		})
	}
	slots := 0
	for _, sh := range tt.shards {
		slots += len(sh.slots)
	}
	if b := float64(slots*8) / float64(len(ds)); b > 8/0.7 {
		t.Errorf("%.1f bytes a digest, want at most %.1f", b, 8/0.7)
	}
}

// entries is an entryReader over decoded entries.
type entries map[uint64]*entry.Entry

func (m entries) entry(_ context.Context, seq uint64) (*entry.Entry, error) {
	if e, ok := m[seq]; ok {
		return e, nil
	}
	return nil, fmt.Errorf("entry %d: not found", seq)
}

// TestAcceptedTagShared checks that two IDs whose digests share shard and
// tag are told apart by reading their entries again, whichever was
// accepted first, and that an unreadable entry under a shared tag answers
// as accepted, approximated.
func TestAcceptedTagShared(t *testing.T) {
	m := entries{}
	s := newState(t.Context(), m)
	s.key = [16]byte{}
	// Two IDs whose digests agree in their top 32 bits (shard and tag).
	seen := map[uint64]string{}
	var a, b string
	for i := 0; a == ""; i++ {
		id := fmt.Sprintf("id-%d", i)
		top := s.digest([]byte(id)) >> 32
		if o, ok := seen[top]; ok {
			a, b = o, id
		}
		seen[top] = id
	}
	handoff := func(seq uint64, id string) {
		p := entry.Sum256([]byte(id))
		m[seq] = &entry.Entry{Seq: seq, Kind: entry.KindHandoff, Decision: reason.Accepted, HandoffID: entry.Str(id), PayloadSHA256: &p}
		s.accept(id, seq, p)
	}
	handoff(5, a)
	if _, ok, _ := s.Accepted(b); ok {
		t.Fatalf("Accepted(%q) before its acceptance = true (it shares its tag with %q)", b, a)
	}
	handoff(9, b)
	for id, seq := range map[string]uint64{a: 5, b: 9} {
		got, ok, err := s.Accepted(id)
		if err != nil || !ok || got.Seq != seq || got.Payload != entry.Sum256([]byte(id)) {
			t.Errorf("Accepted(%q) = %+v, %v, %v; want seq %d", id, got, ok, err, seq)
		}
	}
	delete(m, 5)
	s.current = entry.Sum256([]byte("current"))
	if got, ok, _ := s.Accepted(a); !ok || got.Seq != 5 || got.Payload == s.current || !s.approximated {
		t.Errorf("Accepted(%q) with its entry unreadable = %+v, %v (approximated %v); want seq 5, another payload, approximated", a, got, ok, s.approximated)
	}
}
