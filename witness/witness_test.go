package witness_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/witness"
)

// testWitness is a tlog-witness written from the spec for the test: it
// knows one log key, keeps the last cosigned checkpoint, answers 409 with
// its size when the request's old size is not it, 422 when the proof does
// not hold, and cosigns otherwise.
type testWitness struct {
	mu     sync.Mutex
	logV   note.Verifier
	cosign *checkpoint.Cosigner
	size   uint64
	root   tlog.Hash
}

func (w *testWitness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/add-checkpoint" {
		http.Error(rw, "not found", 404)
		return
	}
	body, _ := io.ReadAll(r.Body)
	head, signed, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		http.Error(rw, "bad body", 400)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Scan()
	old, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "old "), 10, 64)
	if err != nil {
		http.Error(rw, "bad old", 400)
		return
	}
	var proof tlog.TreeProof
	for sc.Scan() {
		h, _ := base64.StdEncoding.DecodeString(sc.Text())
		proof = append(proof, tlog.Hash(h))
	}
	cp, err := checkpoint.Open(signed, note.VerifierList(w.logV), "")
	if err != nil {
		http.Error(rw, err.Error(), 403)
		return
	}
	if old != w.size {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(409)
		fmt.Fprintf(rw, "%d\n", w.size)
		return
	}
	if old > 0 {
		if old == cp.Size && cp.Hash != w.root || old < cp.Size && tlog.CheckTree(proof, int64(cp.Size), cp.Hash, int64(old), w.root) != nil {
			http.Error(rw, "consistency proof does not verify", 422)
			return
		}
	}
	text, _ := cp.Text()
	out, err := note.Sign(&note.Note{Text: string(text)}, w.cosign)
	if err != nil {
		http.Error(rw, err.Error(), 500)
		return
	}
	w.size, w.root = cp.Size, cp.Hash
	_, sigs, _ := bytes.Cut(out, []byte("\n\n"))
	rw.Write(sigs)
}

func grow(t *testing.T, l *ledger.Ledger, n int, tag string) {
	t.Helper()
	for size, _ := l.TreeSize(); size < uint64(n); size, _ = l.TreeSize() {
		_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, x *entry.Entry) error {
			x.Kind, x.Agent, x.Note = entry.KindUnblock, fmt.Sprintf("agent-%d-%s", size, tag), "re-reviewed"
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestSubmit(t *testing.T) {
	const origin = "example.com/witnessed"
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	logV, _ := note.NewVerifier(vkey)
	var ws []*testWitness
	policy := "log " + vkey + "\n"
	for i := range 2 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		c, _ := checkpoint.NewCosigner(fmt.Sprintf("w%d.example", i), priv)
		w := &testWitness{logV: logV, cosign: c}
		srv := httptest.NewServer(w)
		t.Cleanup(srv.Close)
		ws = append(ws, w)
		policy += fmt.Sprintf("witness w%d %s %s\n", i, c.VerifierKey(), srv.URL)
	}
	policy += "group all 2 w0 w1\nquorum all\n"
	p, err := checkpoint.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(filepath.Join(t.TempDir(), "l.db"), &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sub := &witness.Submitter{Policy: p}
	ctx := context.Background()
	submit := func(n int) ([]byte, []witness.Outcome) {
		t.Helper()
		grow(t, l, n, "")
		signed, err := checkpoint.Make(l, signer)
		if err != nil {
			t.Fatal(err)
		}
		return sub.Submit(ctx, l, signed)
	}
	// Size 5 then 20: both witnesses cosign, the quorum holds.
	for _, n := range []int{5, 20} {
		cosigned, outs := submit(n)
		for _, o := range outs {
			if o.Err != nil || o.Size != uint64(n) {
				t.Fatalf("size %d: %s: %v (size %d)", n, o.Witness, o.Err, o.Size)
			}
		}
		if _, who, err := p.Open(cosigned, origin); err != nil || len(who) != 2 {
			t.Fatalf("size %d: cosigned checkpoint: %v (%v)\n%s", n, err, who, cosigned)
		}
	}
	// A new Submitter (a restarted serve) believes the witnesses are at
	// 0: the 409 gives their size, which it adopts and proves from.
	sub = &witness.Submitter{Policy: p}
	cosigned, outs := submit(30)
	for _, o := range outs {
		if o.Err != nil || o.Size != 30 {
			t.Fatalf("after restart: %s: %v (size %d)", o.Witness, o.Err, o.Size)
		}
	}
	if _, _, err := p.Open(cosigned, origin); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	// A fork: the same origin and key, a rewritten tail at size 40. The
	// witnesses, at 30, refuse it (422): ErrFork, no cosignature.
	l2, err := bolt.Open(filepath.Join(t.TempDir(), "fork.db"), &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	grow(t, l2, 40, "forked")
	forked, _ := checkpoint.Make(l2, signer)
	got, outs := sub.Submit(ctx, l2, forked)
	for _, o := range outs {
		if !errors.Is(o.Err, witness.ErrFork) {
			t.Errorf("fork: %s: %v, want ErrFork", o.Witness, o.Err)
		}
	}
	if _, _, err := p.Open(got, origin); !errors.Is(err, checkpoint.ErrPolicy) {
		t.Errorf("forked checkpoint satisfies the policy: %v", err)
	}
	// A rollback: a log of 10 entries, to a witness at 30: the 409 gives
	// a size larger than the log's, which is ErrFork too.
	l3, err := bolt.Open(filepath.Join(t.TempDir(), "old.db"), &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	grow(t, l3, 10, "")
	old, _ := checkpoint.Make(l3, signer)
	_, outs = (&witness.Submitter{Policy: p}).Submit(ctx, l3, old)
	for _, o := range outs {
		if !errors.Is(o.Err, witness.ErrFork) || !strings.Contains(o.Err.Error(), "size 30") {
			t.Errorf("rollback: %s: %v, want ErrFork naming size 30", o.Witness, o.Err)
		}
	}
}
