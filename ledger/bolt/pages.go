package bolt

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/govledger/govledger/ledger"
	bolt "go.etcd.io/bbolt"
)

// bbolt's on-disk layout (go.etcd.io/bbolt/internal/common): every page
// starts with a 16-byte header (id u64, flags u16, count u16, overflow
// u32); branch elements are (pos u32, ksize u32, pgid u64) and leaf
// elements (flags u32, pos u32, ksize u32, vsize u32), 16 bytes each, with
// pos relative to the element itself; a bucket's value is its header (root
// pgid u64, sequence u64), followed by an inline leaf page when root is 0.
const (
	pageHeaderSize  = 16
	pageElementSize = 16
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	metaRootOffset  = pageHeaderSize + 16 // magic, version, pageSize, flags
	metaTxidOffset  = pageHeaderSize + 48 // … root(16), freelist(8), pgid(8)
	maxTreeDepth    = 64
)

// checkPages walks, from the meta page of tx, every page of every bucket's
// B+tree, reading them straight from the file, before bbolt's own cursors
// descend into them. A corrupted file can make bbolt recurse forever (a
// branch page that points at itself or an ancestor) or index outside a
// page; the resulting stack overflow is fatal and no recover catches it.
// Each page must lie below the high-water mark, carry its
// own id and a branch or leaf type, be reached exactly once, keep its
// elements inside itself, and trees are at most maxTreeDepth deep. The cost
// is one read of every page in use.
func checkPages(r io.ReaderAt, tx *bolt.Tx, pageSize int) error {
	return checkGraph(r, tx, pageSize, false)
}

// checkGraph walks the trees of every bucket (reading only the headers of
// the data buckets' leaves when headers is set: see pageWalker.headers),
// then checks that the freelist of tx's meta page (checkHead) names no
// page the trees reach: bbolt would hand such a page to a writer, which
// would overwrite live data. The cost of the walk with headers is one read
// of each branch page and of 16 bytes of each leaf.
func checkGraph(r io.ReaderAt, tx *bolt.Tx, pageSize int, headers bool) error {
	w, err := walkPages(r, tx, pageSize, nil, headers)
	if err != nil {
		return err
	}
	m, ok := currentMeta(r)
	if !ok || m.txid != uint64(tx.ID()) {
		return nil // a later commit's meta: its freelist is not tx's
	}
	free, err := checkHead(r, tx.Size())
	if err != nil {
		return err
	}
	for _, p := range free {
		if p < w.hw && w.seen[p/64]&(1<<(p%64)) != 0 {
			return fmt.Errorf("%w: freelist page %d: lists page %d, which a bucket's tree uses", ledger.ErrCorrupt, m.freelist, p)
		}
	}
	return nil
}

// checkPagesOf is checkPages for the root bucket's tree and the trees of
// the buckets named in only (every bucket when only is nil). A guarded
// Open checks the root and meta trees so, a few pages.
func checkPagesOf(r io.ReaderAt, tx *bolt.Tx, pageSize int, only map[string]bool) error {
	_, err := walkPages(r, tx, pageSize, only, false)
	return err
}

// walkPages walks the trees of checkPagesOf and returns the walker, whose
// seen holds the pages reached.
func walkPages(r io.ReaderAt, tx *bolt.Tx, pageSize int, only map[string]bool, headers bool) (*pageWalker, error) {
	if pageSize < 1024 || pageSize > 1<<16 {
		return nil, fmt.Errorf("%w: page size %d", ledger.ErrCorrupt, pageSize)
	}
	w := &pageWalker{r: r, ps: uint64(pageSize), hw: uint64(tx.Size()) / uint64(pageSize), only: only, headers: headers}
	w.seen = make([]uint64, w.hw/64+1)
	root, err := w.metaRoot(uint64(tx.ID()))
	if err != nil {
		return nil, err
	}
	return w, w.walk(root, 0, "root bucket")
}

type pageWalker struct {
	r    io.ReaderAt
	ps   uint64   // page size
	hw   uint64   // first page id past the data in use
	seen []uint64 // bitset of page ids reached
	only map[string]bool
	// headers reads only the header of a data bucket's leaf page (its id,
	// type and overflow): enough to know the page graph has no cycle, no
	// shared page and no page past the data, which is what a writer needs
	// before bbolt descends it; the leaf's elements are read, and checked,
	// by the reads that use them (guard.go).
	headers bool
	bufs    [maxTreeDepth + 2][]byte // the page read at each depth of the walk
}

