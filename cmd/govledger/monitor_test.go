package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
)

// growLedger appends handoff entries to the bbolt ledger at path until it
// holds n; entries past forkAt get payloads marked tag, so two ledgers
// grown with the same forkAt and different tags agree up to forkAt only.
func growLedger(t *testing.T, e *serveEnv, path string, n, forkAt int, tag string) {
	t.Helper()
	manifest, err := os.ReadFile(e.manifest)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(path, &bolt.Options{Origin: testOrigin, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for size, _ := l.TreeSize(t.Context()); size < uint64(n); size, _ = l.TreeSize(t.Context()) {
		payload := fmt.Appendf(nil, "payload-%d", size+1)
		if int(size) >= forkAt {
			payload = fmt.Appendf(payload, "-%s", tag)
		}
		_, err := l.Append(context.Background(), &ledger.Request{
			Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: manifest}, {What: entry.SnapshotLock, Bytes: lock}},
			Payload:   payload,
			Build: func(st ledger.State, e *entry.Entry) error {
				m, lk, _ := st.InForce()
				sum, sz, rs := entry.Sum256(payload), int64(len(payload)), []reason.Reason{}
				e.Kind, e.Format, e.Decision, e.Reasons = entry.KindHandoff, entry.Str("governed/1"), reason.Accepted, &rs
				e.HandoffID, e.Source, e.Target, e.WorkflowID = entry.Str(fmt.Sprintf("id-%d", e.Seq)), entry.Str("a"), entry.Str("b"), entry.Null()
				e.PayloadSHA256, e.PayloadSize, e.ManifestSHA256, e.LockSHA256 = &sum, &sz, &m, &lk
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func copyLedger(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMonitor follows a real serve's tile API: the first run pins the
// checkpoint; growth is proven consistent from the tiles (entries checked
// too); then a rollback (an older copy of the ledger served), a fork at
// the same size and a fork of a larger tree (a rewritten tail re-signed
// with the same key), and a checkpoint signed by another key each exit 1
// naming both sizes and roots, and leave the state where it was.
func TestMonitor(t *testing.T) {
	e := newServeEnv(t, "registry")
	key, pub := keypair(t)
	_, otherPub := keypair(t)
	otherKey := strings.TrimSuffix(otherPub, ".pub") + ".key"
	state := filepath.Join(e.dir, "monitor-state")
	good := filepath.Join(e.dir, "good.db")
	old := filepath.Join(e.dir, "old.db")

	serve := func(db, k string) *liveServer {
		e.db = db
		return e.start("--key", k, "--public-entries")
	}
	mon := func(s *liveServer, extra ...string) (string, int) {
		return e.cli(append([]string{"monitor", "--log", s.url, "--state", state, "--key", pub, "--once", "--entries"}, extra...)...)
	}
	growLedger(t, e, good, 300, 300, "")
	copyLedger(t, good, old)

	s := serve(good, key)
	out, code := mon(s)
	if code != 0 || !strings.Contains(out, "size 300") || !strings.Contains(out, "first checkpoint stored") {
		t.Fatalf("first run: exit %d: %s", code, out)
	}
	s.stop()
	growLedger(t, e, good, 600, 600, "")
	s = serve(good, key)
	out, code = mon(s)
	if code != 0 || !strings.Contains(out, "size 600") || !strings.Contains(out, "consistent with size 300") || !strings.Contains(out, "300 entries checked") {
		t.Fatalf("growth: exit %d: %s", code, out)
	}
	out, code = mon(s)
	if code != 0 || !strings.Contains(out, "unchanged") {
		t.Fatalf("same size again: exit %d: %s", code, out)
	}
	s.stop()

	// Each finding: exit 1, the alarm, both sizes; the state stays at 600.
	forkSame, forkBig := filepath.Join(e.dir, "fork-same.db"), filepath.Join(e.dir, "fork-big.db")
	growLedger(t, e, forkSame, 600, 500, "rewritten")
	growLedger(t, e, forkBig, 700, 590, "rewritten")
	for _, c := range []struct {
		name, db, key string
		alarm         string
		want          []string
	}{
		{"rollback", old, key, "ALARM ROLLBACK", []string{"last seen: size 600", "served:    size 300"}},
		{"fork at the same size", forkSame, key, "ALARM FORK", []string{"last seen: size 600", "served:    size 600", "different root"}},
		{"fork of a larger tree", forkBig, key, "ALARM FORK", []string{"last seen: size 600", "served:    size 700"}},
		{"another key", good, otherKey, "ALARM SIGNATURE", []string{"not signed by a trusted key"}},
	} {
		s := serve(c.db, c.key)
		out, code := mon(s)
		if code != exitFound || !strings.Contains(out, c.alarm) {
			t.Errorf("%s: exit %d, want 1 with %q:\n%s", c.name, code, c.alarm, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, out)
			}
		}
		s.stop()
	}
	// The state kept the last good checkpoint: the good log is still fine.
	s = serve(good, key)
	if out, code := mon(s); code != 0 || !strings.Contains(out, "unchanged") {
		t.Fatalf("after the alarms: exit %d: %s", code, out)
	}
	// A log that cannot be reached: exit 3.
	s.stop()
	if out, code := mon(s); code != exitInternal {
		t.Fatalf("unreachable: exit %d: %s", code, out)
	}
}
