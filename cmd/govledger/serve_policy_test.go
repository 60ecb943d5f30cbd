package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

// checkPolicyRecord holds what "only the record decides the policy" means
// on a finished ledger: every snapshot entry names an operator as its
// submitter (the one who started the server, or the principal of a
// reload), no lock in force ever comes back after another replaced it,
// and every block lifted is lifted by an unblock or an operator's lock.
// It returns how many lock snapshots it saw.
func checkPolicyRecord(t *testing.T, l *ledger.Ledger, operators ...string) int {
	t.Helper()
	var locks []entry.Hash
	err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		e, err := entry.Decode(raw)
		if err != nil {
			return err
		}
		if e.Kind != entry.KindSnapshot {
			return nil
		}
		if !slices.Contains(operators, e.Submitter) {
			t.Errorf("seq %d: a %s snapshot submitted by %q, not an operator %q", seq, e.What, e.Submitter, operators)
		}
		if e.What == entry.SnapshotLock {
			for _, old := range locks {
				if old == *e.ContentSHA256 {
					t.Errorf("seq %d: lock %s is back in force after another replaced it", seq, old)
				}
			}
			locks = append(locks, *e.ContentSHA256)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(locks)
}

// newLock edits a prompt the writers' agents do not use and locks again:
// the lock file changes, and the old bytes are returned.
func (e *serveEnv) newLock(t *testing.T, round int) []byte {
	t.Helper()
	old, err := os.ReadFile(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	prompt := filepath.Join(filepath.Dir(e.manifest), "prompts", "domain-06-security.md")
	f, err := os.OpenFile(prompt, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "Reviewed again, round %d.\n", round)
	f.Close()
	if out, code := e.cli("lock"); code != 0 {
		t.Fatalf("lock: %d %s", code, out)
	}
	return old
}

// writeLoad submits n distinct documents as the writer to each server in
// turn from 8 clients; every answer must be a 201.
func (e *serveEnv) writeLoad(t *testing.T, servers []*liveServer, from, n int) {
	tmpl := demoDoc(t, "09-qa-result.vbw.json")
	const path = "/v1/handoffs?from=domain-03-technical&to=domain-02-analysis"
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				b := bytes.Replace(tmpl, []byte("line 42"), fmt.Appendf(nil, "line %d", i), 1)
				a, err := e.try(servers[i%len(servers)], "POST", path, "writer", b)
				if err != nil || a.status != http.StatusCreated {
					t.Errorf("submission %d: %v %d %s", i, err, a.status, a.body)
				}
			}
		})
	}
	for i := from; i < from+n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// TestServePolicyReloadRace: one server, 8 writers, operator reloads of
// new locks racing them. The writers never bring a lock into force: every
// snapshot is the operator's, no lock comes back.
func TestServePolicyReloadRace(t *testing.T) {
	e := newServeEnv(t, "registry")
	s := e.start()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.writeLoad(t, []*liveServer{s}, 0, 400)
	}()
	for round := range 5 {
		e.newLock(t, round)
		if a := e.do(s, "POST", "/v1/reload", "op", []byte("{}"), "Content-Type: application/json"); a.status != http.StatusOK {
			t.Fatalf("reload %d: %d %s", round, a.status, a.body)
		}
	}
	<-done
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	l, err := bolt.Open(e.db, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := checkPolicyRecord(t, l, "test-operator", "op"); n != 6 {
		t.Errorf("%d lock snapshots, want the first and five reloads", n)
	}
	if out, code := e.cli("verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out)
	}
}

// TestServePolicyReplicas: two replicas on one PostgreSQL database, writers
// on both. A reload through A brings a new lock into force; B, which still
// holds the old one in memory, decides its writes under the new one and
// never appends the old. B restarted with the old files (a replica nobody
// reloaded) serves the ledger's policy and says so; the lock never goes
// back.
func TestServePolicyReplicas(t *testing.T) {
	e := newServeEnv(t, "registry")
	pgtest.Shared(t)
	dsn, _ := pgDB(t)
	e.db = dsn
	a, b := e.start(), e.start()
	e.writeLoad(t, []*liveServer{a, b}, 0, 100)
	oldLock := e.newLock(t, 1)
	if r := e.do(a, "POST", "/v1/reload", "op", []byte("{}"), "Content-Type: application/json"); r.status != http.StatusOK {
		t.Fatalf("reload on A: %d %s", r.status, r.body)
	}
	e.writeLoad(t, []*liveServer{a, b}, 100, 100)
	// B restarts with the old lock file: a replica nobody reloaded.
	if code := b.stop(); code != 0 {
		t.Fatalf("stop B: exit %d", code)
	}
	if err := os.WriteFile(e.lock, oldLock, 0o644); err != nil {
		t.Fatal(err)
	}
	b = e.start()
	if log, _ := os.ReadFile(b.log); !bytes.Contains(log, []byte("differ from the policy in force in the ledger")) {
		t.Errorf("B, started with the old lock, does not say it serves the ledger's policy:\n%s", log)
	}
	e.writeLoad(t, []*liveServer{a, b}, 200, 100)
	for _, s := range []*liveServer{a, b} {
		if code := s.stop(); code != 0 {
			t.Errorf("stop: exit %d", code)
		}
	}
	d, err := postgres.Open(context.Background(), dsn, &postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, &ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := checkPolicyRecord(t, l, "test-operator", "op"); n != 2 {
		t.Errorf("%d lock snapshots, want the first and the reload", n)
	}
}

// TestServeEventsAcrossReplicas: an event stream on replica B delivers an
// entry committed through replica A, within seconds.
func TestServeEventsAcrossReplicas(t *testing.T) {
	e := newServeEnv(t, "registry")
	pgtest.Shared(t)
	dsn, _ := pgDB(t)
	e.db = dsn
	a, b := e.start(), e.start()
	head := e.head(b)
	next, stop := openEvents(t, e, b, head)
	defer stop()
	r := e.do(a, "POST", "/v1/handoffs", "product", demoDoc(t, "01-product-to-analysis.json"))
	if r.status != http.StatusCreated {
		t.Fatalf("submit on A: %d %s", r.status, r.body)
	}
	seq := seqOf(t, r)
	if id, _ := next(); id != itoaU(seq) {
		t.Errorf("B's stream delivered event %s, want the entry %d committed through A", id, seq)
	}
}
