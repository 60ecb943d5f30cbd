package bolt

import (
	"fmt"
	"maps"
	"slices"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"golang.org/x/mod/sumdb/tlog"
)

// From format 7 on, the decision indexes — idx_accepted, idx_idempotency
// and idx_blob — trail the head like the secondary indexes: they hold
// exactly the keys of entries 1..indexed (meta "indexed") and are written
// with them, every Options.IndexBatch entries. A commit of one entry then
// writes no page of a bucket keyed by a hash (measured: 10.7 pages a
// commit in format 6, 6.7 with these three deferred). What the entries
// beyond "indexed" add to them is a tail, which every lookup consults
// after the index: a string is used first by an indexed entry, when the
// index lists one, else by the tail's first use of it.

// tail is what entries indexed+1..head add to the decision indexes. It is
// not changed once built: a commit builds the next one.
type tail struct {
	indexed, head uint64
	// accepted and idem are the first uses among these entries of each
	// handoff id accepted (idx_accepted) and idempotency key
	// (idx_idempotency); blobs maps each blob stored under the seq of one
	// of them to those seqs, in order: more than one only when a
	// redaction erased it and a later entry stored it again (idx_blob
	// maps it to the last, while it is stored).
	accepted, idem map[string]entry.Accept
	blobs          map[entry.Hash][]uint64
}

// emptyTail is the tail of a file whose decision indexes reach its head.
func emptyTail(head uint64) *tail {
	return &tail{indexed: head, head: head, accepted: map[string]entry.Accept{}, idem: map[string]entry.Accept{}, blobs: map[entry.Hash][]uint64{}}
}

// add takes in entry e, the next after t.head; stored reports whether a
// blob is stored under its seq.
func (t *tail) add(e *entry.Entry, stored bool) {
	for _, u := range []struct {
		m   map[string]entry.Accept
		key func(*entry.Entry) (string, bool)
	}{{t.accepted, acceptedKey}, {t.idem, idempotencyKey}} {
		if s, ok := u.key(e); ok {
			if _, seen := u.m[s]; !seen {
				u.m[s] = entry.Accept{Seq: e.Seq, Payload: *e.PayloadSHA256}
			}
		}
	}
	if sum := e.Blob(); stored && sum != nil {
		t.blobs[*sum] = append(t.blobs[*sum], e.Seq)
	}
	t.head = e.Seq
}

// clone returns a copy of t that add may change (an append to a seqs
// list of the copy never writes into t's).
func (t *tail) clone() *tail {
	blobs := make(map[entry.Hash][]uint64, len(t.blobs))
	for sum, seqs := range t.blobs {
		blobs[sum] = slices.Clip(seqs)
	}
	return &tail{indexed: t.indexed, head: t.head, accepted: maps.Clone(t.accepted), idem: maps.Clone(t.idem), blobs: blobs}
}

// lookup returns the first use of s in the tail (m is t.accepted or
// t.idem) by an entry up to seq at.
func (t *tail) lookup(m map[string]entry.Accept, s string, at uint64) (entry.Accept, bool) {
	a, ok := m[s]
	if !ok || a.Seq > at {
		// A first use after at: no entry up to at used s.
		return entry.Accept{}, false
	}
	return a, true
}

// blob returns the last seq up to at under which an entry of the tail
// stored the blob sum (which a later redaction may have erased).
func (t *tail) blob(sum entry.Hash, at uint64) (uint64, bool) {
	seqs := t.blobs[sum]
	for i := len(seqs) - 1; i >= 0; i-- {
		if seqs[i] <= at {
			return seqs[i], true
		}
	}
	return 0, false
}

// readTail builds the tail of entries indexed+1..head from the file: each
// entry decoded, and its blob looked up under its seq. A writer reads it
// strictly: a missing or damaged entry fails the commit. A view passes
// such an entry over (it adds nothing), so that the other entries' reads
// go on and verify names the damaged one by its own seq.
func readTail(entries, blobs getter, indexed, head uint64, strict bool) (*tail, error) {
	t := emptyTail(indexed)
	for seq := indexed + 1; seq <= head; seq++ {
		e, err := tailEntry(entries.Get(be64(seq)), seq)
		if err != nil {
			if strict {
				return nil, err
			}
			continue
		}
		t.add(e, blobs.Get(be64(seq)) != nil)
	}
	t.head = head
	return t, nil
}

// tailEntry decodes raw, stored under seq.
func tailEntry(raw []byte, seq uint64) (*entry.Entry, error) {
	if raw == nil {
		return nil, fmt.Errorf("%w: entry %d missing", ledger.ErrCorrupt, seq)
	}
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, &ledger.RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
	}
	if e.Seq != seq {
		return nil, fmt.Errorf("%w: entry under key %d has seq %d", ledger.ErrCorrupt, seq, e.Seq)
	}
	return e, nil
}

// tailFor returns the driver's tail when it covers indexed+1..head (a
// later head included: lookups stop at theirs), else nil.
func (d *Driver) tailFor(indexed, head uint64) *tail {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	if t := d.tail; t != nil && t.indexed == indexed && t.head >= head {
		return t
	}
	return nil
}

// setTail publishes t as the driver's tail.
func (d *Driver) setTail(t *tail) {
	d.tmu.Lock()
	d.tail = t
	d.tmu.Unlock()
}

// leafCache is the writer's last level-0 tile: the leaf hashes of entries
// 256n+1 … 256n+len(data)/32, which no commit changes (an append adds
// the next ones in a new leafCache). It spares each append reading and
// hashing up to 255 entries to compute the hashes it combines with its
// own (format 7 stores no level-0 tile).
type leafCache struct {
	n    int64
	data []byte
}

// lastLeaves returns the driver's leafCache, nil when it has none.
func (d *Driver) lastLeaves() *leafCache {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	return d.leaves
}

// nextLeaves returns the leafCache of the tile holding head after the
// entries raw (seqs from+1 …) are appended to the one of c (nil: read
// from ents, which holds them).
func nextLeaves(c *leafCache, ents rbucket, from uint64, raws [][]byte) (*leafCache, error) {
	head := from + uint64(len(raws))
	n := int64((head - 1) >> tileHeight)
	first := uint64(n) << tileHeight // entries first+1 … head
	if c == nil || c.n != n || uint64(len(c.data)) != (max(from, first)-first)*tlog.HashSize {
		data, err := leafTile(ents, n, head-first)
		if err != nil {
			return nil, err
		}
		return &leafCache{n: n, data: data}, nil
	}
	data := make([]byte, len(c.data), (head-first)*tlog.HashSize)
	copy(data, c.data)
	for i, raw := range raws {
		if from+uint64(i)+1 > first {
			h := entry.LeafHash(raw)
			data = append(data, h[:]...)
		}
	}
	return &leafCache{n: n, data: data}, nil
}
