package tiles

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// pathVectors are spellings from the spec (1234067 is x001/x234/067) and
// the edges of each path element.
var pathVectors = []struct {
	t    Tile
	path string
}{
	{Tile{Level: 0, Index: 0, Width: 256}, "tile/0/000"},
	{Tile{Level: 0, Index: 5, Width: 1}, "tile/0/005.p/1"},
	{Tile{Level: 1, Index: 999, Width: 255}, "tile/1/999.p/255"},
	{Tile{Level: 2, Index: 1000, Width: 256}, "tile/2/x001/000"},
	{Tile{Level: 0, Index: 1234067, Width: 256}, "tile/0/x001/x234/067"},
	{Tile{Level: 0, Index: 1234067, Width: 8}, "tile/0/x001/x234/067.p/8"},
	{Tile{Entries: true, Index: 1234067, Width: 256}, "tile/entries/x001/x234/067"},
	{Tile{Entries: true, Index: 0, Width: 17}, "tile/entries/000.p/17"},
	{Tile{Level: 63, Index: 0, Width: 1}, "tile/63/000.p/1"},
	{Tile{Level: 0, Index: 1<<55 - 1, Width: 256}, "tile/0/x036/x028/x797/x018/x963/967"},
	{Tile{Level: 0, Index: 1<<64 - 1, Width: 256}, "tile/0/x018/x446/x744/x073/x709/x551/615"},
}

func TestPathVectors(t *testing.T) {
	for _, v := range pathVectors {
		if got := v.t.Path(); got != v.path {
			t.Errorf("%+v.Path() = %q, want %q", v.t, got, v.path)
		}
		got, err := ParsePath(v.path)
		if err != nil || got != v.t {
			t.Errorf("ParsePath(%q) = %+v, %v; want %+v", v.path, got, err, v.t)
		}
	}
}

// TestPathsMatchTlog holds Path to x/mod's tlog.Tile.Path, the Go checksum
// database's spelling from which tlog-tiles took its encoding: the same
// string after tlog's "tile/8/" height element and "data" name.
func TestPathsMatchTlog(t *testing.T) {
	for _, v := range pathVectors {
		if v.t.Index > math.MaxInt64 {
			continue // tlog's indexes are int64
		}
		want := strings.Replace(v.t.TlogTile().Path(), "tile/8/", "tile/", 1)
		want = strings.Replace(want, "tile/data/", "tile/entries/", 1)
		if v.path != want {
			t.Errorf("%q: tlog spells it %q", v.path, want)
		}
	}
}

