package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/ledger/postgres/pgtest"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Shared(t)
	d, dsn := open(t, &postgres.Options{Origin: "example.org/ledger"})
	if got := d.Origin(); got != "example.org/ledger" {
		t.Fatalf("Origin() = %q, want example.org/ledger", got)
	}
	// A second process opening the same database sees the same ledger,
	// whatever Origin it asks for.
	d2 := openDSN(t, dsn, &postgres.Options{Origin: "other.example/x"})
	if got := d2.Origin(); got != "example.org/ledger" {
		t.Fatalf("reopened Origin() = %q, want the stored example.org/ledger", got)
	}
	ro := openDSN(t, dsn, &postgres.Options{ReadOnly: true})
	if err := ro.Append(ctx, &ledger.Batch{}); !errors.Is(err, ledger.ErrReadOnly) {
		t.Fatalf("read-only Append = %v, want ErrReadOnly", err)
	}
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	if out, err := srv.Psql(db, "SELECT max(version) FROM govledger.schema_version"); err != nil || strings.TrimSpace(out) != fmt.Sprint(postgres.SchemaVersion) {
		t.Fatalf("schema_version = %q (%v), want %d", out, err, postgres.SchemaVersion)
	}

	empty := pgtest.NewDB(t)
	newer := pgtest.NewDB(t)
	if _, err := postgres.Open(ctx, newer, nil); err != nil {
		t.Fatal(err)
	}
	ndb := newer[strings.LastIndex(newer, "/")+1 : strings.Index(newer, "?")]
	if out, err := srv.Psql(ndb, fmt.Sprintf("INSERT INTO govledger.schema_version (version) VALUES (%d)", postgres.SchemaVersion+1)); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, tc := range []struct {
		name string
		dsn  string
		o    *postgres.Options
		want error
	}{
		{"no ledger, NoCreate", empty, &postgres.Options{NoCreate: true}, ledger.ErrNotExist},
		{"no ledger, ReadOnly", empty, &postgres.Options{ReadOnly: true}, ledger.ErrNotExist},
		{"newer schema", newer, nil, ledger.ErrVersionMismatch},
		{"newer schema, ReadOnly", newer, &postgres.Options{ReadOnly: true}, ledger.ErrVersionMismatch},
		{"bad origin", empty, &postgres.Options{Origin: "has space"}, ledger.ErrBadOptions},
		{"bad dsn", "postgres://[::1", nil, ledger.ErrBadOptions},
		{"nobody listening", "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", nil, postgres.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := postgres.Open(ctx, tc.dsn, tc.o)
			if err == nil {
				d.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
	// NoCreate and ReadOnly created nothing: the database is still empty.
	if out, err := srv.Psql(empty[strings.LastIndex(empty, "/")+1:strings.Index(empty, "?")],
		"SELECT count(*) FROM pg_namespace WHERE nspname = 'govledger'"); err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("schemas named govledger after refused opens: %q, %v; want 0", out, err)
	}
}

// TestConcurrentOpen: processes opening one new database at once apply
// each migration once and agree on one origin.
func TestConcurrentOpen(t *testing.T) {
	dsn := pgtest.NewDB(t)
	var wg sync.WaitGroup
	origins := make([]string, 4)
	errs := make([]error, 4)
	for i := range origins {
		wg.Go(func() {
			d, err := postgres.Open(context.Background(), dsn, &postgres.Options{Origin: fmt.Sprintf("o.example/%d", i)})
			if err != nil {
				errs[i] = err
				return
			}
			origins[i] = d.Origin()
			d.Close()
		})
	}
	wg.Wait()
	for i := range origins {
		if errs[i] != nil {
			t.Fatalf("Open #%d: %v", i, errs[i])
		}
		if origins[i] != origins[0] {
			t.Fatalf("origins differ: %q", origins)
		}
	}
}

func TestAppendAndViews(t *testing.T) {
	ctx := context.Background()
	d, _ := open(t, nil)
	v0, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v0.Close()
	if h := v0.Head(); h.Seq != 0 || h.Hash != entry.ZeroHash || !h.Time.IsZero() || h.HasLock || h.HasManifest || h.Key != "" {
		t.Fatalf("empty head = %+v", h)
	}
	b1 := appendAll(t, d, append(snapshots(), handoff("h-1", "a", "b", "w-1", true, []byte("one")))...)
	v1, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	b2 := appendAll(t, d, handoff("h-2", "b", "c", "w-1", true, []byte("two")), handoff("h-3", "c", "a", "", false, []byte("three")))

	// Each view answers as of its own head, whatever came later.
	for _, tc := range []struct {
		name string
		v    ledger.View
		head entry.Head
	}{{"before", v0, entry.Head{}}, {"middle", v1, b1.Head}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.Head(); got != tc.head {
				t.Fatalf("Head() = %+v, want %+v", got, tc.head)
			}
			n := 0
			if err := tc.v.Scan(ctx, 0, func(uint64, []byte) error { n++; return nil }); err != nil || uint64(n) != tc.head.Seq {
				t.Fatalf("Scan saw %d entries (%v), want %d", n, err, tc.head.Seq)
			}
			if _, err := tc.v.Entry(tc.head.Seq + 1); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("Entry(%d) = %v, want ErrNotFound", tc.head.Seq+1, err)
			}
			if _, err := tc.v.Blob(entry.Sum256([]byte("two"))); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("Blob(two) = %v, want ErrNotFound in a view before it", err)
			}
			if _, ok, err := tc.v.Accepted("h-2"); ok || err != nil {
				t.Fatalf("Accepted(h-2) = %t, %v before it was accepted", ok, err)
			}
			if _, ok, err := tc.v.Blocked("c"); ok || err != nil {
				t.Fatalf("Blocked(c) = %t, %v before it was blocked", ok, err)
			}
			seqs, err := tc.v.Find(ctx, ledger.Query{WorkflowID: "w-1"})
			if err != nil || len(seqs) > 1 {
				t.Fatalf("Find(w-1) = %v, %v; want at most the first", seqs, err)
			}
		})
	}
	entries := checkChain(t, d)
	if len(entries) != 5 || entries[4].Seq != b2.Head.Seq {
		t.Fatalf("chain has %d entries, want 5", len(entries))
	}
	v2, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if got := v2.Head(); got != b2.Head {
		t.Fatalf("Head() = %+v, want %+v (nanoseconds kept, snapshots, key)", got, b2.Head)
	}
	for i, a := range append(b1.Entries, b2.Entries...) {
		raw, err := v2.Entry(uint64(i + 1))
		if err != nil || !bytes.Equal(raw, a.Raw) {
			t.Fatalf("Entry(%d) = %q, %v; want the appended bytes", i+1, raw, err)
		}
	}
	if got, err := v2.Blob(entry.Sum256([]byte("two"))); err != nil || string(got) != "two" {
		t.Fatalf("Blob(two) = %q, %v", got, err)
	}
	if a, ok, err := v2.Accepted("h-2"); !ok || err != nil || a.Seq != 4 || a.Payload != entry.Sum256([]byte("two")) {
		t.Fatalf("Accepted(h-2) = %+v, %t, %v; want seq 4", a, ok, err)
	}
	if seq, ok, err := v2.Blocked("c"); !ok || err != nil || seq != 5 {
		t.Fatalf("Blocked(c) = %d, %t, %v; want seq 5", seq, ok, err)
	}
	if m, err := v2.Blocks(); err != nil || len(m) != 1 || m["c"] != 5 {
		t.Fatalf("Blocks() = %v, %v; want c blocked by 5", m, err)
	}
}

