package tiles_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/memory"
	"github.com/govledger/govledger/tiles"
)

func newLedger(t *testing.T, origin string) *ledger.Ledger {
	t.Helper()
	d, err := memory.New(origin)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// grow appends n unblock entries, concurrently so they share commits.
func grow(t *testing.T, l *ledger.Ledger, n int, note string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
				e.Kind, e.Agent, e.Note = entry.KindUnblock, fmt.Sprintf("agent-%d", i), note
				return nil
			}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func newKey(t *testing.T, name string) (note.Signer, note.Verifier) {
	t.Helper()
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// dirTiles reads tiles from a published folder, as a static host serves them.
type dirTiles string

func (d dirTiles) Height() int { return tiles.Height }
func (d dirTiles) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		p := tiles.Tile{Level: t.L, Index: uint64(t.N), Width: t.W}
		b, err := os.ReadFile(filepath.Join(string(d), p.Path()))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (d dirTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// checkDir verifies dir's checkpoint with v, rebuilds its root from the
// folder's tiles alone, proves the last entry's inclusion from them, and
// checks every bundle's entries against the level-0 tiles.
func checkDir(t *testing.T, dir string, v note.Verifier, origin string, entries bool) *checkpoint.Checkpoint {
	t.Helper()
	msg, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(msg, note.VerifierList(v), origin)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	n := int64(c.Size)
	hr := tlog.TileHashReader(tlog.Tree{N: n, Hash: c.Hash}, dirTiles(dir))
	root, err := tlog.TreeHash(n, hr)
	if err != nil || root != c.Hash {
		t.Fatalf("root of %d from the folder's tiles = %x, %v; checkpoint says %x", n, root, err, c.Hash)
	}
	if !entries {
		return c
	}
	for b := range tiles.EntryBundles(0, c.Size) {
		data, err := os.ReadFile(filepath.Join(dir, b.Path()))
		if err != nil {
			t.Fatal(err)
		}
		raws, err := tiles.SplitBundle(data)
		if err != nil || len(raws) != b.Width {
			t.Fatalf("%s: %d entries, %v", b, len(raws), err)
		}
		idx := make([]int64, len(raws))
		for i := range raws {
			idx[i] = tlog.StoredHashIndex(0, int64(b.Index)*256+int64(i))
		}
		leaves, err := hr.ReadHashes(idx)
		if err != nil {
			t.Fatal(err)
		}
		for i, raw := range raws {
			if tlog.RecordHash(raw) != leaves[i] {
				t.Fatalf("%s entry %d does not hash to its leaf", b, i)
			}
		}
	}
	return c
}

func TestPublishIncremental(t *testing.T) {
	const origin = "example.com/publish"
	l := newLedger(t, origin)
	signer, verifier := newKey(t, origin)
	dir := filepath.Join(t.TempDir(), "log")
	ctx := context.Background()

	grow(t, l, 600, "first")
	res, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer, Entries: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.OldSize != 0 || res.Size != 600 || res.Tiles != 4 || res.Bundles != 3 {
		t.Errorf("first publish: %+v, want 0 → 600, 4 tiles, 3 bundles", res)
	}
	checkDir(t, dir, verifier, origin, true)
	old := filepath.Join(dir, "tile/0/002.p/88")

	grow(t, l, 200, "second")
	res, err = tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer, Entries: true})
	if err != nil {
		t.Fatal(err)
	}
	// 0/002 full, 0/003.p/32, 1/000.p/3; bundles the same at level 0.
	if res.OldSize != 600 || res.Size != 800 || res.Tiles != 3 || res.Bundles != 2 {
		t.Errorf("second publish: %+v, want 600 → 800, 3 tiles, 2 bundles", res)
	}
	checkDir(t, dir, verifier, origin, true)
	if _, err := os.Stat(old); err != nil {
		t.Errorf("the partial tile of size 600 is gone: %v", err)
	}
	res, err = tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer, Entries: true})
	if err != nil || res.Tiles != 0 || res.Bundles != 0 {
		t.Errorf("publish with nothing new: %+v, %v; want no tile written", res, err)
	}
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p)[0] == '.' {
			t.Errorf("temporary file left: %s", p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestPublishInterrupted stops a publish after each possible number of
// files and checks that the folder still serves the old checkpoint with
// every tile it needs, and that the next publish completes.
func TestPublishInterrupted(t *testing.T) {
	const origin = "example.com/interrupted"
	l := newLedger(t, origin)
	signer, verifier := newKey(t, origin)
	ctx := context.Background()
	grow(t, l, 300, "first")
	base := t.TempDir()
	first := filepath.Join(base, "first")
	if _, err := tiles.Publish(ctx, l, first, tiles.PublishOptions{Signer: signer, Entries: true}); err != nil {
		t.Fatal(err)
	}
	grow(t, l, 300, "second")
	stop := errors.New("power cut")
	for after := 0; ; after++ {
		dir := filepath.Join(base, fmt.Sprint(after))
		if err := os.CopyFS(dir, os.DirFS(first)); err != nil {
			t.Fatal(err)
		}
		n := 0
		_, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer, Entries: true, AfterFile: func(tiles.Tile) error {
			if n == after {
				return stop
			}
			n++
			return nil
		}})
		if err == nil {
			if after < 4 {
				t.Fatalf("publish went through after %d files", after)
			}
			break
		}
		if !errors.Is(err, stop) {
			t.Fatal(err)
		}
		if c := checkDir(t, dir, verifier, origin, true); c.Size != 300 {
			t.Fatalf("stopped after %d files: checkpoint of %d, want the old 300", after, c.Size)
		}
		if _, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer, Entries: true}); err != nil {
			t.Fatalf("publish after a stop at %d: %v", after, err)
		}
		if c := checkDir(t, dir, verifier, origin, true); c.Size != 600 {
			t.Fatalf("publish after a stop: checkpoint of %d", c.Size)
		}
	}
}