// buf returns the buffer of depth, n bytes long, keeping the bytes already
// read into its first page when it grows (for a page's overflow).
func (w *pageWalker) buf(depth int, n uint64) []byte {
	b := w.bufs[depth]
	if uint64(cap(b)) < n {
		b = append(b[:cap(b)], make([]byte, n-uint64(cap(b)))...)
	}
	w.bufs[depth] = b[:n]
	return b[:n]
}

func (w *pageWalker) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: page structure: %s", ledger.ErrCorrupt, fmt.Sprintf(format, args...))
}

// metaRoot returns the root bucket's page id from the meta page of txid.
func (w *pageWalker) metaRoot(txid uint64) (uint64, error) {
	buf := make([]byte, metaTxidOffset+8)
	for m := uint64(0); m < 2; m++ {
		if _, err := w.r.ReadAt(buf, int64(m*w.ps)); err != nil {
			return 0, w.corrupt("meta page %d: %v", m, err)
		}
		if binary.LittleEndian.Uint64(buf[metaTxidOffset:]) == txid {
			return binary.LittleEndian.Uint64(buf[metaRootOffset:]), nil
		}
	}
	return 0, w.corrupt("no meta page has txid %d", txid)
}

func (w *pageWalker) walk(id uint64, depth int, where string) error {
	if depth > maxTreeDepth {
		return w.corrupt("%s: tree deeper than %d levels (a cycle?)", where, maxTreeDepth)
	}
	if id < 2 || id >= w.hw {
		return w.corrupt("%s: page %d outside the data pages 2..%d", where, id, w.hw-1)
	}
	// One read of the page (and one more of its overflow pages), into
	// the buffer of this depth: a branch page's buffer stays intact while
	// its children are walked, which use the deeper ones.
	n := w.ps
	if w.headers && where != "root bucket" {
		n = pageHeaderSize // a data bucket's leaf needs no more (see pageWalker.headers)
	}
	page := w.buf(depth, n)
	if _, err := w.r.ReadAt(page, int64(id*w.ps)); err != nil {
		return w.corrupt("%s: page %d: %v", where, id, err)
	}
	if got := binary.LittleEndian.Uint64(page); got != id {
		return w.corrupt("%s: page %d says it is page %d", where, id, got)
	}
	flags := binary.LittleEndian.Uint16(page[8:])
	count := uint64(binary.LittleEndian.Uint16(page[10:]))
	overflow := uint64(binary.LittleEndian.Uint32(page[12:]))
	if id+overflow >= w.hw {
		return w.corrupt("%s: page %d overflows past the data pages", where, id)
	}
	for p := id; p <= id+overflow; p++ {
		if w.seen[p/64]&(1<<(p%64)) != 0 {
			return w.corrupt("%s: page %d is reached twice (a cycle or a shared page)", where, p)
		}
		w.seen[p/64] |= 1 << (p % 64)
	}
	if n < w.ps {
		if flags == leafPageFlag {
			return nil
		}
		page = w.buf(depth, w.ps)
		if _, err := w.r.ReadAt(page[n:], int64(id*w.ps+n)); err != nil {
			return w.corrupt("%s: page %d: %v", where, id, err)
		}
	}
	if overflow > 0 {
		page = w.buf(depth, (overflow+1)*w.ps)
		if _, err := w.r.ReadAt(page[w.ps:], int64((id+1)*w.ps)); err != nil {
			return w.corrupt("%s: page %d: %v", where, id, err)
		}
	}
	switch flags {
	case branchPageFlag:
		if count == 0 {
			return w.corrupt("%s: branch page %d has no elements", where, id)
		}
		if err := w.elements(page, count, id, where); err != nil {
			return err
		}
		for i := uint64(0); i < count; i++ {
			e := page[pageHeaderSize+i*pageElementSize:]
			if err := w.walk(binary.LittleEndian.Uint64(e[8:]), depth+1, where); err != nil {
				return err
			}
		}
	case leafPageFlag:
		return w.leaf(page, count, id, depth, where)
	default:
		return w.corrupt("%s: page %d has type %#x, want branch or leaf", where, id, flags)
	}
	return nil
}

// elements checks that count elements and the keys (and values) they point
// at lie inside page.
func (w *pageWalker) elements(page []byte, count, id uint64, where string) error {
	if i, ok := checkElements(page, count, binary.LittleEndian.Uint16(page[8:]) == leafPageFlag); !ok {
		if i == count {
			return w.corrupt("%s: page %d: %d elements do not fit", where, id, count)
		}
		return w.corrupt("%s: page %d element %d points outside the page", where, id, i)
	}
	return nil
}

