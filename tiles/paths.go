package tiles

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// The tile geometry of tlog-tiles: tiles of height 8, 256 hashes wide.
const (
	Height   = 8
	Width    = 1 << Height
	MaxLevel = 63
	// HashSize is the size of one hash in a tile.
	HashSize = tlog.HashSize
	// MaxEntrySize is the largest entry an entry bundle can carry: its
	// length prefix is a uint16.
	MaxEntrySize = 1<<16 - 1
)

// Paths and content types of the API. Paths are relative to the log's
// prefix and never start with a slash.
const (
	CheckpointPath = "checkpoint"
	// CheckpointContentType is the checkpoint's Content-Type.
	CheckpointContentType = "text/plain; charset=utf-8"
	// TileContentType is the Content-Type of hash tiles and entry bundles.
	TileContentType = "application/octet-stream"
)

// ErrPath is wrapped by ParsePath's errors.
var ErrPath = errors.New("not a tlog-tiles path")

// A Tile names one hash tile or entry bundle.
type Tile struct {
	// Entries marks an entry bundle (tile/entries/...); Level is then 0.
	Entries bool
	// Level is the hash tile's level, 0..63: each of its hashes covers
	// 256^Level leaves.
	Level int
	// Index is the tile's index within its level.
	Index uint64
	// Width is the number of hashes (or entries), 1..256; 256 is a full
	// tile.
	Width int
}

// Full reports whether t is a full tile (Width 256): its bytes never change.
func (t Tile) Full() bool { return t.Width == Width }

// Check reports whether t names a resource the spec can write: level 0..63
// (0 for entries) and width 1..256. Most such tiles lie beyond any tree
// (see MinTreeSize).
func (t Tile) Check() error {
	switch {
	case t.Level < 0 || t.Level > MaxLevel:
		return fmt.Errorf("%w: level %d out of 0..%d", ErrPath, t.Level, MaxLevel)
	case t.Entries && t.Level != 0:
		return fmt.Errorf("%w: an entry bundle has level 0, not %d", ErrPath, t.Level)
	case t.Width < 1 || t.Width > Width:
		return fmt.Errorf("%w: width %d out of 1..%d", ErrPath, t.Width, Width)
	}
	return nil
}

// MinTreeSize returns the smallest tree size that has t: its last hash
// covers the leaves up to (Index*256 + Width) * 256^Level. It returns
// math.MaxUint64 for a tile beyond 2^63 leaves, which no tree has.
func (t Tile) MinTreeSize() uint64 {
	const limit = 1 << 63
	if t.Index > (limit-Width)/Width {
		return math.MaxUint64
	}
	n := t.Index*Width + uint64(t.Width)
	for range t.Level {
		if n > limit/Width {
			return math.MaxUint64
		}
		n *= Width
	}
	return n
}

// Path returns t's path relative to the log prefix:
// "tile/<L>/<N>[.p/<W>]" or "tile/entries/<N>[.p/<W>]".
func (t Tile) Path() string {
	var b strings.Builder
	b.WriteString("tile/")
	if t.Entries {
		b.WriteString("entries")
	} else {
		b.WriteString(strconv.Itoa(t.Level))
	}
	b.WriteByte('/')
	b.WriteString(FormatIndex(t.Index))
	if t.Width != Width {
		b.WriteString(".p/")
		b.WriteString(strconv.Itoa(t.Width))
	}
	return b.String()
}

func (t Tile) String() string { return t.Path() }

// TlogTile returns t as a golang.org/x/mod/sumdb/tlog tile of height 8
// (Level -1 for an entry bundle, tlog's data tile).
func (t Tile) TlogTile() tlog.Tile {
	l := t.Level
	if t.Entries {
		l = -1
	}
	return tlog.Tile{H: Height, L: l, N: int64(t.Index), W: t.Width}
}

// FormatIndex encodes n as zero-padded 3-digit path elements, all but the
// last prefixed with "x": 1234067 is "x001/x234/067", 5 is "005".
func FormatIndex(n uint64) string {
	s := fmt.Sprintf("%03d", n%1000)
	for n /= 1000; n > 0; n /= 1000 {
		s = fmt.Sprintf("x%03d/%s", n%1000, s)
	}
	return s
}

