// Package monitor follows a C2SP tlog-tiles log (https://c2sp.org/tlog-tiles)
// that it does not trust, of govledger or anyone else: it fetches the log's
// checkpoint, checks its signature (and its witness cosignatures) against a
// policy, and proves from the log's own tiles that the new checkpoint
// extends the last one it saw, which it keeps in a state directory. It
// speaks only C2SP: the checkpoint and hash tiles (and, on request, the
// entry bundles) through package tiles.
//
// A log that goes backwards (a rollback), serves a tree that does not
// extend the last one seen (a fork: a rewritten tail re-signed with the
// same key), or a checkpoint that does not verify is reported with both
// sizes and roots; the state never moves past it.
//
// The package never prints, exits, or reads flags or the environment.
package monitor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/tiles"
)

// maxTileBytes bounds a tile or entry bundle read: 256 entries of at most
// 65,535 bytes each, with their length prefixes.
const maxTileBytes = tiles.Width * (tiles.MaxEntrySize + 2)

// ErrFetch is wrapped by failures to read the log (network, HTTP status,
// an oversized answer): not a finding about the log's history.
var ErrFetch = errors.New("monitor: reading the log")

// ErrOrigin is returned when the log serves another origin than the one
// the state pinned on the first run.
var ErrOrigin = errors.New("the log's origin changed")

// ErrEntries is wrapped when an entry bundle's entries do not hash to the
// tree's leaves.
var ErrEntries = errors.New("entry bundle does not match the tree")

// Options configure Check.
type Options struct {
	// Log is the log's URL prefix: <Log>/checkpoint, <Log>/tile/...
	Log string
	// Client makes the requests; http.DefaultClient when nil.
	Client *http.Client
	// Header is added to every request (e.g. Authorization for entry
	// bundles a log keeps private).
	Header http.Header
	// Policy decides whether a checkpoint is trusted (log key, quorum).
	Policy *checkpoint.Policy
	// State is the directory keeping the newest checkpoint seen and the
	// pinned origin. Required.
	State string
	// Entries, when set, also reads the entry bundles the tree gained and
	// checks each entry against its leaf hash.
	Entries bool
}

// A Result says what one Check saw.
type Result struct {
	Log       string   `json:"log"`
	Origin    string   `json:"origin"`
	OldSize   uint64   `json:"old_size"`
	OldRoot   string   `json:"old_root,omitzero"`
	Size      uint64   `json:"size"`
	Root      string   `json:"root"`
	Updated   bool     `json:"updated"`
	Cosigners []string `json:"cosigners,omitzero"`
	Entries   uint64   `json:"entries_checked,omitzero"`
}