// checkElements reports whether count elements of a branch or leaf page
// (page starts with its header) and the keys and values they point at lie
// inside page. When they do not, i is the first element that does not, or
// count when the elements themselves do not fit.
func checkElements(page []byte, count uint64, leaf bool) (i uint64, ok bool) {
	if pageHeaderSize+count*pageElementSize > uint64(len(page)) {
		return count, false
	}
	for i := uint64(0); i < count; i++ {
		at := pageHeaderSize + i*pageElementSize
		e := page[at:]
		pos, ksize := uint64(binary.LittleEndian.Uint32(e[0:])), uint64(binary.LittleEndian.Uint32(e[4:]))
		vsize := uint64(0)
		if leaf {
			pos, ksize, vsize = uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[8:])), uint64(binary.LittleEndian.Uint32(e[12:]))
		}
		if at+pos+ksize+vsize > uint64(len(page)) {
			return i, false
		}
	}
	return 0, true
}

// leaf checks a leaf page and descends into the buckets it holds.
func (w *pageWalker) leaf(page []byte, count, id uint64, depth int, where string) error {
	if err := w.elements(page, count, id, where); err != nil {
		return err
	}
	for i := uint64(0); i < count; i++ {
		at := pageHeaderSize + i*pageElementSize
		e := page[at:]
		if binary.LittleEndian.Uint32(e[0:])&bucketLeafFlag == 0 {
			continue
		}
		pos, ksize, vsize := uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[8:])), uint64(binary.LittleEndian.Uint32(e[12:]))
		name := string(page[at+pos : at+pos+ksize])
		v := page[at+pos+ksize : at+pos+ksize+vsize]
		if len(v) < 16 {
			return w.corrupt("bucket %q: header is %d bytes", name, len(v))
		}
		if root := binary.LittleEndian.Uint64(v); root != 0 {
			if w.only != nil && !w.only[name] {
				continue
			}
			if err := w.walk(root, depth+1, fmt.Sprintf("bucket %q", name)); err != nil {
				return err
			}
			continue
		}
		// An inline bucket: a leaf page inside the value, holding no buckets.
		in := v[16:]
		if len(in) < pageHeaderSize || binary.LittleEndian.Uint16(in[8:]) != leafPageFlag {
			return w.corrupt("bucket %q: inline page is not a leaf", name)
		}
		n := uint64(binary.LittleEndian.Uint16(in[10:]))
		if err := w.elements(in, n, id, fmt.Sprintf("inline bucket %q", name)); err != nil {
			return err
		}
		for j := uint64(0); j < n; j++ {
			if binary.LittleEndian.Uint32(in[pageHeaderSize+j*pageElementSize:])&bucketLeafFlag != 0 {
				return w.corrupt("inline bucket %q holds a bucket", name)
			}
		}
	}
	return nil
}

// checkPages runs checkPages on the ledger's file in one read transaction.
func (d *Driver) checkPages() error {
	f, err := os.Open(d.path)
	if err != nil {
		return err
	}
	defer f.Close()
	db := d.current()
	return d.read(func(tx *bolt.Tx) error { return checkPages(f, tx, db.Info().PageSize) })
}

// guard prepares Open's file for reading: with walk, every page is checked
// now (checkPages) and views read through bbolt; without, only the root
// and meta trees are (the few pages Open itself reads through bbolt) and
// views read their pages through a pager on a second handle of the same
// file (guard.go), so no read costs O(file). The handle is opened under
// the lock Open holds, so it is the file bbolt has open: a file is only
// ever replaced by a compaction, which needs the exclusive lock.
func (d *Driver) guard(walk bool) error {
	if walk {
		return d.checkPages()
	}
	f, err := os.Open(d.path)
	if err != nil {
		return err
	}
	db := d.current()
	if err := d.read(func(tx *bolt.Tx) error {
		if !d.readOnly {
			// bbolt's writes descend the trees unchecked, and allocate
			// from the freelist: both are checked before the first.
			return checkGraph(f, tx, db.Info().PageSize, true)
		}
		return checkPagesOf(f, tx, db.Info().PageSize, map[string]bool{string(bucketMeta): true})
	}); err != nil {
		f.Close()
		return err
	}
	d.gdb, d.gfile = db, f
	if d.readOnly {
		d.gcache = &pageCache{}
	}
	return nil
}
