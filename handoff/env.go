package handoff

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Observation operations.
const (
	OpFile = "file" // stat, then read and hash a regular file
	OpDir  = "dir"  // stat, then list a directory
)

// RootEnv is an Env over a directory tree. Every path is resolved inside
// the root through an os.Root, so neither ".." nor a symbolic link can
// reach outside it; such a path is reported with Escapes set. An absolute
// path is accepted only when it names a place under the root (it is then
// treated as relative to the root); any other absolute path escapes.
//
// RootEnv records every Observation it returns, in order; Observations
// returns them for the ledger, and NewReplayEnv answers from them later.
// It is safe for concurrent use. Close releases the root.
type RootEnv struct {
	dir  string // absolute, symlinks resolved
	root *os.Root

	mu  sync.Mutex
	obs []Observation
}

var _ Env = (*RootEnv)(nil)

// NewRootEnv opens root. It returns an error wrapping ErrRoot when root is
// not an openable directory.
func NewRootEnv(root string) (*RootEnv, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, err)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, err)
	}
	return &RootEnv{dir: dir, root: r}, nil
}

// Close releases the root directory.
func (e *RootEnv) Close() error { return e.root.Close() }

// Observations returns a copy of every Observation returned so far, in
// the order they were returned.
func (e *RootEnv) Observations() []Observation {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Observation, len(e.obs))
	for i, o := range e.obs {
		o.Names = slices.Clone(o.Names)
		out[i] = o
	}
	return out
}

// Observe implements Env. op is OpFile or OpDir; any other op is answered
// with Err set.
func (e *RootEnv) Observe(op, path string) Observation {
	o := e.observe(op, path)
	e.mu.Lock()
	e.obs = append(e.obs, o)
	e.mu.Unlock()
	o.Names = slices.Clone(o.Names)
	return o
}

func (e *RootEnv) observe(op, path string) Observation {
	o := Observation{Op: op, Path: path}
	if op != OpFile && op != OpDir {
		o.Err = "unknown operation"
		return o
	}
	rel, ok := e.relative(path)
	if !ok {
		o.Escapes = true
		return o
	}
	fi, err := e.root.Stat(rel)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Not there (also a dangling link that stays inside).
		case e.escapes(rel):
			o.Escapes = true
		default:
			o.Err = errText(err)
		}
		return o
	}
	o.Exists, o.IsDir = true, fi.IsDir()
	switch {
	case op == OpDir && !fi.IsDir():
		o.Err = "not a directory"
	case op == OpDir:
		f, err := e.root.Open(rel)
		if err != nil {
			o.Err = errText(err)
			return o
		}
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil {
			o.Err = errText(err)
			return o
		}
		slices.Sort(names)
		o.Names = names
	case fi.IsDir():
		// op file on a directory: Exists and IsDir say it all.
	case !fi.Mode().IsRegular():
		o.Err = "not a regular file"
	default:
		// O_NONBLOCK: a FIFO swapped in after Stat must not block the open.
		f, err := e.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			o.Err = errText(err)
			return o
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			o.Err = "not a regular file"
			return o
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			o.Err = errText(err)
			return o
		}
		o.Size, o.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	}
	return o
}

// relative maps a path as written to a local path under the root.
func (e *RootEnv) relative(path string) (string, bool) {
	if path == "" || strings.ContainsRune(path, 0) {
		return "", false
	}
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(e.dir, filepath.Clean(path))
		if err != nil || !filepath.IsLocal(rel) {
			if filepath.Clean(path) == e.dir {
				return ".", true
			}
			return "", false
		}
		path = rel
	}
	if path == "." || path == "./" {
		return ".", true
	}
	if !filepath.IsLocal(path) {
		return "", false
	}
	return filepath.Clean(path), true
}

// escapes reports whether resolving rel component by component, following
// symbolic links, leaves the root. It is consulted only after os.Root
// refused the path, to tell an escape from another failure.
func (e *RootEnv) escapes(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	var cur []string // resolved components under the root
	for hops := 0; len(parts) > 0; {
		p := parts[0]
		parts = parts[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		full := filepath.Join(append([]string{e.dir}, append(cur, p)...)...)
		fi, err := os.Lstat(full)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			cur = append(cur, p)
			continue
		}
		if hops++; hops > 40 {
			return false
		}
		target, err := os.Readlink(full)
		if err != nil {
			return false
		}
		if filepath.IsAbs(target) {
			rel, err := filepath.Rel(e.dir, filepath.Clean(target))
			if err != nil || !filepath.IsLocal(rel) {
				return true
			}
			cur = nil
			target = rel
		}
		parts = append(strings.Split(filepath.ToSlash(target), "/"), parts...)
	}
	return false
}

// errText is err's message without the absolute root directory, so that
// observations do not depend on where the tree was checked out.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ReplayEnv answers from recorded observations; see NewReplayEnv.
type replayEnv struct {
	mu   sync.Mutex
	obs  map[[2]string][]Observation
	next map[[2]string]int
}

// NewReplayEnv returns an Env that answers each (op, path) question with
// the observations recorded for it, in the order they were recorded; once
// they are used up it repeats the last one. A question that was never
// recorded is answered with an Observation whose Err is "not recorded".
// It is safe for concurrent use.
func NewReplayEnv(obs []Observation) Env {
	r := &replayEnv{obs: map[[2]string][]Observation{}, next: map[[2]string]int{}}
	for _, o := range obs {
		k := [2]string{o.Op, o.Path}
		o.Names = slices.Clone(o.Names)
		r.obs[k] = append(r.obs[k], o)
	}
	return r
}

func (r *replayEnv) Observe(op, path string) Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{op, path}
	list := r.obs[k]
	if len(list) == 0 {
		return Observation{Op: op, Path: path, Err: "not recorded"}
	}
	i := min(r.next[k], len(list)-1)
	r.next[k]++
	o := list[i]
	o.Names = slices.Clone(o.Names)
	return o
}
