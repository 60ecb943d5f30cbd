// Package powercut is a FUSE file system for tests that forgets, on a
// simulated power cut, every write that was not made durable.
//
// It serves a real folder (a loopback, go-fuse's fs.LoopbackNode) and keeps
// beside it what a disk would hold after losing power: for each file, an
// undo log of the writes and truncations made since its last fsync (or
// fdatasync); for each directory, its entries as of its last fsync, and the
// log of name changes made since. Every file the epoch knows is hard-linked
// into a hidden keep folder, so that a file renamed over or unlinked can
// come back when its removal was never made durable.
//
// Cut freezes the file system (every later change fails with EIO, as the
// disk is gone); the test then kills the processes using it; Restore
// unmounts, rolls the folder back to its durable state and mounts it
// again. In mode Drop exactly what was synced survives. In mode Scramble a
// random part of the rest survives too, as a disk's write-back cache might
// have written it: any subset of the unsynced 4 KiB pages of each file (so
// writes are reordered), the last unsynced write of a file torn at a
// 512-byte boundary, and a prefix of the unsynced directory changes.
//
// Directory fsync is modelled per directory: fsync of a file makes its
// content durable, never its name; a name is durable once its directory
// was fsync'd after the change. Renames across directories and renames of
// directories are refused (EXDEV): the model does not track them, and
// govledger does neither.
//
// The process that mounts the file system serves it: it must never map a
// file of the mount into memory (bbolt does). A page fault on such a
// mapping blocks a thread the Go runtime cannot preempt, the next garbage
// collection waits for that thread, and the thread waits for the server
// the collection stopped. Read such files through Disk between cuts, or
// from another process.
//
// It is a test-support package: Mount ends a test through internal/testenv
// when FUSE cannot be mounted (a skip without CI, a failure with it). It
// needs root (or CAP_SYS_ADMIN) and /dev/fuse; it mounts with mount(2)
// directly (go-fuse's DirectMountStrict), so no fusermount binary is used.
package powercut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/govledger/govledger/internal/testenv"
)

// Mode says what of the unsynced state a power cut keeps.
type Mode int

const (
	// Drop keeps exactly what was fsync'd.
	Drop Mode = iota
	// Scramble keeps what was fsync'd plus a random part of the rest:
	// unsynced pages in any subset, a torn last write, a prefix of the
	// unsynced directory changes.
	Scramble
)

func (m Mode) String() string {
	if m == Scramble {
		return "scramble"
	}
	return "drop"
}

const (
	pageSize   = 4096
	sectorSize = 512
)

// Stats counts what power cuts threw away.
type Stats struct {
	Cuts         int // power cuts restored
	DroppedOps   int // unsynced writes and truncations rolled back
	KeptOps      int // unsynced writes (or parts) kept by Scramble
	TornWrites   int // writes kept only in part, at a sector boundary
	DroppedNames int // unsynced directory changes rolled back
}

// FS is a mounted power-cut file system.
type FS struct {
	dir  string // the mount point
	tree string // the served folder
	keep string // hard links to every file inode of the epoch, by inode number

	rootIno uint64 // the inode of tree

	rng    *rand.Rand
	server *fuse.Server

	mu      sync.Mutex
	cut     bool
	cutCh   chan struct{}                // closed at the cut
	ops     int                          // changes since the mount
	cutAt   int                          // cut at this change (0: not armed)
	files   map[uint64][]fileOp          // inode -> changes since its last fsync, oldest first
	durable map[uint64]map[string]uint64 // directory inode -> name -> inode, as of its last fsync
	isDir   map[uint64]bool              // inode -> is a directory
	dirOps  []dirOp                      // unsynced directory changes, oldest first
	stats   Stats
}

// fileOp is one unsynced change to a file: a write of data at off, or a
// truncation to size. old holds the bytes it replaced (for a truncation,
// the tail it cut off) and oldSize the size before it.
type fileOp struct {
	off     int64
	data    []byte
	trunc   bool
	size    int64
	old     []byte
	oldSize int64
}

