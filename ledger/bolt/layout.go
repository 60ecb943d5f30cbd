package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// FormatVersion is the on-disk layout version stored in the meta bucket.
// Open refuses a file with another version (ErrVersionMismatch), except
// the earlier versions 1 to 6, which a writable Open upgrades in one
// transaction: version 1 has no meta "indexed" (its secondary indexes are
// complete), versions 1 and 2 have neither the idx_idempotency bucket nor
// meta "key", versions 1 to 3 store every tree hash in the tree bucket
// instead of tiles, versions 1 to 4 key blobs by their SHA-256 (no
// idx_blob) and keep the full level-0 tiles, and versions 1 to 5 store
// one secondary index key per (value, seq), the payload's SHA-256 in
// idx_accepted and idx_idempotency, and a time index (idx_time), which
// the upgrade drops, and versions 1 to 6 keep the partial level-0 tile
// and write idx_accepted, idx_idempotency and idx_blob in each entry's
// own commit (from version 7 on they trail the head with the secondary
// indexes: see tail.go). A read-only Open reads them as they are: a key
// of version 5's indexes is a version 6 index record listing one seq, no
// read uses idx_time, and a version 6 file's decision indexes reach its
// head.
const FormatVersion = 7

// Earlier layouts.
const (
	formatVersion1 = 1 // before meta "indexed"
	formatVersion2 = 2 // before idx_idempotency and meta "key"
	formatVersion3 = 3 // before tiles
	formatVersion4 = 4 // before blobs keyed by seq, idx_blob, and level-0 tiles dropped when full
	formatVersion5 = 5 // before index records and idx_accepted/idx_idempotency values without the payload
	formatVersion6 = 6 // before no level-0 tile and the decision indexes trailing the head (tail.go)
)

// tileHeight is the height of the tree's tiles: a tile at level L holds up
// to 256 hashes of tree level 8L (the tlog tile layout, without the hashes
// a tile's own bottom row determines). A level-0 tile's hashes are the
// leaf hashes of its entries, which a read computes from the entries
// bucket (tileHashes): formats 5 and 6 store a level-0 tile only while it
// is partial, format 7 none, so an append writes the tiles bucket once per
// 256 entries.
const tileHeight = 8

// tileKey is the tiles bucket key of tile (L, N): one level byte, be64(N).
func tileKey(level int, n int64) []byte {
	k := make([]byte, 9)
	k[0] = byte(level)
	binary.BigEndian.PutUint64(k[1:], uint64(n))
	return k
}

// Bucket names. Every bucket of a ledger file is one of these; Check reports
// any other.
var (
	bucketMeta       = []byte("meta")            // metaKey* below
	bucketEntries    = []byte("entries")         // be64(seq) -> canonical entry bytes
	bucketBlobs      = []byte("blobs")           // be64(seq of the entry that stored them) -> bytes (payloads, snapshots); formats 1-4: sha256(bytes) -> bytes
	bucketIdxBlob    = []byte("idx_blob")        // sha256(bytes) -> be64(its blobs key) (format 5)
	bucketTiles      = []byte("tiles")           // tileKey(L, N) -> the tile's hashes, 32 bytes each (formats 4 and 5)
	bucketTree       = []byte("tree")            // be64(stored hash index) -> 32-byte tlog hash (formats 1-3)
	bucketIdxHandoff = []byte("idx_handoff")     // index records (see postings) of xxh(handoff_id)   (every handoff entry)
	bucketIdxAccept  = []byte("idx_accepted")    // acceptKey(handoff_id, seq) -> "" (first accepted; formats 1-5: sha256(handoff_id) -> be64(seq) || payload sha256)
	bucketIdxAgent   = []byte("idx_agent")       // index records of xxh(agent)         (source, target, unblock agent)
	bucketIdxWork    = []byte("idx_workflow")    // index records of xxh(workflow_id)
	bucketIdxDecide  = []byte("idx_decision")    // index records of the decision
	bucketIdxTime    = []byte("idx_time")        // formats 1-5: be64(unix seconds ^ 1<<63) || be32(ns) || be64(seq) -> "" (from format 6 on, the entries are their own time index: see timeBounds)
	bucketBlocked    = []byte("blocked")         // agent -> be64(seq of the blocking entry)
	bucketRedacted   = []byte("redacted")        // payload sha256 -> be64(seq of the latest redaction)
	bucketIdxIdem    = []byte("idx_idempotency") // acceptKey(idempotency key, seq) -> "" (first use; formats 1-5: as idx_accepted)
)

