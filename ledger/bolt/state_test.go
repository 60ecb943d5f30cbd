package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/reason"
)

var mismatch = []reason.Reason{{Code: reason.HashMismatch, Severity: reason.Critical, Field: "source_agent.prompt_hash", Message: "x"}}

// TestDerivedState: accepted IDs (first one wins), blocked agents (blocks,
// unblock, lock snapshot clears) and snapshots in force, as Build sees them.
func TestDerivedState(t *testing.T) {
	l := bolttest.MustCreate(t, newClockOpts())
	ctx := context.Background()
	var got struct {
		acc     uint64
		accOK   bool
		blocked bool
		inForce bool
	}
	probe := func(id, agent string) {
		l.Append(ctx, &ledger.Request{Build: func(s ledger.State, e *entry.Entry) error {
			got.acc, _, got.accOK = s.Accepted(id)
			_, got.blocked = s.Blocked(agent)
			_, _, got.inForce = s.InForce()
			return errors.New("probe")
		}})
	}
	probe("a", "x")
	if got.accOK || got.blocked || got.inForce {
		t.Fatalf("empty ledger state = %+v", got)
	}
	a1 := bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "a", Source: "x", Target: "y"})
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "a", Source: "x", Target: "y", Payload: []byte("again")})
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "b", Source: "x", Target: "y", Reasons: mismatch, Blocks: []string{"x"}})
	probe("a", "x")
	if got.acc != a1.Entry.Seq || !got.accOK || !got.blocked || !got.inForce {
		t.Fatalf("state = %+v, want accepted at %d, x blocked", got, a1.Entry.Seq)
	}
	probe("b", "y")
	if got.accOK || got.blocked {
		t.Fatalf("rejected b accepted or y blocked: %+v", got)
	}
	bolttest.AppendUnblock(t, l, "x", "reviewed")
	probe("a", "x")
	if got.blocked {
		t.Fatal("x still blocked after unblock")
	}
	bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "c", Source: "x", Target: "y", Reasons: mismatch, Blocks: []string{"x", "y"}})
	// A new lock lifts no block when nothing says which hashes changed.
	res, err := l.Append(ctx, &ledger.Request{Snapshots: []ledger.Snapshot{{What: entry.SnapshotLock, Bytes: []byte("lock v2")}}})
	if err != nil || len(res.Entries) != 1 || res.Entries[0].Entry.Lifts == nil || len(*res.Entries[0].Entry.Lifts) != 0 {
		t.Fatalf("Append(lock v2, no LockChanges) = %+v, %v; want one snapshot with lifts []", res, err)
	}
	probe("a", "y")
	if !got.blocked {
		t.Fatal("y unblocked by a lock that changed nothing known")
	}
	// A new lock lifts the blocks of the agents whose hash it changed, and
	// lists them; already for the Build of the same request.
	var blockedSeen bool
	res, err = l.Append(ctx, &ledger.Request{
		Snapshots: []ledger.Snapshot{{What: entry.SnapshotLock, Bytes: []byte("lock v3")}},
		LockChanges: func(old, new []byte) ([]string, error) {
			if string(old) != "lock v2" || string(new) != "lock v3" {
				return nil, fmt.Errorf("LockChanges(%q, %q)", old, new)
			}
			return []string{"y", "not-blocked", "y"}, nil
		},
		Build: func(s ledger.State, e *entry.Entry) error {
			_, blockedSeen = s.Blocked("y")
			e.Kind, e.Agent, e.Note = entry.KindUnblock, "z", "n"
			return nil
		}})
	if err != nil || blockedSeen {
		t.Fatalf("Append with new lock = %v, Blocked(y) = %t", err, blockedSeen)
	}
	if l := res.Entries[0].Entry.Lifts; l == nil || fmt.Sprint(*l) != "[y]" {
		t.Fatalf("lock v3 lifts = %v, want [y]", l)
	}
	probe("a", "x")
	if !got.blocked {
		t.Fatal("x unblocked by a lock that did not change its hash")
	}
	// Snapshots already in force are not recorded again.
	res, err = l.Append(ctx, &ledger.Request{Snapshots: []ledger.Snapshot{{What: entry.SnapshotLock, Bytes: []byte("lock v3")}}})
	if err != nil || len(res.Entries) != 0 {
		t.Fatalf("re-asserting the lock in force wrote %v, %v", res, err)
	}
}