func TestConflict(t *testing.T) {
	ctx := context.Background()
	d, _ := open(t, nil)
	appendAll(t, d, snapshots()...)
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	stale, _ := build(t, v, handoff("late", "a", "b", "", true, []byte("late")))
	won := appendAll(t, d, handoff("early", "a", "b", "", true, []byte("early")))
	if err := d.Append(ctx, stale); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("Append(stale) = %v, want ErrConflict", err)
	}
	// Appending the same batch twice conflicts too.
	if err := d.Append(ctx, won); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("Append(again) = %v, want ErrConflict", err)
	}
	es := checkChain(t, d)
	if len(es) != 3 || es[2].HandoffID.S != "early" {
		t.Fatalf("chain = %d entries, last %v; want the winner only", len(es), es[len(es)-1].HandoffID)
	}
	v2, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if _, err := v2.Blob(entry.Sum256([]byte("late"))); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the conflicting batch's blob: %v, want ErrNotFound", err)
	}
}

// TestInvalidBatch: a batch that does not add up is refused before
// anything is sent.
func TestInvalidBatch(t *testing.T) {
	ctx := context.Background()
	d, _ := open(t, nil)
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, tc := range []struct {
		name string
		mut  func(b *ledger.Batch)
	}{
		{"head seq", func(b *ledger.Batch) { b.Head.Seq++ }},
		{"head hash", func(b *ledger.Batch) { b.Head.Hash[0] ^= 1 }},
		{"missing tree hash", func(b *ledger.Batch) { b.Hashes = b.Hashes[1:] }},
		{"blob under another hash", func(b *ledger.Batch) { b.Blobs[entry.Hash{1}] = []byte("x") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := build(t, v, snapshots()...)
			tc.mut(b)
			if err := d.Append(ctx, b); err == nil || errors.Is(err, ledger.ErrConflict) {
				t.Fatalf("Append = %v, want an invalid batch error", err)
			}
		})
	}
	if es := checkChain(t, d); len(es) != 0 {
		t.Fatalf("%d entries stored by invalid batches", len(es))
	}
}

