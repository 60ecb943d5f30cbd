package bolt_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// TestFindPaging holds Find with a limit (newest or oldest first, seq
// bounds, time bounds, each indexed field) to a brute-force answer over
// the decoded entries, whether the indexes cover all, some or none of the
// entries, and pages through the ledger with the Before/After cursors.
func TestFindPaging(t *testing.T) {
	for _, batch := range []int{1, 7, 1000} {
		t.Run(fmt.Sprint("IndexBatch=", batch), func(t *testing.T) { testFindPaging(t, batch) })
	}
}

func testFindPaging(t *testing.T, batch int) {
	// Three entries per clock tick: time ties between entries.
	var calls int
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	o := &bolt.Options{IndexBatch: batch, Origin: "test.example/find", Now: func() time.Time {
		calls++
		return start.Add(time.Duration(calls/3) * time.Second)
	}}
	l := bolttest.MustCreate(t, o)
	const n = 40
	for i := range n {
		h := bolttest.Handoff{ID: fmt.Sprintf("h-%d", i%17), Source: fmt.Sprintf("agent-%d", i%3),
			Target: "agent-t", Workflow: fmt.Sprintf("wf-%d", i%4)}
		if i%5 == 0 {
			h.Reasons = mismatch
		}
		bolttest.AppendHandoff(t, l, h)
		if i%9 == 0 {
			bolttest.AppendUnblock(t, l, "agent-1", "ok")
		}
	}
	var all []*entry.Entry
	if err := l.Scan(context.Background(), 1, func(seq uint64, raw []byte) error {
		e, err := entry.Decode(raw)
		all = append(all, e)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	head := uint64(len(all))
	tmid := all[len(all)/2].Time.Time
	brute := func(q ledger.Query) []uint64 {
		var out []uint64
		for _, e := range all {
			ok := (q.HandoffID == "" || e.HandoffID.S == q.HandoffID && e.HandoffID.Valid) &&
				(q.WorkflowID == "" || e.WorkflowID.Valid && e.WorkflowID.S == q.WorkflowID) &&
				(q.Agent == "" || e.Source.Valid && e.Source.S == q.Agent || e.Target.Valid && e.Target.S == q.Agent ||
					e.Kind == entry.KindUnblock && e.Agent == q.Agent) &&
				(q.Decision == "" || e.Decision == q.Decision) &&
				(q.Since.IsZero() || !e.Time.Before(q.Since)) && (q.Until.IsZero() || e.Time.Before(q.Until)) &&
				e.Seq > q.After && (q.Before == 0 || e.Seq < q.Before)
			if ok {
				out = append(out, e.Seq)
			}
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
	filters := []ledger.Query{
		{},
		{Agent: "agent-1"},
		{Agent: "agent-t", Decision: "rejected"},
		{WorkflowID: "wf-2"},
		{HandoffID: "h-3"},
		{Decision: "accepted"},
		{Since: tmid},
		{Until: tmid},
		{Since: all[5].Time.Time, Until: tmid},
		{Agent: "agent-2", Since: tmid},
		{Agent: "nobody"},
		// Time bounds at and beyond both ends (a binary search over the
		// entries finds them).
		{Until: all[0].Time.Time},
		{Since: all[0].Time.Time.Add(-time.Hour)},
		{Since: all[head-1].Time.Time},
		{Since: all[head-1].Time.Time.Add(time.Nanosecond)},
		{Until: all[head-1].Time.Time.Add(time.Hour), Since: all[0].Time.Time.Add(time.Nanosecond)},
	}
	bounds := [][2]uint64{{0, 0}, {0, 20}, {10, 0}, {10, 30}, {head - 3, 0}, {0, 2}, {25, 24}, {0, head + 5}}
	cases := 0
	for _, f := range filters {
		for _, b := range bounds {
			for _, limit := range []int{0, 1, 3, 1000} {
				for _, newest := range []bool{false, true} {
					q := f
					q.After, q.Before, q.Limit, q.Newest = b[0], b[1], limit, newest
					got, err := l.Find(t.Context(), q)
					if want := brute(q); err != nil || !slices.Equal(got, want) {
						t.Errorf("Find(%+v) = %v, %v; want %v", q, got, err, want)
					}
					cases++
				}
			}
		}
	}
	// Paging with the cursors visits every match once, in both directions.
	for _, f := range filters {
		want := brute(f)
		for _, newest := range []bool{true, false} {
			var seen []uint64
			q := f
			q.Limit, q.Newest = 4, newest
			for pages := 0; pages <= len(want); pages++ {
				page, err := l.Find(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				if newest {
					seen = append(slices.Clone(page), seen...)
					q.Before = page[0]
				} else {
					seen = append(seen, page...)
					q.After = page[len(page)-1]
				}
			}
			if !slices.Equal(seen, want) {
				t.Errorf("paging %+v newest=%v: %v, want %v", f, newest, seen, want)
			}
		}
	}
	t.Logf("%d queries checked against the brute-force answer", cases)
}

// TestFindListedTwice: in a damaged file whose records of a prefix overlap
// (a seq listed by two of them), Find still answers each seq once, with
// and without Limit.
func TestFindListedTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	l, err := bolt.Open(path, &bolt.Options{IndexBatch: 1, Origin: "test.example/twice"})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for i := range 4 {
		a := bolttest.AppendHandoff(t, l, bolttest.Handoff{ID: fmt.Sprintf("h-%d", i), Source: "a", Target: "b"})
		seqs = append(seqs, a.Entry.Seq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The record of seqs[1] lists seqs[2] too, which its own record lists.
	prefix := binary.BigEndian.AppendUint64(nil, xxhash.Sum64String("a"))
	if err := bolttest.InsertKey(path, "idx_agent", append(prefix, bolttest.SeqKey(seqs[1])...), binary.AppendUvarint(nil, seqs[2]-seqs[1])); err != nil {
		t.Fatal(err)
	}
	r, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, q := range []ledger.Query{{Agent: "a"}, {Agent: "a", Limit: 10}, {Agent: "a", Limit: 10, Newest: true}} {
		if got, err := r.Find(t.Context(), q); err != nil || !slices.Equal(got, seqs) {
			t.Errorf("Find(%+v) = %v, %v; want %v", q, got, err, seqs)
		}
	}
}
