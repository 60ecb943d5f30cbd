package fileperm_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/internal/fileperm"
)

func TestPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o640, false}, {0o604, false}, {0o620, false}, {0o602, false}, {0o644, false}, {0o666, false}} {
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		err := fileperm.PrivatePath(path)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, fileperm.ErrTooOpen)) {
			t.Errorf("PrivatePath(mode %04o) = %v, want ok=%v", tc.mode, err, tc.ok)
		}
	}
	if err := fileperm.PrivatePath(dir); !errors.Is(err, fileperm.ErrTooOpen) {
		t.Errorf("PrivatePath(a folder) = %v, want ErrTooOpen", err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o755, true}, {0o775, false}, {0o757, false}, {0o777, false}, {0o777 | os.ModeSticky, true}} {
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		err := fileperm.Dir(path)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, fileperm.ErrTooOpen)) {
			t.Errorf("Dir(folder mode %v) = %v, want ok=%v", tc.mode, err, tc.ok)
		}
	}
	os.Chmod(dir, 0o700)
}
