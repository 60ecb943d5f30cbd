package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// guardHandoffs is the size of guardLedger: enough for branch pages in
// the entries, blobs, tiles and idx_agent buckets (idx_agent's records
// list an agent's seqs of one index flush: 400 source agents make over
// 1,000 records).
const guardHandoffs = 1200

// guardLedger builds a ledger of guardHandoffs handoffs of ~1 KiB (400
// source agents, 3 workflows) from 16 writers, once per test binary.
var guardLedger = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "guard")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "l.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: "test.example/guard"})
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < guardHandoffs; i += 16 {
				if _, err := l.Append(context.Background(), guardHandoff(i).Build()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		l.Close()
		return nil, err
	}
	if err := l.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

func guardHandoff(i int) bolttest.Handoff {
	h := bolttest.Handoff{ID: fmt.Sprintf("h-%04d", i), Source: fmt.Sprintf("agent-%d", i%400), Target: "target", Workflow: fmt.Sprintf("wf-%d", i%3)}
	h.Payload = append(append([]byte(nil), benchPayload...), fmt.Sprint(i)...)
	return h
}

// rawFile reads bbolt's page format from a file's bytes: the test's own
// reading, independent of the driver's, to find the pages a read visits.
type rawFile struct {
	b  []byte
	ps uint64
	hw uint64 // first page id past the data
	rt uint64 // root bucket page
}

func parseRaw(t testing.TB, b []byte) *rawFile {
	t.Helper()
	r := &rawFile{b: b, ps: uint64(binary.LittleEndian.Uint32(b[16+8:]))}
	var txid uint64
	for m := uint64(0); m < 2; m++ {
		meta := b[m*r.ps+16:]
		if tx := binary.LittleEndian.Uint64(meta[48:]); m == 0 || tx > txid {
			txid, r.rt, r.hw = tx, binary.LittleEndian.Uint64(meta[16:]), binary.LittleEndian.Uint64(meta[40:])
		}
	}
	return r
}

func (r *rawFile) page(id uint64) []byte { return r.b[id*r.ps : (id+1)*r.ps] }

func isLeaf(p []byte) bool        { return binary.LittleEndian.Uint16(p[8:]) == 0x02 }
func count(p []byte) int          { return int(binary.LittleEndian.Uint16(p[10:])) }
func elem(p []byte, i int) []byte { return p[16+16*i:] }

func key(p []byte, i int) []byte {
	e, at := elem(p, i), uint32(16+16*i)
	if isLeaf(p) {
		pos := at + binary.LittleEndian.Uint32(e[4:])
		return p[pos : pos+binary.LittleEndian.Uint32(e[8:])]
	}
	pos := at + binary.LittleEndian.Uint32(e[0:])
	return p[pos : pos+binary.LittleEndian.Uint32(e[4:])]
}

// reachable returns the pages of the tree under id; in the root bucket's
// tree (root), those of the buckets it holds too.
func (r *rawFile) reachable(id uint64, root bool) []uint64 {
	p := r.page(id)
	out := []uint64{id}
	for i := range count(p) {
		if !isLeaf(p) {
			out = append(out, r.reachable(binary.LittleEndian.Uint64(elem(p, i)[8:]), root)...)
			continue
		}
		e := elem(p, i)
		if !root || binary.LittleEndian.Uint32(e)&1 == 0 {
			continue
		}
		pos := uint32(16+16*i) + binary.LittleEndian.Uint32(e[4:]) + binary.LittleEndian.Uint32(e[8:])
		if b := binary.LittleEndian.Uint64(p[pos:]); b != 0 {
			out = append(out, r.reachable(b, false)...)
		}
	}
	return out
}

// path returns the pages from the root of bucket ("" for the root bucket)
// to the leaf a search for k reaches, and the element index in each.
func (r *rawFile) path(t *testing.T, bucket string, k []byte) (ids []uint64, idx []int) {
	t.Helper()
	id := r.rt
	if bucket != "" {
		ids, idx := r.path(t, "", []byte(bucket))
		leaf := r.page(ids[len(ids)-1])
		i := idx[len(idx)-1]
		if i >= count(leaf) || string(key(leaf, i)) != bucket {
			t.Fatalf("bucket %q not found", bucket)
		}
		e := elem(leaf, i)
		pos := uint32(16+16*i) + binary.LittleEndian.Uint32(e[4:]) + binary.LittleEndian.Uint32(e[8:])
		if id = binary.LittleEndian.Uint64(leaf[pos:]); id == 0 {
			t.Fatalf("bucket %q is inline", bucket)
		}
	}
	for {
		p := r.page(id)
		n, i := count(p), 0
		for i < n && bytes.Compare(key(p, i), k) < 0 {
			i++
		}
		ids = append(ids, id)
		if isLeaf(p) {
			return ids, append(idx, i)
		}
		if i == n || !bytes.Equal(key(p, i), k) {
			i = max(i-1, 0)
		}
		idx = append(idx, i)
		id = binary.LittleEndian.Uint64(elem(p, i)[8:])
	}
}

// guardFile writes guardLedger's file into t.TempDir() and returns its
// path and bytes.
func guardFile(t *testing.T) (string, []byte) {
	t.Helper()
	orig, err := guardLedger()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g.db")
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, orig
}

// guardRead is a point read (or an iteration) through a guarded open.
type guardRead struct {
	name string
	key  []byte // the key whose search path the read follows
	run  func(l *ledger.Ledger) error
}

// guardReads are reads by bucket, each through a path the test corrupts;
// blobKey is the blobs-bucket key of guardHandoff(700)'s payload.
func guardReads(head uint64, blobKey []byte) map[string][]guardRead {
	ctx := context.Background()
	agent := "agent-3"
	ax := binary.BigEndian.AppendUint64(nil, xxhash.Sum64String(agent))
	be := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	payload := guardHandoff(700).Payload
	sum := entry.Sum256(payload)
	return map[string][]guardRead{
		"entries": {
			{"Get", be(1), func(l *ledger.Ledger) error { _, _, err := l.Get(ctx, 1); return err }},
			// A full level-0 tile is not stored: the proof hashes its
			// entries, read from entry 1 on.
			{"ProveInclusion", be(1), func(l *ledger.Ledger) error {
				_, err := l.ProveInclusion(ctx, 1, head)
				return err
			}},
			{"Scan", be(1), func(l *ledger.Ledger) error {
				return l.Scan(ctx, 1, func(uint64, []byte) error { return nil })
			}},
			// Without an indexed field, Find reads the entries; a time
			// bound is a binary search over them, ending at entry 1 here.
			{"Find all", be(1), func(l *ledger.Ledger) error { _, err := l.Find(ctx, ledger.Query{}); return err }},
			{"Find since", be(1), func(l *ledger.Ledger) error {
				_, err := l.Find(ctx, ledger.Query{Since: time.Unix(1, 0), Limit: 5})
				return err
			}},
		},
		"idx_blob": {
			{"Blob", sum[:], func(l *ledger.Ledger) error { _, err := l.Blob(ctx, sum); return err }},
		},
		"blobs": {
			{"Blob", blobKey, func(l *ledger.Ledger) error {
				b, err := l.Blob(ctx, sum)
				if err == nil && !bytes.Equal(b, payload) {
					return fmt.Errorf("Blob returned other bytes")
				}
				return err
			}},
		},
		"idx_agent": {
			{"Find agent oldest", append(ax, be(1)...), func(l *ledger.Ledger) error {
				_, err := l.Find(ctx, ledger.Query{Agent: agent, Limit: 5})
				return err
			}},
			{"Find agent all", append(ax, be(1)...), func(l *ledger.Ledger) error {
				_, err := l.Find(ctx, ledger.Query{Agent: agent})
				return err
			}},
		},
	}
}

// corruption damages the page structure on a search path: ids are its
// pages from the bucket's root, idx the element taken in each. It returns
// the page the error must name.
type corruption struct {
	name string
	do   func(r *rawFile, ids []uint64, idx []int) (named uint64)
}

var corruptions = []corruption{
	{"branch points at itself", func(r *rawFile, ids []uint64, idx []int) uint64 {
		setChild(r.page(ids[0]), idx[0], ids[0])
		return ids[0]
	}},
	{"branch points at its parent", func(r *rawFile, ids []uint64, idx []int) uint64 {
		// The root's child on the path becomes (or, when it is a branch,
		// stays) a branch whose element on the path leads back to the root.
		// Its one element keeps the key its parent gives it, so only the
		// cycle is wrong.
		p := r.page(ids[1])
		if isLeaf(p) {
			k := append([]byte(nil), key(r.page(ids[0]), idx[0])...)
			binary.LittleEndian.PutUint16(p[8:], 0x01)
			binary.LittleEndian.PutUint16(p[10:], 1)
			binary.LittleEndian.PutUint32(p[16:], 16)
			binary.LittleEndian.PutUint32(p[20:], uint32(len(k)))
			copy(p[32:], k)
			setChild(p, 0, ids[0])
		} else {
			setChild(p, idx[1], ids[0])
		}
		return ids[0]
	}},
	{"branch points past the high-water mark", func(r *rawFile, ids []uint64, idx []int) uint64 {
		setChild(r.page(ids[0]), idx[0], r.hw+2)
		return r.hw + 2
	}},
	{"branch points far past the file", func(r *rawFile, ids []uint64, idx []int) uint64 {
		setChild(r.page(ids[0]), idx[0], 1<<40)
		return 1 << 40
	}},
	{"leaf element points outside the page", func(r *rawFile, ids []uint64, idx []int) uint64 {
		leaf := r.page(ids[len(ids)-1])
		i := min(idx[len(idx)-1], count(leaf)-1)
		binary.LittleEndian.PutUint32(elem(leaf, i)[4:], 0x7fff0000)
		return ids[len(ids)-1]
	}},
}

func setChild(p []byte, i int, id uint64) { binary.LittleEndian.PutUint64(elem(p, i)[8:], id) }

// TestGuardedReadsRefuseDamagedPaths: for each bucket a point read uses,
// each read, and each kind of damage on the very path the read follows
// (a branch pointing at itself, at its parent, past the high-water mark,
// far past the file; a leaf element pointing outside its page), the read
// through a read-only Open without CheckPages returns an error wrapping
// ErrCorrupt that names the bucket and the page. Through bbolt the cycles
// are a fatal stack overflow or an endless loop, the far page a fault.
func TestGuardedReadsRefuseDamagedPaths(t *testing.T) {
	path, orig := guardFile(t)
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := l.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	blobKey, err := bolttest.BlobKey(path, entry.Sum256(guardHandoff(700).Payload))
	if err != nil {
		t.Fatal(err)
	}
	reads := guardReads(head, blobKey)
	for bucket, rs := range reads { // the intact file reads cleanly
		for _, rd := range rs {
			if err := rd.run(l); err != nil {
				t.Fatalf("intact file: %s %s: %v", bucket, rd.name, err)
			}
		}
	}
	l.Close()
	for bucket, rs := range reads {
		for _, rd := range rs {
			for _, c := range corruptions {
				t.Run(bucket+"/"+rd.name+"/"+c.name, func(t *testing.T) {
					data := append([]byte(nil), orig...)
					r := parseRaw(t, data)
					ids, idx := r.path(t, bucket, rd.key)
					if len(ids) < 2 {
						t.Fatalf("bucket %s: the path to %x is %d page(s), want a branch above the leaf", bucket, rd.key, len(ids))
					}
					named := c.do(r, ids, idx)
					if err := os.WriteFile(path, data, 0o600); err != nil {
						t.Fatal(err)
					}
					l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
					if err == nil {
						err = rd.run(l)
						l.Close()
					}
					if !errors.Is(err, ledger.ErrCorrupt) {
						t.Fatalf("%s after %q = %v, want ErrCorrupt", rd.name, c.name, err)
					}
					for _, want := range []string{fmt.Sprintf("bucket %q", bucket), fmt.Sprintf("page %d:", named)} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not name %s", err, want)
						}
					}
				})
			}
		}
	}
}