// An index record of a secondary index lists, in increasing order, seqs
// of entries indexed under one prefix (indexPrefixes): its key is
// prefix || be64(first seq), its value the uvarint differences (each at
// least 1, minimally encoded) of every later seq from the one before it,
// so a record listing one seq has an empty value (a version 5 key). Each
// flush of the indexes (Options.IndexBatch) writes one record per prefix
// for the entries it covers, of at most maxPostings seqs; a prefix's
// records are in seq order and never overlap. A prefix's length is fixed
// per index (8 for xxh) except for idx_decision's, the decision string.
const maxPostings = 512

// acceptKey is the idx_accepted key of handoff id s first accepted by
// entry seq (the idx_idempotency key of idempotency key s first used by
// it): the first 8 bytes of sha256(s), then be64(seq). A lookup walks the
// keys of the 8 bytes and reads each entry, which must be a handoff (an
// accepted one, for idx_accepted); one that names another string of
// those 8 bytes is passed over, so the answer is exact. The payload's
// SHA-256 is read from the entry. Formats 1-5 keyed sha256(s) ->
// be64(seq) || payload sha256.
func acceptKey(s string, seq uint64) []byte {
	sum := entry.Sum256([]byte(s))
	return cat(sum[:acceptPrefix], be64(seq))
}

const (
	acceptPrefix = 8  // bytes of sha256(s) in an acceptKey
	acceptLenV5  = 40 // a format 1-5 value: be64(seq) || payload sha256
)

// allBuckets are the buckets of every format; bucketsOf(v) those of
// format v.
var allBuckets = [][]byte{
	bucketMeta, bucketEntries, bucketBlobs, bucketIdxBlob, bucketTiles,
	bucketIdxHandoff, bucketIdxAccept, bucketIdxAgent, bucketIdxWork, bucketIdxDecide, bucketIdxTime,
	bucketBlocked, bucketRedacted, bucketIdxIdem,
}

// bucketsOf returns the buckets a file of format version v has.
func bucketsOf(v uint64) [][]byte {
	out := make([][]byte, 0, len(allBuckets))
	for _, name := range allBuckets {
		switch {
		case bytes.Equal(name, bucketIdxIdem) && v < 3:
		case bytes.Equal(name, bucketIdxBlob) && v < 5:
		case bytes.Equal(name, bucketIdxTime) && v >= 6:
		case bytes.Equal(name, bucketTiles) && v < 4:
			out = append(out, bucketTree)
		default:
			out = append(out, name)
		}
	}
	return out
}

// Keys of the meta bucket.
var (
	metaVersion  = []byte("version")  // be64(FormatVersion)
	metaOrigin   = []byte("origin")   // the ledger's identity
	metaCreated  = []byte("created")  // RFC 3339 creation time (informational, not hashed)
	metaHead     = []byte("head")     // be64(seq) || hash; absent while empty
	metaManifest = []byte("manifest") // content sha256 of the manifest snapshot in force; absent if none
	metaLock     = []byte("lock")     // content sha256 of the lock snapshot in force; absent if none
	// metaIndexed is be64(seq): the secondary indexes hold exactly the keys
	// of entries 1..seq (see Options.IndexBatch); seq <= head.
	metaIndexed = []byte("indexed")
	// metaKey is the checkpoint verifier key in force (the new_key of the
	// last key_rotation entry); absent if none.
	metaKey = []byte("key")
)

var allMetaKeys = [][]byte{metaVersion, metaOrigin, metaCreated, metaHead, metaManifest, metaLock, metaIndexed, metaKey}

// secondaryIndexes are the indexes that may trail the head (written every
// Options.IndexBatch entries): nothing a decision reads. From format 7 on
// the decision indexes idx_accepted, idx_idempotency and idx_blob trail
// it too, each lookup completed by the tail (tail.go); blocked and
// redacted, rarely written, are written in the entry's own commit.
var secondaryIndexes = [][]byte{bucketIdxHandoff, bucketIdxAgent, bucketIdxWork, bucketIdxDecide}

// readIndexed returns the seq through which the secondary indexes are
// complete, given the head seq. A version 1 file is complete through head.
func readIndexed(m getter, head uint64) (uint64, error) {
	v := m.Get(metaIndexed)
	if v == nil {
		if ver := m.Get(metaVersion); len(ver) == 8 && binary.BigEndian.Uint64(ver) == formatVersion1 {
			return head, nil
		}
		return 0, fmt.Errorf("%w: meta indexed is absent", ledger.ErrCorrupt)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: meta indexed is %d bytes", ledger.ErrCorrupt, len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if n > head {
		return 0, fmt.Errorf("%w: meta indexed %d is beyond the head %d", ledger.ErrCorrupt, n, head)
	}
	return n, nil
}