// ParseIndex is the strict inverse of FormatIndex.
func ParseIndex(s string) (uint64, error) {
	parts := strings.Split(s, "/")
	var n uint64
	for i, p := range parts {
		last := i == len(parts)-1
		if !last {
			if !strings.HasPrefix(p, "x") {
				return 0, fmt.Errorf("%w: index element %q lacks its \"x\"", ErrPath, p)
			}
			p = p[1:]
		}
		if len(p) != 3 || !isDigits(p) {
			return 0, fmt.Errorf("%w: index element %q is not 3 digits", ErrPath, parts[i])
		}
		if i == 0 && !last && p == "000" {
			return 0, fmt.Errorf("%w: index %q has a leading zero element", ErrPath, s)
		}
		d, _ := strconv.ParseUint(p, 10, 64)
		if n > (1<<64-1-d)/1000 {
			return 0, fmt.Errorf("%w: index %q out of range", ErrPath, s)
		}
		n = n*1000 + d
	}
	return n, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseSmall parses a decimal without sign or leading zero.
func parseSmall(s string) (int, bool) {
	if !isDigits(s) || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, true
}

// ParsePath parses a path written by Tile.Path ("tile/0/x001/234.p/5",
// "tile/entries/000"), relative to the prefix, strictly: it accepts only
// the one spelling Path writes for a tile that Check accepts. It does not
// parse CheckpointPath.
func ParsePath(p string) (Tile, error) {
	rest, ok := strings.CutPrefix(p, "tile/")
	if !ok {
		return Tile{}, fmt.Errorf("%w: %q does not start with tile/", ErrPath, p)
	}
	lvl, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return Tile{}, fmt.Errorf("%w: %q has no index", ErrPath, p)
	}
	var t Tile
	if lvl == "entries" {
		t.Entries = true
	} else if t.Level, ok = parseSmall(lvl); !ok {
		return Tile{}, fmt.Errorf("%w: %q: level %q is not a decimal without leading zeros", ErrPath, p, lvl)
	}
	t.Width = Width
	if idx, w, partial := strings.Cut(rest, ".p/"); partial {
		if t.Width, ok = parseSmall(w); !ok || t.Width < 1 || t.Width >= Width {
			return Tile{}, fmt.Errorf("%w: %q: partial width %q is not 1..255", ErrPath, p, w)
		}
		rest = idx
	}
	var err error
	if t.Index, err = ParseIndex(rest); err != nil {
		return Tile{}, fmt.Errorf("%q: %w", p, err)
	}
	if err := t.Check(); err != nil {
		return Tile{}, fmt.Errorf("%q: %w", p, err)
	}
	return t, nil
}

// PartialWidth returns the width of the rightmost (partial) tile at level
// for a tree of size leaves: floor(size / 256^level) mod 256, 0 when the
// level has no partial tile.
func PartialWidth(level int, size uint64) int {
	for range level {
		size /= Width
	}
	return int(size % Width)
}

// HashTiles yields the hash tiles a tree of newSize has and a tree of
// oldSize has not: the full tiles completed between the two sizes, then
// the partial tiles of newSize, level by level from level 0. With oldSize
// 0 it yields every tile a client of newSize may fetch.
func HashTiles(oldSize, newSize uint64) iter.Seq[Tile] {
	return func(yield func(Tile) bool) {
		if newSize <= oldSize {
			return
		}
		oldN, newN := oldSize, newSize // hashes at this level
		for level := 0; level <= MaxLevel && newN > 0; level++ {
			for i := oldN / Width; i < newN/Width; i++ {
				if !yield(Tile{Level: level, Index: i, Width: Width}) {
					return
				}
			}
			if w := int(newN % Width); w > 0 && (oldN/Width != newN/Width || int(oldN%Width) != w) {
				if !yield(Tile{Level: level, Index: newN / Width, Width: w}) {
					return
				}
			}
			oldN, newN = oldN/Width, newN/Width
		}
	}
}

// EntryBundles yields the entry bundles of a tree of newSize that a tree
// of oldSize has not: full bundles completed, then the partial one.
func EntryBundles(oldSize, newSize uint64) iter.Seq[Tile] {
	return func(yield func(Tile) bool) {
		for t := range HashTiles(oldSize, newSize) {
			if t.Level != 0 {
				return
			}
			t.Entries = true
			if !yield(t) {
				return
			}
		}
	}
}

// HashTile reads the bytes of hash tile t (Width hashes of level
// 8*t.Level) from r, the stored hashes of a tree of at least
// t.MinTreeSize() leaves. t must not be an entry bundle.
func HashTile(r tlog.HashReader, t Tile) ([]byte, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if t.Entries {
		return nil, fmt.Errorf("tiles: %s is an entry bundle, not a hash tile", t.Path())
	}
	return tlog.ReadTileData(t.TlogTile(), r)
}
