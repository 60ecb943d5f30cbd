package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/govledger/govledger/ledger"
	bolt "go.etcd.io/bbolt"
)

// Guarded reads. A file opened without Options.CheckPages is not walked
// page by page at Open (that costs one read of the whole file); instead a
// view reads the B+tree pages it visits itself, with pread on the file
// under the lock Open took, and checks each page before using it: the id
// lies in the data pages below the transaction's high-water mark, the
// page says its own id, it is a branch or a leaf, a branch has elements,
// every element and the key and value it points at lie inside the page,
// its keys are in order and within the range its parent's element gives
// (which catches most misdirected child ids), overflow pages stay below
// the high-water mark, a path from a bucket's root is at most
// maxTreeDepth pages long and holds no page twice, elements are flagged
// as buckets in the root bucket only, and a cursor's keys move strictly
// in its direction (so no iteration can run forever). bbolt's own cursors
// never see these pages: what is checked is exactly what is read, and an
// id past bbolt's memory map is never dereferenced. The view still holds
// a bbolt read transaction, which is what keeps a writer in this process
// from reusing the pages it reads.
//
// pread rather than a memory map: measured side by side, reading the
// pages of a point read through a map of its own made each command slower
// on a 1,000,000-entry file (page faults on a fresh map), not faster.
//
// A read that meets a damaged page returns nothing, and the view method
// that made it returns the pager's error, wrapping ledger.ErrCorrupt and
// naming the bucket and the page.

// getter is what the meta, tile and table readers need of a bucket: a
// *bolt.Bucket, or a guarded bucket.
type getter interface {
	Get(key []byte) []byte
}

// rbucket is a bucket as a view reads it.
type rbucket interface {
	getter
	Cursor() cursor
	ForEach(fn func(k, v []byte) error) error
}

// cursor is the part of *bolt.Cursor the reads use.
type cursor interface {
	First() (k, v []byte)
	Last() (k, v []byte)
	Next() (k, v []byte)
	Prev() (k, v []byte)
	Seek(seek []byte) (k, v []byte)
}

// boltBucket is a bbolt bucket as an rbucket: the reads of a file whose
// every page was walked at Open, or that this driver wrote itself.
type boltBucket struct{ *bolt.Bucket }

func (b boltBucket) Cursor() cursor { return b.Bucket.Cursor() }

// maxCachedPages bounds the pages a pager keeps (16 KiB each).
const maxCachedPages = 256

// pageCache keeps checked pages across the views of a read-only Driver,
// whose file no one changes while it holds the shared lock: the branch
// pages (up to maxSharedBranches; a 1,000,000-entry ledger has a few
// hundred) and the first maxCachedPages leaves read. A point read then
// reads little more than its leaf.
type pageCache struct {
	mu     sync.Mutex
	pages  map[uint64]*gpage
	leaves int
}

const maxSharedBranches = 4096

func (c *pageCache) get(id uint64) *gpage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages[id]
}

func (c *pageCache) put(g *gpage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[uint64]*gpage{}
	}
	switch {
	case g.leaf && c.leaves < maxCachedPages:
		c.leaves++
	case g.leaf || len(c.pages)-c.leaves >= maxSharedBranches:
		return
	}
	c.pages[g.id] = g
}

// pager reads and checks the pages of one read transaction.
type pager struct {
	r      io.ReaderAt
	ps     uint64 // page size
	hw     uint64 // first page id past the transaction's data
	root   uint64 // the root bucket's page
	cache  map[uint64]*gpage
	shared *pageCache // nil unless the file cannot change (read-only)
	err    error      // the first damage met since the last take
}

// newPager returns a pager for tx, reading the file through r; shared,
// when not nil, holds pages checked by earlier views.
func newPager(r io.ReaderAt, tx *bolt.Tx, pageSize int, shared *pageCache) *pager {
	p := &pager{r: r, ps: uint64(pageSize), cache: map[uint64]*gpage{}, shared: shared}
	if pageSize > 0 {
		p.hw = uint64(tx.Size()) / p.ps
	}
	p.root = uint64(tx.Cursor().Bucket().Root())
	return p
}

// take returns and clears the pager's error.
func (p *pager) take() error {
	err := p.err
	p.err = nil
	return err
}

func (p *pager) fail(where string, id uint64, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: page structure: %s: page %d: %s", ledger.ErrCorrupt, where, id, fmt.Sprintf(format, args...))
	}
}

// gpage is a checked branch or leaf page: b holds the page and its
// overflow pages, or, for an inline bucket, the page inside the value.
type gpage struct {
	id    uint64
	leaf  bool
	count int
	b     []byte
}

func (g *gpage) elem(i int) []byte { return g.b[pageHeaderSize+i*pageElementSize:] }