// dirOp is one unsynced change to directory dir: name now names ino, or
// nothing when ino is 0; a rename also removes from.
type dirOp struct {
	dir  uint64
	name string
	ino  uint64
	from string
}

// Mount mounts a new power-cut file system over an empty folder in
// t.TempDir() and returns it; it is unmounted in t.Cleanup. When FUSE
// cannot be mounted the test ends through testenv.Missing. seed drives
// Scramble's choices.
func Mount(t testing.TB, seed uint64) *FS {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Missing(t, "FUSE (/dev/fuse)", "modprobe fuse; apt-get install fuse3; run as root", err)
	}
	base := t.TempDir()
	f := &FS{dir: filepath.Join(base, "mnt"), tree: filepath.Join(base, "disk"), keep: filepath.Join(base, "keep"),
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), cutCh: make(chan struct{})}
	for _, d := range []string{f.dir, f.tree, f.keep} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.mount(); err != nil {
		testenv.Missing(t, "a FUSE mount (root and /dev/fuse)", "modprobe fuse; apt-get install fuse3; run as root", err)
	}
	t.Cleanup(func() {
		f.Cut()
		if err := f.unmount(); err != nil {
			t.Errorf("powercut: unmount %s: %v", f.dir, err)
		}
	})
	return f
}

// Dir is the mount point: the folder the code under test uses.
func (f *FS) Dir() string { return f.dir }

// Disk is the backing folder, as the disk holds it. Read it only between
// Cut and Restore's end, or to look at bytes after Restore without going
// through the mount.
func (f *FS) Disk() string { return f.tree }

// Stats returns the counts so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Sync makes everything durable, as a clean shutdown would: call it
// after setting up the files a trial starts from.
func (f *FS) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		return errors.New("powercut: Sync after Cut")
	}
	return f.rescan()
}

// Cut cuts the power: from now on every change through the mount fails
// with EIO and nothing more becomes durable. Kill the processes using the
// mount, then call Restore.
func (f *FS) Cut() {
	f.mu.Lock()
	f.cutNow()
	f.mu.Unlock()
}

// IsCut reports whether the power is cut (by Cut or an armed CutAt) and
// not yet restored.
func (f *FS) IsCut() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut
}

// CutAt arms a cut at the n-th change (write, truncation, fsync, create,
// link, rename, unlink, mkdir, rmdir) from now: that change fails with
// EIO, as does everything after it. The channel is closed at the cut,
// whether this or Cut made it. Cutting at a counted change lands the cut
// on an I/O step, where a timer would mostly land between them.
func (f *FS) CutAt(n int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cutAt = f.ops + max(n, 1)
	return f.cutCh
}

// cutNow cuts the power. The caller holds mu.
func (f *FS) cutNow() {
	if !f.cut {
		f.cut = true
		close(f.cutCh)
	}
}

// stop counts a change and reports whether it must fail: the power is
// cut, or this change is the armed one. The caller holds mu.
func (f *FS) stop() bool {
	if f.cut {
		return true
	}
	f.ops++
	if f.cutAt > 0 && f.ops >= f.cutAt {
		f.cutNow()
		return true
	}
	return false
}

