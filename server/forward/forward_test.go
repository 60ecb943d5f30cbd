package forward_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/forward"
	"github.com/govledger/govledger/server/ledgerbackend"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// replica is one "serve" replica on the shared database: its ledger, its
// backend, its campaign for the writer role and the forwarding channel it
// listens on.
type replica struct {
	l    *ledger.Ledger
	lb   *ledgerbackend.Backend
	role *postgres.Role
	fb   *forward.Backend
	hs   *http.Server
	addr string
}

func roleOf(r *postgres.Role) forward.Role {
	return forward.RoleFunc(func() (string, []byte, bool, bool) {
		w, self, ok := r.Writer()
		return w.Addr, w.Secret, self, ok
	})
}

// policyDir unpacks the demo registry once per test.
func policyDir(t *testing.T) string {
	dir := t.TempDir()
	if err := demo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Config(dir, "registry"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func startReplica(t *testing.T, dsn, dir string) *replica {
	t.Helper()
	d, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, nil)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	lb, err := ledgerbackend.New(l, ledgerbackend.Options{Root: filepath.Join(dir, "root"), Poll: 50 * time.Millisecond,
		Load: ledgerbackend.LoadFiles(filepath.Join(dir, "registry", "prompt-manifest.json"), filepath.Join(dir, "registry-lock.json"))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	role, err := d.Campaign(ln.Addr().String(), &postgres.RoleOptions{Poll: 50 * time.Millisecond, Lapse: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { role.Close() })
	r := &replica{l: l, lb: lb, role: role, fb: forward.New(lb, roleOf(role), nil), addr: ln.Addr().String()}
	r.hs = &http.Server{Handler: forward.NewHandler(lb, roleOf(role))}
	go r.hs.Serve(ln)
	t.Cleanup(func() { r.hs.Close() })
	return r
}

// until polls cond every 10ms for up to limit.
func until(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writerOf waits until one of rs holds the role and every other names it,
// and returns the writer and the others.
func writerOf(t *testing.T, rs ...*replica) (*replica, []*replica) {
	t.Helper()
	var w *replica
	until(t, 10*time.Second, "one replica holds the writer role and the others name it", func() bool {
		w = nil
		for _, r := range rs {
			if r.role.Held() {
				if w != nil {
					return false
				}
				w = r
			}
		}
		if w == nil {
			return false
		}
		for _, r := range rs {
			if ww, self, ok := r.role.Writer(); r != w && (self || !ok || ww.Addr != w.addr) {
				return false
			}
		}
		return true
	})
	var others []*replica
	for _, r := range rs {
		if r != w {
			others = append(others, r)
		}
	}
	return w, others
}

func doc(i int) server.SubmitRequest {
	return server.SubmitRequest{Body: fmt.Appendf(nil, "## Status\nstep %d", i), From: "domain-03-technical", To: "domain-02-analysis", Submitter: "w"}
}

// stored checks that res names an entry the ledger holds: its seq, its
// hash, submitted by "w".
func stored(t *testing.T, l *ledger.Ledger, res *server.SubmitResult) {
	t.Helper()
	e, raw, err := l.Get(context.Background(), res.Seq)
	if err != nil {
		t.Fatalf("acknowledged seq %d: %v", res.Seq, err)
	}
	if h := entry.LeafHash(raw); h.String() != res.EntryHash || e.Submitter != "w" {
		t.Fatalf("acknowledged seq %d hash %s, stored %s by %q", res.Seq, res.EntryHash, h, e.Submitter)
	}
}

// TestForward: a replica that does not hold the writer role forwards its
// submissions to the writer, which decides them with the forwarder's
// principal (submitter, sources, idempotency key); its errors cross the
// channel with their sentinel; a wrong secret is refused.
func TestForward(t *testing.T) {
	dsn, dir := pgtest.NewDB(t), policyDir(t)
	a, b := startReplica(t, dsn, dir), startReplica(t, dsn, dir)
	w, others := writerOf(t, a, b)
	f := others[0]
	ctx := context.Background()
	before := w.l.Stats().Entries
	for i := range 20 {
		r := doc(i)
		r.IdempotencyKey = fmt.Sprint("k", i)
		res, err := f.fb.Submit(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		stored(t, f.l, res)
	}
	if s := f.fb.Stats(); s.Forwarded != 20 || s.Local != 0 || s.Fallback != 0 {
		t.Errorf("forwarder stats %+v, want 20 forwarded", s)
	}
	if got := w.l.Stats().Entries - before; got != 20 {
		t.Errorf("the writer's ledger committed %d entries, want the 20 forwarded", got)
	}
	if got := f.l.Stats().Entries; got != 0 {
		t.Errorf("the forwarder committed %d entries itself, want 0", got)
	}
	// The same key through the writer itself: the first answer, replayed.
	r := doc(3)
	r.IdempotencyKey = "k3"
	res, err := w.fb.Submit(ctx, r)
	if err != nil || !res.Replayed {
		t.Fatalf("replay of k3 on the writer = %+v, %v; want replayed", res, err)
	}
	// Errors keep their sentinel.
	r = doc(100)
	r.Sources = []string{"someone-else"}
	if _, err := f.fb.Submit(ctx, r); !errors.Is(err, server.ErrForbiddenSource) {
		t.Errorf("forwarded submission from a forbidden source = %v, want ErrForbiddenSource", err)
	}
	r = doc(101)
	r.IdempotencyKey = "k3"
	if _, err := f.fb.Submit(ctx, r); !errors.Is(err, server.ErrIdempotencyConflict) {
		t.Errorf("forwarded reuse of k3 with other bytes = %v, want ErrIdempotencyConflict", err)
	}
	// A wrong secret is refused, and the writer decides nothing.
	bad := forward.New(f.lb, forward.RoleFunc(func() (string, []byte, bool, bool) {
		return w.addr, bytes.Repeat([]byte{7}, 32), false, true
	}), nil)
	n := w.l.Stats().Entries
	if res, err := bad.Submit(ctx, doc(102)); err != nil || res.Seq == 0 {
		t.Fatalf("submission with a refused secret = %+v, %v; want it decided locally", res, err)
	}
	if s := bad.Stats(); s.Fallback != 1 || w.l.Stats().Entries != n {
		t.Errorf("with a wrong secret: stats %+v, writer entries %d (were %d); want a local fallback and nothing from the writer", s, w.l.Stats().Entries, n)
	}
}

// TestFailoverUnderLoad: 16 clients submit through two replicas, each
// document with its own idempotency key, retrying on 503 as the clients
// are told to. While they do, the writer dies (its forwarding channel
// and its campaign end at once, and its clients go to the other replica,
// as a load balancer would send them): the other replica takes the role
// within seconds, and every acknowledged document is stored, with the
// answer given, exactly once.
func TestFailoverUnderLoad(t *testing.T) {
	dsn, dir := pgtest.NewDB(t), policyDir(t)
	a, b := startReplica(t, dsn, dir), startReplica(t, dsn, dir)
	w, others := writerOf(t, a, b)
	survivor := others[0]
	const clients, total, killAt = 16, 400, 120
	var dead atomic.Bool
	var acked atomic.Int64
	var mu sync.Mutex
	results := map[string]*server.SubmitResult{}
	ctx := context.Background()
	var wg sync.WaitGroup
	var next atomic.Int64
	for c := range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				r := doc(i)
				r.IdempotencyKey = fmt.Sprint("doc-", i)
				var res *server.SubmitResult
				var err error
				for try := 0; try < 200; try++ {
					to := []*replica{w, survivor}[c%2]
					if dead.Load() {
						to = survivor
					}
					res, err = to.fb.Submit(ctx, r)
					if !errors.Is(err, server.ErrUnavailable) && !errors.Is(err, server.ErrOutcomeUnknown) && !errors.Is(err, server.ErrOverloaded) {
						break
					}
					time.Sleep(10 * time.Millisecond) // a client's back-off, not a synchronisation
				}
				if err != nil {
					t.Errorf("doc %d: %v", i, err)
					return
				}
				mu.Lock()
				results[r.IdempotencyKey] = res
				mu.Unlock()
				acked.Add(1)
			}
		})
	}
	until(t, time.Minute, fmt.Sprintf("%d documents acknowledged before the writer dies", killAt), func() bool { return acked.Load() >= killAt })
	// The writer dies: the channel's connections drop mid-request, its
	// session (and the role) ends, its clients go elsewhere.
	died := time.Now()
	dead.Store(true)
	w.hs.Close()
	w.role.Close()
	until(t, 5*time.Second, "the surviving replica takes the writer role", survivor.role.Held)
	t.Logf("the role was handed over in %s", time.Since(died).Round(time.Millisecond))
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(results) != total {
		t.Fatalf("%d documents acknowledged, want %d", len(results), total)
	}
	// Every acknowledged answer is stored, each at its own seq.
	seqs := map[uint64]string{}
	for k, res := range results {
		stored(t, survivor.l, res)
		if o, ok := seqs[res.Seq]; ok {
			t.Fatalf("%s and %s both acknowledged at seq %d", k, o, res.Seq)
		}
		seqs[res.Seq] = k
	}
	// Nothing stored twice: the ledger holds the two snapshots and one
	// entry per document.
	head, _, err := survivor.l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != total+2 {
		t.Errorf("head %d, want %d (2 snapshots and %d documents, each once)", head, total+2, total)
	}
	ws, ss := w.fb.Stats(), survivor.fb.Stats()
	t.Logf("writer: %+v; survivor: %+v", ws, ss)
	if ss.Forwarded == 0 {
		t.Error("the survivor forwarded nothing before the writer died")
	}
}

// TestLostAnswer: a writer that takes a forwarded submission and drops
// the connection without answering may have committed it: without an
// idempotency key the forwarding replica answers ErrOutcomeUnknown and
// decides nothing itself; with one it decides it itself (a replay, had
// the writer committed it). A writer that answers it no longer holds the
// role decided nothing: the submission is decided locally.
func TestLostAnswer(t *testing.T) {
	dir := policyDir(t)
	l, err := bolt.Open(filepath.Join(dir, "l.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lb, err := ledgerbackend.New(l, ledgerbackend.Options{Root: filepath.Join(dir, "root"),
		Load: ledgerbackend.LoadFiles(filepath.Join(dir, "registry", "prompt-manifest.json"), filepath.Join(dir, "registry-lock.json"))})
	if err != nil {
		t.Fatal(err)
	}
	var took atomic.Int64
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		took.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer drop.Close()
	notWriter := httptest.NewServer(forward.NewHandler(lb, forward.RoleFunc(func() (string, []byte, bool, bool) {
		return "elsewhere:1", nil, false, true
	})))
	defer notWriter.Close()
	via := func(url string) *forward.Backend {
		return forward.New(lb, forward.RoleFunc(func() (string, []byte, bool, bool) {
			return strings.TrimPrefix(url, "http://"), []byte("secret"), false, true
		}), nil)
	}
	ctx := context.Background()
	entries := func() uint64 { return l.Stats().Entries }

	fb := via(drop.URL)
	n := entries()
	if _, err := fb.Submit(ctx, doc(1)); !errors.Is(err, server.ErrOutcomeUnknown) || took.Load() != 1 {
		t.Fatalf("lost answer without a key = %v (writer took %d), want ErrOutcomeUnknown after one forward", err, took.Load())
	}
	if entries() != n {
		t.Fatalf("lost answer without a key: %d entries committed locally, want none", entries()-n)
	}
	r := doc(2)
	r.IdempotencyKey = "lost-2"
	res, err := fb.Submit(ctx, r)
	if err != nil || res.Seq == 0 || entries() != n+1 {
		t.Fatalf("lost answer with a key = %+v, %v (%d entries committed); want it decided locally", res, err, entries()-n)
	}
	if s := fb.Stats(); s.Fallback != 1 || s.Lost != 1 || s.Forwarded != 0 {
		t.Errorf("stats %+v, want 1 lost (without a key) and 1 fallback", s)
	}
	fb = via(notWriter.URL)
	res, err = fb.Submit(ctx, doc(3))
	if err != nil || res.Seq == 0 || entries() != n+2 {
		t.Fatalf("forward to a replica that is not the writer = %+v, %v; want it decided locally", res, err)
	}
	if s := fb.Stats(); s.Fallback != 1 {
		t.Errorf("stats %+v, want 1 fallback", s)
	}
}
