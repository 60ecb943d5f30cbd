package witness_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

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
