package witness_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/time/rate"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/witness"
	"github.com/govledger/govledger/witness/witnesstest"
)

func grow(t *testing.T, l *ledger.Ledger, n int, tag string) {
	t.Helper()
	for size, _ := l.TreeSize(t.Context()); size < uint64(n); size, _ = l.TreeSize(t.Context()) {
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
	var ws []*witnesstest.Witness
	policy := "log " + vkey + "\n"
	for i := range 2 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		c, _ := checkpoint.NewCosigner(fmt.Sprintf("w%d.example", i), priv)
		w := witnesstest.New(logV, c)
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
		signed, err := checkpoint.Make(ctx, l, signer)
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
	for i, w := range ws {
		if w.Size() != 30 {
			t.Fatalf("witness %d at size %d, want 30", i, w.Size())
		}
	}
	// A fork: the same origin and key, a rewritten tail at size 40. The
	// witnesses, at 30, refuse it (422): ErrFork, no cosignature.
	l2, err := bolt.Open(filepath.Join(t.TempDir(), "fork.db"), &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	grow(t, l2, 40, "forked")
	forked, _ := checkpoint.Make(ctx, l2, signer)
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
	old, _ := checkpoint.Make(ctx, l3, signer)
	_, outs = (&witness.Submitter{Policy: p}).Submit(ctx, l3, old)
	for _, o := range outs {
		if !errors.Is(o.Err, witness.ErrFork) || !strings.Contains(o.Err.Error(), "size 30") {
			t.Errorf("rollback: %s: %v, want ErrFork naming size 30", o.Witness, o.Err)
		}
	}
}

// witnessed is a log of origin with two witnesstest witnesses on
// loopback, cosigning under a policy needing both.
type witnessed struct {
	origin string
	signer note.Signer
	policy *checkpoint.Policy
	ws     []*witnesstest.Witness
	l      *ledger.Ledger
}

func newWitnessed(t *testing.T) *witnessed {
	t.Helper()
	x := &witnessed{origin: "example.com/witnessed"}
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, x.origin)
	if err != nil {
		t.Fatal(err)
	}
	x.signer, _ = note.NewSigner(skey)
	logV, _ := note.NewVerifier(vkey)
	policy := "log " + vkey + "\n"
	for i := range 2 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		c, _ := checkpoint.NewCosigner(fmt.Sprintf("w%d.example", i), priv)
		w := witnesstest.New(logV, c)
		srv := httptest.NewServer(w)
		t.Cleanup(srv.Close)
		x.ws = append(x.ws, w)
		policy += fmt.Sprintf("witness w%d %s %s\n", i, c.VerifierKey(), srv.URL)
	}
	policy += "group all 2 w0 w1\nquorum all\n"
	if x.policy, err = checkpoint.ParsePolicy([]byte(policy)); err != nil {
		t.Fatal(err)
	}
	if x.l, err = bolt.Open(filepath.Join(t.TempDir(), "l.db"), &bolt.Options{Origin: x.origin}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.l.Close() })
	return x
}

func (x *witnessed) submit(t *testing.T, ctx context.Context, sub *witness.Submitter, n int) ([]byte, []witness.Outcome) {
	t.Helper()
	grow(t, x.l, n, "")
	signed, err := checkpoint.Make(ctx, x.l, x.signer)
	if err != nil {
		t.Fatal(err)
	}
	return sub.Submit(ctx, x.l, signed)
}