// TestGuardedOpenRefusesDamagedRoot: the root bucket's pages (and meta's),
// which Open reads through bbolt, are checked at Open.
func TestGuardedOpenRefusesDamagedRoot(t *testing.T) {
	orig, err := guardLedger()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g.db")
	for _, c := range []struct {
		name string
		do   func(p []byte, i int)
	}{
		{"element outside the page", func(p []byte, i int) { binary.LittleEndian.PutUint32(elem(p, i)[4:], 0x7fff0000) }},
		{"not a branch or leaf", func(p []byte, i int) { binary.LittleEndian.PutUint16(p[8:], 0x10) }},
		{"another page's id", func(p []byte, i int) { binary.LittleEndian.PutUint64(p, 7) }},
	} {
		data := append([]byte(nil), orig...)
		r := parseRaw(t, data)
		ids, idx := r.path(t, "", []byte("meta"))
		c.do(r.page(ids[len(ids)-1]), idx[len(idx)-1])
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := bolt.Open(path, &bolt.Options{ReadOnly: true}); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("Open with the root bucket's page damaged (%s) = %v, want ErrCorrupt", c.name, err)
		}
	}
}

// pointReads runs the reads show, log --limit, trace, prove and blocks
// make, and returns each one's outcome: "ok " and a digest of what it
// returned, or "error " and the error's class.
func pointReads(l *ledger.Ledger, seqs []uint64, head uint64, agent, workflow string, blob entry.Hash) []string {
	var out []string
	add := func(v any, err error) {
		switch {
		case err != nil && strings.Contains(err.Error(), "panic"):
			// bbolt is not on a guarded read's path: a recovered panic
			// is a fault of the guard itself.
			out = append(out, "error panic: "+err.Error())
		case errors.Is(err, ledger.ErrCorrupt):
			out = append(out, "error corrupt")
		case errors.Is(err, ledger.ErrNotFound):
			out = append(out, "error not found")
		case err != nil:
			out = append(out, "error "+err.Error())
		default:
			out = append(out, fmt.Sprintf("ok %x", entry.Sum256(fmt.Appendf(nil, "%#v", v))))
		}
	}
	h, hash, err := l.Head(context.Background())
	add([]any{h, hash}, err)
	for _, seq := range seqs {
		_, raw, err := l.Get(context.Background(), seq)
		add(raw, err)
	}
	b, err := l.Blob(context.Background(), blob)
	add(b, err)
	for _, q := range []ledger.Query{
		{Limit: 5, Newest: true},                         // log --limit 5
		{Agent: agent, Limit: 3, Newest: true},           // log --agent --limit 3
		{Agent: agent, Limit: 3},                         // oldest first
		{WorkflowID: workflow},                           // trace
		{Since: time.Unix(1, 0), Limit: 3, Newest: true}, // log --since --limit 3
		{Before: head / 2, Limit: 3, Newest: true},       // a page deep in the log
	} {
		add(l.Find(context.Background(), q))
	}
	add(l.ProveInclusion(context.Background(), min(3, head), head))
	add(l.TreeHash(context.Background(), head))
	bs, err := l.Blocks(context.Background())
	var blocks []string
	for _, b := range bs {
		if err != nil || b.Entry == nil {
			break
		}
		c, _ := b.Entry.Canonical()
		blocks = append(blocks, fmt.Sprintf("%s %d %x", b.Agent, b.Seq, entry.Sum256(c)))
	}
	add(blocks, err)
	return out
}

