// Package fileperm checks that a file holding secrets or authority (a
// signer key, a tokens file, a ledger) is the owner's alone, and that the
// folder holding it cannot have it replaced by someone else.
package fileperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrTooOpen is wrapped by the errors of Private and Dir.
var ErrTooOpen = errors.New("permissions too open")

// Private checks the file whose info is fi (take it from the open file,
// so the mode cannot change between the check and the read): a regular
// file that neither group nor others may read or write (mode 0600 or
// stricter). The error names path and says how to fix it.
func Private(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w: not a regular file", path, ErrTooOpen)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s: %w: mode %04o, readable or writable by group or others; want 0600 (run: chmod 600 %s)",
			path, ErrTooOpen, perm, path)
	}
	return nil
}

// PrivatePath is Private on the file at path (following symbolic links).
func PrivatePath(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return Private(path, fi)
}

// Dir checks the folder holding path: neither group nor others may write
// it (they could replace the file), unless its sticky bit is set (as on
// /tmp: only a file's owner may then rename or remove it).
func Dir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s: %w: folder %s has mode %04o, writable by group or others, who could replace the file (run: chmod go-w %s)",
			path, ErrTooOpen, dir, perm, dir)
	}
	return nil
}