func be64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// xxh is the index key prefix of a string. xxhash is for locating
// candidates only; every lookup confirms against the entry itself.
func xxh(s string) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, xxhash.Sum64String(s))
	return b
}

// cat returns a new slice holding a followed by b (never aliasing either).
func cat(a, b []byte) []byte {
	out := make([]byte, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// clone copies b (nil stays nil), for values leaving a transaction.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// indexPrefixes returns, per secondary index bucket, the prefixes under
// which entry e's seq is listed (each once). The same function drives
// Append, the upgrade and Check, so they cannot disagree.
func indexPrefixes(e *entry.Entry) map[string][][]byte {
	out := map[string][][]byte{}
	add := func(b []byte, prefix []byte) {
		for _, have := range out[string(b)] {
			if bytes.Equal(have, prefix) { // two strings with one xxhash: one listing
				return
			}
		}
		out[string(b)] = append(out[string(b)], prefix)
	}
	switch e.Kind {
	case entry.KindHandoff:
		if e.HandoffID.Valid {
			add(bucketIdxHandoff, xxh(e.HandoffID.S))
		}
		if e.WorkflowID.Valid {
			add(bucketIdxWork, xxh(e.WorkflowID.S))
		}
		if e.Source.Valid {
			add(bucketIdxAgent, xxh(e.Source.S))
		}
		if e.Target.Valid && (!e.Source.Valid || e.Target.S != e.Source.S) {
			add(bucketIdxAgent, xxh(e.Target.S))
		}
		add(bucketIdxDecide, []byte(e.Decision))
	case entry.KindUnblock:
		add(bucketIdxAgent, xxh(e.Agent))
	case entry.KindOutcome:
		if e.WorkflowID.Valid {
			add(bucketIdxWork, xxh(e.WorkflowID.S))
		}
		add(bucketIdxAgent, xxh(e.Agent))
	}
	return out
}

// prefixLen is the prefix length of every key of a secondary index, 0
// for idx_decision (any length: the key minus its 8-byte seq).
func prefixLen(name []byte) int {
	if bytes.Equal(name, bucketIdxDecide) {
		return 0
	}
	return 8
}

// encodePostings is the value of the record listing seqs (increasing,
// 1 to maxPostings of them): their differences after the first.
func encodePostings(seqs []uint64) []byte {
	out := make([]byte, 0, len(seqs)-1)
	for i := 1; i < len(seqs); i++ {
		out = binary.AppendUvarint(out, seqs[i]-seqs[i-1])
	}
	return out
}

// decodePostings appends to dst the seqs of the record whose key ends in
// be64(first) and whose value is v. The value must be minimal uvarints,
// each at least 1, listing at most maxPostings seqs in all without
// overflowing.
func decodePostings(dst []uint64, first uint64, v []byte) ([]uint64, error) {
	dst = append(dst, first)
	seq, n := first, 1
	for len(v) > 0 {
		d, k := binary.Uvarint(v)
		switch {
		case k <= 0:
			return dst, fmt.Errorf("seq %d of the record: a truncated or overlong uvarint", n+1)
		case k != uvarintLen(d):
			return dst, fmt.Errorf("seq %d of the record: a non-minimal uvarint", n+1)
		case d == 0 || seq+d < seq:
			return dst, fmt.Errorf("seq %d of the record: difference %d from %d", n+1, d, seq)
		case n == maxPostings:
			return dst, fmt.Errorf("more than %d seqs", maxPostings)
		}
		seq += d
		v = v[k:]
		n++
		dst = append(dst, seq)
	}
	return dst, nil
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// recordKey splits an index record's key of bucket name into its prefix
// and first seq; ok is false for a key of the wrong length.
func recordKey(name, k []byte) (prefix []byte, first uint64, ok bool) {
	n := prefixLen(name)
	if n == 0 && len(k) <= 8 || n > 0 && len(k) != n+8 {
		return nil, 0, false
	}
	return k[:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:]), true
}

// putPostings writes, into the index bucket b, the records listing seqs
// (increasing) under prefix: one per maxPostings seqs.
func putPostings(b interface{ Put(k, v []byte) error }, prefix []byte, seqs []uint64) error {
	for len(seqs) > 0 {
		n := min(len(seqs), maxPostings)
		if err := b.Put(cat(prefix, be64(seqs[0])), encodePostings(seqs[:n])); err != nil {
			return err
		}
		seqs = seqs[n:]
	}
	return nil
}
