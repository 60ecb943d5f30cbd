package powercut_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/internal/powercut"
)

func write(t *testing.T, p string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, f *powercut.FS, mode powercut.Mode) {
	t.Helper()
	f.Cut()
	if err := f.Restore(mode); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, p string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// TestDrop: in Drop mode exactly the fsync'd state survives: file content
// as of its last fsync, names as of their directory's last fsync.
func TestDrop(t *testing.T) {
	f := powercut.Mount(t, 1)
	dir := f.Dir()
	a := filepath.Join(dir, "a")
	b := filepath.Join(dir, "b")
	c := filepath.Join(dir, "c")

	// A synced file whose name was synced survives; later writes do not.
	write(t, a, []byte("one"), true)
	syncDir(t, dir)
	write(t, a, []byte("TWO and more"), false)
	// A synced file whose name was never synced is gone.
	write(t, b, []byte("bee"), true)
	cut(t, f, powercut.Drop)
	if got, ok := content(t, a); !ok || got != "one" {
		t.Errorf("a after the cut = %q, %v; want the synced \"one\"", got, ok)
	}
	if got, ok := content(t, b); ok {
		t.Errorf("b after the cut = %q; want it gone (its directory was never synced)", got)
	}

	// A name synced before its file: the file is there, empty.
	write(t, c, []byte("sea"), false)
	syncDir(t, dir)
	cut(t, f, powercut.Drop)
	if got, ok := content(t, c); !ok || got != "" {
		t.Errorf("c after the cut = %q, %v; want an empty file (content never synced)", got, ok)
	}

	// A rename over a file, not followed by a directory sync, is undone,
	// and the replaced file comes back whole.
	write(t, a, []byte("old"), true)
	syncDir(t, dir)
	tmp := filepath.Join(dir, "a.tmp")
	write(t, tmp, []byte("new"), true)
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := content(t, a); got != "new" {
		t.Fatalf("a before the cut = %q, want new", got)
	}
	cut(t, f, powercut.Drop)
	if got, ok := content(t, a); !ok || got != "old" {
		t.Errorf("a after an unsynced rename = %q, %v; want old", got, ok)
	}
	if _, ok := content(t, tmp); ok {
		t.Errorf("a.tmp exists after the cut; its name was never synced")
	}

	// The same rename followed by a directory sync stays.
	write(t, tmp, []byte("new"), true)
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	syncDir(t, dir)
	cut(t, f, powercut.Drop)
	if got, ok := content(t, a); !ok || got != "new" {
		t.Errorf("a after a synced rename = %q, %v; want new", got, ok)
	}

	// A rename whose file was never synced, with the directory synced:
	// the name is durable, the content is not (the classic empty file).
	write(t, tmp, []byte("newer"), false)
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	syncDir(t, dir)
	cut(t, f, powercut.Drop)
	if got, ok := content(t, a); !ok || got != "" {
		t.Errorf("a after a rename of an unsynced file = %q, %v; want empty", got, ok)
	}

	// Truncation and an unlink, unsynced, are undone.
	write(t, a, []byte("keep me"), true)
	syncDir(t, dir)
	if err := os.Truncate(a, 2); err != nil {
		t.Fatal(err)
	}
	cut(t, f, powercut.Drop)
	if got, _ := content(t, a); got != "keep me" {
		t.Errorf("a after an unsynced truncate = %q, want keep me", got)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	cut(t, f, powercut.Drop)
	if got, ok := content(t, a); !ok || got != "keep me" {
		t.Errorf("a after an unsynced unlink = %q, %v; want keep me", got, ok)
	}

	// A directory made and never synced in its parent is gone.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(sub, "x"), []byte("x"), true)
	syncDir(t, sub)
	cut(t, f, powercut.Drop)
	if _, err := os.Stat(sub); !os.IsNotExist(err) {
		t.Errorf("sub after the cut: %v, want it gone", err)
	}
	if st := f.Stats(); st.Cuts != 8 || st.DroppedOps == 0 || st.DroppedNames == 0 {
		t.Errorf("Stats = %+v, want 8 cuts and something dropped", st)
	}
}

// TestEIOAfterCut: between Cut and Restore nothing changes and every
// change fails.
func TestEIOAfterCut(t *testing.T) {
	f := powercut.Mount(t, 1)
	a := filepath.Join(f.Dir(), "a")
	h, err := os.Create(a)
	if err != nil {
		t.Fatal(err)
	}
	f.Cut()
	if _, err := h.Write([]byte("x")); err == nil {
		t.Error("a write after Cut succeeded")
	}
	if err := h.Sync(); err == nil {
		t.Error("an fsync after Cut succeeded")
	}
	if err := os.WriteFile(filepath.Join(f.Dir(), "b"), []byte("b"), 0o644); err == nil {
		t.Error("a create after Cut succeeded")
	}
	h.Close()
	if err := f.Restore(powercut.Drop); err != nil {
		t.Fatal(err)
	}
	if _, ok := content(t, a); ok {
		t.Error("a exists: its name was never synced")
	}
}

// TestScramble: each cut leaves every page of an unsynced overwrite
// either old or new (a sector of the last write may be torn), never
// anything else, and over many cuts both old and new pages are seen.
func TestScramble(t *testing.T) {
	f := powercut.Mount(t, 7)
	a := filepath.Join(f.Dir(), "a")
	const pages = 8
	old := bytes.Repeat([]byte{'o'}, pages*4096)
	write(t, a, old, true)
	syncDir(t, f.Dir())
	sawOld, sawNew := false, false
	for range 20 {
		h, err := os.OpenFile(a, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for p := range pages {
			if _, err := h.WriteAt(bytes.Repeat([]byte{'n'}, 4096), int64(p*4096)); err != nil {
				t.Fatal(err)
			}
		}
		h.Close()
		cut(t, f, powercut.Scramble)
		got, _ := content(t, a)
		if len(got) != len(old) {
			t.Fatalf("a is %d bytes after the cut, want %d", len(got), len(old))
		}
		for i := range len(got) {
			switch got[i] {
			case 'o':
				sawOld = true
			case 'n':
				sawNew = true
			default:
				t.Fatalf("byte %d is %q, neither old nor new", i, got[i])
			}
		}
		write(t, a, old, true)
	}
	if !sawOld || !sawNew {
		t.Errorf("over 20 scrambled cuts: old pages seen %v, new pages seen %v; want both", sawOld, sawNew)
	}
}

// TestCutAt: an armed cut lands on the n-th change, which fails, as does
// every change after it; what was synced before it survives.
func TestCutAt(t *testing.T) {
	f := powercut.Mount(t, 1)
	a := filepath.Join(f.Dir(), "a")
	write(t, a, []byte("synced"), true)
	syncDir(t, f.Dir())
	h, err := os.OpenFile(a, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cutCh := f.CutAt(3)
	for i, want := range []bool{true, true, false, false} {
		_, err := h.WriteAt([]byte{'0' + byte(i)}, int64(i))
		if ok := err == nil; ok != want {
			t.Errorf("write %d after CutAt(3): err %v, want success %v", i+1, err, want)
		}
	}
	select {
	case <-cutCh:
	default:
		t.Fatal("the cut channel is open after the armed change")
	}
	h.Close()
	if err := f.Restore(powercut.Drop); err != nil {
		t.Fatal(err)
	}
	if got, _ := content(t, a); got != "synced" {
		t.Errorf("a after the armed cut = %q, want synced", got)
	}
}
