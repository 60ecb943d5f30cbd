package lockfile

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/govledger/govledger/internal/atomicfile"
)

// MaxPromptSize is the largest prompt file the openers read, in bytes.
const MaxPromptSize = 64 << 20

// Dir reads prompt files under one folder through an os.Root: a path may
// follow symbolic links only while they stay inside the folder. A Dir is
// safe for concurrent use; Close it when done.
type Dir struct {
	root *os.Root

	mu   sync.Mutex
	subs map[string]*os.Root // folder -> root opened on it, so a read is one openat
}

// maxSubRoots caps the folders a Dir keeps open.
const maxSubRoots = 256

// OpenDir opens dir for reading prompt files.
func OpenDir(dir string) (*Dir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root}, nil
}

// Close releases the folder.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.subs {
		r.Close()
	}
	d.subs = nil
	return d.root.Close()
}

// sub returns a root opened on folder (inside d's root), or nil.
func (d *Dir) sub(folder string) *os.Root {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.subs[folder]; ok {
		return r
	}
	if len(d.subs) >= maxSubRoots {
		return nil
	}
	r, err := d.root.OpenRoot(filepath.FromSlash(folder))
	if err != nil {
		return nil
	}
	if d.subs == nil {
		d.subs = map[string]*os.Root{}
	}
	d.subs[folder] = r
	return r
}

// open opens p read-only and non-blocking (a FIFO must not block; it is
// refused by the caller). It first tries p's folder's cached root, which
// costs one openat; a symbolic link that leaves the folder but stays
// inside d is resolved by retrying through d's root.
func (d *Dir) open(p string) (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	if folder, file := path.Split(p); folder != "" && file != "" {
		if r := d.sub(strings.TrimSuffix(folder, "/")); r != nil {
			if f, err := r.OpenFile(file, flags, 0); err == nil {
				return f, nil
			}
		}
	}
	return d.root.OpenFile(filepath.FromSlash(p), flags, 0)
}

// ReadFile returns the bytes of the regular file at the slash-separated
// path p. It refuses paths that leave the folder (including through a
// symbolic link), files that are not regular (ErrNotRegular: a FIFO would
// block, a device would never end) and files over MaxPromptSize
// (ErrTooLarge). A missing file gives an error matching fs.ErrNotExist.
func (d *Dir) ReadFile(p string) ([]byte, error) {
	f, err := d.open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())
	}
	if fi.Size() > MaxPromptSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), MaxPromptSize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxPromptSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxPromptSize {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxPromptSize)
	}
	return buf.Bytes(), nil
}

// DirOpener returns an opener for Generate and Check that reads files under
// dir like (*Dir).ReadFile. It opens dir on every call, so it holds no
// descriptor between calls; for many files use OpenDir and pass the
// method value d.ReadFile.
func DirOpener(dir string) func(path string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		d, err := OpenDir(dir)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.ReadFile(p)
	}
}

// WriteFile replaces the file at path with data atomically and durably: it
// writes a temporary file in the same folder, syncs it, renames it over
// path and syncs the folder. Readers see the old bytes or the new ones,
// never a mix, and a crash leaves at most a stray temporary file.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteBytes(path, data, perm)
}