// TestRace: writers on separate drivers (separate pools, as separate
// processes would be) race compare-and-append on one database. Each
// rebuilds its batch on a conflict; every batch lands exactly once and the
// chain is gapless with the right tree.
func TestRace(t *testing.T) {
	const writers, batches, per = 4, 15, 3
	ctx := context.Background()
	d0, dsn := open(t, nil)
	appendAll(t, d0, snapshots()...)
	var wg sync.WaitGroup
	conflicts := make([]int, writers)
	errs := make(chan error, writers)
	for w := range writers {
		d := openDSN(t, dsn, nil)
		wg.Go(func() {
			for i := range batches {
				var rs []req
				for k := range per {
					id := fmt.Sprintf("w%d-b%d-%d", w, i, k)
					rs = append(rs, handoff(id, fmt.Sprintf("agent-%d", w), "t", fmt.Sprintf("wf-%d", w), true, []byte(id)))
				}
				for try := 0; ; try++ {
					if try > 200 {
						errs <- fmt.Errorf("writer %d: batch %d: 200 conflicts in a row", w, i)
						return
					}
					v, err := d.View(ctx)
					if err != nil {
						errs <- err
						return
					}
					b, _, err := tryBuild(v, rs...)
					v.Close()
					if err != nil {
						errs <- err
						return
					}
					err = d.Append(ctx, b)
					if errors.Is(err, ledger.ErrConflict) {
						conflicts[w]++
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	es := checkChain(t, d0)
	if want := 2 + writers*batches*per; len(es) != want {
		t.Fatalf("%d entries, want %d", len(es), want)
	}
	seen := map[string]int{}
	for _, e := range es[2:] {
		seen[e.HandoffID.S]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("handoff %s stored %d times", id, n)
		}
	}
	if len(seen) != writers*batches*per {
		t.Fatalf("%d distinct handoffs, want %d", len(seen), writers*batches*per)
	}
	t.Logf("conflicts per writer: %v", conflicts)
}

// TestFind compares Find with a scan of every entry, for each filter and
// combinations.
func TestFind(t *testing.T) {
	ctx := context.Background()
	d, _ := open(t, nil)
	appendAll(t, d, snapshots()...)
	nul := "nul\x00byte"
	long := strings.Repeat("L", 5000) // beyond a btree row: indexes hold hashes
	var rs []req
	for i := range 40 {
		src := []string{"alpha", "beta", nul, long}[i%4]
		tgt := []string{"beta", "gamma", "alpha"}[i%3]
		wf := []string{"", "wf-1", "wf-2", long}[i%4]
		id := fmt.Sprintf("id-%d", i%13)
		if i%7 == 0 {
			id = ""
		}
		rs = append(rs, handoff(id, src, tgt, wf, i%5 != 0, []byte(fmt.Sprint(i))))
		if i%5 == 0 {
			rs = append(rs, unblock(src))
		}
	}
	appendAll(t, d, rs[:20]...)
	appendAll(t, d, rs[20:]...)
	es := checkChain(t, d)
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	at := func(seq int) time.Time { return es[seq-1].Time.Time }
	qs := []ledger.Query{
		{},
		{HandoffID: "id-3"}, {HandoffID: "id-12"}, {HandoffID: "none"},
		{Agent: "alpha"}, {Agent: "beta"}, {Agent: nul}, {Agent: long}, {Agent: "gamma", Decision: "accepted"},
		{WorkflowID: "wf-1"}, {WorkflowID: long}, {WorkflowID: "wf-2", Agent: "beta"},
		{Decision: "rejected"}, {Decision: "accepted"},
		{Since: at(10)}, {Until: at(10)}, {Since: at(10), Until: at(20)},
		{Since: at(10).Add(1)}, {Until: at(10).Add(1)}, // nanosecond bounds
		{Limit: 5}, {Limit: 5, Newest: true}, {Agent: "alpha", Limit: 2, Newest: true}, {Decision: "rejected", Limit: 3},
	}
	for _, q := range qs {
		t.Run(fmt.Sprintf("%+v", q)[:min(80, len(fmt.Sprintf("%+v", q)))], func(t *testing.T) {
			got, err := v.Find(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveFind(es, q)
			if !slices.Equal(got, want) {
				t.Fatalf("Find = %v, want %v", got, want)
			}
		})
	}
}

// naiveFind is Query's documented meaning, applied to every entry.
func naiveFind(es []*entry.Entry, q ledger.Query) []uint64 {
	var out []uint64
	for _, e := range es {
		if q.HandoffID != "" && (!e.HandoffID.Valid || e.HandoffID.S != q.HandoffID) ||
			q.WorkflowID != "" && (!e.WorkflowID.Valid || e.WorkflowID.S != q.WorkflowID) ||
			q.Agent != "" && !(e.Kind == entry.KindUnblock && e.Agent == q.Agent || e.Source.Valid && e.Source.S == q.Agent || e.Target.Valid && e.Target.S == q.Agent) ||
			q.Decision != "" && e.Decision != q.Decision ||
			!q.Since.IsZero() && e.Time.Before(q.Since) ||
			!q.Until.IsZero() && !e.Time.Before(q.Until) {
			continue
		}
		out = append(out, e.Seq)
	}
	if q.Limit > 0 && len(out) > q.Limit {
		if q.Newest {
			out = out[len(out)-q.Limit:]
		} else {
			out = out[:q.Limit]
		}
	}
	return out
}

// TestTables follows blocks, unblocks, a lock snapshot that clears every
// block, acceptances and idempotency keys through several batches, and
// compares the stored tables with the fold's answers.
func TestTables(t *testing.T) {
	ctx := context.Background()
	d, _ := open(t, nil)
	appendAll(t, d, snapshots()...)
	keyed := func(r req, key string) req { r.e.IdempotencyKey = key; return r }
	steps := [][]req{
		{handoff("x", "a", "b", "", false, []byte("1")), handoff("y", "b", "c", "", false, []byte("2")), keyed(handoff("z", "c", "d", "", true, []byte("3")), "k1")},
		{unblock("a"), handoff("x", "a", "b", "", true, []byte("4")), keyed(handoff("z2", "c", "d", "", true, []byte("3")), "k1")},
		{handoff("w", "a", "b", "", false, []byte("5")), unblock("a"), handoff("v", "a", "e", "", false, []byte("6"))},
		// A lock snapshot without lifts (written before lifts existed)
		// lifts every block.
		{{e: entry.Entry{Kind: entry.KindSnapshot, What: entry.SnapshotLock, ContentSHA256: &lockSum, Size: n64(int64(len(lockBytes)))}, blob: lockBytes},
			handoff("u", "e", "a", "", false, []byte("7"))},
	}
	agents := []string{"a", "b", "c", "d", "e"}
	for i, rs := range steps {
		v, err := d.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// st answers from the view it was built on: keep it open.
		b, st := build(t, v, rs...)
		if err := d.Append(ctx, b); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		built := v
		v, err = d.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := v.Blocks()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range agents {
			want, wok := st.Blocked(a)
			got, ok, err := v.Blocked(a)
			if err != nil || ok != wok || got != want || blocks[a] != want {
				t.Errorf("step %d: Blocked(%s) = %d, %t, %v (Blocks %d); the fold says %d, %t", i, a, got, ok, err, blocks[a], want, wok)
			}
		}
		for _, id := range []string{"x", "y", "z", "z2", "w", "v", "u"} {
			ws, wp, wok := st.Accepted(id)
			a, ok, err := v.Accepted(id)
			if err != nil || ok != wok || a.Seq != ws || a.Payload != wp {
				t.Errorf("step %d: Accepted(%s) = %+v, %t, %v; the fold says %d, %t", i, id, a, ok, err, ws, wok)
			}
		}
		wa, wok := st.Idempotent("k1")
		a, ok, err := v.Idempotent("k1")
		if err != nil || ok != wok || a != wa {
			t.Errorf("step %d: Idempotent(k1) = %+v, %t, %v; the fold says %+v, %t", i, a, ok, err, wa, wok)
		}
		if err := st.Err(); err != nil {
			t.Fatalf("step %d: the fold's lookups failed: %v", i, err)
		}
		v.Close()
		built.Close()
	}
	checkChain(t, d)
}

// TestErase: an erased blob is gone from every new view (ErrRedacted), and
// with VacuumFull its bytes are gone from the table's data files too.
func TestErase(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("VacuumFull=%t", full), func(t *testing.T) {
			ctx := context.Background()
			srv := pgtest.Shared(t)
			d, dsn := open(t, &postgres.Options{VacuumFull: full, Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))})
			db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
			marker := fmt.Sprintf("SECRET-%d-", time.Now().UnixNano())
			small := []byte(marker + "small")
			// Random-looking bytes PostgreSQL cannot compress, beyond the
			// TOAST threshold, so they live in the TOAST table.
			big := []byte(marker + "big")
			for i := 0; len(big) < 20000; i++ {
				s := entry.Sum256(big[len(big)-8:])
				big = append(big, s[:]...)
			}
			keep := []byte("kept payload")
			appendAll(t, d, append(snapshots(), handoff("s", "a", "b", "", true, small),
				handoff("b", "a", "b", "", true, big), handoff("k", "a", "b", "", true, keep))...)
			if out, err := srv.Psql(db, "CHECKPOINT"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if !filesContain(t, srv, db, marker) {
				t.Fatal("the payloads are not in the data files before the erase: the check below proves nothing")
			}
			redact := func(seq uint64, sum entry.Hash) req {
				return req{e: entry.Entry{Kind: entry.KindRedaction, RedactedSeq: seq, Note: "erase"}, erase: []entry.Hash{sum}}
			}
			// A view opened before the erasure may still read the bytes,
			// and the vacuum waits for it.
			old, err := d.View(ctx)
			if err != nil {
				t.Fatal(err)
			}
			appendAll(t, d, redact(3, entry.Sum256(small)), redact(4, entry.Sum256(big)))
			sctx, scancel := context.WithTimeout(ctx, time.Second)
			defer scancel()
			if err := d.WaitErased(sctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("WaitErased with an older view open = %v, want it to wait", err)
			}
			if got, err := old.Blob(entry.Sum256(small)); err != nil || !bytes.Equal(got, small) {
				t.Fatalf("older view's Blob(erased) = %q, %v; want its snapshot's bytes", got, err)
			}
			old.Close()
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := d.WaitErased(wctx); err != nil {
				t.Fatalf("WaitErased: %v", err)
			}
			v, err := d.View(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			for _, p := range [][]byte{small, big} {
				if _, err := v.Blob(entry.Sum256(p)); !errors.Is(err, ledger.ErrRedacted) {
					t.Fatalf("Blob(erased) = %v, want ErrRedacted", err)
				}
			}
			if got, err := v.Blob(entry.Sum256(keep)); err != nil || !bytes.Equal(got, keep) {
				t.Fatalf("Blob(kept) = %q, %v", got, err)
			}
			if out, err := srv.Psql(db, "CHECKPOINT"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			in := filesContain(t, srv, db, marker)
			t.Logf("VacuumFull=%t: erased bytes still in the blobs table's files: %t", full, in)
			if full && in {
				t.Fatal("VACUUM FULL left the erased bytes in the data files")
			}
			checkChain(t, d)
		})
	}
}

// tWriter writes log lines to the test's log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// filesContain reports whether the blobs table's files (with its TOAST
// table) contain s.
func filesContain(t *testing.T, srv *pgtest.Server, db, s string) bool {
	t.Helper()
	files, err := srv.DataFiles(db, "govledger.blobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("DataFiles = %v, want the table and its TOAST table", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// TestClose: Close ends the views still open; their reads fail.
func TestClose(t *testing.T) {
	ctx := context.Background()
	d, _ := open(t, nil)
	appendAll(t, d, snapshots()...)
	v, err := d.View(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close blocked on an open view")
	}
	if _, err := v.Entry(1); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Entry after Close = %v, want ErrClosed", err)
	}
	if _, err := d.View(ctx); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("View after Close = %v, want ErrClosed", err)
	}
	if err := d.Append(ctx, &ledger.Batch{}); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
}