// Restore unmounts the file system (waiting, within a bound, for the
// processes using it to be gone), rolls the folder back to its durable
// state as mode says, and mounts it again at the same place. Call it
// after Cut once every process using the mount was killed.
func (f *FS) Restore(mode Mode) error {
	f.mu.Lock()
	if !f.cut {
		f.mu.Unlock()
		return errors.New("powercut: Restore without Cut")
	}
	f.mu.Unlock()
	if err := f.unmount(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.rollBack(mode); err != nil {
		return fmt.Errorf("powercut: roll back: %w", err)
	}
	if err := f.rescan(); err != nil {
		return fmt.Errorf("powercut: rescan: %w", err)
	}
	f.stats.Cuts++
	f.cut, f.cutAt, f.cutCh = false, 0, make(chan struct{})
	return f.mount()
}

func (f *FS) mount() error {
	if err := f.rescan(); err != nil {
		return err
	}
	rn, err := fs.NewLoopbackRoot(f.tree)
	if err != nil {
		return err
	}
	ln := rn.(*fs.LoopbackNode)
	root := &node{LoopbackNode: ln, fs: f}
	ln.RootData.RootNode = root
	zero := time.Duration(0)
	server, err := fs.Mount(f.dir, root, &fs.Options{
		// No kernel caching of names and attributes across a restore
		// matters (a new mount starts empty), but a zero timeout keeps
		// the model simple: every lookup reaches the folder.
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "powercut",
			Name:              "powercut",
			AllowOther:        true,
			// DisableXAttrs: nothing here uses them.
			DisableXAttrs: true,
		},
	})
	if err != nil {
		return err
	}
	f.server = server
	return nil
}

func (f *FS) unmount() error {
	if f.server == nil {
		return nil
	}
	var err error
	for try := 0; try < 200; try++ {
		if err = f.server.Unmount(); err == nil {
			f.server.Wait()
			f.server = nil
			return nil
		}
		time.Sleep(25 * time.Millisecond) // EBUSY: a killed process is still closing its files
	}
	return fmt.Errorf("powercut: unmount %s: %w", f.dir, err)
}

// rescan starts a new epoch: the folder as it is now is durable.
func (f *FS) rescan() error {
	keep, err := os.ReadDir(f.keep)
	if err != nil {
		return err
	}
	for _, e := range keep {
		if err := os.Remove(filepath.Join(f.keep, e.Name())); err != nil {
			return err
		}
	}
	root, err := inoOf(f.tree)
	if err != nil {
		return err
	}
	f.rootIno = root
	f.files = map[uint64][]fileOp{}
	f.durable = map[uint64]map[string]uint64{}
	f.isDir = map[uint64]bool{}
	f.dirOps = nil
	return f.scan(f.tree)
}

// scan records dir's entries as durable, recursively, and links its files
// into keep.
func (f *FS) scan(dir string) error {
	ino, err := inoOf(dir)
	if err != nil {
		return err
	}
	f.isDir[ino] = true
	entries, err := f.listing(dir)
	if err != nil {
		return err
	}
	f.durable[ino] = entries
	for name, child := range entries {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			if err := f.scan(p); err != nil {
				return err
			}
			continue
		}
		if err := f.keepLink(p, child); err != nil {
			return err
		}
	}
	return nil
}

func (f *FS) listing(dir string) (map[string]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, e := range entries {
		ino, err := inoOf(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		m[e.Name()] = ino
	}
	return m, nil
}

// keepLink hard-links the file at p (inode ino) into keep, once.
func (f *FS) keepLink(p string, ino uint64) error {
	err := os.Link(p, f.keepPath(ino))
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

func (f *FS) keepPath(ino uint64) string {
	return filepath.Join(f.keep, strconv.FormatUint(ino, 10))
}

func inoOf(p string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: p, Err: err}
	}
	return st.Ino, nil
}

// rollBack brings the folder to its durable state (plus, in Scramble, a
// random part of the rest). The caller holds mu; the mount is gone.
func (f *FS) rollBack(mode Mode) error {
	inos := make([]uint64, 0, len(f.files))
	for ino := range f.files {
		inos = append(inos, ino)
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i] < inos[j] })
	for _, ino := range inos {
		if err := f.rollBackFile(ino, f.files[ino], mode); err != nil {
			return err
		}
	}
	n := 0
	if mode == Scramble && len(f.dirOps) > 0 {
		n = f.rng.IntN(len(f.dirOps) + 1)
	}
	for _, op := range f.dirOps[:n] {
		m := f.durable[op.dir]
		if m == nil {
			continue // a directory whose own name never became durable
		}
		if op.from != "" {
			delete(m, op.from)
		}
		if op.ino == 0 {
			delete(m, op.name)
		} else {
			m[op.name] = op.ino
		}
	}
	f.stats.DroppedNames += len(f.dirOps) - n
	return f.reconcile(f.tree, f.rootIno)
}