// readOutcomes opens path read-only (walk: with CheckPages) and runs
// pointReads; nil when Open fails.
func readOutcomes(path string, walk bool, seqs []uint64, head uint64, agent, workflow string, blob entry.Hash) ([]string, error) {
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true, NoCreate: true, CheckPages: walk})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return pointReads(l, seqs, head, agent, workflow, blob), nil
}

// checkOutcomes: after one damaged byte, each guarded read either fails
// with ErrCorrupt or returns what the intact file gives or what bbolt
// gives on the same bytes once the full page walk accepted them (damage
// inside a key or value, which no page check can see).
func checkOutcomes(t *testing.T, what string, guarded, intact, walked []string) {
	t.Helper()
	for k, g := range guarded {
		if g == "error corrupt" || g == intact[k] || walked != nil && g == walked[k] {
			continue
		}
		w := "(walk refused the file)"
		if walked != nil {
			w = walked[k]
		}
		t.Errorf("%s: read %d: guarded %q, intact %q, walked %s", what, k, g, intact[k], w)
	}
}

var guardSeed = flag.Uint64("guard-seed", 0, "seed of TestGuardedReadsRandomDamage (0: the time)")

var guardFlips = flag.Int("guard-flips", 100, "one-byte damages of page structure in TestGuardedReadsRandomDamage")

