package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	tessera "github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/ledger/postgres/pgtest"
	"github.com/govledger/govledger/tiles"
)

// A fetcher is what Tessera's client reads a log through: its HTTP or its
// file fetcher.
type fetcher interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error)
}

// rangeRoot rebuilds the root of the tree of size from the tiles alone,
// with Tessera's client (the compact range of the tree) and
// transparency-dev/merkle.
func rangeRoot(t *testing.T, ctx context.Context, f fetcher, size uint64) []byte {
	t.Helper()
	nodes, err := tessera.FetchRangeNodes(ctx, size, f.ReadTile)
	if err != nil {
		t.Fatalf("tessera FetchRangeNodes(%d): %v", size, err)
	}
	rng, err := (&compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}).NewRange(0, size, nodes)
	if err != nil {
		t.Fatal(err)
	}
	root, err := rng.GetRootHash(nil)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// checkTessera reads the log behind f with Tessera's client: it verifies
// the checkpoint, rebuilds its root and a smaller one from the tiles,
// proves entries of the first, an upper and the last entry bundle
// included, and the tree consistent with trees of smaller sizes. With
// entries false, it checks that bundles are refused instead.
func checkTessera(t *testing.T, e *env, f fetcher, entries bool) (size uint64) {
	t.Helper()
	ctx := context.Background()
	cp, _, _, err := tessera.FetchCheckpoint(ctx, f.ReadCheckpoint, e.verifier, origin)
	if err != nil {
		t.Fatalf("tessera FetchCheckpoint: %v", err)
	}
	size = cp.Size
	if size < 65537 {
		t.Fatalf("checkpoint of %d entries: the test needs full upper tiles", size)
	}
	if got := rangeRoot(t, ctx, f, size); !bytes.Equal(got, cp.Hash) {
		t.Fatalf("root rebuilt by Tessera's client %x, checkpoint %x", got, cp.Hash)
	}
	pb, err := tessera.NewProofBuilder(ctx, size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range []uint64{1, 255, 256, 1000, 65536, 65537} {
		oldRoot := rangeRoot(t, ctx, f, old)
		if want := e.roots[old]; !bytes.Equal(oldRoot, want[:]) {
			t.Fatalf("root of %d from the tiles %x, govledger's TreeHash %x", old, oldRoot, want[:])
		}
		p, err := pb.ConsistencyProof(ctx, old, size)
		if err != nil {
			t.Fatalf("tessera ConsistencyProof(%d, %d): %v", old, size, err)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old, size, p, oldRoot, cp.Hash); err != nil {
			t.Fatalf("consistency %d → %d: %v", old, size, err)
		}
	}
	for _, bundle := range []uint64{0, 256, (size - 1) / 256} {
		b, err := tessera.GetEntryBundle(ctx, f.ReadEntryBundle, bundle, size)
		if !entries {
			if err == nil {
				t.Fatalf("entry bundle %d read without ledger:read", bundle)
			}
			continue
		}
		if err != nil {
			t.Fatalf("tessera GetEntryBundle(%d): %v", bundle, err)
		}
		if want := min(256, size-bundle*256); uint64(len(b.Entries)) != want {
			t.Fatalf("bundle %d: %d entries, want %d", bundle, len(b.Entries), want)
		}
		for _, i := range []int{0, len(b.Entries) - 1} {
			idx := bundle*256 + uint64(i)
			if !bytes.Contains(b.Entries[i], fmt.Appendf(nil, `"seq":%d,`, idx+1)) {
				t.Fatalf("entry %d of bundle %d is not seq %d: %s", i, bundle, idx+1, b.Entries[i])
			}
			p, err := pb.InclusionProof(ctx, idx)
			if err != nil {
				t.Fatalf("tessera InclusionProof(%d): %v", idx, err)
			}
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, idx, size, rfc6962.DefaultHasher.HashLeaf(b.Entries[i]), p, cp.Hash); err != nil {
				t.Fatalf("inclusion of leaf %d in %d: %v", idx, size, err)
			}
		}
	}
	return size
}

