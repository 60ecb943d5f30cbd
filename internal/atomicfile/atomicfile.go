// Package atomicfile replaces a file so that a reader, or the file system
// after a crash, sees either the old content or the new, never a part.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write creates a temporary file beside path, lets fill write it, fsyncs
// it, renames it over path and fsyncs the folder. On any error the
// temporary file is removed and path is left as it was.
func Write(path string, perm os.FileMode, fill func(*os.File) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteBytes is Write with fixed content.
func WriteBytes(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