// TestGuardedReadsRandomDamage damages one byte of the page structure (a
// page header, or an element: its offsets, sizes, child page id) of a
// random page in use of a ledger with branch pages, and runs the point
// reads through the guarded open: never a crash or a hang, and each
// outcome allowed by checkOutcomes.
func TestGuardedReadsRandomDamage(t *testing.T) {
	orig, err := guardLedger()
	if err != nil {
		t.Fatal(err)
	}
	seed := *guardSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-guard-seed to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	path := filepath.Join(t.TempDir(), "g.db")
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	head := uint64(guardHandoffs * 3) // an upper bound; the reads clamp
	if l, err := bolt.Open(path, &bolt.Options{ReadOnly: true}); err == nil {
		head, _, _ = l.Head(t.Context())
		l.Close()
	}
	seqs := []uint64{1, 2, head / 3, head / 2, head - 1, head, head + 1}
	blob := entry.Sum256(guardHandoff(500).Payload)
	read := func(walk bool) ([]string, error) {
		return readOutcomes(path, walk, seqs, head, "agent-5", "wf-1", blob)
	}
	intact, err := read(false)
	if err != nil {
		t.Fatal(err)
	}
	if walked, _ := read(true); !slices.Equal(walked, intact) {
		t.Fatalf("intact file: guarded reads %q, bbolt's %q", intact, walked)
	}
	r := parseRaw(t, orig)
	inUse := r.reachable(r.rt, true) // the pages of every bucket's tree
	var refused, corrupt int
	for i := range *guardFlips {
		data := append([]byte(nil), orig...)
		id := inUse[rng.IntN(len(inUse))]
		p := r.page(id)
		at := rng.IntN(16 + 16*count(p))
		p = data[id*r.ps:]
		p[at] ^= byte(1 + rng.IntN(255))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		guarded, err := read(false)
		if err != nil {
			refused++
			if !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("flip %d (page %d byte %d): guarded Open = %v, want ErrCorrupt", i, id, at, err)
			}
			continue
		}
		walked, werr := read(true)
		if os.Getenv("GUARD_DEBUG") != "" {
			t.Logf("flip %d (page %d byte %d): walk: %v", i, id, at, werr)
		}
		for _, g := range guarded {
			if g == "error corrupt" {
				corrupt++
				break
			}
		}
		checkOutcomes(t, fmt.Sprintf("flip %d (page %d byte %d)", i, id, at), guarded, intact, walked)
	}
	t.Logf("%d damaged pages: %d refused at Open, %d with reads failing as corrupt", *guardFlips, refused, corrupt)
}

