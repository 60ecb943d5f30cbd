package ledgerbackend_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/client"
	"github.com/govledger/govledger/server/ledgerbackend"
)

// countingSigner counts the checkpoints it signs.
type countingSigner struct {
	note.Signer
	n atomic.Int64
}

func (s *countingSigner) Sign(msg []byte) ([]byte, error) {
	s.n.Add(1)
	return s.Signer.Sign(msg)
}

type readers struct{}

func (readers) Bearer(token string) (*server.Principal, error) {
	if token != "r" {
		return nil, server.ErrUnauthenticated
	}
	return &server.Principal{Name: "reader", Scopes: []server.Scope{server.ScopeLedgerRead}}, nil
}
func (readers) Certificate(string) (*server.Principal, error) { return nil, server.ErrUnauthenticated }

// TestProofOnlyAtLatest: a reader asking for the proof of an entry in an
// old tree (tree_size=K) gets the latest checkpoint, an inclusion proof
// against it and a consistency proof from K that verifies against the
// root of K computed here; the server signs one checkpoint per head size,
// whatever the readers ask, and never one of size K.
func TestProofOnlyAtLatest(t *testing.T) {
	dir := t.TempDir()
	if err := demo.Unpack(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Config(dir, "registry"); err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(filepath.Join(dir, "l.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, l.Origin())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	signer := &countingSigner{Signer: ns}
	b, err := ledgerbackend.New(l, ledgerbackend.Options{Root: filepath.Join(dir, "root"), Signer: signer,
		Load: ledgerbackend.LoadFiles(filepath.Join(dir, "registry", "prompt-manifest.json"), filepath.Join(dir, "registry-lock.json"))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 10 {
		if _, err := b.Submit(ctx, vbw(i)); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := l.TreeSize(ctx) // 12: the two snapshots and ten handoffs
	srv, err := server.New(server.Config{Backend: b, Tokens: readers{}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	get := func(path string) server.Proof {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer r")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var pf server.Proof
		if err := json.UnmarshalRead(resp.Body, &pf, json.RejectUnknownMembers(true)); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		return pf
	}
	hash := func(s string) tlog.Hash {
		t.Helper()
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != 32 {
			t.Fatalf("hash %q: %v", s, err)
		}
		return tlog.Hash(b)
	}
	for _, k := range []uint64{3, 5, 8, head} {
		for seq := uint64(1); seq <= k; seq += 2 {
			pf := get(fmt.Sprintf("/v1/entries/%d/proof?tree_size=%d", seq, k))
			cp, err := checkpoint.Open([]byte(pf.Checkpoint), note.VerifierList(nv), l.Origin())
			if err != nil {
				t.Fatalf("tree_size=%d seq %d: checkpoint: %v", k, seq, err)
			}
			if cp.Size != head || pf.TreeSize != head {
				t.Fatalf("tree_size=%d seq %d: checkpoint of size %d, proof of %d; want the latest, %d", k, seq, cp.Size, pf.TreeSize, head)
			}
			if err := tlog.CheckRecord(hashesOf(t, pf.Hashes), int64(head), cp.Hash, int64(seq-1), hash(pf.LeafHash)); err != nil {
				t.Fatalf("tree_size=%d seq %d: inclusion in the latest: %v", k, seq, err)
			}
			oldRoot, err := l.TreeHash(ctx, k) // the reader's own root of size k
			if err != nil {
				t.Fatal(err)
			}
			c := pf.Consistency
			if c == nil || c.From != k || c.To != head {
				t.Fatalf("tree_size=%d seq %d: consistency %+v, want %d..%d", k, seq, c, k, head)
			}
			if err := tlog.CheckTree(hashesOf(t, c.Hashes), int64(head), cp.Hash, int64(k), tlog.Hash(oldRoot)); err != nil {
				t.Fatalf("tree_size=%d: consistency %d..%d: %v", k, k, head, err)
			}
		}
	}
	if n := signer.n.Load(); n != 1 {
		t.Errorf("%d checkpoints signed for one head, want 1", n)
	}
	// The head moves: one more checkpoint, of the new head, serves again.
	if _, err := b.Submit(ctx, vbw(99)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if pf := get("/v1/entries/2/proof?tree_size=4"); pf.TreeSize != head+1 || pf.Consistency.To != head+1 {
			t.Fatalf("after an append: proof against %d, want %d", pf.TreeSize, head+1)
		}
	}
	// The typed client reads the same answer.
	cl, err := client.New(ts.URL, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	if pf, err := cl.Proof(ctx, 2, 4); err != nil || pf.TreeSize != head+1 || pf.Consistency.From != 4 {
		t.Errorf("client.Proof(2, 4) = %+v, %v", pf, err)
	}
	if pf := get("/v1/entries/2/proof"); pf.Consistency != nil {
		t.Errorf("no tree_size: consistency %+v, want none", pf.Consistency)
	}
	if n := signer.n.Load(); n != 2 {
		t.Errorf("%d checkpoints signed for two heads, want 2", n)
	}
}

func hashesOf(t *testing.T, hs []string) []tlog.Hash {
	t.Helper()
	out := make([]tlog.Hash, len(hs))
	for i, h := range hs {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 32 {
			t.Fatalf("hash %q: %v", h, err)
		}
		out[i] = tlog.Hash(b)
	}
	return out
}

// TestProofWithoutKey: a server without a signing key answers proofs
// against its head with no checkpoint (and the consistency proof asked
// for), and 503 for the checkpoint itself.
func TestProofWithoutKey(t *testing.T) {
	b, l := newBackend(t, 0)
	for i := range 4 {
		if _, err := b.Submit(context.Background(), vbw(i)); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := l.TreeSize(t.Context())
	srv, err := server.New(server.Config{Backend: b, Tokens: readers{}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	do := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer r")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		return resp, buf.Bytes()
	}
	resp, body := do("/v1/entries/2/proof?tree_size=3")
	var pf server.Proof
	if err := json.Unmarshal(body, &pf); err != nil || resp.StatusCode != 200 || pf.TreeSize != head || pf.Checkpoint != "" ||
		pf.Consistency == nil || pf.Consistency.From != 3 || pf.Consistency.To != head {
		t.Errorf("proof without a key: %d %s", resp.StatusCode, body)
	}
	if resp, body := do("/v1/checkpoint"); resp.StatusCode != 503 {
		t.Errorf("checkpoint without a key: %d %s", resp.StatusCode, body)
	}
}
