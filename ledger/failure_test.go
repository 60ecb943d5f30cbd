package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/memory"
)

// broken is a memory driver whose views fail every Accepted lookup as a
// damaged store does, or whose Append fails as a disk does.
type broken struct {
	*memory.Driver
	lookup, write error
}

type brokenView struct {
	ledger.View
	err error
}

func (v brokenView) Accepted(string) (entry.Accept, bool, error) {
	if v.err != nil {
		return entry.Accept{}, false, v.err
	}
	return entry.Accept{}, false, nil
}

func (d *broken) View(ctx context.Context) (ledger.View, error) {
	v, err := d.Driver.View(ctx)
	if err != nil {
		return nil, err
	}
	return brokenView{v, d.lookup}, nil
}

func (d *broken) Append(ctx context.Context, b *ledger.Batch) error {
	if d.write != nil {
		return d.write
	}
	return d.Driver.Append(ctx, b)
}

// TestNothingStored: a commit that fails on a read of a broken store
// says nothing was stored (its outcome is known), one that fails in the
// driver's write does not (its outcome is unknown); either way the ledger
// refuses writes afterwards.
func TestNothingStored(t *testing.T) {
	asks := &ledger.Request{Build: func(st ledger.State, e *entry.Entry) error {
		st.Accepted("h1")
		e.Kind, e.Agent, e.Note = entry.KindUnblock, "nobody", "asked"
		return nil
	}}
	for _, tc := range []struct {
		name          string
		lookup, write error
		nothingStored bool
	}{
		{"broken store", fmt.Errorf("%w: page 7 reached twice", ledger.ErrCorrupt), nil, true},
		{"failed write", nil, errors.New("input/output error"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := memory.New("failure.example/ledger")
			if err != nil {
				t.Fatal(err)
			}
			d := &broken{Driver: m, lookup: tc.lookup, write: tc.write}
			l, err := ledger.New(d, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			_, err = l.Append(context.Background(), asks)
			if err == nil || errors.Is(err, ledger.ErrNothingStored) != tc.nothingStored {
				t.Fatalf("Append = %v, want an error that says nothing was stored: %t", err, tc.nothingStored)
			}
			if tc.lookup != nil && !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Append = %v, want it to wrap ErrCorrupt", err)
			}
			if _, err := l.Append(context.Background(), note("after")); !errors.Is(err, ledger.ErrFailed) {
				t.Errorf("the next Append = %v, want ErrFailed", err)
			}
			if seq, _, err := l.Head(t.Context()); err != nil || seq != 0 {
				t.Errorf("head seq %d (%v), want 0", seq, err)
			}
		})
	}
}
