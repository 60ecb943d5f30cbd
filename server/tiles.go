package server

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/govledger/govledger/tiles"
)

// TilesConfig mounts the C2SP tlog-tiles read API (https://c2sp.org/tlog-tiles):
//
//	GET <Prefix>/checkpoint                 the signed checkpoint (Backend.Checkpoint)
//	GET <Prefix>/tile/<L>/<N>[.p/<W>]       hash tiles
//	GET <Prefix>/tile/entries/<N>[.p/<W>]   entry bundles
//
// The checkpoint and the hash tiles are public: they reveal a size and
// hashes only. Entry bundles carry the canonical entries (agents, decisions,
// reasons), so they need ledger:read unless PublicEntries is set.
type TilesConfig struct {
	// Prefix is the path the log is served under: "" for the root, else
	// "/" and segments without a trailing slash ("/log").
	Prefix string
	// PublicEntries serves entry bundles without authentication.
	PublicEntries bool
	// Checkpoint, when set and returning a checkpoint, is served at
	// <prefix>/checkpoint and /v1/checkpoint instead of the backend's: the
	// newest checkpoint witnesses cosigned (serve --witness-policy).
	Checkpoint func() []byte
	// CosignedOnly serves only what Checkpoint returns, never the
	// backend's checkpoint in its place: 503 until there is one (serve
	// --witness-mode fail-closed).
	CosignedOnly bool
}

// A TileBackend is a Backend that reads tlog-tiles resources; Config.Tiles
// needs one. Tile returns the bytes of t (see tiles.Tile): ErrNotFound
// while the ledger is smaller than t.MinTreeSize().
type TileBackend interface {
	Tile(ctx context.Context, t tiles.Tile) ([]byte, error)
}

// Cache-Control of the tile API's answers.
// The checkpoint changes with every commit; a full tile never changes; a
// partial tile never changes either, but a log may drop it once the full
// tile exists, so caches keep it a minute. An entry bundle that needs a
// token is cached by the client only (private).
const cacheCheckpoint = "no-cache"

func tileCacheControl(t tiles.Tile, private bool) string {
	scope := "public"
	if private {
		scope = "private"
	}
	if t.Full() {
		return scope + ", max-age=31536000, immutable"
	}
	return scope + ", max-age=60"
}

func (c *TilesConfig) valid(b Backend) error {
	if c == nil {
		return nil
	}
	if _, ok := b.(TileBackend); !ok {
		return errors.New("server: Config.Tiles needs a Backend that implements TileBackend")
	}
	p := c.Prefix
	if p != "" && (!strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
		strings.ContainsAny(p, "{}?#% \t\n") || p == "/v1" || strings.HasPrefix(p, "/v1/") || p == "/ui" || strings.HasPrefix(p, "/ui/")) {
		return fmt.Errorf("server: tiles prefix %q: want \"\" or \"/name[/name…]\" without a trailing slash, outside /v1 and /ui", p)
	}
	return nil
}

// tileRoutes returns the routes of the tile API (nil without Config.Tiles).
// They are not in Routes(): the API they follow is C2SP's, not openapi.json's.
func (s *Server) tileRoutes() []*route {
	c := s.cfg.Tiles
	if c == nil {
		return nil
	}
	entryScopes := []Scope{ScopeLedgerRead}
	if c.PublicEntries {
		entryScopes = nil
	}
	return []*route{
		{method: "GET", path: c.Prefix + "/checkpoint", capped: true, h: s.getTileCheckpoint},
		{method: "GET", path: c.Prefix + "/tile/{path...}", capped: true, h: s.getTile},
		{method: "GET", path: c.Prefix + "/tile/entries/{path...}", scopes: entryScopes, capped: true, h: s.getTile},
	}
}

func (s *Server) getTileCheckpoint(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	b, err := s.latestCheckpoint(r.Context(), 0)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", tiles.CheckpointContentType)
	w.Header().Set("Cache-Control", cacheCheckpoint)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	return err
}

// cosignedCheckpoint returns the checkpoint of TilesConfig.Checkpoint,
// or nil.
func (s *Server) cosignedCheckpoint() []byte {
	if s.cfg.Tiles == nil || s.cfg.Tiles.Checkpoint == nil {
		return nil
	}
	return s.cfg.Tiles.Checkpoint()
}

func (s *Server) getTile(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	rel := strings.TrimPrefix(r.URL.Path, s.cfg.Tiles.Prefix+"/")
	t, err := tiles.ParsePath(rel)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	b, err := s.cfg.Backend.(TileBackend).Tile(r.Context(), t)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", tiles.TileContentType)
	h.Set("Cache-Control", tileCacheControl(t, t.Entries && !s.cfg.Tiles.PublicEntries))
	if !t.Entries {
		h.Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, err = w.Write(b)
		return err
	}
	// Entry bundles are JSON lines: compressed when the client takes gzip.
	h.Add("Vary", "Accept-Encoding")
	if !acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, err = w.Write(b)
		return err
	}
	h.Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if _, err := zw.Write(b); err != nil {
		return err
	}
	return zw.Close()
}

// acceptsGzip reports whether Accept-Encoding values list gzip (or *)
// with a non-zero quality.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			q := 1.0
			for param := range strings.SplitSeq(params, ";") {
				if k, v, ok := strings.Cut(param, "="); ok && strings.TrimSpace(strings.ToLower(k)) == "q" {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}