// rollBackFile undoes ops on the file (by its keep link), newest first,
// then in Scramble replays a random selection of them at page grain,
// oldest first, the last one kept perhaps torn at a sector boundary.
func (f *FS) rollBackFile(ino uint64, ops []fileOp, mode Mode) error {
	h, err := os.OpenFile(f.keepPath(ino), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer h.Close()
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		if op.trunc {
			if err := h.Truncate(op.oldSize); err != nil {
				return err
			}
			if _, err := h.WriteAt(op.old, op.size); err != nil {
				return err
			}
			continue
		}
		if _, err := h.WriteAt(op.old, op.off); err != nil {
			return err
		}
		if err := h.Truncate(op.oldSize); err != nil {
			return err
		}
	}
	f.stats.DroppedOps += len(ops)
	if mode != Scramble {
		return nil
	}
	for i, op := range ops {
		if op.trunc {
			if f.rng.IntN(2) == 0 {
				if err := h.Truncate(op.size); err != nil {
					return err
				}
				f.stats.KeptOps++
			}
			continue
		}
		data := op.data
		if i == len(ops)-1 && len(data) > sectorSize && f.rng.IntN(2) == 0 {
			data = data[:sectorSize*(1+f.rng.IntN((len(data)-1)/sectorSize))]
			f.stats.TornWrites++
		}
		// Each page-aligned piece of the write is kept or not.
		kept := false
		for start := int64(0); start < int64(len(data)); {
			end := min((op.off+start)/pageSize*pageSize+pageSize-op.off, int64(len(data)))
			if f.rng.IntN(2) == 0 {
				if _, err := h.WriteAt(data[start:end], op.off+start); err != nil {
					return err
				}
				kept = true
			}
			start = end
		}
		if kept {
			f.stats.KeptOps++
		}
	}
	return nil
}

// reconcile makes dir hold exactly its durable entries, linking files back
// from keep and recreating directories that are durable but gone.
func (f *FS) reconcile(dir string, ino uint64) error {
	want := f.durable[ino]
	have, err := f.listing(dir)
	if err != nil {
		return err
	}
	for name, got := range have {
		if w, ok := want[name]; ok && w == got {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child := want[name]
		p := filepath.Join(dir, name)
		if f.isDir[child] {
			if have[name] != child {
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
			}
			if err := f.reconcile(p, child); err != nil {
				return err
			}
			continue
		}
		if have[name] == child {
			continue
		}
		if err := os.Link(f.keepPath(child), p); err != nil {
			return fmt.Errorf("inode %d, durable as %s, is gone: %w", child, p, err)
		}
	}
	return nil
}

// node is a loopback node whose changes are logged.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

// WrapChild makes every node the loopback creates one of ours.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if ln, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: ln, fs: n.fs}
	}
	return ops
}

var (
	_ = (fs.NodeCreater)((*node)(nil))
	_ = (fs.NodeOpener)((*node)(nil))
	_ = (fs.NodeSetattrer)((*node)(nil))
	_ = (fs.NodeFsyncer)((*node)(nil))
	_ = (fs.NodeRenamer)((*node)(nil))
	_ = (fs.NodeUnlinker)((*node)(nil))
	_ = (fs.NodeRmdirer)((*node)(nil))
	_ = (fs.NodeMkdirer)((*node)(nil))
	_ = (fs.NodeLinker)((*node)(nil))
	_ = (fs.NodeSymlinker)((*node)(nil))
	_ = (fs.NodeMknoder)((*node)(nil))
	_ = (fs.NodeTmpfiler)((*node)(nil))
	_ = (fs.NodeCopyFileRanger)((*node)(nil))
	_ = (fs.NodeOpendirHandler)((*node)(nil))
	_ = (fs.NodeWrapChilder)((*node)(nil))
)