// TestFind gives the same answers whether the secondary indexes cover all,
// some or none of the entries (Options.IndexBatch), including after a
// reopen that lost the committer's memory of unindexed keys.
func TestFind(t *testing.T) {
	for _, batch := range []int{1, 4, 1000} {
		t.Run(fmt.Sprint("IndexBatch=", batch), func(t *testing.T) { testFind(t, batch) })
	}
}

func testFind(t *testing.T, batch int) {
	o := newClockOpts()
	o.IndexBatch = batch
	l := bolttest.MustCreate(t, o)
	for i := range 12 {
		h := handoff(i)
		if i%4 == 0 {
			h.Reasons = mismatch
			h.Source = "domain-06-security"
		}
		bolttest.AppendHandoff(t, l, h)
		if i == 6 {
			path := l.Path()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var err error
			if l, err = bolt.Open(path, o); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
		}
	}
	bolttest.AppendUnblock(t, l, "domain-06-security", "ok")
	all, _ := l.Find(t.Context(), ledger.Query{})
	if len(all) != 15 {
		t.Fatalf("Find({}) = %v", all)
	}
	e5, _, _ := l.Get(t.Context(), 5)
	tests := []struct {
		q    ledger.Query
		want []uint64
	}{
		{ledger.Query{HandoffID: "h-0003"}, []uint64{6}},
		{ledger.Query{HandoffID: "nope"}, nil},
		{ledger.Query{Decision: "rejected"}, []uint64{3, 7, 11}},
		{ledger.Query{Agent: "domain-06-security"}, []uint64{3, 7, 11, 15}},
		{ledger.Query{Agent: "domain-06-security", Decision: "accepted"}, nil},
		{ledger.Query{WorkflowID: "wf-0"}, []uint64{3, 6, 9, 12}},
		{ledger.Query{WorkflowID: "wf-0", Limit: 2}, []uint64{3, 6}},
		{ledger.Query{WorkflowID: "wf-0", Limit: 2, Newest: true}, []uint64{9, 12}},
		{ledger.Query{Since: e5.Time.Time, Until: e5.Time.Add(3 * time.Millisecond)}, []uint64{5, 6, 7}},
		{ledger.Query{Decision: "accept"}, nil},
	}
	for _, tt := range tests {
		got, err := l.Find(t.Context(), tt.q)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Find(%+v) = %v, %v; want %v", tt.q, got, err, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	ctx := context.Background()
	a := bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: "a", Source: "x", Target: "y", Payload: []byte("secret")})
	sum := *a.Entry.PayloadSHA256
	if b, err := l.Blob(ctx, sum); err != nil || string(b) != "secret" {
		t.Fatalf("Blob = %q, %v", b, err)
	}
	res, err := l.Redact(ctx, a.Entry.Seq, "GDPR request 7")
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Last().Entry; e.Kind != entry.KindRedaction || e.RedactedSeq != a.Entry.Seq {
		t.Errorf("redaction entry = %+v", e)
	}
	if _, err := l.Blob(ctx, sum); !errors.Is(err, ledger.ErrRedacted) {
		t.Errorf("Blob after Redact = %v, want ErrRedacted", err)
	}
	if e, _, err := l.Get(ctx, a.Entry.Seq); err != nil || *e.PayloadSHA256 != sum {
		t.Errorf("redacted entry changed: %v, %v", e, err)
	}
	for _, tt := range []struct {
		seq  uint64
		want error
	}{{a.Entry.Seq, ledger.ErrRedacted}, {1, ledger.ErrNotRedactable}, {99, ledger.ErrNotFound}} {
		if _, err := l.Redact(ctx, tt.seq, "again"); !errors.Is(err, tt.want) {
			t.Errorf("Redact(%d) = %v, want %v", tt.seq, err, tt.want)
		}
	}
	if _, err := l.Blob(ctx, entry.Sum256([]byte("never"))); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Blob(never stored) = %v", err)
	}
}

