package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/tlog"
)

// Check is a structural fsck of the file: it reports every finding, never
// stopping at the first. It checks that every bucket and key is one the
// format has; entry keys are gapless 1..head; each entry decodes, carries
// its key's seq, links to the previous hash and keeps time in order; meta
// head is the last entry; every stored tree hash equals the one recomputed
// from the entries; every index, the accepted, blocked and redacted tables
// and the snapshots in force equal those rebuilt from the chain; and every
// blob hashes to the SHA-256 its key names (formats 5 and 6: the entry it
// is stored under; idx_blob maps exactly those) and is referred to. It runs in
// one read transaction, so it sees one consistent state.
//
// Check streams: it walks the entries once, in seq order, and holds only
// the right edge of the Merkle tree and the tiles being filled (each tile
// is compared as soon as it is complete), the blocked agents, the
// redactions and snapshots, the sums of the secondary indexes' listings
// (checkindex.go), and the findings. The blobs, keyed by seq from format 5
// on, are walked beside the entries; the accepted and idempotency tables
// are read key by key as the fold asks for them, each first use compared
// with its row, and held to the number of first uses; idx_blob the same.
// Memory does not grow with the number of entries, except for files of
// formats 1-4, whose blobs keyed by SHA-256 are matched to their entries
// through a map of the payloads' hashes.
//
// The hash chain's re-evaluation against policy is the verify package's
// job; Check judges the store. An error (ledger.ErrCorrupt, ctx) comes with the
// findings gathered so far.
//
// In a read-only file, when ctx carries a ledger.CheckFeed (a replay
// beside the check), an entry whose bytes the replay hashed and decoded
// already, and a blob it hashed, are taken from it instead of being
// hashed and decoded again.
func (d *Driver) Check(ctx context.Context) (findings []ledger.Finding, err error) {
	// Walk the raw pages first: bbolt's own traversal of a corrupted tree
	// can recurse without end. A file opened read-only with CheckPages was
	// walked by Open, and no writer has changed it since.
	if d.walked == nil || d.walked != d.current() {
		if err := d.checkPages(); err != nil {
			return nil, err
		}
	}
	c := &checker{ctx: ctx}
	if d.readOnly {
		// No writer can change the file, so the replay that feeds the
		// check never waits for a read this check holds up.
		c.feed = ledger.CheckFeedFrom(ctx)
	}
	err = d.read(func(tx *bolt.Tx) error {
		c.tx = tx
		return c.run()
	})
	return c.findings, err
}

type checker struct {
	ctx      context.Context
	tx       *bolt.Tx
	version  uint64 // meta version, 0 if unreadable
	findings []ledger.Finding

	n        int64  // entries walked
	indexed  uint64 // meta "indexed": secondary indexes cover 1..indexed
	lastSeq  uint64
	lastHash entry.Hash
	idxWant  map[string]pairSet // the index listings entries 1..indexed imply
	pairs    *pairHasher

	entries *bolt.Bucket // nil when missing
	treeB   *bolt.Bucket // formats 1-3: every stored hash
	tilesB  *bolt.Bucket // formats 4 and later
	right   []tlog.Hash  // right[L]: the last complete node of level L that is a left child (the tree's right edge)
	tiles   []tileFill   // tiles[L]: the tile of level L being filled

	st        *entry.State // the fold, positioned anew on each entry, on c's tables
	cur       uint64       // seq of the entry being folded
	accepted  hashTable    // idx_accepted
	idem      hashTable    // idx_idempotency
	blocked   map[string]uint64
	redacted  map[entry.Hash]uint64 // payload -> latest redaction seq
	reref     map[entry.Hash]uint64 // redacted payload -> the last entry naming it after a redaction
	snapshots map[entry.Hash]uint64 // snapshot content -> seq
	manifest  *entry.Hash
	lock      *entry.Hash

	blobs *blobWalk             // formats 5 and 6: the blobs bucket, walked beside the entries
	refs  map[entry.Hash]uint64 // formats 1-4: blob hash -> last entry referring to it

	// A replay beside the check (read-only files): nil, or what it
	// prepared; fed is its answer for the entry being walked.
	feed ledger.CheckFeed
	fed  *ledger.Prepared
}

func (c *checker) add(seq uint64, kind, want, got string) {
	c.findings = append(c.findings, ledger.Finding{Seq: seq, Kind: kind, Want: want, Got: got})
}