// checkTorchwood reads the log at base with torchwood's tile client: it
// verifies the checkpoint, rebuilds the root through torchwood's tile hash
// reader, checks consistency proofs built from its tiles, and (with
// entries) walks the last entries with Client.Entries, which authenticates
// each bundle against the tree, and proves one with Client.Entry.
func checkTorchwood(t *testing.T, e *env, base string, hc *http.Client, entries bool) {
	t.Helper()
	ctx := context.Background()
	tf, err := torchwood.NewTileFetcher(base, torchwood.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tf.ReadEndpoint(ctx, tiles.CheckpointPath)
	if err != nil {
		t.Fatalf("torchwood checkpoint: %v", err)
	}
	n, err := note.Open(raw, note.VerifierList(e.verifier))
	if err != nil {
		t.Fatalf("checkpoint note: %v", err)
	}
	cp, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		t.Fatalf("torchwood ParseCheckpoint: %v", err)
	}
	if cp.Origin != origin || cp.N < 65537 {
		t.Fatalf("checkpoint %q of %d entries", cp.Origin, cp.N)
	}
	hr := torchwood.TileHashReaderWithContext(ctx, cp.Tree, tf)
	root, err := tlog.TreeHash(cp.N, hr)
	if err != nil || root != cp.Hash {
		t.Fatalf("root through torchwood's tile reader %v, %v; checkpoint %v", root, err, cp.Hash)
	}
	for _, old := range []int64{1, 256, 65536, 65537} {
		p, err := tlog.ProveTree(cp.N, old, hr)
		if err != nil {
			t.Fatalf("consistency proof %d → %d from torchwood's tiles: %v", old, cp.N, err)
		}
		if err := tlog.CheckTree(p, cp.N, cp.Hash, old, e.roots[uint64(old)]); err != nil {
			t.Fatalf("consistency %d → %d: %v", old, cp.N, err)
		}
	}
	c, err := torchwood.NewClient(tf)
	if err != nil {
		t.Fatal(err)
	}
	start := cp.N - 600
	count := int64(0)
	for i, entry := range c.Entries(ctx, cp.Tree, start) {
		if i != start+count || !bytes.Contains(entry, fmt.Appendf(nil, `"seq":%d,`, i+1)) {
			t.Fatalf("torchwood entry %d (want %d): %.80s", i, start+count, entry)
		}
		count++
	}
	err = c.Err()
	if !entries {
		if err == nil || count != 0 {
			t.Fatalf("torchwood read %d entries without ledger:read (%v)", count, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("torchwood Entries: %v", err)
	}
	// Entries may stop before a partial bundle; the full ones were read.
	if full := (cp.N/256)*256 - start; count < full {
		t.Fatalf("torchwood read %d entries from %d, want at least %d", count, start, full)
	}
	entry, rp, err := c.Entry(ctx, cp.Tree, 65536)
	if err != nil {
		t.Fatalf("torchwood Entry(65536): %v", err)
	}
	if err := tlog.CheckRecord(rp, cp.N, cp.Hash, 65536, tlog.RecordHash(entry)); err != nil {
		t.Fatalf("inclusion of 65536: %v", err)
	}
}

// TestServeBolt: Tessera's and torchwood's clients read the tiles of a real
// "govledger serve" over a bbolt ledger of 70,000 entries; entry bundles
// need a ledger:read token, and are refused without one.
func TestServeBolt(t *testing.T) {
	e := fixture(t)
	db := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, e.db, db)
	base := e.serve(t, db, "--tiles-prefix", "/log")
	u, _ := url.Parse(base + "/log/")

	anon, err := tessera.NewHTTPFetcher(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTessera(t, e, anon, false)
	withToken, _ := tessera.NewHTTPFetcher(u, nil)
	withToken.SetAuthorizationHeader("Bearer " + e.reader)
	checkTessera(t, e, withToken, true)

	checkTorchwood(t, e, base+"/log/", &http.Client{}, false)
	checkTorchwood(t, e, base+"/log/", &http.Client{Transport: bearer{e.reader, http.DefaultTransport}}, true)

	// The full upper tile is there, immutable; the spec's answers.
	res, err := http.Get(base + "/log/tile/1/000")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || len(body) != 8192 || res.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.Contains(res.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("GET tile/1/000: %d, %d bytes, %q, %q", res.StatusCode, len(body), res.Header.Get("Content-Type"), res.Header.Get("Cache-Control"))
	}
	res, err = http.Get(base + "/log/tile/entries/000")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET tile/entries/000 without a token: %d, want 401", res.StatusCode)
	}
}

// TestServePublicEntries: with --public-entries, both clients read the
// entries without a token.
func TestServePublicEntries(t *testing.T) {
	e := fixture(t)
	db := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, e.db, db)
	base := e.serve(t, db, "--public-entries")
	u, _ := url.Parse(base + "/")
	f, _ := tessera.NewHTTPFetcher(u, nil)
	checkTessera(t, e, f, true)
	checkTorchwood(t, e, base, &http.Client{}, true)
}