func TestAppendRefuses(t *testing.T) {
	l := bolttest.MustCreate(t, nil)
	ctx := context.Background()
	bolttest.AppendHandoff(t, l, handoff(0))
	bad := func(mut func(req *ledger.Request)) error {
		req := handoff(1).Build()
		mut(req)
		_, err := l.Append(ctx, req)
		return err
	}
	wrap := func(req *ledger.Request, f func(e *entry.Entry)) {
		inner := req.Build
		req.Build = func(st ledger.State, e *entry.Entry) error { inner(st, e); f(e); return nil }
	}
	tests := []struct {
		name string
		mut  func(req *ledger.Request)
		want error
	}{
		{"changes seq", func(r *ledger.Request) { wrap(r, func(e *entry.Entry) { e.Seq++ }) }, entry.ErrMalformed},
		{"changes time", func(r *ledger.Request) { wrap(r, func(e *entry.Entry) { e.Time.Time = e.Time.Add(-time.Hour) }) }, entry.ErrMalformed},
		{"invalid entry", func(r *ledger.Request) { wrap(r, func(e *entry.Entry) { e.Decision = "maybe" }) }, entry.ErrMalformed},
		{"payload mismatch", func(r *ledger.Request) { r.Payload = []byte("other") }, entry.ErrMalformed},
		{"empty block", func(r *ledger.Request) { wrap(r, func(e *entry.Entry) { e.Blocks = []string{""} }) }, entry.ErrMalformed},
		{"snapshot kind", func(r *ledger.Request) {
			r.Payload = nil
			r.Build = func(_ ledger.State, e *entry.Entry) error {
				sum, n := entry.Sum256(nil), int64(0)
				e.Kind, e.What, e.ContentSHA256, e.Size = entry.KindSnapshot, "lock", &sum, &n
				return nil
			}
		}, entry.ErrMalformed},
		{"two locks", func(r *ledger.Request) {
			r.Snapshots = []ledger.Snapshot{{What: "lock", Bytes: []byte("1")}, {What: "lock", Bytes: []byte("2")}}
		}, entry.ErrMalformed},
		{"redaction of snapshot", func(r *ledger.Request) {
			r.Payload = nil
			r.Build = func(_ ledger.State, e *entry.Entry) error {
				e.Kind, e.RedactedSeq, e.Note = entry.KindRedaction, 1, "n"
				return nil
			}
		}, ledger.ErrNotRedactable},
	}
	for _, tt := range tests {
		if err := bad(tt.mut); !errors.Is(err, tt.want) {
			t.Errorf("%s: Append = %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := l.Append(ctx, &ledger.Request{Build: func(ledger.State, *entry.Entry) error { panic("bug") }}); err == nil {
		t.Error("a panicking Build succeeded")
	}
	if seq, _, _ := l.Head(ctx); seq != 3 {
		t.Errorf("refused requests wrote entries: head %d, want 3", seq)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Append(cctx, handoff(2).Build()); !errors.Is(err, context.Canceled) {
		t.Errorf("Append(cancelled ctx) = %v", err)
	}
}

// TestTimeNeverGoesBack: a clock that jumps back gives the previous time.
func TestTimeNeverGoesBack(t *testing.T) {
	times := []time.Time{t0, t0, t0.Add(time.Hour), t0, t0.Add(2 * time.Hour)} // the first is read by create
	i := 0
	l := bolttest.MustCreate(t, &bolt.Options{Now: func() time.Time { i++; return times[min(i-1, len(times)-1)] }})
	var got []time.Time
	for range 4 {
		res, err := l.Append(context.Background(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
			e.Kind, e.Agent, e.Note = entry.KindUnblock, "a", "n"
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Last().Entry.Time.Time)
	}
	want := []time.Time{t0, t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(2 * time.Hour)}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("times = %v, want %v", got, want)
	}
}

// TestFailedCommit: after a commit reports an error (here: durable but
// reported failed) no later Append is acknowledged until a
// reopen; the reopened ledger holds the entry and checks clean.
func TestFailedCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	d, err := bolt.OpenDriver(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fd := &failAfter{Driver: d}
	l, err := ledger.New(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	bolttest.AppendHandoff(t, l, handoff(0))
	eio := errors.New("input/output error")
	fd.err = eio
	if _, err := l.Append(context.Background(), handoff(1).Build()); !errors.Is(err, eio) {
		t.Fatalf("Append = %v, want the commit error", err)
	}
	fd.err = nil
	for range 2 {
		if _, err := l.Append(context.Background(), handoff(2).Build()); !errors.Is(err, ledger.ErrFailed) {
			t.Fatalf("Append after a failed commit = %v, want ErrFailed", err)
		}
	}
	l.Close()
	bolttest.MustCheck(t, path)
	r, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if seq, _, _ := r.Head(t.Context()); seq != 4 {
		t.Errorf("after reopen head = %d, want 4 (the ambiguous commit is durable)", seq)
	}
	if _, err := r.Append(context.Background(), handoff(2).Build()); err != nil {
		t.Errorf("Append after reopen = %v", err)
	}
}

// failAfter stores each batch, then reports err (when set): a commit whose
// bytes are durable but whose outcome the caller cannot know.
type failAfter struct {
	*bolt.Driver
	err error
}

func (f *failAfter) Append(ctx context.Context, b *ledger.Batch) error {
	if err := f.Driver.Append(ctx, b); err != nil {
		return err
	}
	return f.err
}

// TestUnavailableCommit: a driver error wrapping ErrUnavailable fails the
// batch without poisoning the ledger. Whether the batch landed (here it
// did, with ErrOutcomeUnknown) or not, the next commit is built on the
// head actually stored: the chain stays whole and nothing is lost.
func TestUnavailableCommit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored bool // the driver stored the batch before failing
		err    error
	}{
		{"nothing stored", false, fmt.Errorf("connection refused: %w", ledger.ErrUnavailable)},
		{"outcome unknown", true, fmt.Errorf("%w: %w: connection reset", ledger.ErrOutcomeUnknown, ledger.ErrUnavailable)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.db")
			d, err := bolt.OpenDriver(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			fd := &unavailable{Driver: d}
			l, err := ledger.New(fd, nil)
			if err != nil {
				t.Fatal(err)
			}
			bolttest.AppendHandoff(t, l, handoff(0))
			before, _, _ := l.Head(t.Context())
			fd.err, fd.store = tc.err, tc.stored
			if _, err := l.Append(context.Background(), handoff(1).Build()); !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("Append = %v, want ErrUnavailable", err)
			}
			fd.err = nil
			res, err := l.Append(context.Background(), handoff(2).Build())
			if err != nil {
				t.Fatalf("Append after an unavailable store = %v, want success", err)
			}
			want := before + 1
			if tc.stored {
				want++
			}
			if got := res.Last().Entry.Seq; got != want {
				t.Errorf("next entry seq %d, want %d (built on the head actually stored)", got, want)
			}
			l.Close()
			bolttest.MustCheck(t, path)
		})
	}
}

// unavailable fails Append with err (when set), after storing the batch
// if store is set.
type unavailable struct {
	*bolt.Driver
	err   error
	store bool
}

func (u *unavailable) Append(ctx context.Context, b *ledger.Batch) error {
	if u.err == nil || u.store {
		if err := u.Driver.Append(ctx, b); err != nil {
			return err
		}
	}
	return u.err
}