func (c *checker) run() error {
	c.idxWant = map[string]pairSet{}
	c.pairs = newPairHasher()
	c.blocked = map[string]uint64{}
	c.redacted = map[entry.Hash]uint64{}
	c.reref = map[entry.Hash]uint64{}
	c.snapshots = map[entry.Hash]uint64{}
	c.st = entry.NewState(entry.Head{}, c)

	var version uint64
	if m := c.tx.Bucket(bucketMeta); m != nil {
		version = seqOf(m.Get(metaVersion))
	}
	c.version = version
	// idx_idempotency may be present (empty) in a file before format 3.
	known := map[string]bool{string(bucketIdxIdem): true}
	for _, b := range bucketsOf(version) {
		known[string(b)] = true
		if c.tx.Bucket(b) == nil {
			c.add(0, ledger.FindMissingBucket, string(b), "absent")
		}
	}
	if err := c.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if !known[string(name)] {
			c.add(0, ledger.FindUnknownBucket, "none", fmt.Sprintf("%q", name))
		}
		return nil
	}); err != nil {
		return err
	}
	c.checkMeta()
	c.entries = c.bucket(bucketEntries)
	c.treeB, c.tilesB = c.bucket(bucketTree), c.bucket(bucketTiles)
	c.accepted = hashTable{name: "idx_accepted", b: c.bucket(bucketIdxAccept), v6: version >= 6, key: acceptedKey}
	c.idem = hashTable{name: "idx_idempotency", b: c.bucket(bucketIdxIdem), v6: version >= 6, key: idempotencyKey}
	if b := c.bucket(bucketBlobs); b != nil && version >= 5 {
		c.blobs = &blobWalk{b: b, cur: b.Cursor(), idx: c.bucket(bucketIdxBlob)}
	} else if version < 5 {
		c.refs = map[entry.Hash]uint64{}
	}
	if err := c.walkEntries(); err != nil {
		return err
	}
	c.tables()
	c.checkHead()
	c.checkTree()
	c.checkIndexes()
	c.checkTables()
	c.checkBlobs()
	return nil
}

func (c *checker) bucket(name []byte) *bolt.Bucket { return c.tx.Bucket(name) }

func (c *checker) checkMeta() {
	m := c.bucket(bucketMeta)
	if m == nil {
		return
	}
	knownKey := map[string]bool{}
	for _, k := range allMetaKeys {
		knownKey[string(k)] = true
	}
	m.ForEach(func(k, v []byte) error {
		if !knownKey[string(k)] || v == nil {
			c.add(0, ledger.FindUnknownKey, "meta key", fmt.Sprintf("meta %q", k))
		}
		return nil
	})
	if v := m.Get(metaVersion); len(v) != 8 || binary.BigEndian.Uint64(v) < formatVersion1 || binary.BigEndian.Uint64(v) > FormatVersion {
		c.add(0, ledger.FindBadValue, fmt.Sprintf("meta version %d", FormatVersion), hex.EncodeToString(v))
	}
	if err := ledger.CheckOrigin(string(m.Get(metaOrigin))); err != nil {
		c.add(0, ledger.FindBadValue, "meta origin", err.Error())
	}
	if v := m.Get(metaCreated); v == nil {
		c.add(0, ledger.FindBadValue, "meta created", "absent")
	} else if _, err := time.Parse(time.RFC3339Nano, string(v)); err != nil {
		c.add(0, ledger.FindBadValue, "meta created RFC 3339", fmt.Sprintf("%q", v))
	}
	c.indexed = ^uint64(0) // unreadable: hold every entry to its index keys
	if v := m.Get(metaIndexed); len(v) == 8 {
		c.indexed = binary.BigEndian.Uint64(v)
	} else if ver := m.Get(metaVersion); v != nil || len(ver) != 8 || binary.BigEndian.Uint64(ver) != formatVersion1 {
		c.add(0, ledger.FindBadValue, "meta indexed 8 bytes", hex.EncodeToString(v))
	}
	for _, k := range [][]byte{metaManifest, metaLock} {
		if v := m.Get(k); v != nil && len(v) != 32 {
			c.add(0, ledger.FindBadValue, fmt.Sprintf("meta %s 32 bytes", k), fmt.Sprintf("%d bytes", len(v)))
		}
	}
}

func (c *checker) walkEntries() error {
	b := c.entries
	if b == nil {
		return nil
	}
	var prevTime time.Time
	expect := uint64(1)
	cur := b.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if c.n%1024 == 0 {
			if err := c.ctx.Err(); err != nil {
				return err
			}
		}
		if len(k) != 8 || v == nil {
			c.add(0, ledger.FindUnknownKey, "8-byte entry key", fmt.Sprintf("key %x (bucket: %t)", k, v == nil))
			continue
		}
		seq := binary.BigEndian.Uint64(k)
		if seq != expect {
			c.add(seq, ledger.FindSeqGap, fmt.Sprint(expect), fmt.Sprint(seq))
		}
		expect = seq + 1
		h, e, err := c.prepare(seq, v)
		c.treeLeaf(seq, h)
		prevHash := c.lastHash
		c.lastSeq, c.lastHash = seq, h
		c.n++
		if err != nil {
			c.add(seq, ledger.FindUndecodable, "a canonical entry", err.Error())
			c.blobAt(seq, nil)
			continue
		}
		if e.Seq != seq {
			c.add(seq, ledger.FindSeqMismatch, fmt.Sprint(seq), fmt.Sprint(e.Seq))
		}
		if e.Prev != prevHash {
			c.add(seq, ledger.FindPrevLink, prevHash.String(), e.Prev.String())
		}
		if e.Time.Before(prevTime) {
			c.add(seq, ledger.FindTimeOrder, ">= "+prevTime.Format(time.RFC3339Nano), e.Time.Format(time.RFC3339Nano))
		} else {
			prevTime = e.Time.Time
		}
		if seq <= c.indexed {
			c.entryIndexes(seq, e)
		}
		c.derive(seq, e, h)
		c.blobAt(seq, e.Blob())
	}
	c.blobsAfter()
	return nil
}

