package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// FormatVersion is the on-disk layout version stored in the meta bucket.
// Open refuses a file with another version (ErrVersionMismatch), except
// the earlier versions 1 to 4, which a writable Open upgrades in one
// transaction: version 1 has no meta "indexed" (its secondary indexes are
// complete), versions 1 and 2 have neither the idx_idempotency bucket nor
// meta "key", versions 1 to 3 store every tree hash in the tree bucket
// instead of tiles, and versions 1 to 4 key blobs by their SHA-256 (no
// idx_blob) and keep the full level-0 tiles. A read-only Open reads them
// as they are.
const FormatVersion = 5

// Earlier layouts.
const (
	formatVersion1 = 1 // before meta "indexed"
	formatVersion2 = 2 // before idx_idempotency and meta "key"
	formatVersion3 = 3 // before tiles
	formatVersion4 = 4 // before blobs keyed by seq, idx_blob, and level-0 tiles dropped when full
)

// tileHeight is the height of the tree's tiles: a tile at level L holds up
// to 256 hashes of tree level 8L (the tlog tile layout, without the hashes
// a tile's own bottom row determines). From format 5 on, a level-0 tile is
// stored only while it is partial: the hashes of a full one are the leaf
// hashes of its 256 entries, which a read computes from the entries
// bucket (tileHashes). Appends read only the partial tile and the tiles
// of higher levels.
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
	bucketIdxHandoff = []byte("idx_handoff")     // xxh(handoff_id) || be64(seq) -> ""   (every handoff entry)
	bucketIdxAccept  = []byte("idx_accepted")    // sha256(handoff_id) -> be64(seq) || payload sha256 (first accepted)
	bucketIdxAgent   = []byte("idx_agent")       // xxh(agent) || be64(seq) -> ""        (source, target, unblock agent)
	bucketIdxWork    = []byte("idx_workflow")    // xxh(workflow_id) || be64(seq) -> ""
	bucketIdxDecide  = []byte("idx_decision")    // decision || be64(seq) -> ""
	bucketIdxTime    = []byte("idx_time")        // timeKey(time) || be64(seq) -> ""
	bucketBlocked    = []byte("blocked")         // agent -> be64(seq of the blocking entry)
	bucketRedacted   = []byte("redacted")        // payload sha256 -> be64(seq of the latest redaction)
	bucketIdxIdem    = []byte("idx_idempotency") // sha256(idempotency key) -> be64(seq) || payload sha256 (first use)
)

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
// Options.IndexBatch entries): nothing a decision reads. idx_accepted and
// blocked, which decisions read, are written in the entry's own commit.
var secondaryIndexes = [][]byte{bucketIdxHandoff, bucketIdxAgent, bucketIdxWork, bucketIdxDecide, bucketIdxTime}

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

// timeKey encodes t so that byte order is time order for any year:
// be64(unix seconds with the sign bit flipped) || be32(nanoseconds).
func timeKey(t time.Time) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint64(b, uint64(t.Unix())^(1<<63))
	binary.BigEndian.PutUint32(b[8:], uint32(t.Nanosecond()))
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

// indexKeys returns, per index bucket, the keys entry e (with seq) adds. The
// same function drives Append and Check, so they cannot disagree.
func indexKeys(e *entry.Entry) map[string][][]byte {
	seq := be64(e.Seq)
	out := map[string][][]byte{
		string(bucketIdxTime): {cat(timeKey(e.Time.Time), seq)},
	}
	add := func(b []byte, prefix []byte) {
		k := cat(prefix, seq)
		for _, have := range out[string(b)] {
			if bytes.Equal(have, k) { // two strings with one xxhash: one key
				return
			}
		}
		out[string(b)] = append(out[string(b)], k)
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
	}
	return out
}