// path is the node's path in the backing folder.
func (n *node) path() string {
	return filepath.Join(n.fs.tree, n.EmbeddedInode().Path(nil))
}

// ino is the node's inode number in the backing folder (go-fuse numbers
// the root 1; the others carry the backing number).
func (n *node) ino() uint64 {
	if n.EmbeddedInode() == n.Root() {
		return n.fs.rootIno
	}
	return n.StableAttr().Ino
}

// childIno is the inode of name in n, in the backing folder.
func (n *node) childIno(name string) (uint64, error) {
	return inoOf(filepath.Join(n.path(), name))
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return nil, nil, 0, syscall.EIO
	}
	p := filepath.Join(n.path(), name)
	old, existed := inoOf(p)
	if existed == nil && flags&syscall.O_TRUNC != 0 {
		if errno := f.logTruncate(old, p, 0); errno != 0 {
			return nil, nil, 0, errno
		}
	}
	ch, lf, _, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if r, ok := lf.(fs.FileReleaser); ok {
		r.Release(ctx)
	}
	ino, err := inoOf(p)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	if existed != nil {
		if err := f.keepLink(p, ino); err != nil {
			return nil, nil, 0, fs.ToErrno(err)
		}
		f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: name, ino: ino})
		f.files[ino] = append(f.files[ino], fileOp{trunc: true}) // a new file: empty unless synced
	}
	h, errno := f.open(p, ino, flags&^(syscall.O_CREAT|syscall.O_EXCL|syscall.O_TRUNC))
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, h, 0, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	p := n.path()
	if flags&syscall.O_TRUNC != 0 {
		if f.stop() {
			return nil, 0, syscall.EIO
		}
		if errno := f.logTruncate(n.ino(), p, 0); errno != 0 {
			return nil, 0, errno
		}
	}
	h, errno := f.open(p, n.ino(), flags&^syscall.O_TRUNC)
	if errno != 0 {
		return nil, 0, errno
	}
	return h, 0, 0
}

func (f *FS) open(p string, ino uint64, flags uint32) (*handle, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	h, err := os.OpenFile(p, int(flags), 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return &handle{fs: f, f: h, ino: ino, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}, 0
}

// logTruncate truncates the file at p (inode ino) to size, logging it.
// The caller holds mu.
func (f *FS) logTruncate(ino uint64, p string, size int64) syscall.Errno {
	h, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer h.Close()
	return f.truncate(h, ino, size)
}

func (f *FS) truncate(h *os.File, ino uint64, size int64) syscall.Errno {
	fi, err := h.Stat()
	if err != nil {
		return fs.ToErrno(err)
	}
	op := fileOp{trunc: true, size: size, oldSize: fi.Size()}
	if size < fi.Size() {
		op.old = make([]byte, fi.Size()-size)
		if _, err := h.ReadAt(op.old, size); err != nil && err != io.EOF {
			return fs.ToErrno(err)
		}
	}
	if err := h.Truncate(size); err != nil {
		return fs.ToErrno(err)
	}
	f.files[ino] = append(f.files[ino], op)
	return 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return syscall.EIO
	}
	if size, ok := in.GetSize(); ok {
		if errno := f.logTruncate(n.ino(), n.path(), int64(size)); errno != 0 {
			return errno
		}
	}
	in.Valid &^= fuse.FATTR_SIZE
	return n.LoopbackNode.Setattr(ctx, nil, in, out)
}

// Fsync makes a file's content durable, or a directory's entries.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return syscall.EIO
	}
	if n.IsDir() {
		return f.syncDir(n.ino(), n.path())
	}
	delete(f.files, n.ino())
	return 0
}