// TestStateRestart: the sizes a Submitter learnt, saved with SaveState
// (mode 0600) and loaded into a new Submitter (a restarted serve), let it
// prove from the witnesses' sizes at once: no 409. Without them, each
// witness answers one 409.
func TestStateRestart(t *testing.T) {
	x := newWitnessed(t)
	ctx := context.Background()
	var requests atomic.Int32
	sub := &witness.Submitter{Policy: x.policy, OnRequest: func(string, error) { requests.Add(1) }}
	if _, outs := x.submit(t, ctx, sub, 12); outs[0].Err != nil || outs[1].Err != nil {
		t.Fatalf("first submission: %+v", outs)
	}
	if requests.Load() != 2 {
		t.Fatalf("%d requests, want 2", requests.Load())
	}
	path := filepath.Join(t.TempDir(), "witness-state.json")
	names := map[string]string{x.policy.Witnesses[0].Key: "w0"}
	if err := witness.SaveState(path, x.origin, sub.Sizes(), names); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v, want 0600", err, fi.Mode())
	}
	sizes, err := witness.LoadState(path, x.origin)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[x.policy.Witnesses[0].Key] != 12 || sizes[x.policy.Witnesses[1].Key] != 12 {
		t.Fatalf("loaded sizes %v, want both witnesses at 12", sizes)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"name":"w0"`) {
		t.Errorf("state file lacks the witness's name:\n%s", b)
	}

	restarted := &witness.Submitter{Policy: x.policy}
	restarted.SetSizes(sizes)
	if _, outs := x.submit(t, ctx, restarted, 20); outs[0].Err != nil || outs[1].Err != nil {
		t.Fatalf("after restart: %+v", outs)
	}
	for i, w := range x.ws {
		if c := w.Answers(http.StatusConflict); c != 0 {
			t.Errorf("witness %d answered %d 409s after a restart with the state", i, c)
		}
		if w.Size() != 20 {
			t.Errorf("witness %d at %d, want 20", i, w.Size())
		}
	}
	// Without the state: one 409 each, then cosigned.
	forgetful := &witness.Submitter{Policy: x.policy}
	if _, outs := x.submit(t, ctx, forgetful, 25); outs[0].Err != nil || outs[1].Err != nil {
		t.Fatalf("without the state: %+v", outs)
	}
	for i, w := range x.ws {
		if c := w.Answers(http.StatusConflict); c != 1 {
			t.Errorf("witness %d answered %d 409s without the state, want 1", i, c)
		}
	}

	// A state the ledger is behind: a rollback, found without a request.
	behind := &witness.Submitter{Policy: x.policy}
	behind.SetSizes(map[string]uint64{x.policy.Witnesses[0].Key: 1000, x.policy.Witnesses[1].Key: 25})
	_, outs := x.submit(t, ctx, behind, 25)
	if !errors.Is(outs[0].Err, witness.ErrFork) || outs[1].Err != nil {
		t.Errorf("state at 1000, ledger at 25: %+v, want ErrFork from w0 only", outs)
	}
}

// TestStateFileErrors: LoadState refuses another log's state and a file
// that is not one, naming the file; a missing file is an empty state.
func TestStateFileErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if m, err := witness.LoadState(path, "a.example/log"); err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v %v", m, err)
	}
	if err := witness.SaveState(path, "a.example/log", map[string]uint64{"w+1+x": 3}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := witness.LoadState(path, "b.example/log"); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"a.example/log"`) {
		t.Errorf("another log's state: %v", err)
	}
	for name, body := range map[string]string{
		"schema":  `{"schema":"other/v1","origin":"a.example/log","witnesses":[]}`,
		"unknown": `{"schema":"govledger.witness-state/v1","origin":"a.example/log","witnesses":[],"extra":1}`,
		"nokey":   `{"schema":"govledger.witness-state/v1","origin":"a.example/log","witnesses":[{"key":"","size":1}]}`,
		"dup":     `{"schema":"govledger.witness-state/v1","origin":"a.example/log","witnesses":[{"key":"k","size":1},{"key":"k","size":2}]}`,
		"json":    `{"schema":`,
	} {
		os.WriteFile(path, []byte(body), 0o600)
		if _, err := witness.LoadState(path, "a.example/log"); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}

// TestRate: with a declared rate, a witness gets no second request
// before its budget allows: a Submit whose context ends before then sends
// nothing and says why.
func TestRate(t *testing.T) {
	x := newWitnessed(t)
	var requests atomic.Int32
	sub := &witness.Submitter{Policy: x.policy, Rate: rate.Every(time.Hour), OnRequest: func(string, error) { requests.Add(1) }}
	if _, outs := x.submit(t, context.Background(), sub, 3); outs[0].Err != nil || outs[1].Err != nil {
		t.Fatalf("first submission: %+v", outs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, outs := x.submit(t, ctx, sub, 4)
	for _, o := range outs {
		if !errors.Is(o.Err, witness.ErrWitness) || !strings.Contains(o.Err.Error(), "declared rate") {
			t.Errorf("%s: %v, want a wait for the declared rate", o.Witness, o.Err)
		}
	}
	if requests.Load() != 2 || x.ws[0].Size() != 3 {
		t.Errorf("%d requests (want 2), witness at %d (want 3)", requests.Load(), x.ws[0].Size())
	}
}