// prepare hashes and decodes the entry v stored as seq, or takes both from
// the feed when it has them for exactly these bytes.
func (c *checker) prepare(seq uint64, v []byte) (entry.Hash, *entry.Entry, error) {
	c.fed = nil
	if c.feed != nil {
		if p := c.feed.Prepared(c.ctx, seq, v); p != nil {
			c.fed = p
			return p.Hash, p.Entry, p.Err
		}
	}
	e, err := entry.Decode(v)
	return entry.LeafHash(v), e, err
}

// blobSum returns the SHA-256 of the blob v stored under seq, from the
// feed when the replay hashed exactly these bytes for that entry.
func (c *checker) blobSum(seq uint64, v []byte) entry.Hash {
	if f := c.fed; f != nil && f.Seq == seq && f.Blob != nil && f.Entry != nil && bytes.Equal(f.Blob, v) {
		if sum := f.Entry.Blob(); sum != nil {
			return *sum
		}
	}
	return entry.Sum256(v)
}

// treeLeaf adds the leaf hash h of the c.n'th entry (stored as seq) to the
// tree: it computes the stored hashes the leaf completes (tlog's
// StoredHashesForRecordHash, from the right edge kept in c.right), compares
// each with the tree bucket (formats 1-3) and adds those of the tiles'
// levels to the tiles being filled (formats 4 and later).
func (c *checker) treeLeaf(seq uint64, h entry.Hash) {
	n := c.n
	base := tlog.StoredHashIndex(0, n)
	node := tlog.Hash(h)
	for level := 0; ; level++ {
		if c.treeB != nil {
			x := base + int64(level)
			if got := c.treeB.Get(be64(uint64(x))); !bytes.Equal(got, node[:]) {
				c.add(seq, ledger.FindTreeHash, fmt.Sprintf("tree[%d]=%x", x, node[:]), fmt.Sprintf("%x", got))
			}
		}
		if c.tilesB != nil && level%tileHeight == 0 {
			c.tileHash(level/tileHeight, n>>level, node)
		}
		if level == len(c.right) {
			c.right = append(c.right, tlog.Hash{})
		}
		if (n>>level)&1 == 0 { // a left child: it waits for its sibling
			c.right[level] = node
			return
		}
		node = tlog.NodeHash(c.right[level], node)
	}
}

// tileFill is a tile being filled: tile n of its level, the hashes so far.
type tileFill struct {
	n    int64
	data []byte
}

// tileHash adds hash i of tree level tileHeight*l (stored hashes of one
// level come in order) to its tile, and compares the tile once full.
func (c *checker) tileHash(l int, i int64, h tlog.Hash) {
	for len(c.tiles) <= l {
		c.tiles = append(c.tiles, tileFill{})
	}
	t := &c.tiles[l]
	if i&(1<<tileHeight-1) == 0 {
		t.n, t.data = i>>tileHeight, t.data[:0]
	}
	t.data = append(t.data, h[:]...)
	if len(t.data) == tlog.HashSize<<tileHeight {
		c.compareTile(l, t)
		t.data = t.data[:0]
	}
}

// compareTile compares the tile t of level l with the stored one. A full
// level-0 tile is not stored from format 5 on, nor a partial one from
// format 7 on (checkTree reports one that is).
func (c *checker) compareTile(l int, t *tileFill) {
	if c.version >= 5 && l == 0 && (c.version >= 7 || len(t.data) == tlog.HashSize<<tileHeight) {
		return
	}
	k := tileKey(l, t.n)
	v, w := c.tilesB.Get(k), t.data
	switch {
	case v == nil:
		c.add(tileFirst(k), ledger.FindTreeHash, fmt.Sprintf("tile %x", k), "absent")
	case !bytes.Equal(v, w):
		// Name the entry under the first hash that differs.
		i := 0
		for i < len(v) && i < len(w) && v[i] == w[i] {
			i++
		}
		at := tileFirst(k) + uint64(i/tlog.HashSize)<<(tileHeight*l)
		c.add(at, ledger.FindTreeHash, fmt.Sprintf("tile %x of %d bytes, sha256 %s", k, len(w), entry.Sum256(w)), fmt.Sprintf("%d bytes, sha256 %s", len(v), entry.Sum256(v)))
	}
}

// tileFirst returns the first entry under the tile of key k (0 for a key
// that names no tile).
func tileFirst(k []byte) uint64 {
	if len(k) != 9 || k[0] >= 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k[1:])<<(tileHeight*(uint64(k[0])+1)) + 1
}

// tileWanted reports whether the tree of n leaves has a stored tile (l, i):
// one holding at least one hash of tree level tileHeight*l, except, from
// format 5 on, a full level-0 tile, and from format 7 on any level-0 tile.
func (c *checker) tileWanted(l int, i uint64) bool {
	if tileHeight*l >= 63 {
		return false
	}
	count := uint64(c.n) >> (tileHeight * l) // hashes of that level
	if i >= (count+1<<tileHeight-1)>>tileHeight {
		return false
	}
	return l > 0 || c.version < 5 || (c.version < 7 && (i+1)<<tileHeight > count)
}