// FuzzGuardedReads damages bytes of the pages in use of a ledger with
// branch pages (each input: a list of 5-byte patches, offset and xor
// mask) and runs the point reads through the guarded open: no crash, no
// hang, no recovered panic (a guarded read never runs bbolt's cursor).
// It then runs them through the open that walks every page first
// (CheckPages), which must refuse whatever would crash bbolt's cursors:
// no crash, no hang (a recovered panic is an error there).
func FuzzGuardedReads(f *testing.F) {
	orig, err := guardLedger()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0, 0x40, 0, 0, 1})
	f.Add([]byte{24, 0x80, 0, 0, 0xff, 16, 0x80, 0, 0, 3})
	r := parseRaw(f, orig)
	inUse := uint32(min(r.hw*r.ps, uint64(len(orig))))
	orig = orig[:inUse] // the file past the high-water mark is room to grow
	blob := entry.Sum256(guardHandoff(500).Payload)
	seqs := []uint64{1, 2, 400, 1199, 1200, 1201}
	f.Fuzz(func(t *testing.T, patches []byte) {
		data := append([]byte(nil), orig...)
		for ; len(patches) >= 5; patches = patches[5:] {
			data[binary.LittleEndian.Uint32(patches)%inUse] ^= patches[4]
		}
		path := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := readOutcomes(path, false, seqs, 1202, "agent-5", "wf-1", blob)
		if err != nil && strings.Contains(err.Error(), "panic") {
			t.Fatalf("Open: %v", err)
		}
		for i, o := range out {
			if strings.HasPrefix(o, "error panic") {
				t.Errorf("read %d: %s", i, o)
			}
		}
		if _, err := readOutcomes(path, true, seqs, 1202, "agent-5", "wf-1", blob); err != nil && !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("Open(CheckPages) of a damaged file: %v, want nil or ErrCorrupt", err)
		}
	})
}

// TestFindBoundedByStoredEntries: a damaged head seq (its top byte
// flipped: the head is then ~2^56) does not size a list of candidates
// beyond the indexed entries (seen: an out-of-memory crash after one
// random flip); Find reports the missing entries as corruption.
func TestFindBoundedByStoredEntries(t *testing.T) {
	path, _ := guardFile(t)
	if err := bolttest.FlipByte(path, "meta", []byte("head"), 0); err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		if errors.Is(err, ledger.ErrCorrupt) {
			return // refused at Open: as good
		}
		t.Fatal(err)
	}
	defer l.Close()
	for _, q := range []ledger.Query{{WorkflowID: "wf-1"}, {Agent: "agent-5"}, {}} {
		if _, err := l.Find(t.Context(), q); !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("Find(%+v) on a head beyond the entries = %v, want ErrCorrupt", q, err)
		}
	}
}
