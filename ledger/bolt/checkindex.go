package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	bolt "go.etcd.io/bbolt"
)

// The secondary indexes are checked in constant memory. While the entries
// are walked, every listing (prefix, seq) they imply is added to a
// pairSet per index; the index's records are then walked once, their
// shape checked (key length, postings encoding, seqs within meta
// "indexed", none listed twice) and their listings added to a second
// pairSet. Equal sets of listings give equal pairSets. A pairSet is a
// count and two sums of a hash keyed by a seed drawn for each Check
// (hash/maphash), so a file written before the Check cannot be made to
// match one it does not hold but by chance (about 2^-120). Only when the
// pairSets differ are the listings located: every stored one is read
// back against its entry (FindIndexExtra), and every implied one looked
// up in the index (FindIndexMissing).

// pairSet sums the listings of an index.
type pairSet struct{ n, a, b uint64 }

// pairHasher hashes a listing with two per-Check seeds.
type pairHasher struct{ h [2]maphash.Hash }

func newPairHasher() *pairHasher {
	p := &pairHasher{}
	for i := range p.h {
		p.h[i].SetSeed(maphash.MakeSeed())
	}
	return p
}

// add adds the listing of seq under prefix to s. A prefix's length is
// fixed per index but idx_decision's, where prefix || be64(seq) of two
// listings can only be equal when both are.
func (p *pairHasher) add(s *pairSet, prefix []byte, seq uint64) {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	for i := range p.h {
		p.h[i].Reset()
		p.h[i].Write(prefix)
		p.h[i].Write(k[:])
	}
	s.n++
	s.a += p.h[0].Sum64()
	s.b += p.h[1].Sum64()
}

// entryIndexes adds the listings entry e (stored as seq) implies.
func (c *checker) entryIndexes(seq uint64, e *entry.Entry) {
	for name, prefixes := range indexPrefixes(e) {
		s := c.idxWant[name]
		for _, p := range prefixes {
			c.pairs.add(&s, p, seq)
		}
		c.idxWant[name] = s
	}
}

// checkIndexes compares each secondary index with the listings the
// entries through meta "indexed" imply.
func (c *checker) checkIndexes() {
	for _, name := range secondaryIndexes {
		b := c.bucket(name)
		if b == nil {
			continue
		}
		n := len(c.findings)
		if c.walkIndex(name, b, true, nil) == c.idxWant[string(name)] {
			continue
		}
		c.locateIndex(name, b)
		if len(c.findings) == n {
			// A difference neither pass could name (a listing twice in
			// records that are not adjacent): still a finding.
			c.add(0, ledger.FindIndexExtra, fmt.Sprintf("%s: the %d listings the entries imply", name, c.idxWant[string(name)].n), "other listings")
		}
	}
}

// walkIndex walks the records of the index name (bucket b) in key order
// and returns the pairSet of their well-formed listings within meta
// "indexed"; report adds the findings of the others, visit (if not nil)
// sees each listing summed.
func (c *checker) walkIndex(name []byte, b *bolt.Bucket, report bool, visit func(prefix []byte, seq uint64)) pairSet {
	var got pairSet
	add := func(seq uint64, kind, want, gotS string) {
		if report {
			c.add(seq, kind, want, gotS)
		}
	}
	// The last seq listed under each prefix: for the fixed-length
	// prefixes, whose records of one prefix are adjacent, only the
	// previous record's; for idx_decision, per decision.
	var prev []byte
	var prevLast uint64
	lastOf := map[string]uint64{}
	fixed := prefixLen(name) > 0
	var seqs []uint64
	cur := b.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		prefix, first, ok := recordKey(name, k)
		if !ok || v == nil {
			add(0, ledger.FindIndexExtra, fmt.Sprintf("%s record key", name), fmt.Sprintf("%x", k))
			continue
		}
		var err error
		if c.version < 6 && len(v) != 0 {
			err = fmt.Errorf("format %d: a value", c.version)
		} else {
			seqs, err = decodePostings(seqs[:0], first, v)
		}
		if err != nil {
			add(first, ledger.FindBadValue, fmt.Sprintf("%s record %x: uvarint seq differences", name, k), fmt.Sprintf("%x (%v)", v, err))
			continue
		}
		last, seen := prevLast, fixed && bytes.Equal(prefix, prev)
		if !fixed {
			last, seen = lastOf[string(prefix)]
		}
		for _, seq := range seqs {
			switch {
			case seq > c.indexed:
				add(seq, ledger.FindIndexExtra, fmt.Sprintf("no %s listing beyond meta indexed %d", name, c.indexed), fmt.Sprintf("record %x lists %d", k, seq))
				continue
			case seen && seq <= last:
				add(seq, ledger.FindIndexExtra, fmt.Sprintf("%s: seq %d listed once under %x", name, seq, prefix), fmt.Sprintf("again in record %x", k))
				continue
			}
			last, seen = seq, true
			c.pairs.add(&got, prefix, seq)
			if visit != nil {
				visit(prefix, seq)
			}
		}
		if seen {
			prev, prevLast = prefix, last
			if !fixed {
				lastOf[string(prefix)] = last
			}
		}
	}
	return got
}

// locateIndex names the listings of index name that differ from those
// the entries imply: each stored listing is read back against its entry,
// and each implied one looked up. It reads every entry again: it runs
// only for an index found to differ.
func (c *checker) locateIndex(name []byte, b *bolt.Bucket) {
	entries := c.bucket(bucketEntries)
	if entries == nil {
		return
	}
	prefixesOf := func(seq uint64) [][]byte {
		raw := entries.Get(be64(seq))
		if raw == nil {
			return nil
		}
		e, err := entry.Decode(raw)
		if err != nil || e.Seq != seq {
			return nil
		}
		return indexPrefixes(e)[string(name)]
	}
	c.walkIndex(name, b, false, func(prefix []byte, seq uint64) {
		for _, p := range prefixesOf(seq) {
			if bytes.Equal(p, prefix) {
				return
			}
		}
		c.add(seq, ledger.FindIndexExtra, fmt.Sprintf("no %s listing of %d under %x", name, seq, prefix), "listed")
	})
	cur := entries.Cursor()
	var seqs []uint64
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if len(k) != 8 {
			continue
		}
		seq := binary.BigEndian.Uint64(k)
		if seq > c.indexed {
			break
		}
		for _, p := range prefixesOf(seq) {
			var ok bool
			if seqs, ok = listed(b.Cursor(), seqs, p, seq); !ok {
				c.add(seq, ledger.FindIndexMissing, fmt.Sprintf("%s listing of %d under %x", name, seq, p), "absent")
			}
		}
	}
}

// listed reports whether the index records of prefix (read with c) list
// seq; buf is scratch space, returned for reuse.
func listed(c *bolt.Cursor, buf []uint64, prefix []byte, seq uint64) ([]uint64, bool) {
	want := len(prefix) + 8
	k, v := recordAtOrBefore(c, prefix, seq)
	if k == nil || len(k) != want || !bytes.HasPrefix(k, prefix) {
		return buf, false
	}
	buf, err := decodePostings(buf[:0], binary.BigEndian.Uint64(k[len(prefix):]), v)
	if err != nil {
		return buf, false
	}
	_, ok := slices.BinarySearch(buf, seq)
	return buf, ok
}
