package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/tiles"
)

// tileFake is the fake backend with a tree of tileFakeSize entries whose
// tiles are filled with a byte derived from their path.
type tileFake struct {
	*fakeBackend
}

const tileFakeSize = 600

func tileBytes(t tiles.Tile) []byte {
	if t.Entries {
		var b []byte
		for i := range t.Width {
			b, _ = tiles.AppendEntry(b, fmt.Appendf(nil, `{"kind":"unblock","seq":%d,"note":"%s"}`, t.Index*256+uint64(i)+1, strings.Repeat("reviewed ", 20)))
		}
		return b
	}
	return bytes.Repeat([]byte{byte(len(t.Path()))}, t.Width*tiles.HashSize)
}

func (f tileFake) Tile(ctx context.Context, t tiles.Tile) ([]byte, error) {
	if t.MinTreeSize() > tileFakeSize {
		return nil, fmt.Errorf("%w: %s beyond the head", server.ErrNotFound, t.Path())
	}
	return tileBytes(t), nil
}

func startTiles(t *testing.T, c server.TilesConfig) *harness {
	return start(t, func(cfg *server.Config) {
		cfg.Backend = tileFake{cfg.Backend.(*fakeBackend)}
		cfg.Tiles = &c
	})
}

func TestTilesRoutes(t *testing.T) {
	h := startTiles(t, server.TilesConfig{})
	for _, c := range []struct {
		path, as, cache string
		status          int
	}{
		{"/checkpoint", "", "no-cache", 200},
		{"/tile/0/000", "", "public, max-age=31536000, immutable", 200},
		{"/tile/0/001", "", "public, max-age=31536000, immutable", 200},
		{"/tile/0/002.p/88", "", "public, max-age=60", 200},
		{"/tile/0/000.p/7", "", "public, max-age=60", 200},
		{"/tile/1/000.p/2", "", "public, max-age=60", 200},
		{"/tile/0/002", "", "", 404},
		{"/tile/1/000", "", "", 404},
		{"/tile/0/0", "", "", 404},
		{"/tile/0/000.p/0", "", "", 404},
		{"/tile/data/000", "", "", 404},
		{"/tile/entries/000", "", "", 401},
		{"/tile/entries/000", pPayload, "", 403},
		{"/tile/entries/000", pReader, "private, max-age=31536000, immutable", 200},
		{"/tile/entries/002.p/88", pReader, "private, max-age=60", 200},
		{"/tile/entries/003", pReader, "", 404},
	} {
		r := h.do(req{method: "GET", path: c.path, as: c.as, headers: map[string]string{"Accept-Encoding": "identity"}})
		if r.status != c.status {
			t.Errorf("GET %s as %q: %d, want %d (%s)", c.path, c.as, r.status, c.status, r.body)
			continue
		}
		if c.status != 200 {
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("GET %s: %d with Content-Type %q, want a problem", c.path, r.status, ct)
			}
			continue
		}
		if got := r.header.Get("Cache-Control"); got != c.cache {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.path, got, c.cache)
		}
		if c.path == "/checkpoint" {
			if ct := r.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("GET /checkpoint: Content-Type %q", ct)
			}
			continue
		}
		if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("GET %s: Content-Type %q", c.path, ct)
		}
		tile, _ := tiles.ParsePath(strings.TrimPrefix(c.path, "/"))
		if !bytes.Equal(r.body, tileBytes(tile)) {
			t.Errorf("GET %s: %d bytes, not the tile's %d", c.path, len(r.body), len(tileBytes(tile)))
		}
	}
	for _, rt := range h.srv.Routes() {
		if strings.Contains(rt.Path, "tile") || strings.HasSuffix(rt.Path, "/checkpoint") && !strings.HasPrefix(rt.Path, "/v1/") {
			t.Errorf("Routes() lists %s: the tile API is C2SP's, not in openapi.json", rt.Path)
		}
	}
}

