package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
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
// blob hashes to the SHA-256 its key names (format 5: the entry it is
// stored under; idx_blob maps exactly those) and is referred to. It runs in one read
// transaction, so it sees one consistent state; memory grows with the
// number of distinct payloads and accepted handoff IDs.
//
// The hash chain's re-evaluation against policy is the verify package's
// job; Check judges the store. An error (ledger.ErrCorrupt, ctx) comes with the
// findings gathered so far.
func (d *Driver) Check(ctx context.Context) (findings []ledger.Finding, err error) {
	// Walk the raw pages first: bbolt's own traversal of a corrupted tree
	// can recurse without end.
	if err := d.checkPages(); err != nil {
		return nil, err
	}
	c := &checker{ctx: ctx}
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

	n         int64  // entries walked
	indexed   uint64 // meta "indexed": secondary indexes cover 1..indexed
	lastSeq   uint64
	lastHash  entry.Hash
	tree      map[int64]tlog.Hash // recomputed stored hashes
	idxWant   map[string]pairSet  // the index listings entries 1..indexed imply
	pairs     *pairHasher
	accepted  map[entry.Hash][]byte // sha256(handoff_id) -> seq||payload
	blocked   map[string]uint64
	redacted  map[entry.Hash]uint64 // payload -> latest redaction seq
	refs      map[entry.Hash]uint64 // blob hash -> last entry referring to it
	named     map[uint64]entry.Hash // seq -> the blob its entry names (format 5)
	snapshots map[entry.Hash]uint64 // snapshot content -> seq
	manifest  *entry.Hash
	lock      *entry.Hash
	idem      map[entry.Hash][]byte // sha256(idempotency key) -> seq||payload
	st        *entry.State          // the fold of the entries walked
	raw       []byte                // the entry being walked
}

func (c *checker) add(seq uint64, kind, want, got string) {
	c.findings = append(c.findings, ledger.Finding{Seq: seq, Kind: kind, Want: want, Got: got})
}

func (c *checker) run() error {
	c.tree = map[int64]tlog.Hash{}
	c.idxWant = map[string]pairSet{}
	c.pairs = newPairHasher()
	c.accepted = map[entry.Hash][]byte{}
	c.blocked = map[string]uint64{}
	c.redacted = map[entry.Hash]uint64{}
	c.refs = map[entry.Hash]uint64{}
	c.named = map[uint64]entry.Hash{}
	c.snapshots = map[entry.Hash]uint64{}
	c.idem = map[entry.Hash][]byte{}
	c.st = entry.NewState(entry.Head{}, nil)

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
	b := c.bucket(bucketEntries)
	if b == nil {
		return nil
	}
	tree := c.bucket(bucketTree)
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
		h := entry.LeafHash(v)
		c.checkTreeLeaf(tree, seq, h)
		prevHash := c.lastHash
		c.lastSeq, c.lastHash = seq, h
		c.n++
		e, err := entry.Decode(v)
		if err != nil {
			c.add(seq, ledger.FindUndecodable, "a canonical entry", err.Error())
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
		c.raw = v
		c.derive(seq, e)
	}
	return nil
}

func (c *checker) checkTreeLeaf(tree *bolt.Bucket, seq uint64, h entry.Hash) {
	n := c.n
	hashes, err := tlog.StoredHashesForRecordHash(n, tlog.Hash(h), tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = c.tree[x]
		}
		return out, nil
	}))
	if err != nil {
		c.add(seq, ledger.FindTreeHash, "computable", err.Error())
		return
	}
	base := tlog.StoredHashIndex(0, n)
	for i, want := range hashes {
		x := base + int64(i)
		c.tree[x] = want
		if tree == nil {
			continue
		}
		got := tree.Get(be64(uint64(x)))
		if !bytes.Equal(got, want[:]) {
			c.add(seq, ledger.FindTreeHash, fmt.Sprintf("tree[%d]=%x", x, want[:]), fmt.Sprintf("%x", got))
		}
	}
}

// derive folds e (stored as seq) into the checker's state, the one fold
// of package entry, and notes the blobs it refers to. The chain itself is
// judged by walkEntries; the fold is positioned on e's own seq, prev and
// time so that it judges only the state rules. An entry that breaks one is
// a finding; its state effects are applied where they still make sense
// (a handoff whose snapshots are not in force) and dropped otherwise.
func (c *checker) derive(seq uint64, e *entry.Entry) {
	st := c.st
	st.Head = entry.PositionAt(st.Head, e)
	if err := st.Judge(e, entry.LeafHash(c.raw)); err != nil {
		c.add(seq, ledger.FindStateRule, "an entry that follows the ledger state", err.Error())
	}
	if sum := e.Blob(); sum != nil {
		c.refs[*sum] = seq
		if c.version >= 5 {
			c.named[seq] = *sum
		}
	}
	if e.Kind == entry.KindSnapshot {
		c.snapshots[*e.ContentSHA256] = seq
	}
}