func TestParsePathRefuses(t *testing.T) {
	for _, p := range []string{
		"", "checkpoint", "tile/", "tile/0", "tile/0/", "tile/00/000", "tile/01/000", "tile/64/000", "tile/-1/000",
		"tile/0/0", "tile/0/00", "tile/0/0000", "tile/0/001/234", "tile/0/x001", "tile/0/x000/001",
		"tile/0/x1/234", "tile/0/000.p/0", "tile/0/000.p/256", "tile/0/000.p/01", "tile/0/000.p/",
		"tile/0/000.p", "tile/0/000/", "/tile/0/000", "tile/entries", "tile/entries/", "tile/data/000",
		"tile/0/000.p/5/6", "tile/0/x001/x234/067.p/8.p/8", "tile/ 0/000", "tile/0/+00",
		"tile/0/x018/x446/x744/x073/x709/x551/616", // 2^64: out of range
	} {
		if tile, err := ParsePath(p); err == nil || !errors.Is(err, ErrPath) {
			t.Errorf("ParsePath(%q) = %+v, %v; want an ErrPath", p, tile, err)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, v := range pathVectors {
		f.Add(v.path)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tile, err := ParsePath(p)
		if err != nil {
			return
		}
		if got := tile.Path(); got != p {
			t.Fatalf("ParsePath(%q) = %+v, whose Path is %q", p, tile, got)
		}
	})
}

func TestMinTreeSize(t *testing.T) {
	for _, c := range []struct {
		t    Tile
		want uint64
	}{
		{Tile{Width: 1}, 1},
		{Tile{Index: 1, Width: 256}, 512},
		{Tile{Level: 1, Index: 0, Width: 1}, 256},
		{Tile{Level: 2, Index: 1, Width: 17}, (256 + 17) * 65536},
		{Tile{Level: 63, Width: 1}, math.MaxUint64},
		{Tile{Index: 1<<64 - 1, Width: 256}, math.MaxUint64},
	} {
		if got := c.t.MinTreeSize(); got != c.want {
			t.Errorf("%s.MinTreeSize() = %d, want %d", c.t.Path(), got, c.want)
		}
	}
}

func TestPartialWidth(t *testing.T) {
	// The spec's example: a tree of 70,000 has 273 full level-0 tiles and
	// a partial of 112, one full level-1 tile and a partial of 17, and a
	// partial level-2 tile of 1.
	for _, c := range []struct {
		level int
		want  int
	}{{0, 112}, {1, 17}, {2, 1}, {3, 0}} {
		if got := PartialWidth(c.level, 70000); got != c.want {
			t.Errorf("PartialWidth(%d, 70000) = %d, want %d", c.level, got, c.want)
		}
	}
	var got []Tile
	for tile := range HashTiles(0, 70000) {
		got = append(got, tile)
	}
	var want []Tile
	for i := range uint64(273) {
		want = append(want, Tile{Index: i, Width: 256})
	}
	want = append(want, Tile{Index: 273, Width: 112}, Tile{Level: 1, Width: 256}, Tile{Level: 1, Index: 1, Width: 17}, Tile{Level: 2, Width: 1})
	if !slices.Equal(got, want) {
		t.Errorf("HashTiles(0, 70000): %d tiles, want %d (last %v)", len(got), len(want), got[max(0, len(got)-3):])
	}
}

// TestHashTilesIncremental checks that the tiles between two sizes, added
// to those of the smaller, are all the tiles of the larger, and that every
// tile yielded exists at the larger size.
func TestHashTilesIncremental(t *testing.T) {
	sizes := []uint64{0, 1, 2, 255, 256, 257, 511, 512, 65535, 65536, 65537, 70000, 131072, 131073}
	for _, a := range sizes {
		for _, b := range sizes {
			if a > b {
				continue
			}
			all := map[Tile]bool{}
			for tile := range HashTiles(0, b) {
				all[tile] = true
				if tile.MinTreeSize() > b {
					t.Errorf("HashTiles(0, %d) yields %s, which needs %d leaves", b, tile.Path(), tile.MinTreeSize())
				}
			}
			have := map[Tile]bool{}
			for tile := range HashTiles(0, a) {
				if tile.Full() {
					have[tile] = true
				}
			}
			for tile := range HashTiles(a, b) {
				if !all[tile] {
					t.Errorf("HashTiles(%d, %d) yields %s, not a tile of size %d", a, b, tile.Path(), b)
				}
				have[tile] = true
			}
			for tile := range all {
				if !have[tile] && !(a == b) {
					if p := tile; !p.Full() && HasTile(a, p) {
						continue // the same partial tile already existed at a
					}
					t.Errorf("size %d to %d: %s missing", a, b, tile.Path())
				}
			}
		}
	}
}

// HasTile reports whether a tree of size has tile t exactly (same width).
func HasTile(size uint64, t Tile) bool {
	for x := range HashTiles(0, size) {
		if x == t {
			return true
		}
	}
	return false
}

func TestBundle(t *testing.T) {
	entries := [][]byte{[]byte(`{"a":1}`), {}, bytes.Repeat([]byte{'x'}, MaxEntrySize)}
	var b []byte
	for _, e := range entries {
		var err error
		if b, err = AppendEntry(b, e); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.HasPrefix(b, []byte{0, 7, '{'}) {
		t.Errorf("bundle starts %x, want a big-endian length 7", b[:3])
	}
	got, err := SplitBundle(b)
	if err != nil || len(got) != 3 || !bytes.Equal(got[0], entries[0]) || len(got[1]) != 0 || !bytes.Equal(got[2], entries[2]) {
		t.Fatalf("SplitBundle: %d entries, %v", len(got), err)
	}
	if _, err := AppendEntry(nil, make([]byte, MaxEntrySize+1)); !errors.Is(err, ErrEntryTooLarge) {
		t.Errorf("AppendEntry of %d bytes: %v, want ErrEntryTooLarge", MaxEntrySize+1, err)
	}
	for _, bad := range [][]byte{{0}, {0, 2, 'a'}, append(slices.Clone(b), 0)} {
		if _, err := SplitBundle(bad); !errors.Is(err, ErrBundle) {
			t.Errorf("SplitBundle(%x…) = %v, want ErrBundle", bad[:1], err)
		}
	}
}

// TestHashTileMatchesTlog builds a tree, reads every tile of it with
// HashTile, and checks the root tlog computes from the tiles alone.
func TestHashTileMatchesTlog(t *testing.T) {
	var stored []tlog.Hash
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	const n = 70000
	for i := range int64(n) {
		hs, err := tlog.StoredHashes(i, []byte{byte(i), byte(i >> 8), byte(i >> 16)}, r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
	}
	data := map[tlog.Tile][]byte{}
	for tile := range HashTiles(0, n) {
		b, err := HashTile(r, tile)
		if err != nil {
			t.Fatalf("%s: %v", tile.Path(), err)
		}
		if len(b) != tile.Width*HashSize {
			t.Fatalf("%s: %d bytes", tile.Path(), len(b))
		}
		data[tile.TlogTile()] = b
	}
	want, err := tlog.TreeHash(n, r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tlog.TileHashReader(tlog.Tree{N: n, Hash: want}, tileMap(data))
	got, err := tlog.TreeHash(n, tr)
	if err != nil || got != want {
		t.Fatalf("root from tiles = %v, %v; want %v", got, err, want)
	}
	if _, err := HashTile(r, Tile{Entries: true, Width: 1}); err == nil {
		t.Error("HashTile of an entry bundle: no error")
	}
}

type tileMap map[tlog.Tile][]byte

func (m tileMap) Height() int { return Height }
func (m tileMap) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		b, ok := m[t]
		if !ok {
			return nil, errors.New("missing tile " + t.Path())
		}
		out[i] = b
	}
	return out, nil
}
func (m tileMap) SaveTiles([]tlog.Tile, [][]byte) {}
