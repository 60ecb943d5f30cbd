package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/fault"
	"github.com/govledger/govledger/ledger"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/tlog"
)

// Append implements ledger.Driver: one write transaction, committed and
// fsynced, that stores b if the stored head is still b.At. With b.Erase,
// the file is then rewritten without its free pages (compact), so the
// erased bytes are gone from it. A crash between the commit and the
// rewrite leaves them in free pages until the next erasure rewrites the
// file; a failed rewrite is returned as an error (the batch is stored).
func (d *Driver) Append(ctx context.Context, b *ledger.Batch) error {
	if d.readOnly {
		return ledger.ErrReadOnly
	}
	if err := b.Check(); err != nil {
		return err
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	var w *writer
	err := func() (err error) {
		defer recoverCorrupt(&err)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		return d.current().Update(func(tx *bolt.Tx) error {
			var err error
			if w, err = d.newWriter(tx, b); err != nil {
				return err
			}
			return w.store(b)
		})
	}()
	if err != nil {
		return err
	}
	last := b.Entries[len(b.Entries)-1].Entry
	d.setLast(headTime{seq: b.Head.Seq, hash: b.Head.Hash, time: last.Time.Time})
	d.tmu.Lock()
	d.leaves = w.leaves
	d.tmu.Unlock()
	if w.indexed == w.seq {
		d.unindexed = nil
		d.setTail(emptyTail(w.seq))
	} else {
		d.unindexed = append(d.unindexed, w.unindexed...)
		d.setTail(w.next)
	}
	if len(b.Erase) > 0 {
		if err := d.compact(); err != nil {
			return fmt.Errorf("erase the redacted bytes: %w", err)
		}
	}
	return nil
}

func (d *Driver) setLast(h headTime) {
	d.hmu.Lock()
	d.last = h
	d.hmu.Unlock()
}

// appendFill is the fill of buckets whose keys grow (entries, blobs, tree
// tiles, idx_decision): bbolt splits a page at this fraction, and
// a page left behind is never written again, so filling it whole wastes
// nothing. The buckets keyed by a hash (idx_blob, idx_handoff,
// idx_accepted) or by a hash prefix (idx_agent, idx_workflow) keep bbolt's
// half-full split: their keys land at many places, and a full page would
// split into a full one and a nearly empty one at each (measured for
// idx_agent-like keys, 100,000 keys flushed 128 at a time: packed full,
// ~33 bytes a key with 2 prefixes but ~240 with 50 and ~1,000 with 2,000;
// half-full, 64, 60 and 43).
const appendFill = 1.0

// writer stores one batch inside a write transaction.
type writer struct {
	d                                    *Driver
	tx                                   *bolt.Tx
	meta, entries, blobs, idxBlob, tiles *bolt.Bucket
	accepted, blocked, redacted, idm     *bolt.Bucket
	seq                                  uint64 // the head seq stored so far
	// indexed is meta "indexed"; unindexed holds the secondary index keys
	// of this writer's entries (all beyond indexed).
	indexed   uint64
	unindexed []indexed
	// tail is what the entries beyond indexed add to the decision
	// indexes when the transaction began, next the same with the batch's
	// entries (tail.go); stored maps each blob the batch stores to the
	// seq it is stored under.
	tail, next *tail
	stored     map[entry.Hash]uint64
	// leaves is the last level-0 tile after the batch (leafCache).
	leaves *leafCache
}

// indexed is one entry's secondary index prefixes (indexPrefixes).
type indexed struct {
	seq  uint64
	keys map[string][][]byte
}

// newWriter starts a writer on tx after checking that the stored head is
// b.At (else an error wrapping ledger.ErrConflict) and that the file's
// entries end there.
func (d *Driver) newWriter(tx *bolt.Tx, b *ledger.Batch) (*writer, error) {
	w := &writer{d: d, tx: tx,
		meta: tx.Bucket(bucketMeta), entries: tx.Bucket(bucketEntries), blobs: tx.Bucket(bucketBlobs),
		idxBlob: tx.Bucket(bucketIdxBlob), tiles: tx.Bucket(bucketTiles), accepted: tx.Bucket(bucketIdxAccept), blocked: tx.Bucket(bucketBlocked),
		redacted: tx.Bucket(bucketRedacted), idm: tx.Bucket(bucketIdxIdem)}
	for _, name := range bucketsOf(FormatVersion) {
		if tx.Bucket(name) == nil {
			return nil, fmt.Errorf("%w: bucket %q missing", ledger.ErrCorrupt, name)
		}
	}
	seq, head, err := readHead(w.meta)
	if err != nil {
		return nil, err
	}
	if seq != b.At.Seq || head != b.At.Hash {
		return nil, fmt.Errorf("%w: batch at seq %d, stored head seq %d", ledger.ErrConflict, b.At.Seq, seq)
	}
	if seq > 0 {
		raw := w.entries.Get(be64(seq))
		if raw == nil {
			return nil, fmt.Errorf("%w: meta head seq %d has no entry", ledger.ErrCorrupt, seq)
		}
		if entry.LeafHash(raw) != head {
			return nil, fmt.Errorf("%w: meta head hash differs from entry %d", ledger.ErrCorrupt, seq)
		}
	}
	if k, _ := w.entries.Cursor().Last(); k != nil && (len(k) != 8 || binary.BigEndian.Uint64(k) != seq) {
		return nil, fmt.Errorf("%w: last entry key %x differs from meta head seq %d", ledger.ErrCorrupt, k, seq)
	}
	w.seq = seq
	w.entries.FillPercent, w.blobs.FillPercent, w.tiles.FillPercent = appendFill, appendFill, appendFill
	if w.indexed, err = readIndexed(w.meta, seq); err != nil {
		return nil, err
	}
	if w.tail = d.tailFor(w.indexed, seq); w.tail == nil || w.tail.head != seq {
		if w.tail, err = readTail(w.entries, w.blobs, w.indexed, seq, true); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// store writes b: entries, tree hashes, blobs, the delta of the derived
// tables, erasures, meta, and the secondary indexes when they trail the
// head by Options.IndexBatch.
func (w *writer) store(b *ledger.Batch) error {
	if err := putTiles(w.tiles, tlog.StoredHashIndex(0, int64(b.At.Seq)), b.Hashes); err != nil {
		return err
	}
	raws := make([][]byte, 0, len(b.Entries))
	for _, a := range b.Entries {
		key := be64(a.Entry.Seq)
		if w.entries.Get(key) != nil {
			return fmt.Errorf("%w: entry %d already exists", ledger.ErrCorrupt, a.Entry.Seq)
		}
		if err := w.entries.Put(key, a.Raw); err != nil {
			return err
		}
		w.unindexed = append(w.unindexed, indexed{a.Entry.Seq, indexPrefixes(a.Entry)})
		w.seq = a.Entry.Seq
		raws = append(raws, a.Raw)
	}
	var err error
	if w.leaves, err = nextLeaves(w.d.lastLeaves(), boltBucket{w.entries}, b.At.Seq, raws); err != nil {
		return err
	}
	if err := w.putBlobs(b); err != nil {
		return err
	}
	if err := w.persist(b); err != nil {
		return err
	}
	if err := w.meta.Put(metaHead, cat(be64(b.Head.Seq), b.Head.Hash[:])); err != nil {
		return err
	}
	for _, a := range b.Entries {
		sum := a.Entry.Blob()
		w.next.add(a.Entry, sum != nil && w.stored[*sum] == a.Entry.Seq)
	}
	if w.seq-w.indexed >= w.d.indexBatch {
		return w.flushIndexes(w.d.unindexed)
	}
	return nil
}

// putBlobs stores the batch's blobs not yet in the file, each under the seq
// of the first entry of the batch naming it, so blobs keys grow like the
// entries'; idx_blob (or, until it is written, the tail) maps the blob's
// SHA-256 to that key.
func (w *writer) putBlobs(b *ledger.Batch) error {
	w.next, w.stored = w.tail.clone(), map[entry.Hash]uint64{}
	done := make(map[entry.Hash]bool, len(b.Blobs))
	for _, a := range b.Entries {
		sum := a.Entry.Blob()
		if sum == nil || done[*sum] {
			continue
		}
		data, ok := b.Blobs[*sum]
		if !ok {
			continue
		}
		done[*sum] = true
		if w.idxBlob.Get(sum[:]) != nil {
			continue // stored by an earlier entry
		}
		if _, ok := w.tailBlob(*sum); ok {
			continue // stored by an earlier entry beyond indexed
		}
		key := be64(a.Entry.Seq)
		if w.blobs.Get(key) != nil {
			return fmt.Errorf("%w: blob of entry %d already exists", ledger.ErrCorrupt, a.Entry.Seq)
		}
		if err := w.blobs.Put(key, data); err != nil {
			return err
		}
		w.stored[*sum] = a.Entry.Seq
	}
	if len(done) != len(b.Blobs) {
		return fmt.Errorf("%w: the batch holds %d blobs, its entries name %d of them", ledger.ErrCorrupt, len(b.Blobs), len(done))
	}
	return nil
}

// tailBlob returns the key of the blob sum if an entry beyond indexed
// stored it and it is still stored.
func (w *writer) tailBlob(sum entry.Hash) ([]byte, bool) {
	seqs := w.tail.blobs[sum]
	if len(seqs) == 0 {
		return nil, false
	}
	key := be64(seqs[len(seqs)-1])
	return key, w.blobs.Get(key) != nil
}

// eraseBlob removes the blob sum, if stored, and its idx_blob key.
func (w *writer) eraseBlob(sum entry.Hash) error {
	key := w.idxBlob.Get(sum[:])
	if key == nil {
		if seq, ok := w.stored[sum]; ok {
			delete(w.stored, sum) // stored by this batch
			return w.blobs.Delete(be64(seq))
		}
		if k, ok := w.tailBlob(sum); ok {
			return w.blobs.Delete(k)
		}
		return nil
	}
	if len(key) != 8 {
		return fmt.Errorf("%w: idx_blob value for %s is %d bytes", ledger.ErrCorrupt, sum, len(key))
	}
	if err := w.blobs.Delete(clone(key)); err != nil {
		return err
	}
	return w.idxBlob.Delete(sum[:])
}

// putTiles adds the stored hashes from index base on (in tlog storage
// order) to the tiles holding them: only hashes of levels 8, 16, … are
// kept, each appended to its tile, which must end just before it. A tile
// is rewritten once per commit that extends it and never after it is
// full. From format 7 on no level-0 tile is stored: its hashes are the
// entries' leaf hashes (see tileHeight), so an append writes the tiles
// bucket only once per 256 entries.
func putTiles(b *bolt.Bucket, base int64, hashes []tlog.Hash) error {
	changed := map[string][]byte{}
	var order []string
	for i, h := range hashes {
		level, n := tlog.SplitStoredHashIndex(base + int64(i))
		if level == 0 || level%tileHeight != 0 {
			continue
		}
		k := string(tileKey(level/tileHeight, n>>tileHeight))
		data, ok := changed[k]
		if !ok {
			data = clone(b.Get([]byte(k)))
			order = append(order, k)
		}
		if pos := int(n & (1<<tileHeight - 1)); len(data) != pos*tlog.HashSize {
			return fmt.Errorf("%w: tile %x holds %d bytes, hash %d of its level goes at %d", ledger.ErrCorrupt, k, len(data), n, pos*tlog.HashSize)
		}
		changed[k] = append(data, h[:]...)
	}
	slices.Sort(order)
	for _, k := range order {
		if err := b.Put([]byte(k), changed[k]); err != nil {
			return err
		}
	}
	return nil
}

// tileHashes implements tlog.HashReader over a tiles bucket: each stored
// hash is read from, or computed within, the tile holding it. A level-0
// tile that is not stored (a full one from format 5 on, every one from
// format 7 on) is the leaf hashes of its entries, read from ents; size is
// the tree size (the head seq). A format 6 file still stores the partial
// level-0 tile, which is read as it is.
//
// known, when not nil, is the writer's last level-0 tile (leafCache): its
// hashes are used instead of reading the entries again when it covers
// the width a hash needs.
func tileHashes(b getter, ents rbucket, size uint64, indexes []int64, known *leafCache) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var leaves map[int64][]byte // level-0 tiles computed by this call
	for i, x := range indexes {
		if x < 0 {
			return nil, fmt.Errorf("%w: tree hash index %d", ledger.ErrCorrupt, x)
		}
		t := tlog.TileForIndex(tileHeight, x)
		data := b.Get(tileKey(t.L, t.N))
		if first := uint64(t.N) << tileHeight; data == nil && t.L == 0 && first < size {
			width := min(size-first, 1<<tileHeight)
			if known != nil && known.n == t.N && uint64(len(known.data)) >= width*tlog.HashSize {
				data = known.data[:width*tlog.HashSize]
			} else if data = leaves[t.N]; data == nil {
				var err error
				if data, err = leafTile(ents, t.N, width); err != nil {
					return nil, err
				}
				if leaves == nil {
					leaves = map[int64][]byte{}
				}
				leaves[t.N] = data
			}
		}
		if len(data) < t.W*tlog.HashSize || len(data)%tlog.HashSize != 0 || len(data) > tlog.HashSize<<tileHeight {
			return nil, fmt.Errorf("%w: tree hash %d: tile %d/%d is %d bytes, want at least %d", ledger.ErrCorrupt, x, t.L, t.N, len(data), t.W*tlog.HashSize)
		}
		h, err := tlog.HashFromTile(t, data, x)
		if err != nil {
			return nil, fmt.Errorf("%w: tree hash %d: %v", ledger.ErrCorrupt, x, err)
		}
		out[i] = h
	}
	return out, nil
}

// leafTile returns the first width hashes of level-0 tile n: the leaf
// hashes of entries 256n+1 … 256n+width.
func leafTile(ents rbucket, n int64, width uint64) ([]byte, error) {
	data := make([]byte, 0, tlog.HashSize*width)
	first := uint64(n)<<tileHeight + 1
	c := ents.Cursor()
	k, raw := c.Seek(be64(first))
	for seq := first; seq < first+width; seq++ {
		if k == nil || !bytes.Equal(k, be64(seq)) {
			return nil, fmt.Errorf("%w: tree tile 0/%d: entry %d missing", ledger.ErrCorrupt, n, seq)
		}
		h := entry.LeafHash(raw)
		data = append(data, h[:]...)
		k, raw = c.Next()
	}
	return data, nil
}

// persist writes what the batch's entries changed in the derived state
// (the fold's Delta and the scalars of its Head) into the state tables and
// meta.
func (w *writer) persist(b *ledger.Batch) error {
	d, h := &b.Delta, &b.Head
	if d.ClearBlocked {
		if err := w.tx.DeleteBucket(bucketBlocked); err != nil {
			return err
		}
		nb, err := w.tx.CreateBucket(bucketBlocked)
		if err != nil {
			return err
		}
		w.blocked = nb
	}
	for _, a := range sortedKeys(d.Unblocked) {
		if err := w.blocked.Delete([]byte(a)); err != nil {
			return err
		}
	}
	for _, a := range sortedKeys(d.Blocked) {
		if err := w.blocked.Put([]byte(a), be64(d.Blocked[a])); err != nil {
			return err
		}
	}
	for i, r := range d.Redactions {
		sum := b.Erase[i]
		if err := w.eraseBlob(sum); err != nil {
			return err
		}
		if err := w.redacted.Put(clone(sum[:]), be64(r.Seq)); err != nil {
			return err
		}
	}
	if h.HasManifest {
		if err := w.meta.Put(metaManifest, clone(h.Manifest[:])); err != nil {
			return err
		}
	}
	if h.HasLock {
		if err := w.meta.Put(metaLock, clone(h.Lock[:])); err != nil {
			return err
		}
	}
	if h.Key != "" {
		if err := w.meta.Put(metaKey, []byte(h.Key)); err != nil {
			return err
		}
	}
	return nil
}

// flushIndexes writes the secondary index records of entries
// indexed+1..seq — per index, one record per prefix (see maxPostings), in
// key order — and moves meta "indexed" to seq. Prefixes come from earlier
// (the driver's memory of earlier commits) and this writer's own entries;
// an entry found in neither is decoded from the file.
func (w *writer) flushIndexes(earlier []indexed) error {
	known := make(map[uint64]map[string][][]byte, len(earlier)+len(w.unindexed))
	for _, x := range earlier {
		known[x.seq] = x.keys
	}
	for _, x := range w.unindexed {
		known[x.seq] = x.keys
	}
	if err := w.flushDecisionIndexes(); err != nil {
		return err
	}
	lists := newPostingLists()
	for seq := w.indexed + 1; seq <= w.seq; seq++ {
		keys, ok := known[seq]
		if !ok {
			raw := w.entries.Get(be64(seq))
			if raw == nil {
				return fmt.Errorf("%w: entry %d missing", ledger.ErrCorrupt, seq)
			}
			e, err := entry.Decode(raw)
			if err != nil {
				return &ledger.RecordError{Seq: seq, Op: "decode", Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
			}
			keys = indexPrefixes(e)
		}
		lists.add(seq, keys)
	}
	if err := lists.put(w.tx); err != nil {
		return err
	}
	w.indexed = w.seq
	return w.meta.Put(metaIndexed, be64(w.seq))
}

// flushDecisionIndexes writes what the entries indexed+1..seq add to the
// decision indexes (w.next): the first use of a handoff id accepted or an
// idempotency key, unless an indexed entry used it first, and each blob
// one of them stored, when it is still stored (not since erased).
func (w *writer) flushDecisionIndexes() error {
	lookup := &view{version: FormatVersion, entries: boltBucket{w.entries}}
	for _, u := range []struct {
		b    *bolt.Bucket
		m    map[string]entry.Accept
		name string
	}{{w.accepted, w.next.accepted, "idx_accepted"}, {w.idm, w.next.idem, "idx_idempotency"}} {
		for _, s := range sortedKeys(u.m) {
			_, before, err := lookup.readAccept(boltBucket{u.b}, s, u.name)
			if err != nil {
				return err
			}
			if !before {
				if err := u.b.Put(acceptKey(s, u.m[s].Seq), []byte{}); err != nil {
					return err
				}
			}
		}
	}
	sums := make([]entry.Hash, 0, len(w.next.blobs))
	for sum := range w.next.blobs {
		sums = append(sums, sum)
	}
	slices.SortFunc(sums, func(a, b entry.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, sum := range sums {
		seqs := w.next.blobs[sum]
		key := be64(seqs[len(seqs)-1])
		if w.blobs.Get(key) == nil {
			continue // erased
		}
		if w.idxBlob.Get(sum[:]) != nil {
			return fmt.Errorf("%w: blob %s stored under seq %d is already in idx_blob", ledger.ErrCorrupt, sum, seqs[len(seqs)-1])
		}
		if err := w.idxBlob.Put(clone(sum[:]), key); err != nil {
			return err
		}
	}
	return nil
}

// postingLists gathers, per secondary index and prefix, the seqs of a run
// of entries (added in increasing seq order).
type postingLists map[string]map[string][]uint64

func newPostingLists() postingLists { return postingLists{} }

func (p postingLists) add(seq uint64, prefixes map[string][][]byte) {
	for name, ps := range prefixes {
		m := p[name]
		if m == nil {
			m = map[string][]uint64{}
			p[name] = m
		}
		for _, prefix := range ps {
			m[string(prefix)] = append(m[string(prefix)], seq)
		}
	}
}

// put writes the records of p into tx's secondary indexes, each bucket's
// in key order.
func (p postingLists) put(tx *bolt.Tx) error {
	for _, name := range secondaryIndexes {
		m := p[string(name)]
		b := tx.Bucket(name)
		if bytes.Equal(name, bucketIdxDecide) {
			// Keys are one of a few decisions || seq: each flush
			// appends at the end of a decision's run. The other
			// indexes keep bbolt's half-full split (see appendFill).
			b.FillPercent = appendFill
		}
		for _, prefix := range sortedKeys(m) {
			if err := putPostings(b, []byte(prefix), m[prefix]); err != nil {
				return err
			}
		}
	}
	return nil
}

func readHash(b getter, key []byte) (entry.Hash, bool) {
	var h entry.Hash
	v := b.Get(key)
	if len(v) != len(h) {
		return h, false
	}
	copy(h[:], v)
	return h, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// compact rewrites the file without free pages, so that bytes a commit
// deleted (a redaction's blob) are gone from it: bbolt keeps freed pages,
// with their old contents, until they are reused. The copy is built beside
// the file under a temporary name and locked, synced, renamed over the
// file, and the folder synced; the old file is closed once the views still
// reading it are done. The path is never without a locked ledger: the
// exclusive lock moves with the file. The caller holds wmu.
func (d *Driver) compact() (err error) {
	defer recoverCorrupt(&err)
	var rb [8]byte
	rand.Read(rb[:])
	tmp := fmt.Sprintf("%s.compact-%s", d.path, hex.EncodeToString(rb[:]))
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: d.timeout, NoSync: true, InitialMmapSize: initialMmapSize, PageSize: pageSize,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			return os.OpenFile(name, flag|os.O_EXCL, perm)
		}})
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			dst.Close()
			os.Remove(tmp)
		}
	}()
	dst.AllocSize = allocSize
	src := d.current()
	if err := bolt.Compact(dst, src, 64<<20); err != nil {
		return err
	}
	dst.NoSync = false
	// The copy must be on the disk before its name replaces the
	// ledger's, and the rename on the disk before the commit returns:
	// a power cut between them must leave the old file or the whole new
	// one. (fault.CompactNoSync skips both, for the power-cut trials'
	// own test; it is false outside a test build.)
	skip := fault.On(fault.CompactNoSync)
	if !skip {
		if err := dst.Sync(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, d.path); err != nil {
		return err
	}
	ok = true
	if !skip {
		err = syncDir(filepath.Dir(d.path))
	}
	d.mu.Lock()
	d.db = dst
	d.mu.Unlock()
	d.old.Add(1)
	go func() {
		defer d.old.Done()
		src.Close()
	}()
	return err
}