func (g *gpage) key(i int) []byte {
	e, at := g.elem(i), uint32(pageHeaderSize+i*pageElementSize)
	if g.leaf {
		pos, ks := at+binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
		return g.b[pos : pos+ks : pos+ks]
	}
	pos, ks := at+binary.LittleEndian.Uint32(e[0:]), binary.LittleEndian.Uint32(e[4:])
	return g.b[pos : pos+ks : pos+ks]
}

// value and flags of leaf element i.
func (g *gpage) value(i int) ([]byte, uint32) {
	e, at := g.elem(i), uint32(pageHeaderSize+i*pageElementSize)
	pos := at + binary.LittleEndian.Uint32(e[4:]) + binary.LittleEndian.Uint32(e[8:])
	vs := binary.LittleEndian.Uint32(e[12:])
	return g.b[pos : pos+vs : pos+vs], binary.LittleEndian.Uint32(e[0:])
}

// child is the page id of branch element i.
func (g *gpage) child(i int) uint64 { return binary.LittleEndian.Uint64(g.elem(i)[8:]) }

// page reads and checks page id of the bucket where; nil after damage.
func (p *pager) page(id uint64, where string) *gpage {
	if p.err != nil {
		return nil
	}
	if g := p.cache[id]; g != nil {
		return g
	}
	if p.shared != nil {
		if g := p.shared.get(id); g != nil {
			return g
		}
	}
	if id < 2 || id >= p.hw {
		p.fail(where, id, "outside the data pages 2..%d", int64(p.hw)-1)
		return nil
	}
	buf := make([]byte, p.ps)
	if _, err := p.r.ReadAt(buf, int64(id*p.ps)); err != nil {
		p.fail(where, id, "%v", err)
		return nil
	}
	if got := binary.LittleEndian.Uint64(buf); got != id {
		p.fail(where, id, "says it is page %d", got)
		return nil
	}
	flags := binary.LittleEndian.Uint16(buf[8:])
	count := uint64(binary.LittleEndian.Uint16(buf[10:]))
	if overflow := uint64(binary.LittleEndian.Uint32(buf[12:])); overflow > 0 {
		// bbolt's largest value, bolt.MaxValueSize, spans fewer pages.
		if overflow >= p.hw-id || overflow > (bolt.MaxValueSize+p.ps)/p.ps {
			p.fail(where, id, "%d overflow pages run past the data pages", overflow)
			return nil
		}
		buf = append(buf, make([]byte, overflow*p.ps)...)
		if _, err := p.r.ReadAt(buf[p.ps:], int64((id+1)*p.ps)); err != nil {
			p.fail(where, id, "overflow: %v", err)
			return nil
		}
	}
	switch flags {
	case branchPageFlag:
		if count == 0 {
			p.fail(where, id, "branch page has no elements")
			return nil
		}
	case leafPageFlag:
	default:
		p.fail(where, id, "type %#x, want branch or leaf", flags)
		return nil
	}
	if i, ok := checkElements(buf, count, flags == leafPageFlag); !ok {
		if i == count {
			p.fail(where, id, "%d elements do not fit", count)
		} else {
			p.fail(where, id, "element %d points outside the page", i)
		}
		return nil
	}
	g := &gpage{id: id, leaf: flags == leafPageFlag, count: int(count), b: buf}
	for i := 1; i < g.count; i++ {
		if bytes.Compare(g.key(i-1), g.key(i)) >= 0 {
			p.fail(where, id, "keys of elements %d and %d out of order", i-1, i)
			return nil
		}
	}
	if p.shared != nil {
		p.shared.put(g)
	}
	if len(p.cache) < maxCachedPages {
		p.cache[id] = g
	}
	return g
}

// bucket opens the top-level bucket name; nil when there is none (or
// after damage, which p.err then holds).
func (p *pager) bucket(name []byte) *gbucket {
	root := &gbucket{p: p, where: "root bucket", root: p.root, buckets: true}
	c := root.cursor()
	if !c.search(name) {
		return nil
	}
	k, v, flags := c.keyValue()
	if !bytes.Equal(k, name) || flags&bucketLeafFlag == 0 {
		return nil
	}
	at := c.stack[len(c.stack)-1].pg.id
	where := fmt.Sprintf("bucket %q", name)
	if len(v) < 16 {
		p.fail(where, at, "bucket header is %d bytes", len(v))
		return nil
	}
	b := &gbucket{p: p, where: where, root: binary.LittleEndian.Uint64(v)}
	if b.root == 0 { // an inline bucket: a leaf page inside the value
		in := v[16:]
		if len(in) < pageHeaderSize || binary.LittleEndian.Uint16(in[8:]) != leafPageFlag {
			p.fail(where, at, "inline page is not a leaf")
			return nil
		}
		n := uint64(binary.LittleEndian.Uint16(in[10:]))
		if _, ok := checkElements(in, n, true); !ok {
			p.fail(where, at, "inline page element points outside its value")
			return nil
		}
		b.inline = &gpage{id: 0, leaf: true, count: int(n), b: in}
	}
	return b
}

