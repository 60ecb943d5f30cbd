package bolttest

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// Crafted files: damage to bbolt's own structures (the freelist, the page
// graph) that no edit through bbolt can make, written into a closed file
// byte by byte. Each names what it did in its name, for the tests that
// walk them (Crafts).

// A Craft damages the closed ledger file at path.
type Craft struct {
	Name  string
	Apply func(path string) error
}

// Crafts are the crafted freelist and page-graph files every open must
// refuse: a freelist whose count would make bbolt allocate 2^40 page ids,
// one listing a meta page, a page past the data, a page a tree uses, the
// same page twice, a meta page naming no freelist or one past the data, a
// freelist page of another type, and a branch page of the entries or the
// blobs bucket made its own last child (a loop on the path of every
// append).
var Crafts = []Craft{
	{"freelist-count-2^40", func(p string) error {
		return editFreelist(p, func(pg []byte, m meta) {
			binary.LittleEndian.PutUint16(pg[10:], 0xFFFF)
			binary.LittleEndian.PutUint64(pg[16:], 1<<40)
		})
	}},
	{"freelist-lists-meta-page-0", func(p string) error { return freelistOf(p, func(meta) uint64 { return 0 }) }},
	{"freelist-lists-page-past-data", func(p string) error { return freelistOf(p, func(m meta) uint64 { return m.pgid + 5 }) }},
	{"freelist-lists-root-page", func(p string) error { return freelistOf(p, func(m meta) uint64 { return m.root }) }},
	{"freelist-lists-a-page-twice", func(p string) error {
		return editFreelist(p, func(pg []byte, m meta) {
			binary.LittleEndian.PutUint16(pg[10:], 2)
			binary.LittleEndian.PutUint64(pg[16:], m.freelist-1)
			binary.LittleEndian.PutUint64(pg[24:], m.freelist-1)
		})
	}},
	{"freelist-page-type-leaf", func(p string) error {
		return editFreelist(p, func(pg []byte, m meta) { binary.LittleEndian.PutUint16(pg[8:], 0x02) })
	}},
	{"meta-names-no-freelist", func(p string) error {
		return editMeta(p, func(b []byte) { binary.LittleEndian.PutUint64(b[32:], ^uint64(0)) })
	}},
	{"meta-freelist-past-data", func(p string) error {
		return editMeta(p, func(b []byte) {
			binary.LittleEndian.PutUint64(b[32:], binary.LittleEndian.Uint64(b[40:])+3)
		})
	}},
	{"loop-entries-branch", func(p string) error { return LoopBucket(p, BucketEntries) }},
	{"loop-blobs-branch", func(p string) error { return LoopBucket(p, BucketBlobs) }},
}

// meta is the part of bbolt's current meta page a craft needs.
type meta struct {
	off                      int // the meta page's offset in the file
	ps                       int
	root, freelist, pgid, tx uint64
}

// currentMeta finds the meta page bbolt uses: of the two valid ones, the
// one with the higher txid.
func currentMeta(b []byte) (meta, error) {
	le := binary.LittleEndian
	var best meta
	found := false
	ps := int(le.Uint32(b[16+8:]))
	for _, off := range []int{0, ps} {
		if off+16+64 > len(b) {
			continue
		}
		m := b[off+16:]
		h := fnv.New64a()
		h.Write(m[:56])
		if le.Uint32(m) != 0xED0CDAED || h.Sum64() != le.Uint64(m[56:]) {
			continue
		}
		c := meta{off: off, ps: int(le.Uint32(m[8:])), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
			pgid: le.Uint64(m[40:]), tx: le.Uint64(m[48:])}
		if !found || c.tx > best.tx {
			best, found = c, true
		}
	}
	if !found {
		return best, fmt.Errorf("no valid meta page")
	}
	return best, nil
}

func editFile(path string, fn func(b []byte, m meta) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	m, err := currentMeta(b)
	if err != nil {
		return err
	}
	if err := fn(b, m); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// editFreelist edits the current freelist page.
func editFreelist(path string, fn func(pg []byte, m meta)) error {
	return editFile(path, func(b []byte, m meta) error {
		if m.freelist >= m.pgid {
			return fmt.Errorf("no freelist page")
		}
		fn(b[int(m.freelist)*m.ps:int(m.freelist+1)*m.ps], m)
		return nil
	})
}

// freelistOf makes the freelist list one page, id(m).
func freelistOf(path string, id func(meta) uint64) error {
	return editFreelist(path, func(pg []byte, m meta) {
		binary.LittleEndian.PutUint16(pg[10:], 1)
		binary.LittleEndian.PutUint64(pg[16:], id(m))
	})
}

// editMeta edits the current meta page (fn gets its 64 bytes after the
// page header: magic, version, page size, flags, root, freelist at 32,
// pgid at 40, txid, checksum) and writes its checksum again, so bbolt takes it as valid.
func editMeta(path string, fn func(m []byte)) error {
	return editFile(path, func(b []byte, m meta) error {
		mb := b[m.off+16 : m.off+16+64]
		fn(mb)
		h := fnv.New64a()
		h.Write(mb[:56])
		binary.LittleEndian.PutUint64(mb[56:], h.Sum64())
		return nil
	})
}

// LoopBucket makes the root page of bucket, which must be a branch page
// (a bucket of a few pages of values), its own last child: bbolt's search
// for any key past the root's last element, such as the next append's,
// would recurse until the stack overflows.
func LoopBucket(path, bucket string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	var root uint64
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		root = uint64(b.Root())
		return nil
	})
	db.Close()
	if err != nil {
		return err
	}
	return editFile(path, func(b []byte, m meta) error {
		pg := b[int(root)*m.ps:]
		le := binary.LittleEndian
		if le.Uint16(pg[8:]) != 0x01 {
			return fmt.Errorf("bucket %q: root page %d is not a branch page: append more", bucket, root)
		}
		n := int(le.Uint16(pg[10:]))
		le.PutUint64(pg[16+(n-1)*16+8:], root)
		return nil
	})
}
