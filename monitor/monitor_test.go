package monitor_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/monitor"
	"github.com/govledger/govledger/tiles"
)

func grow(t *testing.T, l *ledger.Ledger, n int) {
	t.Helper()
	for size, _ := l.TreeSize(t.Context()); size < uint64(n); size, _ = l.TreeSize(t.Context()) {
		_, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, x *entry.Entry) error {
			x.Kind, x.Agent, x.Note = entry.KindUnblock, fmt.Sprintf("agent-%d", size), "re-reviewed"
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckStaticLog follows a published (static) tlog-tiles folder over
// HTTP: growth with entries checked; a doctored entry bundle is an
// ENTRIES finding; another origin at the same URL is an ORIGIN finding.
func TestCheckStaticLog(t *testing.T) {
	ctx := context.Background()
	const origin = "example.com/monitored"
	skey, vkey, _ := checkpoint.GenerateKey(rand.Reader, origin)
	signer, _ := note.NewSigner(skey)
	policy, err := checkpoint.ParsePolicy([]byte("log " + vkey + "\nquorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(filepath.Join(t.TempDir(), "l.db"), &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	state := t.TempDir()
	o := monitor.Options{Log: srv.URL, Policy: policy, State: state, Entries: true}
	publish := func(n int) {
		t.Helper()
		grow(t, l, n)
		if _, err := tiles.Publish(ctx, l, dir, tiles.PublishOptions{Signer: signer, Entries: true}); err != nil {
			t.Fatal(err)
		}
	}
	publish(10)
	if r, err := monitor.Check(ctx, o); err != nil || r.Size != 10 || !r.Updated || r.Entries != 10 {
		t.Fatalf("first: %+v %v", r, err)
	}
	publish(300)
	if r, err := monitor.Check(ctx, o); err != nil || r.Size != 300 || r.OldSize != 10 || r.Entries != 290 {
		t.Fatalf("growth: %+v %v", r, err)
	}
	publish(320)
	// Doctor the partial bundle of entries 257..320: one byte of an entry.
	b := tiles.Tile{Entries: true, Index: 1, Width: 64}
	p := filepath.Join(dir, filepath.FromSlash(b.Path()))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 1
	os.WriteFile(p, data, 0o644)
	if _, err := monitor.Check(ctx, o); !errors.Is(err, monitor.ErrEntries) {
		t.Fatalf("doctored bundle: %v, want ErrEntries", err)
	}
	// The state did not move past the finding.
	st, _ := checkpoint.OpenState(state)
	if cp, _ := st.Latest(origin); cp.Size != 300 {
		t.Fatalf("state at %d after the finding, want 300", cp.Size)
	}
	// Another log published at the same URL: ORIGIN.
	l2, err := bolt.Open(filepath.Join(t.TempDir(), "other.db"), &bolt.Options{Origin: "example.com/other"})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	grow(t, l2, 5)
	skey2, vkey2, _ := checkpoint.GenerateKey(rand.Reader, "example.com/other")
	signer2, _ := note.NewSigner(skey2)
	dir2 := t.TempDir()
	if _, err := tiles.Publish(ctx, l2, dir2, tiles.PublishOptions{Signer: signer2}); err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(http.FileServer(http.Dir(dir2)))
	defer srv2.Close()
	p2, _ := checkpoint.ParsePolicy([]byte("log " + vkey + "\nlog " + vkey2 + "\nquorum none\n"))
	if _, err := monitor.Check(ctx, monitor.Options{Log: srv2.URL, Policy: p2, State: state}); !errors.Is(err, monitor.ErrOrigin) {
		t.Fatalf("another origin: %v, want ErrOrigin", err)
	}
}