// Check fetches the log's checkpoint once, verifies it under the policy,
// proves it consistent with the state's from the log's tiles, optionally
// checks the new entries, and stores it. Findings are errors wrapping
// checkpoint.ErrRollback or checkpoint.ErrFork (*checkpoint.StateError,
// with both checkpoints), checkpoint.ErrBadSignature, ErrUnknownKey,
// ErrPolicy, ErrMalformed, ErrOrigin or ErrEntries; a failure to read the
// log wraps ErrFetch. The returned Result is filled as far as it got.
func Check(ctx context.Context, o Options) (*Result, error) {
	if o.Policy == nil || o.State == "" || o.Log == "" {
		return nil, errors.New("monitor: Log, Policy and State are required")
	}
	f := &fetcher{ctx: ctx, base: strings.TrimSuffix(o.Log, "/") + "/", hc: o.Client, header: o.Header}
	if f.hc == nil {
		f.hc = http.DefaultClient
	}
	res := &Result{Log: o.Log}
	st, err := checkpoint.OpenState(o.State)
	if err != nil {
		return res, err
	}
	pinned, err := readOrigin(o.State)
	if err != nil {
		return res, err
	}
	signed, err := f.get(tiles.CheckpointPath, checkpoint.MaxCheckpointSize)
	if err != nil {
		return res, err
	}
	cp, cosigners, err := o.Policy.Open(signed, pinned)
	if cp != nil {
		res.Origin, res.Size, res.Root, res.Cosigners = cp.Origin, cp.Size, b64(cp.Hash), cosigners
	}
	if errors.Is(err, checkpoint.ErrOrigin) {
		return res, fmt.Errorf("%w: %w", ErrOrigin, err)
	}
	if err != nil {
		return res, fmt.Errorf("the log's checkpoint: %w", err)
	}
	if pinned == "" {
		if err := checkpoint.WriteFileAtomic(filepath.Join(o.State, "origin"), []byte(cp.Origin+"\n"), 0o600); err != nil {
			return res, err
		}
	}
	old, err := st.Latest(cp.Origin)
	switch {
	case errors.Is(err, checkpoint.ErrNoState):
	case err != nil:
		return res, err
	default:
		res.OldSize, res.OldRoot = old.Size, b64(old.Hash)
	}
	// Every hash read is checked against the new checkpoint's root by
	// tlog's tile hash reader, so the tiles need no trust either.
	tree := tlog.Tree{N: int64(cp.Size), Hash: cp.Hash}
	hr := tlog.TileHashReader(tree, &tileReader{f: f})
	prove := func(oldSize, newSize uint64) (tlog.TreeProof, error) {
		return tlog.ProveTree(int64(newSize), int64(oldSize), hr)
	}
	if o.Entries && cp.Size > res.OldSize {
		n, err := checkEntries(f, hr, res.OldSize, cp.Size)
		res.Entries = n
		if err != nil {
			return res, err
		}
	}
	updated, err := st.Update(ctx, cp, prove)
	res.Updated = updated
	if err != nil {
		var se *checkpoint.StateError
		if errors.As(err, &se) {
			return res, err
		}
		if errors.Is(err, ErrFetch) {
			return res, err
		}
		// A tile that does not hash to the signed root is the log
		// serving another tree than it signed: a fork.
		return res, &checkpoint.StateError{Err: checkpoint.ErrFork, Stored: old, Offered: cp, Detail: err.Error()}
	}
	return res, nil
}

// checkEntries reads the entry bundles covering entries [oldSize, newSize)
// and checks each entry's leaf hash against the tree's.
func checkEntries(f *fetcher, hr tlog.HashReader, oldSize, newSize uint64) (uint64, error) {
	var n uint64
	for b := range tiles.EntryBundles(oldSize, newSize) {
		data, err := f.get(b.Path(), maxTileBytes)
		if err != nil {
			return n, err
		}
		es, err := tiles.SplitBundle(data)
		if err != nil {
			return n, fmt.Errorf("%w: %s: %w", ErrEntries, b.Path(), err)
		}
		if len(es) != b.Width {
			return n, fmt.Errorf("%w: %s holds %d entries, want %d", ErrEntries, b.Path(), len(es), b.Width)
		}
		first := b.Index * tiles.Width
		for i, e := range es {
			idx := first + uint64(i)
			if idx < oldSize {
				continue
			}
			hs, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(idx))})
			if err != nil {
				return n, err
			}
			if tlog.RecordHash(e) != hs[0] {
				return n, fmt.Errorf("%w: entry at index %d (seq %d) in %s does not hash to leaf %s", ErrEntries, idx, idx+1, b.Path(), b64(hs[0]))
			}
			n++
		}
	}
	return n, nil
}

func readOrigin(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "origin"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }

type fetcher struct {
	ctx    context.Context
	base   string
	hc     *http.Client
	header http.Header
}

func (f *fetcher) get(path string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	for k, vs := range f.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: GET %s: %s", ErrFetch, f.base+path, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrFetch, f.base+path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: GET %s: more than %d bytes", ErrFetch, f.base+path, limit)
	}
	return b, nil
}

// tileReader reads hash tiles over HTTP for tlog.TileHashReader, which
// checks them against the tree's root.
type tileReader struct{ f *fetcher }

func (r *tileReader) Height() int { return tiles.Height }

func (r *tileReader) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		if t.H != tiles.Height || t.L < 0 {
			return nil, fmt.Errorf("monitor: unexpected tile %v", t)
		}
		tt := tiles.Tile{Level: t.L, Index: uint64(t.N), Width: t.W}
		b, err := r.f.get(tt.Path(), int64(t.W*tiles.HashSize))
		if err != nil {
			return nil, err
		}
		if len(b) != t.W*tiles.HashSize {
			return nil, fmt.Errorf("%w: %s is %d bytes, want %d", checkpoint.ErrMalformed, tt.Path(), len(b), t.W*tiles.HashSize)
		}
		out[i] = b
	}
	return out, nil
}

func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}