func TestPublishRefusesFork(t *testing.T) {
	const origin = "example.com/fork"
	signer, _ := newKey(t, origin)
	ctx := context.Background()
	a := newLedger(t, origin)
	grow(t, a, 10, "a")
	dir := t.TempDir()
	if _, err := tiles.Publish(ctx, a, dir, tiles.PublishOptions{Signer: signer}); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "checkpoint"))
	forked := newLedger(t, origin) // same origin, other entries
	grow(t, forked, 20, "b")
	other := newLedger(t, "example.com/other")
	grow(t, other, 20, "a")
	shorter := newLedger(t, origin)
	grow(t, shorter, 5, "a")
	for name, l := range map[string]*ledger.Ledger{"forked": forked, "other origin": other, "shorter": shorter} {
		if _, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer}); !errors.Is(err, tiles.ErrPublishedFork) {
			t.Errorf("%s: %v, want ErrPublishedFork", name, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); !bytes.Equal(got, want) {
		t.Error("a refused publish changed the checkpoint")
	}
	if _, err := tiles.Publish(ctx, a, dir, tiles.PublishOptions{}); err == nil {
		t.Error("publish without a signer: no error")
	}
}

// TestPublishEntryTooLarge: an entry longer than a bundle carries stops a
// publish with entries (naming it, before the checkpoint), not one of the
// hash tiles only.
func TestPublishEntryTooLarge(t *testing.T) {
	const origin = "example.com/too-large"
	l := newLedger(t, origin)
	signer, verifier := newKey(t, origin)
	grow(t, l, 3, "short")
	grow(t, l, 1, strings.Repeat("n", tiles.MaxEntrySize))
	dir := t.TempDir()
	_, err := tiles.Publish(context.Background(), l, dir, tiles.PublishOptions{Signer: signer, Entries: true})
	if !errors.Is(err, tiles.ErrEntryTooLarge) || !strings.Contains(err.Error(), "seq 4") {
		t.Fatalf("publish with entries: %v, want ErrEntryTooLarge naming seq 4", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed publish wrote the checkpoint (%v)", err)
	}
	if _, err := tiles.Publish(context.Background(), l, dir, tiles.PublishOptions{Signer: signer}); err != nil {
		t.Fatalf("publish of the hash tiles: %v", err)
	}
	checkDir(t, dir, verifier, origin, false)
}

// TestPublishCheckpoint: PublishOptions.Checkpoint publishes a given
// signed checkpoint (here signed by two keys, as a cosigned one is) at its
// size, byte for byte, with the tiles its tree needs; one whose root the
// ledger does not have is refused; a folder holding a newer checkpoint of
// the tree is left alone.
func TestPublishCheckpoint(t *testing.T) {
	const origin = "example.com/cosigned"
	signer, v := newKey(t, origin)
	other, _ := newKey(t, "witness.example")
	ctx := context.Background()
	l := newLedger(t, origin)
	grow(t, l, 300, "a")
	signedAt := func(l *ledger.Ledger, n uint64) []byte {
		h, err := l.TreeHash(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := (&checkpoint.Checkpoint{Origin: origin, Size: n, Hash: h}).Text()
		b, err := note.Sign(&note.Note{Text: string(text)}, signer, other)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dir := t.TempDir()
	cp200 := signedAt(l, 200)
	res, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Checkpoint: cp200})
	if err != nil || res.Size != 200 {
		t.Fatalf("publish the checkpoint of 200: %+v %v", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); !bytes.Equal(got, cp200) {
		t.Fatalf("published checkpoint:\n%s\nwant:\n%s", got, cp200)
	}
	checkDir(t, dir, v, origin, false)
	cp300 := signedAt(l, 300)
	if res, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Checkpoint: cp300}); err != nil || res.OldSize != 200 || res.Size != 300 {
		t.Fatalf("publish the checkpoint of 300: %+v %v", res, err)
	}
	checkDir(t, dir, v, origin, false)

	forked := newLedger(t, origin)
	grow(t, forked, 300, "b")
	if _, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Checkpoint: signedAt(forked, 300)}); err == nil || !strings.Contains(err.Error(), "its root at size 300") {
		t.Errorf("a checkpoint of another tree: %v", err)
	}
	if res, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Checkpoint: cp200}); err != nil || res.Size != 300 {
		t.Errorf("an older checkpoint than the folder's: %+v %v, want nothing written", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); !bytes.Equal(got, cp300) {
		t.Errorf("the folder's checkpoint changed:\n%s", got)
	}
}