// TestTilesGzip checks that an entry bundle is gzip'd for a client that
// takes gzip, and sent as is otherwise.
func TestTilesGzip(t *testing.T) {
	h := startTiles(t, server.TilesConfig{})
	want := tileBytes(tiles.Tile{Entries: true, Width: 256})
	for _, c := range []struct {
		accept string
		gzip   bool
	}{{"gzip", true}, {"br, gzip;q=0.5", true}, {"*", true}, {"identity", false}, {"gzip;q=0", false}, {"br", false}} {
		r := h.do(req{method: "GET", path: "/tile/entries/000", as: pReader, headers: map[string]string{"Accept-Encoding": c.accept}})
		if r.status != 200 {
			t.Fatalf("Accept-Encoding %q: %d", c.accept, r.status)
		}
		body := r.body
		if got := r.header.Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", c.accept, r.header.Get("Content-Encoding"))
		}
		if c.gzip {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
			if len(r.body) >= len(body) {
				t.Errorf("gzip'd bundle is %d bytes, the bundle %d", len(r.body), len(body))
			}
		}
		if !bytes.Equal(body, want) {
			t.Errorf("Accept-Encoding %q: the bundle differs", c.accept)
		}
		if !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: no Vary: Accept-Encoding", c.accept)
		}
	}
}

func TestTilesPrefixAndPublicEntries(t *testing.T) {
	h := startTiles(t, server.TilesConfig{Prefix: "/log/a", PublicEntries: true})
	for path, status := range map[string]int{
		"/log/a/checkpoint": 200, "/log/a/tile/0/000": 200, "/log/a/tile/entries/000": 200, "/log/a/tile/entries/002.p/88": 200,
		"/checkpoint": 404, "/tile/0/000": 404, "/log/tile/0/000": 404,
	} {
		if r := h.do(req{method: "GET", path: path}); r.status != status {
			t.Errorf("GET %s without a token: %d, want %d", path, r.status, status)
		} else if status == 200 && strings.Contains(path, "entries") && !strings.HasPrefix(r.header.Get("Cache-Control"), "public") {
			t.Errorf("GET %s: Cache-Control %q, want public", path, r.header.Get("Cache-Control"))
		}
	}
}

func TestTilesConfigRefused(t *testing.T) {
	for _, p := range []string{"log", "/log/", "/", "//log", "/v1", "/v1/log", "/ui", "/a b", "/{x}"} {
		_, err := server.New(server.Config{Backend: tileFake{newFake(nil)}, Tokens: server.NewTokenStore(&server.TokensFile{}, nil), Tiles: &server.TilesConfig{Prefix: p}})
		if err == nil {
			t.Errorf("prefix %q: no error", p)
		}
	}
	_, err := server.New(server.Config{Backend: newFake(nil), Tokens: server.NewTokenStore(&server.TokensFile{}, nil), Tiles: &server.TilesConfig{}})
	if err == nil || !strings.Contains(err.Error(), "TileBackend") {
		t.Errorf("Tiles over a backend without Tile: %v", err)
	}
}

// TestCosignedOnly: with TilesConfig.CosignedOnly, /checkpoint and
// /v1/checkpoint answer 503 until Checkpoint returns a cosigned one, never
// the backend's; without it, the backend's is served meanwhile.
func TestCosignedOnly(t *testing.T) {
	var cosigned atomic.Pointer[[]byte]
	get := func() []byte {
		if p := cosigned.Load(); p != nil {
			return *p
		}
		return nil
	}
	closed := startTiles(t, server.TilesConfig{Checkpoint: get, CosignedOnly: true})
	open := startTiles(t, server.TilesConfig{Checkpoint: get})
	for _, path := range []string{"/checkpoint", "/v1/checkpoint"} {
		r := closed.do(req{method: "GET", path: path, as: pReader})
		if p := closed.problem(r); r.status != 503 || p.Code != server.CodeUnavailable || !strings.Contains(p.Detail, "cosigned") {
			t.Errorf("fail-closed %s before a cosigned checkpoint: %d %s", path, r.status, r.body)
		}
		if r := open.do(req{method: "GET", path: path, as: pReader}); r.status != 200 {
			t.Errorf("fail-open %s before a cosigned checkpoint: %d %s", path, r.status, r.body)
		}
	}
	cp := []byte("example.com/log\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— cosigned\n")
	cosigned.Store(&cp)
	for _, path := range []string{"/checkpoint", "/v1/checkpoint"} {
		if r := closed.do(req{method: "GET", path: path, as: pReader}); r.status != 200 || !bytes.Equal(r.body, cp) {
			t.Errorf("fail-closed %s: %d %s", path, r.status, r.body)
		}
	}
}