// derive folds e (stored as seq, leaf hash h) into the checker's state,
// the one fold of package entry, and takes in what it changed. The chain
// itself is judged by walkEntries; the fold is positioned on e's own seq,
// prev and time so that it judges only the state rules. An entry that
// breaks one is a finding; its state effects are applied where they still
// make sense (a handoff whose snapshots are not in force) and dropped
// otherwise.
func (c *checker) derive(seq uint64, e *entry.Entry, h entry.Hash) {
	st := c.st
	st.Reset(entry.PositionAt(st.Head, e))
	c.cur = seq
	if err := st.Judge(e, h); err != nil {
		c.add(seq, ledger.FindStateRule, "an entry that follows the ledger state", err.Error())
	}
	d := &st.Delta
	for id, a := range d.Accepted {
		c.accepted.firstUse(c, id, a)
	}
	for k, a := range d.Idempotent {
		c.idem.firstUse(c, k, a)
	}
	d.ApplyBlocked(c.blocked)
	for _, r := range d.Redactions {
		c.redaction(r)
	}
	if sum := e.Blob(); sum != nil {
		if _, ok := c.redacted[*sum]; ok {
			c.reref[*sum] = seq
		}
		if c.refs != nil {
			c.refs[*sum] = seq
		}
	}
	if e.Kind == entry.KindSnapshot {
		c.snapshots[*e.ContentSHA256] = seq
	}
}

// redaction takes in a redaction entry: the payload of the entry it names
// is redacted as of r.Seq.
func (c *checker) redaction(r entry.Redaction) {
	t, err := c.entry(r.Of)
	if err != nil || t.Kind != entry.KindHandoff {
		c.add(r.Seq, ledger.FindRedacted, fmt.Sprintf("redacted_seq %d a handoff", r.Of), "not a readable handoff entry")
		return
	}
	c.redacted[*t.PayloadSHA256] = r.Seq
	delete(c.reref, *t.PayloadSHA256)
}

// entry reads and decodes the entry stored as seq.
func (c *checker) entry(seq uint64) (*entry.Entry, error) {
	if c.entries == nil {
		return nil, ledger.ErrNotFound
	}
	raw := c.entries.Get(be64(seq))
	if raw == nil {
		return nil, ledger.ErrNotFound
	}
	return entry.Decode(raw)
}

// Accepted implements entry.Tables for the fold, from idx_accepted.
func (c *checker) Accepted(id string) (entry.Accept, bool, error) {
	a, ok := c.accepted.lookup(c, id)
	return a, ok, nil
}

// Idempotent implements entry.Tables for the fold, from idx_idempotency.
func (c *checker) Idempotent(key string) (entry.Accept, bool, error) {
	a, ok := c.idem.lookup(c, key)
	return a, ok, nil
}

// Blocked implements entry.Tables for the fold.
func (c *checker) Blocked(agent string) (uint64, bool, error) {
	seq, ok := c.blocked[agent]
	return seq, ok, nil
}

// hashTable checks a table that records the first use of a string
// (idx_accepted: the first acceptance of a handoff id; idx_idempotency:
// the first use of an idempotency key) without holding it: the fold asks
// the table itself whether a string was used before the entry being
// folded, each answer confirmed against the entry the row names; each
// first use the fold finds is compared with its row; and the rows are
// counted. A row that disagrees is a finding, and the fold goes on with
// the first use the entries imply (fixed). When every first use has its
// exact row and the table holds no other, the table is the one the chain
// implies. Formats 1-5 key a row by sha256(s), its value be64(seq) ||
// payload sha256; format 6 keys it acceptKey(s, seq), its value empty.
type hashTable struct {
	name    string
	b       *bolt.Bucket // nil when missing (reported as such)
	v6      bool         // acceptKey rows
	key     func(e *entry.Entry) (string, bool)
	fixed   map[entry.Hash]entry.Accept // first uses whose row was wrong (each reported)
	matched int                         // first uses found with their exact row
	suspect bool                        // a row names an entry that is not a use of its string
}

func acceptedKey(e *entry.Entry) (string, bool) {
	return e.HandoffID.S, e.Kind == entry.KindHandoff && e.Decision == reason.Accepted && e.HandoffID.Valid && e.PayloadSHA256 != nil
}

func idempotencyKey(e *entry.Entry) (string, bool) {
	return e.IdempotencyKey, e.Kind == entry.KindHandoff && e.IdempotencyKey != "" && e.PayloadSHA256 != nil
}

// rowOf returns the key and value of the row of a, the first use of s.
func (t *hashTable) rowOf(s string, a entry.Accept) (k, v []byte) {
	if t.v6 {
		return acceptKey(s, a.Seq), []byte{}
	}
	sum := entry.Sum256([]byte(s))
	return sum[:], cat(be64(a.Seq), a.Payload[:])
}

