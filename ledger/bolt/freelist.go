package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/govledger/govledger/ledger"
	berrors "go.etcd.io/bbolt/errors"
)

// The pre-open check. bbolt reads a file's meta pages and, in a writable
// Open, its whole freelist before a caller can check anything: a freelist
// page whose count is huge makes bbolt allocate that many page ids (Go's
// out-of-memory error is fatal: no recover catches it), and one that lists
// page 0 or 1, a page past the data or a page in use makes a later commit
// overwrite a meta page or live data. checkHead reads what bbolt will read
// (the meta pages, then the freelist pages the chosen meta names) straight
// from the file, under the file's lock, before bolt.Open maps it, and
// refuses a file whose freelist does not fit its pages or names a page it
// must not. The page graph is checked after Open (guard): bbolt reads no
// tree page at Open.

// bbolt's meta page (go.etcd.io/bbolt/internal/common/meta.go), after the
// page header: magic u32, version u32, pageSize u32, flags u32, root
// bucket (root u64, sequence u64), freelist u64, pgid u64, txid u64,
// checksum u64 (FNV-64a of everything before it).
const (
	metaMagic        = 0xED0CDAED
	metaVersionBolt  = 2
	metaPageSizeOff  = pageHeaderSize + 8
	metaFreelistOff  = pageHeaderSize + 32
	metaPgidOff      = pageHeaderSize + 40
	metaChecksumOff  = pageHeaderSize + 56
	freelistPageFlag = 0x10
	noFreelist       = ^uint64(0) // bbolt's PgidNoFreelist: the freelist is not on disk
)

// boltMeta is the part of a meta page the pre-open check uses.
type boltMeta struct {
	pageSize             uint64
	root, freelist, pgid uint64
	txid                 uint64
}

// readMeta reads and validates the meta page at off as bbolt does (magic,
// version, checksum); ok is false when it is not valid.
func readMeta(r io.ReaderAt, off int64) (m boltMeta, ok bool) {
	b := make([]byte, metaChecksumOff+8)
	if _, err := r.ReadAt(b, off); err != nil {
		return m, false
	}
	le := binary.LittleEndian
	if le.Uint32(b[pageHeaderSize:]) != metaMagic || le.Uint32(b[pageHeaderSize+4:]) != metaVersionBolt {
		return m, false
	}
	h := fnv.New64a()
	h.Write(b[pageHeaderSize:metaChecksumOff])
	if h.Sum64() != le.Uint64(b[metaChecksumOff:]) {
		return m, false
	}
	return boltMeta{
		pageSize: uint64(le.Uint32(b[metaPageSizeOff:])),
		root:     le.Uint64(b[metaRootOffset:]),
		freelist: le.Uint64(b[metaFreelistOff:]),
		pgid:     le.Uint64(b[metaPgidOff:]),
		txid:     le.Uint64(b[metaTxidOffset:]),
	}, true
}

// currentMeta returns the meta page bbolt will use: of the two that are
// valid, the one with the higher txid. ok is false when neither is valid:
// bbolt then refuses the file itself (ErrInvalid, ErrChecksum).
func currentMeta(r io.ReaderAt) (m boltMeta, ok bool) {
	m0, ok0 := readMeta(r, 0)
	ps := m0.pageSize
	if !ok0 {
		// bbolt looks for the second meta page at each page size.
		for ps = 1024; ps <= 1<<16; ps *= 2 {
			if _, ok := readMeta(r, int64(ps)); ok {
				break
			}
		}
	}
	if ps < 1024 || ps > 1<<16 {
		return m0, ok0
	}
	m1, ok1 := readMeta(r, int64(ps))
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		return m1, true
	}
	return m0, ok0
}

// checkHead is the pre-open check of the file f (of size bytes): the
// meta page bbolt will use and the freelist it names. It returns the free
// page ids (sorted), or an error wrapping ledger.ErrCorrupt.
func checkHead(f io.ReaderAt, size int64) ([]uint64, error) {
	m, ok := currentMeta(f)
	if !ok {
		return nil, nil // bbolt refuses it, with its own error
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: meta page (txid %d): %s", ledger.ErrCorrupt, m.txid, fmt.Sprintf(format, args...))
	}
	ps := m.pageSize
	switch {
	case ps < 1024 || ps > 1<<16 || ps&(ps-1) != 0:
		return nil, corrupt("page size %d", ps)
	case m.pgid < 3 || m.pgid > uint64(size)/ps:
		return nil, corrupt("the data pages end at page %d, the file at page %d", m.pgid, uint64(size)/ps)
	case m.root < 2 || m.root >= m.pgid:
		return nil, corrupt("root bucket page %d outside the data pages 2..%d", m.root, m.pgid-1)
	case m.freelist == noFreelist:
		// This driver always writes its freelist; without one, bbolt walks
		// every page at a writable Open, unchecked.
		return nil, corrupt("no freelist page (a file this driver never writes)")
	case m.freelist < 2 || m.freelist >= m.pgid:
		return nil, corrupt("freelist page %d outside the data pages 2..%d", m.freelist, m.pgid-1)
	}
	fl := m.freelist
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: freelist page %d: %s", ledger.ErrCorrupt, fl, fmt.Sprintf(format, args...))
	}
	hdr := make([]byte, pageHeaderSize+8)
	if _, err := f.ReadAt(hdr, int64(fl*ps)); err != nil {
		return nil, fail("%v", err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(hdr); got != fl {
		return nil, fail("says it is page %d", got)
	}
	if flags := le.Uint16(hdr[8:]); flags != freelistPageFlag {
		return nil, fail("type %#x, want freelist (%#x)", flags, freelistPageFlag)
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if overflow >= m.pgid-fl {
		return nil, fail("%d overflow pages run past the data pages (%d)", overflow, m.pgid)
	}
	first, count := uint64(0), uint64(le.Uint16(hdr[10:]))
	if count == 0xFFFF { // bbolt: the count is then the first id slot
		first, count = 1, le.Uint64(hdr[pageHeaderSize:])
	}
	room := ((overflow+1)*ps - pageHeaderSize) / 8
	if count > room || first+count > room {
		return nil, fail("lists %d page ids; its %d pages hold at most %d", count, overflow+1, room-first)
	}
	b := make([]byte, (first+count)*8)
	if _, err := f.ReadAt(b, int64(fl*ps+pageHeaderSize)); err != nil {
		return nil, fail("%v", err)
	}
	ids := make([]uint64, count)
	for i := range ids {
		id := le.Uint64(b[(first+uint64(i))*8:])
		switch {
		case id < 2 || id >= m.pgid:
			return nil, fail("lists page %d, outside the data pages 2..%d", id, m.pgid-1)
		case id >= fl && id <= fl+overflow:
			return nil, fail("lists page %d, its own", id)
		}
		ids[i] = id
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, fail("lists page %d twice", ids[i])
		}
	}
	return ids, nil
}

// lockAndCheck takes the lock bbolt will take on h (exclusive, or shared
// for a read-only Open; bbolt's own flock on the same handle then finds it
// held), then runs checkHead on it. A lock not had within timeout (0:
// wait forever) gives bbolt's ErrTimeout.
func lockAndCheck(h *os.File, readOnly bool, timeout time.Duration) error {
	how := syscall.LOCK_EX
	if readOnly {
		how = syscall.LOCK_SH
	}
	start := time.Now()
	for {
		err := syscall.Flock(int(h.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if timeout > 0 && time.Since(start) > timeout {
			return berrors.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond) // as bbolt's flock polls
	}
	fi, err := h.Stat()
	if err != nil {
		return err
	}
	_, err = checkHead(h, fi.Size())
	return err
}