// tables turns the fold's state into the stored tables' shapes.
func (c *checker) tables() {
	d := &c.st.Delta
	for id, a := range d.Accepted {
		c.accepted[entry.Sum256([]byte(id))] = cat(be64(a.Seq), a.Payload[:])
	}
	for key, a := range d.Idempotent {
		c.idem[entry.Sum256([]byte(key))] = cat(be64(a.Seq), a.Payload[:])
	}
	maps.Copy(c.blocked, d.Blocked)
	entries := c.bucket(bucketEntries)
	for _, r := range d.Redactions {
		var t *entry.Entry
		var err error = ledger.ErrNotFound
		if entries != nil {
			if raw := entries.Get(be64(r.Of)); raw != nil {
				t, err = entry.Decode(raw)
			}
		}
		if err != nil || t.Kind != entry.KindHandoff {
			c.add(r.Seq, ledger.FindRedacted, fmt.Sprintf("redacted_seq %d a handoff", r.Of), "not a readable handoff entry")
			continue
		}
		c.redacted[*t.PayloadSHA256] = r.Seq
	}
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

func (c *checker) checkTree() {
	if t := c.bucket(bucketTiles); t != nil {
		c.checkTiles(t)
	}
	b := c.bucket(bucketTree)
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

// checkHashTable compares a table keyed by SHA-256 (idx_accepted,
// idx_idempotency) with the one the fold implies; from format 6 on its
// keys are acceptKeys (checkAcceptKeys).
func (c *checker) checkHashTable(b *bolt.Bucket, name string, wantTable map[entry.Hash][]byte) {
	if c.version >= 6 {
		c.checkAcceptKeys(b, name, wantTable)
		return
	}
	seen := map[entry.Hash]bool{}
	b.ForEach(func(k, v []byte) error {
		var h entry.Hash
		copy(h[:], k)
		want, ok := wantTable[h]
		if len(k) != 32 || !ok {
			c.add(seqOf(v), ledger.FindAccepted, "no "+name+" key", fmt.Sprintf("%x", k))
			return nil
		}
		seen[h] = true
		if !bytes.Equal(v, want) {
			c.add(seqOf(want), ledger.FindAccepted, fmt.Sprintf("%s %x -> %x", name, k, want), fmt.Sprintf("%x", v))
		}
		return nil
	})
	for h, want := range wantTable {
		if !seen[h] {
			c.add(seqOf(want), ledger.FindAccepted, fmt.Sprintf("%s %x -> %x", name, h[:], want), "absent")
		}
	}
}

// checkAcceptKeys compares format 6's idx_accepted or idx_idempotency,
// acceptKey(s, seq) -> "", with the table the fold implies (sha256(s) ->
// seq || payload).
func (c *checker) checkAcceptKeys(b *bolt.Bucket, name string, wantTable map[entry.Hash][]byte) {
	want := make(map[string]bool, len(wantTable))
	for h, v := range wantTable {
		want[string(cat(h[:acceptPrefix], v[:8]))] = true
	}
	b.ForEach(func(k, v []byte) error {
		switch {
		case len(k) != acceptPrefix+8 || len(v) != 0:
			c.add(seqOf(k[min(len(k), acceptPrefix):]), ledger.FindAccepted, name+" key of 16 bytes, empty value", fmt.Sprintf("%x -> %x", k, v))
		case !want[string(k)]:
			c.add(seqOf(k[acceptPrefix:]), ledger.FindAccepted, "no "+name+" key", fmt.Sprintf("%x", k))
		default:
			delete(want, string(k))
		}
		return nil
	})
	missing := make([]string, 0, len(want))
	for k := range want {
		missing = append(missing, k)
	}
	slices.Sort(missing)
	for _, k := range missing {
		c.add(seqOf([]byte(k[acceptPrefix:])), ledger.FindAccepted, fmt.Sprintf("%s key %x", name, k), "absent")
	}
}

func (c *checker) checkTables() {
	if b := c.bucket(bucketIdxAccept); b != nil {
		c.checkHashTable(b, "idx_accepted", c.accepted)
	}
	if b := c.bucket(bucketIdxIdem); b != nil {
		c.checkHashTable(b, "idx_idempotency", c.idem)
	}
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
	b := c.bucket(bucketBlobs)
	if b == nil {
		return
	}
	if c.version >= 5 {
		c.checkBlobsBySeq(b)
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

// checkBlobRef reports a blob no entry names, or one a redaction erased
// and no later entry stored again.
func (c *checker) checkBlobRef(h entry.Hash) {
	ref, ok := c.refs[h]
	if !ok {
		c.add(0, ledger.FindBlobOrphan, "a referring entry", h.String())
	} else if r, ok := c.redacted[h]; ok && ref < r {
		c.add(r, ledger.FindBlobUnremoved, "absent", h.String())
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

// checkBlobsBySeq checks format 5's blobs: each is stored under the seq
// of an entry naming it and hashes to the SHA-256 that entry names, and
// idx_blob maps exactly the stored blobs' SHA-256 to their keys.
func (c *checker) checkBlobsBySeq(b *bolt.Bucket) {
	idx := c.bucket(bucketIdxBlob)
	keyed := map[entry.Hash]uint64{} // stored blob hash -> its key
	b.ForEach(func(k, v []byte) error {
		if len(k) != 8 || v == nil {
			c.add(0, ledger.FindUnknownKey, "8-byte blob key", fmt.Sprintf("%x", k))
			return nil
		}
		seq := binary.BigEndian.Uint64(k)
		h, ok := c.named[seq]
		if !ok {
			c.add(seq, ledger.FindBlobOrphan, "a referring entry", fmt.Sprintf("blob under seq %d", seq))
			return nil
		}
		if got := entry.Sum256(v); got != h {
			// Damaged bytes: one finding; idx_blob still rightly names seq.
			c.add(seq, ledger.FindBlobHash, h.String(), got.String())
		}
		if prev, dup := keyed[h]; dup {
			c.add(seq, ledger.FindBlobOrphan, fmt.Sprintf("blob %s stored once (under seq %d)", h, prev), fmt.Sprintf("again under seq %d", seq))
			return nil
		}
		keyed[h] = seq
		c.checkBlobRef(h)
		return nil
	})
	if idx != nil {
		n := 0
		idx.ForEach(func(k, v []byte) error {
			n++
			var h entry.Hash
			copy(h[:], k)
			if seq, ok := keyed[h]; len(k) != 32 || !ok || !bytes.Equal(v, be64(seq)) {
				c.add(seqOf(v), ledger.FindIndexExtra, "no idx_blob key", fmt.Sprintf("%x -> %x", k, v))
			}
			return nil
		})
		if n != len(keyed) {
			var missing []uint64
			for h, seq := range keyed {
				if idx.Get(h[:]) == nil {
					missing = append(missing, seq)
				}
			}
			slices.Sort(missing)
			for _, seq := range missing {
				c.add(seq, ledger.FindIndexMissing, fmt.Sprintf("idx_blob %s -> %d", c.named[seq], seq), "absent")
			}
		}
	}
	c.checkSnapshotBlobs(func(h entry.Hash) bool { _, ok := keyed[h]; return ok })
}

// checkTiles compares the tiles bucket with the tiles of the stored hashes
// recomputed from the entries: each tile holds exactly the hashes of its
// level that the tree of c.n leaves has, and no other key is present. A
// finding names the first entry under the first hash that differs (for a
// missing tile, the first entry the tile covers).
func (c *checker) checkTiles(b *bolt.Bucket) {
	want := map[string][]byte{}
	count := tlog.StoredHashCount(c.n)
	for x := int64(0); x < count; x++ {
		level, n := tlog.SplitStoredHashIndex(x)
		if level%tileHeight == 0 {
			k := string(tileKey(level/tileHeight, n>>tileHeight))
			h := c.tree[x]
			want[k] = append(want[k], h[:]...)
		}
	}
	if c.version >= 5 { // full level-0 tiles are not stored
		for k, w := range want {
			if k[0] == 0 && len(w) == tlog.HashSize<<tileHeight {
				delete(want, k)
			}
		}
	}
	first := func(k []byte) uint64 {
		if len(k) != 9 || k[0] >= 8 {
			return 0
		}
		return binary.BigEndian.Uint64(k[1:])<<(tileHeight*(uint64(k[0])+1)) + 1
	}
	b.ForEach(func(k, v []byte) error {
		w, ok := want[string(k)]
		switch {
		case v == nil || len(k) != 9:
			c.add(0, ledger.FindUnknownKey, "9-byte tile key", fmt.Sprintf("key %x", k))
		case !ok:
			c.add(0, ledger.FindTreeExtra, fmt.Sprintf("%d stored hashes", count), fmt.Sprintf("tile %x", k))
		case !bytes.Equal(v, w):
			// Name the entry under the first hash that differs.
			i := 0
			for i < len(v) && i < len(w) && v[i] == w[i] {
				i++
			}
			at := first(k)
			if at > 0 {
				at += uint64(i/tlog.HashSize) << (tileHeight * uint64(k[0]))
			}
			c.add(at, ledger.FindTreeHash, fmt.Sprintf("tile %x of %d bytes, sha256 %x", k, len(w), entry.Sum256(w)), fmt.Sprintf("%d bytes, sha256 %x", len(v), entry.Sum256(v)))
		}
		return nil
	})
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if b.Get([]byte(k)) == nil {
			c.add(first([]byte(k)), ledger.FindTreeHash, fmt.Sprintf("tile %x", k), "absent")
		}
	}
}

func seqOf(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