// use returns the use of a string whose SHA-256 begins with prefix that
// entry seq makes, if it makes one.
func (t *hashTable) use(c *checker, seq uint64, prefix []byte) (s string, a entry.Accept, ok bool) {
	e, err := c.entry(seq)
	if err != nil {
		return "", a, false
	}
	s, ok = t.key(e)
	if sum := entry.Sum256([]byte(s)); !ok || !bytes.HasPrefix(sum[:], prefix) {
		return "", a, false
	}
	return s, entry.Accept{Seq: seq, Payload: *e.PayloadSHA256}, true
}

// lookup answers whether s was used before the entry being folded: the
// row of s, if it names an earlier entry that uses s.
func (t *hashTable) lookup(c *checker, s string) (entry.Accept, bool) {
	sum := entry.Sum256([]byte(s))
	if a, ok := t.fixed[sum]; ok {
		return a, true
	}
	if t.b == nil {
		return entry.Accept{}, false
	}
	if t.v6 {
		// The rows of the 8 bytes, in seq order: the first one before
		// the entry being folded that names a use of s.
		prefix := sum[:acceptPrefix]
		cur := t.b.Cursor()
		for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
			seq := seqOf(k[acceptPrefix:])
			if len(k) != acceptPrefix+8 || len(v) != 0 {
				t.suspect = true
				continue
			}
			if seq >= c.cur {
				break
			}
			switch got, a, ok := t.use(c, seq, prefix); {
			case ok && got == s:
				return a, true
			case !ok:
				t.suspect = true // a row that is no use: rows reports it
			}
		}
		return entry.Accept{}, false
	}
	v := t.b.Get(sum[:])
	seq := seqOf(v)
	if v == nil || seq == 0 || seq >= c.cur {
		return entry.Accept{}, false // not used before (a row naming a later entry is compared there)
	}
	if got, a, ok := t.use(c, seq, sum[:]); ok && got == s {
		if _, want := t.rowOf(s, a); bytes.Equal(v, want) {
			return a, true
		}
	}
	t.suspect = true // a row that is no use of s: rows reports it
	return entry.Accept{}, false
}

// firstUse compares the row of s with a, its first use the fold found.
// From format 7 on, a first use by an entry beyond meta "indexed" has no
// row (the table trails the head: tail.go); later lookups find it in
// fixed, as the driver's tail.
func (t *hashTable) firstUse(c *checker, s string, a entry.Accept) {
	if t.b == nil {
		return
	}
	k, want := t.rowOf(s, a)
	got := t.get(k)
	if c.version >= 7 && a.Seq > c.indexed {
		if got != nil {
			c.add(a.Seq, ledger.FindAccepted, fmt.Sprintf("no %s key beyond meta indexed %d", t.name, c.indexed), fmt.Sprintf("%x -> %x", k, got))
			t.suspect = true
		}
		if t.fixed == nil {
			t.fixed = map[entry.Hash]entry.Accept{}
		}
		t.fixed[entry.Sum256([]byte(s))] = a
		return
	}
	if got != nil && bytes.Equal(got, want) {
		t.matched++
		return
	}
	g := "absent"
	if got != nil {
		g = fmt.Sprintf("%x", got)
	}
	c.add(a.Seq, ledger.FindAccepted, fmt.Sprintf("%s %x -> %x", t.name, k, want), g)
	if t.fixed == nil {
		t.fixed = map[entry.Hash]entry.Accept{}
	}
	t.fixed[entry.Sum256([]byte(s))] = a
	t.suspect = true
}