// TestPublishFolder: "govledger publish" writes a folder that Tessera's
// file fetcher reads and torchwood reads from a plain static file server.
func TestPublishFolder(t *testing.T) {
	e := fixture(t)
	dir := filepath.Join(t.TempDir(), "public")
	if out, code := e.run(t, e.db, "publish", "--key", e.key, "--to", dir, "--entries"); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, out)
	}
	checkTessera(t, e, tessera.FileFetcher{Root: dir}, true)
	static := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer static.Close()
	checkTorchwood(t, e, static.URL, &http.Client{}, true)

	hashesOnly := filepath.Join(t.TempDir(), "hashes")
	if out, code := e.run(t, e.db, "publish", "--key", e.key, "--to", hashesOnly); code != 0 {
		t.Fatalf("publish without --entries: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(hashesOnly, "tile", "entries")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("publish without --entries wrote entry bundles (%v)", err)
	}
	checkTessera(t, e, tessera.FileFetcher{Root: hashesOnly}, false)
}

// TestPublishInterrupted: a publish that fails midway (a folder sits where
// one of its new tiles goes) leaves the old checkpoint, which both clients
// still verify against the folder; once the obstacle is gone the next
// publish completes, and the new tree is consistent with the old.
func TestPublishInterrupted(t *testing.T) {
	e := fixture(t)
	db := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, e.db, db)
	dir := filepath.Join(t.TempDir(), "public")
	if out, code := e.run(t, db, "publish", "--key", e.key, "--to", dir, "--entries"); code != 0 {
		t.Fatalf("publish: exit %d\n%s", code, out)
	}
	oldCP, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.grow(db, 3000); err != nil {
		t.Fatal(err)
	}
	// The new full level-0 tiles are 273 … 284: a folder where 284 goes
	// stops the publish after the first eleven, before the checkpoint.
	block := filepath.Join(dir, "tile", "0", "284")
	if err := os.MkdirAll(filepath.Join(block, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := e.run(t, db, "publish", "--key", e.key, "--to", dir, "--entries")
	if code == 0 {
		t.Fatalf("publish over a blocked tile path succeeded:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); !bytes.Equal(got, oldCP) {
		t.Fatalf("an interrupted publish changed the checkpoint:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "tile", "0", "274")); err != nil {
		t.Fatalf("the interrupted publish wrote no new tile before failing (%v): the test does not interrupt midway", err)
	}
	size := checkTessera(t, e, tessera.FileFetcher{Root: dir}, true)
	if size != bigSize {
		t.Fatalf("old checkpoint of %d entries, want %d", size, bigSize)
	}
	static := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer static.Close()
	checkTorchwood(t, e, static.URL, &http.Client{}, true)

	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	if out, code := e.run(t, db, "publish", "--key", e.key, "--to", dir, "--entries"); code != 0 {
		t.Fatalf("publish after the obstacle is gone: exit %d\n%s", code, out)
	}
	ctx := context.Background()
	f := tessera.FileFetcher{Root: dir}
	cp, _, _, err := tessera.FetchCheckpoint(ctx, f.ReadCheckpoint, e.verifier, origin)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != bigSize+3000 {
		t.Fatalf("new checkpoint of %d entries, want %d", cp.Size, bigSize+3000)
	}
	pb, _ := tessera.NewProofBuilder(ctx, cp.Size, f.ReadTile)
	p, err := pb.ConsistencyProof(ctx, bigSize, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	oldRoot := e.roots[bigSize]
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, bigSize, cp.Size, p, oldRoot[:], cp.Hash); err != nil {
		t.Fatalf("consistency of the published trees: %v", err)
	}
}

// TestServePostgres: the same ledger copied into PostgreSQL ("govledger
// copy") and served from there gives both clients the same tiles, roots
// and proofs.
func TestServePostgres(t *testing.T) {
	e := fixture(t)
	pg := pgtest.Start(t)
	dsn := pg.CreateDB(t)
	if out, code := e.run(t, e.db, "copy", "--from", e.db, "--to", dsn); code != 0 {
		t.Fatalf("copy to PostgreSQL: exit %d\n%s", code, out)
	}
	base := e.serve(t, dsn)
	u, _ := url.Parse(base + "/")
	anon, _ := tessera.NewHTTPFetcher(u, nil)
	checkTessera(t, e, anon, false)
	withToken, _ := tessera.NewHTTPFetcher(u, nil)
	withToken.SetAuthorizationHeader("Bearer " + e.reader)
	checkTessera(t, e, withToken, true)
	checkTorchwood(t, e, base, &http.Client{Transport: bearer{e.reader, http.DefaultTransport}}, true)
}

// waitCheckpoint waits, in a bounded loop, until dir's checkpoint has size
// entries, and returns it.
func waitCheckpoint(t *testing.T, e *env, dir string, size uint64) {
	t.Helper()
	f := tessera.FileFetcher{Root: dir}
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		cp, _, _, err := tessera.FetchCheckpoint(context.Background(), f.ReadCheckpoint, e.verifier, origin)
		if err == nil && cp.Size == size {
			return
		}
		if err == nil {
			err = fmt.Errorf("checkpoint of %d entries", cp.Size)
		}
		last = err
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	t.Fatalf("the folder's checkpoint never reached %d entries: %v", size, last)
}

// TestServePublishTo: serve --publish-to publishes at start (serve brings
// the registry and lock into force there, as the fixture has none: two
// snapshot entries), and again after a commit (an operator's reload of a
// new lock: one more); both clients read the folder.
func TestServePublishTo(t *testing.T) {
	e := fixture(t)
	db := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, e.db, db)
	lock := filepath.Join(t.TempDir(), "prompt-lock.json")
	copyFile(t, e.lock, lock)
	dir := filepath.Join(t.TempDir(), "public")
	base := e.serve(t, db, "--lock", lock, "--publish-to", dir, "--publish-entries")
	waitCheckpoint(t, e, dir, bigSize+2)
	checkTessera(t, e, tessera.FileFetcher{Root: dir}, true)

	// A new lock (one prompt hash changed), brought into force by a reload.
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"sha256:`))
	if i < 0 {
		t.Fatal("the fixture's lock names no sha256 digest")
	}
	copy(b[i+len(`"sha256:`):], strings.Repeat("0", 64))
	if err := os.WriteFile(lock, b, 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", base+"/v1/reload", nil)
	req.Header.Set("Authorization", "Bearer "+e.operator)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || bytes.Count(body, []byte(`"kind":"snapshot"`)) != 1 {
		t.Fatalf("POST /v1/reload: %d %s, want the new lock's snapshot entry", res.StatusCode, body)
	}
	waitCheckpoint(t, e, dir, bigSize+3)
	size := checkTessera(t, e, tessera.FileFetcher{Root: dir}, true)
	static := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer static.Close()
	checkTorchwood(t, e, static.URL, &http.Client{}, true)
	// The live tile API and the folder agree.
	live, _ := url.Parse(base + "/")
	f, _ := tessera.NewHTTPFetcher(live, nil)
	for _, tile := range []tiles.Tile{{Level: 1, Width: 256}, {Level: 0, Index: size / 256, Width: int(size % 256)}} {
		a, err := f.ReadTile(context.Background(), uint64(tile.Level), tile.Index, uint8(tile.Width%256))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, tile.Path()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the server's and the folder's differ (%v)", tile.Path(), err)
		}
	}
}