// syncDir makes the entries of directory ino (at p) durable. The caller
// holds mu.
func (f *FS) syncDir(ino uint64, p string) syscall.Errno {
	m, err := f.listing(p)
	if err != nil {
		return fs.ToErrno(err)
	}
	f.durable[ino] = m
	ops := f.dirOps[:0]
	for _, op := range f.dirOps {
		if op.dir != ino {
			ops = append(ops, op)
		}
	}
	f.dirOps = ops
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return syscall.EIO
	}
	np, ok := newParent.(*node)
	if !ok || np.ino() != n.ino() || flags != 0 {
		return syscall.EXDEV // not modelled: see the package doc
	}
	ino, err := n.childIno(name)
	if err != nil {
		return fs.ToErrno(err)
	}
	if f.isDir[ino] {
		return syscall.EXDEV
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		return errno
	}
	f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: newName, ino: ino, from: name})
	return 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return syscall.EIO
	}
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		return errno
	}
	f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: name})
	return 0
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return syscall.EIO
	}
	if errno := n.LoopbackNode.Rmdir(ctx, name); errno != 0 {
		return errno
	}
	f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: name})
	return 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return nil, syscall.EIO
	}
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno != 0 {
		return nil, errno
	}
	ino, err := n.childIno(name)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	f.isDir[ino] = true
	f.durable[ino] = map[string]uint64{}
	f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: name, ino: ino})
	return ch, 0
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return nil, syscall.EIO
	}
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno != 0 {
		return nil, errno
	}
	ino, err := n.childIno(name)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: name, ino: ino})
	return ch, 0
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := n.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return nil, syscall.EIO
	}
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno != 0 {
		return nil, errno
	}
	p := filepath.Join(n.path(), name)
	ino, err := inoOf(p)
	if err == nil {
		err = f.keepLink(p, ino)
	}
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	f.dirOps = append(f.dirOps, dirOp{dir: n.ino(), name: name, ino: ino})
	return ch, 0
}

// Mknod, Tmpfile and CopyFileRange are not modelled.
func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// OpendirHandle wraps the loopback's directory stream so that fsync of a
// directory reaches Fsync (the stream's own Fsyncdir would bypass it).
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ds, errno := fs.NewLoopbackDirStream(n.path())
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{ds: ds, n: n}, 0, 0
}

type dirHandle struct {
	ds fs.DirStream
	n  *node
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.ds.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.ds.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.ds.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.n.Fsync(ctx, nil, flags)
}

// handle is an open file whose writes are logged.
type handle struct {
	fs   *FS
	f    *os.File
	ino  uint64
	sync bool // O_SYNC or O_DSYNC: each write is durable when it returns
}

var (
	_ = (fs.FileReader)((*handle)(nil))
	_ = (fs.FileWriter)((*handle)(nil))
	_ = (fs.FileGetattrer)((*handle)(nil))
	_ = (fs.FileReleaser)((*handle)(nil))
	_ = (fs.FileFlusher)((*handle)(nil))
)

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f := h.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop() {
		return 0, syscall.EIO
	}
	fi, err := h.f.Stat()
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	op := fileOp{off: off, data: append([]byte(nil), data...), oldSize: fi.Size()}
	if off < fi.Size() {
		op.old = make([]byte, min(int64(len(data)), fi.Size()-off))
		if _, err := h.f.ReadAt(op.old, off); err != nil && err != io.EOF {
			return 0, fs.ToErrno(err)
		}
	}
	n, err := h.f.WriteAt(data, off)
	if n > 0 {
		op.data = op.data[:n]
		f.files[h.ino] = append(f.files[h.ino], op)
	}
	if h.sync {
		delete(f.files, h.ino)
	}
	if err != nil {
		return uint32(n), fs.ToErrno(err)
	}
	return uint32(n), 0
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(h.f.Fd()), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

func (h *handle) Release(ctx context.Context) syscall.Errno {
	return fs.ToErrno(h.f.Close())
}