// gbucket is a guarded bucket. A ledger file's root bucket holds only
// buckets, and they hold none: an element flagged otherwise is damage.
type gbucket struct {
	p       *pager
	where   string
	root    uint64
	inline  *gpage // the root page of an inline bucket (root == 0)
	buckets bool   // the root bucket
}

func (b *gbucket) cursor() *gcursor { return &gcursor{b: b} }

// Cursor implements rbucket.
func (b *gbucket) Cursor() cursor { return b.cursor() }

// Get returns the value of key, nil when it is absent, names a nested
// bucket, or the path to it is damaged (see pager.err).
func (b *gbucket) Get(key []byte) []byte {
	c := b.cursor()
	if !c.search(key) {
		return nil
	}
	k, v, flags := c.keyValue()
	if flags&bucketLeafFlag != 0 || !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// ForEach implements rbucket; damage ends the walk early (see pager.err).
func (b *gbucket) ForEach(fn func(k, v []byte) error) error {
	c := b.cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.p.err
}

type gref struct {
	pg     *gpage
	index  int
	lo, hi []byte // the page's keys lie in [lo, hi) (nil: unbounded)
}

// gcursor is a cursor over a guarded bucket, with bbolt's semantics: a
// stack of pages from the root to a leaf, each with the element the path
// goes through. Keys and values stay valid after the view closes.
type gcursor struct {
	b     *gbucket
	stack []gref
	last  []byte // the key last returned, nil after the end
}

// pushChild adds the child of the top page's current element: its keys
// must lie between that element's key and the next one's (a branch
// element's key is its child's first key).
func (c *gcursor) pushChild() bool {
	r := c.stack[len(c.stack)-1]
	lo, hi := r.pg.key(r.index), r.hi
	if r.index+1 < r.pg.count {
		hi = r.pg.key(r.index + 1)
	}
	return c.push(r.pg.child(r.index), lo, hi)
}

// push adds page id, whose keys lie in [lo, hi), under the top of the stack.
func (c *gcursor) push(id uint64, lo, hi []byte) bool {
	if len(c.stack) >= maxTreeDepth {
		c.b.p.fail(c.b.where, id, "tree deeper than %d levels (a cycle?)", maxTreeDepth)
		return false
	}
	for _, r := range c.stack {
		if r.pg.id == id {
			c.b.p.fail(c.b.where, id, "reached twice on one path (a cycle)")
			return false
		}
	}
	g := c.b.p.page(id, c.b.where)
	if g == nil {
		return false
	}
	if g.count > 0 && (lo != nil && bytes.Compare(g.key(0), lo) < 0 || hi != nil && bytes.Compare(g.key(g.count-1), hi) >= 0) {
		c.b.p.fail(c.b.where, id, "keys outside the range its parent gives (a misdirected page id?)")
		return false
	}
	c.stack = append(c.stack, gref{pg: g, lo: lo, hi: hi})
	return true
}

func (c *gcursor) pushRoot() bool {
	c.stack, c.last = c.stack[:0], nil
	if c.b.p.err != nil {
		return false
	}
	if c.b.inline != nil {
		c.stack = append(c.stack, gref{pg: c.b.inline})
		return true
	}
	return c.push(c.b.root, nil, nil)
}

// search builds the path to key as bbolt's does: in a branch, the last
// element whose key is <= key (the first when none is); in the leaf, the
// first element whose key is >= key. (Like bbolt's, the branch search
// counts a match met anywhere in its binary search as exact, which only
// matters on a page whose keys are out of order.)
func (c *gcursor) search(key []byte) bool {
	if !c.pushRoot() {
		return false
	}
	for {
		top := len(c.stack) - 1
		g := c.stack[top].pg
		exact := false
		i := sort.Search(g.count, func(i int) bool {
			r := bytes.Compare(g.key(i), key)
			exact = exact || r == 0
			return r >= 0
		})
		if g.leaf {
			c.stack[top].index = i
			return true
		}
		if !exact && i > 0 {
			i--
		}
		c.stack[top].index = i
		if !c.pushChild() {
			return false
		}
	}
}

// descend extends the stack from its top to a leaf, through the first
// (or, when last, the last) element of each page.
func (c *gcursor) descend(last bool) bool {
	for {
		r := c.stack[len(c.stack)-1]
		if r.pg.leaf {
			return true
		}
		if !c.pushChild() {
			return false
		}
		if last {
			t := &c.stack[len(c.stack)-1]
			t.index = t.pg.count - 1
		}
	}
}

// keyValue returns the element under the cursor (nil past a leaf's end).
func (c *gcursor) keyValue() ([]byte, []byte, uint32) {
	if len(c.stack) == 0 {
		return nil, nil, 0
	}
	r := c.stack[len(c.stack)-1]
	if r.index < 0 || r.index >= r.pg.count {
		return nil, nil, 0
	}
	v, flags := r.pg.value(r.index)
	if want := map[bool]uint32{true: bucketLeafFlag}[c.b.buckets]; flags != want {
		c.b.p.fail(c.b.where, r.pg.id, "element %d has flags %#x, want %#x", r.index, flags, want)
		return nil, nil, 0
	}
	return r.pg.key(r.index), v, flags
}

// step moves to the next (or, when back, previous) element as bbolt's
// next and prev do: forward, it skips empty leaves; back, it does not (an
// empty leaf ends the walk); at either end it returns nil.
func (c *gcursor) step(back bool) ([]byte, []byte, uint32) {
	if c.b.p.err != nil || len(c.stack) == 0 {
		return nil, nil, 0
	}
	for skipped := uint64(0); ; skipped++ {
		if c.tooMany(skipped) || !c.move(back) {
			return nil, nil, 0
		}
		if back || c.stack[len(c.stack)-1].pg.count > 0 {
			return c.keyValue()
		}
	}
}

// move moves the stack to the next (or previous) leaf position: false at
// the end (the stack unchanged) or on damage.
func (c *gcursor) move(back bool) bool {
	i := len(c.stack) - 1
	for ; i >= 0; i-- {
		r := &c.stack[i]
		if !back && r.index < r.pg.count-1 {
			r.index++
			break
		}
		if back && r.index > 0 {
			r.index--
			break
		}
	}
	if i < 0 {
		return false
	}
	c.stack = c.stack[:i+1]
	return c.descend(back)
}

// tooMany bounds the empty leaves one move may pass: a file has no more
// pages than its high-water mark, so more is a damaged tree.
func (c *gcursor) tooMany(n uint64) bool {
	if n <= c.b.p.hw {
		return false
	}
	c.b.p.fail(c.b.where, c.stack[len(c.stack)-1].pg.id, "more empty pages in a row than the file has")
	return true
}

// ret returns k, v (v nil for a nested bucket) after checking that k
// moved in the cursor's direction (dir > 0: forward, < 0: back, 0: a new
// position).
func (c *gcursor) ret(k, v []byte, flags uint32, dir int) ([]byte, []byte) {
	if k == nil {
		c.last = nil
		return nil, nil
	}
	if c.last != nil && dir != 0 && bytes.Compare(k, c.last)*dir <= 0 {
		c.b.p.fail(c.b.where, c.stack[len(c.stack)-1].pg.id, "keys out of order (%x after %x)", k, c.last)
		c.last = nil
		return nil, nil
	}
	c.last = k
	if flags&bucketLeafFlag != 0 {
		return k, nil
	}
	return k, v
}

// First implements cursor.
func (c *gcursor) First() ([]byte, []byte) {
	if !c.pushRoot() || !c.descend(false) {
		return nil, nil
	}
	if c.stack[len(c.stack)-1].pg.count == 0 {
		k, v, f := c.step(false)
		return c.ret(k, v, f, 0)
	}
	k, v, f := c.keyValue()
	return c.ret(k, v, f, 0)
}

// Last implements cursor.
func (c *gcursor) Last() ([]byte, []byte) {
	if !c.pushRoot() {
		return nil, nil
	}
	c.stack[0].index = c.stack[0].pg.count - 1
	if !c.descend(true) {
		return nil, nil
	}
	// Like bbolt's Last, step back over empty leaves (bbolt's loop would
	// never end when the first leaf is empty too; this one stops there).
	for n := uint64(0); len(c.stack) > 1 && c.stack[len(c.stack)-1].pg.count == 0; n++ {
		if c.tooMany(n) || !c.move(true) {
			return nil, nil
		}
	}
	k, v, f := c.keyValue()
	return c.ret(k, v, f, 0)
}

// Seek implements cursor.
func (c *gcursor) Seek(seek []byte) ([]byte, []byte) {
	if !c.search(seek) {
		return nil, nil
	}
	if r := c.stack[len(c.stack)-1]; r.index >= r.pg.count {
		k, v, f := c.step(false)
		return c.ret(k, v, f, 0)
	}
	k, v, f := c.keyValue()
	return c.ret(k, v, f, 0)
}

// Next implements cursor.
func (c *gcursor) Next() ([]byte, []byte) {
	k, v, f := c.step(false)
	return c.ret(k, v, f, 1)
}

// Prev implements cursor.
func (c *gcursor) Prev() ([]byte, []byte) {
	k, v, f := c.step(true)
	return c.ret(k, v, f, -1)
}
