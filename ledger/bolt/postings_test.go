package bolt_test

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/govledger/govledger/ledger/bolt"
)

// TestPostings: index record values round-trip, and every value that is
// not the minimal encoding of increasing seqs (a zero difference, an
// overflow, a non-minimal or truncated uvarint, too many seqs) is refused.
func TestPostings(t *testing.T) {
	for _, seqs := range [][]uint64{{1}, {7, 8, 9}, {3, 200, 70000, 1 << 40}, {1, math.MaxUint64}} {
		v := bolt.EncodePostings(seqs)
		got, err := bolt.DecodePostings(nil, seqs[0], v)
		if err != nil || !slices.Equal(got, seqs) {
			t.Errorf("round trip of %v: value %x gives %v, %v", seqs, v, got, err)
		}
	}
	if v := bolt.EncodePostings([]uint64{5}); len(v) != 0 {
		t.Errorf("one seq: value %x, want empty (a format 5 key)", v)
	}
	long := make([]uint64, bolt.MaxPostings)
	for i := range long {
		long[i] = uint64(i + 1)
	}
	tooMany := append(bolt.EncodePostings(long), 1)
	for _, tt := range []struct {
		name  string
		first uint64
		v     []byte
	}{
		{"zero difference", 1, []byte{0}},
		{"truncated", 1, []byte{0x80}},
		{"non-minimal", 1, []byte{0x81, 0x00}},
		{"overflow", math.MaxUint64 - 1, []byte{2}},
		{"uvarint overflow", 1, bytes.Repeat([]byte{0xff}, 11)},
		{"too many seqs", 1, tooMany},
	} {
		if got, err := bolt.DecodePostings(nil, tt.first, tt.v); err == nil {
			t.Errorf("%s: value %x decodes to %v", tt.name, tt.v, got)
		}
	}
}

// FuzzDecodePostings: any value either is refused or decodes to
// increasing seqs whose encoding is the value itself.
func FuzzDecodePostings(f *testing.F) {
	f.Add(uint64(1), []byte{})
	f.Add(uint64(9), []byte{1, 0x80, 0x01})
	f.Add(uint64(math.MaxUint64-3), []byte{1, 1, 1})
	f.Fuzz(func(t *testing.T, first uint64, v []byte) {
		seqs, err := bolt.DecodePostings(nil, first, v)
		if err != nil {
			return
		}
		if len(seqs) == 0 || seqs[0] != first || len(seqs) > bolt.MaxPostings {
			t.Fatalf("value %x from %d: %v", v, first, seqs)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("value %x: seqs %v not increasing", v, seqs)
			}
		}
		if enc := bolt.EncodePostings(seqs); !bytes.Equal(enc, v) {
			t.Fatalf("value %x decodes to %v, which encodes as %x", v, seqs, enc)
		}
	})
}
