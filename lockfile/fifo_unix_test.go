//go:build unix

package lockfile_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/govledger/govledger/lockfile"
)

// A FIFO in place of a prompt must be refused, not block the check.
func TestDirReadFileFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "p.md"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO on this file system: %v", err)
	}
	d, err := lockfile.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.ReadFile("p.md"); !errors.Is(err, lockfile.ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v; want ErrNotRegular", err)
	}
}