// get returns the value of key k (an empty value as a non-nil empty
// slice), nil when absent.
func (t *hashTable) get(k []byte) []byte {
	got, v := t.b.Cursor().Seek(k)
	if !bytes.Equal(got, k) || v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

// rows reports the rows no first use implies. Every first use was compared
// with its row during the walk, so when no row was found wrong and the
// count is the number of first uses found, there is none; otherwise each
// row is confirmed against the entry it names.
func (t *hashTable) rows(c *checker) {
	if t.b == nil || (!t.suspect && t.b.Stats().KeyN == t.matched) {
		return
	}
	t.b.ForEach(func(k, v []byte) error {
		if t.rowOK(c, k, v) {
			return nil
		}
		seq := seqOf(v)
		if t.v6 {
			seq = seqOf(k[min(len(k), acceptPrefix):])
		}
		c.add(seq, ledger.FindAccepted, "no "+t.name+" key", fmt.Sprintf("%x -> %x", k, v))
		return nil
	})
}

// rowOK reports whether the row k -> v is the row of a first use, or one
// reported with it.
func (t *hashTable) rowOK(c *checker, k, v []byte) bool {
	if !t.v6 {
		if len(k) != 32 || v == nil {
			return false
		}
		if _, ok := t.fixed[entry.Hash(k)]; ok {
			return true // reported with its first use
		}
		s, a, ok := t.use(c, seqOf(v), k)
		_, want := t.rowOf(s, a)
		return ok && bytes.Equal(v, want)
	}
	if len(k) != acceptPrefix+8 || len(v) != 0 {
		return false
	}
	seq := seqOf(k[acceptPrefix:])
	s, _, ok := t.use(c, seq, k[:acceptPrefix])
	if !ok {
		return false
	}
	if f, ok := t.fixed[entry.Sum256([]byte(s))]; ok {
		return f.Seq == seq
	}
	// The first use of s is the first row of the 8 bytes naming a use of
	// s (its row was found when the walk met it).
	cur := t.b.Cursor()
	for rk, rv := cur.Seek(k[:acceptPrefix]); rk != nil && bytes.HasPrefix(rk, k[:acceptPrefix]); rk, rv = cur.Next() {
		if len(rk) != acceptPrefix+8 || len(rv) != 0 {
			continue
		}
		r := seqOf(rk[acceptPrefix:])
		if got, _, ok := t.use(c, r, k[:acceptPrefix]); ok && got == s {
			return r == seq
		}
	}
	return false
}

// tables takes in the scalars of the fold's state.
func (c *checker) tables() {
	if c.st.HasManifest {
		c.manifest = &c.st.Manifest
	}
	if c.st.HasLock {
		c.lock = &c.st.Lock
	}
}

func (c *checker) checkHead() {
	m := c.bucket(bucketMeta)
	if m == nil {
		return
	}
	if c.indexed != ^uint64(0) && c.indexed > c.lastSeq {
		c.add(0, ledger.FindMetaHead, fmt.Sprintf("meta indexed <= %d (the last entry)", c.lastSeq), fmt.Sprint(c.indexed))
	}
	v := m.Get(metaHead)
	if c.n == 0 {
		if v != nil {
			c.add(0, ledger.FindMetaHead, "absent (no entries)", fmt.Sprintf("%x", v))
		}
		return
	}
	want := cat(be64(c.lastSeq), c.lastHash[:])
	if !bytes.Equal(v, want) {
		got := fmt.Sprintf("%x", v)
		if len(v) == 40 {
			got = fmt.Sprintf("seq %d hash %x", binary.BigEndian.Uint64(v), v[8:])
		}
		c.add(c.lastSeq, ledger.FindMetaHead, fmt.Sprintf("seq %d hash %s", c.lastSeq, c.lastHash), got)
	}
}

// checkTree compares the partial tiles at the end of the tree, and reports
// the stored tiles and tree hashes the tree of c.n leaves does not have
// (each tile it has was compared as it was filled).
func (c *checker) checkTree() {
	if t := c.tilesB; t != nil {
		for l := range c.tiles {
			if len(c.tiles[l].data) > 0 {
				c.compareTile(l, &c.tiles[l])
			}
		}
		count := tlog.StoredHashCount(c.n)
		t.ForEach(func(k, v []byte) error {
			switch {
			case v == nil || len(k) != 9:
				c.add(0, ledger.FindUnknownKey, "9-byte tile key", fmt.Sprintf("key %x", k))
			case !c.tileWanted(int(k[0]), binary.BigEndian.Uint64(k[1:])):
				c.add(0, ledger.FindTreeExtra, fmt.Sprintf("%d stored hashes", count), fmt.Sprintf("tile %x", k))
			}
			return nil
		})
	}
	b := c.treeB
	if b == nil {
		return
	}
	count := tlog.StoredHashCount(c.n)
	b.ForEach(func(k, v []byte) error {
		if len(k) != 8 || v == nil {
			c.add(0, ledger.FindUnknownKey, "8-byte tree key", fmt.Sprintf("key %x", k))
			return nil
		}
		if x := binary.BigEndian.Uint64(k); x >= uint64(count) {
			c.add(0, ledger.FindTreeExtra, fmt.Sprintf("%d stored hashes", count), fmt.Sprintf("tree[%d]", x))
		}
		return nil
	})
}

func (c *checker) checkTables() {
	c.accepted.rows(c)
	c.idem.rows(c)
	if b := c.bucket(bucketBlocked); b != nil {
		seen := map[string]bool{}
		b.ForEach(func(k, v []byte) error {
			want, ok := c.blocked[string(k)]
			if !ok || v == nil {
				c.add(seqOf(v), ledger.FindBlocked, "not blocked", fmt.Sprintf("%q", k))
				return nil
			}
			seen[string(k)] = true
			if !bytes.Equal(v, be64(want)) {
				c.add(want, ledger.FindBlocked, fmt.Sprintf("%q blocked by %d", k, want), fmt.Sprintf("%x", v))
			}
			return nil
		})
		for a, seq := range c.blocked {
			if !seen[a] {
				c.add(seq, ledger.FindBlocked, fmt.Sprintf("%q blocked by %d", a, seq), "absent")
			}
		}
	}
	if b := c.bucket(bucketRedacted); b != nil {
		seen := map[entry.Hash]bool{}
		b.ForEach(func(k, v []byte) error {
			var h entry.Hash
			copy(h[:], k)
			want, ok := c.redacted[h]
			if len(k) != 32 || !ok {
				c.add(seqOf(v), ledger.FindRedacted, "not redacted", fmt.Sprintf("%x", k))
				return nil
			}
			seen[h] = true
			if !bytes.Equal(v, be64(want)) {
				c.add(want, ledger.FindRedacted, fmt.Sprintf("%x redacted by %d", k, want), fmt.Sprintf("%x", v))
			}
			return nil
		})
		for h, seq := range c.redacted {
			if !seen[h] {
				c.add(seq, ledger.FindRedacted, fmt.Sprintf("%x redacted by %d", h[:], seq), "absent")
			}
		}
	}
	if m := c.bucket(bucketMeta); m != nil {
		for _, x := range []struct {
			key  []byte
			want *entry.Hash
		}{{metaManifest, c.manifest}, {metaLock, c.lock}} {
			got := m.Get(x.key)
			switch {
			case x.want == nil && got != nil:
				c.add(0, ledger.FindInForce, fmt.Sprintf("no %s in force", x.key), fmt.Sprintf("%x", got))
			case x.want != nil && !bytes.Equal(got, x.want[:]):
				c.add(c.snapshots[*x.want], ledger.FindInForce, fmt.Sprintf("%s %s", x.key, x.want), fmt.Sprintf("%x", got))
			}
		}
		if got := string(m.Get(metaKey)); got != c.st.Key {
			c.add(0, ledger.FindKey, fmt.Sprintf("meta key %q", c.st.Key), fmt.Sprintf("%q", got))
		}
	}
}

func (c *checker) checkBlobs() {
	if c.blobs != nil {
		c.checkIdxBlob()
		c.unremoved()
		c.checkSnapshotBlobs(c.stored)
		return
	}
	b := c.bucket(bucketBlobs)
	if b == nil {
		return
	}
	b.ForEach(func(k, v []byte) error {
		var h entry.Hash
		copy(h[:], k)
		if len(k) != 32 || v == nil {
			c.add(0, ledger.FindUnknownKey, "32-byte blob key", fmt.Sprintf("%x", k))
			return nil
		}
		if got := entry.Sum256(v); got != h {
			c.add(c.refs[h], ledger.FindBlobHash, h.String(), got.String())
		}
		c.checkBlobRef(h)
		return nil
	})
	c.checkSnapshotBlobs(func(h entry.Hash) bool { return b.Get(h[:]) != nil })
}

// checkBlobRef (formats 1-4) reports a blob no entry names, or one a
// redaction erased and no later entry stored again.
func (c *checker) checkBlobRef(h entry.Hash) {
	ref, ok := c.refs[h]
	if !ok {
		c.add(0, ledger.FindBlobOrphan, "a referring entry", h.String())
	} else if r, ok := c.redacted[h]; ok && ref < r {
		c.add(r, ledger.FindBlobUnremoved, "absent", h.String())
	}
}

// unremoved (formats 5 and 6) reports the bytes a redaction erased that are
// still stored though no later entry names them.
func (c *checker) unremoved() {
	var left []entry.Hash
	for h := range c.redacted {
		if _, again := c.reref[h]; !again && c.stored(h) {
			left = append(left, h)
		}
	}
	sort.Slice(left, func(i, j int) bool { return c.redacted[left[i]] < c.redacted[left[j]] })
	for _, h := range left {
		c.add(c.redacted[h], ledger.FindBlobUnremoved, "absent", h.String())
	}
}

// checkSnapshotBlobs reports the snapshots whose bytes are not stored.
func (c *checker) checkSnapshotBlobs(stored func(entry.Hash) bool) {
	var missing []entry.Hash
	for h := range c.snapshots {
		if _, red := c.redacted[h]; !stored(h) && !red {
			missing = append(missing, h)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return c.snapshots[missing[i]] < c.snapshots[missing[j]] })
	for _, h := range missing {
		c.add(c.snapshots[h], ledger.FindBlobMissing, h.String(), "absent")
	}
}

// blobWalk walks the blobs bucket of formats 5 and 6 (keyed by seq) beside the
// entries, a merge join: the blob under seq must hash to the SHA-256
// entry seq names, and idx_blob must map that SHA-256 to seq — or to the
// one earlier key holding the same bytes.
type blobWalk struct {
	b, idx  *bolt.Bucket
	cur     *bolt.Cursor
	k, v    []byte
	started bool
	indexed int // blobs idx_blob maps rightly
	wrong   bool
	// The few blobs idx_blob does not map to their key (each reported):
	// sha256 -> key.
	unindexed map[entry.Hash]uint64
	reported  map[entry.Hash]bool // idx_blob keys already reported
}

// next moves to the next blob.
func (w *blobWalk) next() {
	if !w.started {
		w.k, w.v = w.cur.First()
		w.started = true
		return
	}
	w.k, w.v = w.cur.Next()
}

// blobAt checks the blobs stored up to seq, the key of an entry naming
// sum (nil: the entry names no blob or does not decode). Blobs under keys
// before seq that were not matched to their entry are orphans.
func (c *checker) blobAt(seq uint64, sum *entry.Hash) {
	w := c.blobs
	if w == nil {
		return
	}
	if !w.started {
		w.next()
	}
	for w.k != nil {
		if len(w.k) != 8 || w.v == nil {
			c.add(0, ledger.FindUnknownKey, "8-byte blob key", fmt.Sprintf("%x", w.k))
			w.next()
			continue
		}
		at := binary.BigEndian.Uint64(w.k)
		if at > seq {
			return
		}
		if at < seq || sum == nil {
			c.add(at, ledger.FindBlobOrphan, "a referring entry", fmt.Sprintf("blob under seq %d", at))
		} else {
			c.storedBlob(seq, *sum, w.v)
		}
		w.next()
	}
}

// blobsAfter reports the blobs under keys after the last entry.
func (c *checker) blobsAfter() {
	if c.blobs != nil {
		c.blobAt(^uint64(0), nil)
	}
}

// storedBlob checks the blob v stored under seq, whose entry names sum.
func (c *checker) storedBlob(seq uint64, sum entry.Hash, v []byte) {
	w := c.blobs
	if got := c.blobSum(seq, v); got != sum {
		// Damaged bytes: one finding; idx_blob still rightly names seq.
		c.add(seq, ledger.FindBlobHash, sum.String(), got.String())
	}
	if w.idx == nil {
		return
	}
	iv := w.idx.Get(sum[:])
	if c.version >= 7 && seq > c.indexed {
		// Beyond meta "indexed" idx_blob has no key for it (tail.go).
		switch {
		case iv == nil:
		case len(iv) == 8 && seqOf(iv) != seq && c.blobNamed(seqOf(iv), sum):
			c.add(seq, ledger.FindBlobOrphan, fmt.Sprintf("blob %s stored once (under seq %d)", sum, seqOf(iv)), fmt.Sprintf("again under seq %d", seq))
			return
		default:
			c.add(seq, ledger.FindIndexExtra, fmt.Sprintf("no idx_blob key beyond meta indexed %d", c.indexed), fmt.Sprintf("%x -> %x", sum[:], iv))
			if w.reported == nil {
				w.reported = map[entry.Hash]bool{}
			}
			w.reported[sum] = true
			w.wrong = true
		}
		if prior, ok := w.unindexed[sum]; ok {
			c.add(seq, ledger.FindBlobOrphan, fmt.Sprintf("blob %s stored once (under seq %d)", sum, prior), fmt.Sprintf("again under seq %d", seq))
			return
		}
		if w.unindexed == nil {
			w.unindexed = map[entry.Hash]uint64{}
		}
		w.unindexed[sum] = seq
		return
	}
	switch {
	case bytes.Equal(iv, be64(seq)):
		w.indexed++
		return
	case iv == nil:
		c.add(seq, ledger.FindIndexMissing, fmt.Sprintf("idx_blob %s -> %d", sum, seq), "absent")
	case len(iv) == 8 && c.blobNamed(seqOf(iv), sum):
		// The same bytes are stored under the key idx_blob names too.
		c.add(seq, ledger.FindBlobOrphan, fmt.Sprintf("blob %s stored once (under seq %d)", sum, seqOf(iv)), fmt.Sprintf("again under seq %d", seq))
		return
	default:
		c.add(seqOf(iv), ledger.FindIndexExtra, "no idx_blob key", fmt.Sprintf("%x -> %x", sum[:], iv))
		if w.reported == nil {
			w.reported = map[entry.Hash]bool{}
		}
		w.reported[sum] = true
	}
	w.wrong = true
	if w.unindexed == nil {
		w.unindexed = map[entry.Hash]uint64{}
	}
	if _, ok := w.unindexed[sum]; !ok {
		w.unindexed[sum] = seq
	}
}

// blobNamed reports whether a blob is stored under seq and entry seq names
// sum (its bytes are checked where the walk meets it).
func (c *checker) blobNamed(seq uint64, sum entry.Hash) bool {
	if c.blobs.b.Get(be64(seq)) == nil {
		return false
	}
	e, err := c.entry(seq)
	if err != nil {
		return false
	}
	s := e.Blob()
	return s != nil && *s == sum
}

// stored reports whether a file of format 5 or 6 holds the bytes sum under the key of an
// entry naming them.
func (c *checker) stored(sum entry.Hash) bool {
	w := c.blobs
	if _, ok := w.unindexed[sum]; ok {
		return true
	}
	if w.idx == nil {
		return false
	}
	iv := w.idx.Get(sum[:])
	return len(iv) == 8 && c.blobNamed(seqOf(iv), sum)
}

// checkIdxBlob reports the idx_blob keys no stored blob implies. Each
// stored blob was looked up during the walk, so when the count is the
// number found rightly mapped and none was wrong, there is none.
func (c *checker) checkIdxBlob() {
	w := c.blobs
	if w.idx == nil || (!w.wrong && w.idx.Stats().KeyN == w.indexed) {
		return
	}
	w.idx.ForEach(func(k, v []byte) error {
		var h entry.Hash
		copy(h[:], k)
		if len(k) == 32 && w.reported[h] {
			return nil
		}
		if len(k) != 32 || len(v) != 8 || !c.blobNamed(seqOf(v), h) {
			c.add(seqOf(v), ledger.FindIndexExtra, "no idx_blob key", fmt.Sprintf("%x -> %x", k, v))
		}
		return nil
	})
}

func seqOf(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
