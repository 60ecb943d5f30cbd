package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/govern/governtest"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/memory"
	"github.com/govledger/govledger/verify"
)

// TestCopy copies a real history (blocks, an unblock, a redaction, bytes
// stored again after it) from memory to a bbolt file and back, in batches
// small enough that a batch boundary falls everywhere: every copy is the
// same ledger, verifies, and its payloads redacted in the source stay
// redacted.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	cfg := governtest.Config(t)
	src, err := memory.Open("copy.example/ledger", &ledger.Options{Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := governtest.Populate(t, src, cfg)
	if _, err := src.Blob(ctx, h.Redacted); err != nil {
		t.Fatalf("the payload redacted at %d was stored again at %d: Blob = %v", h.Redaction, h.Restored, err)
	}
	for _, max := range []int{1, 3, 1024} {
		path := filepath.Join(t.TempDir(), "copy.db")
		dst, err := bolt.Open(path, &bolt.Options{Origin: src.Origin()})
		if err != nil {
			t.Fatal(err)
		}
		var calls []uint64
		res, err := ledger.Copy(ctx, dst.Driver(), src.Driver(), &ledger.CopyOptions{MaxEntries: max,
			Progress: func(done, total uint64) {
				if total != h.Head {
					t.Errorf("Progress total %d, want %d", total, h.Head)
				}
				calls = append(calls, done)
			}})
		if err != nil {
			t.Fatalf("MaxEntries %d: Copy: %v", max, err)
		}
		if res.Entries != h.Head || res.Redacted != 1 || len(calls) != res.Batches || calls[len(calls)-1] != h.Head {
			t.Fatalf("MaxEntries %d: result %+v, progress %v; want %d entries, 1 redaction", max, res, calls, h.Head)
		}
		governtest.Same(t, src, dst)
		mustVerify(t, dst)
		// The redacted payload stays redacted in the copy, though the
		// same bytes are stored again under a later entry.
		r, _, err := dst.Get(ctx, h.Redaction)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.EntryBlob(ctx, r.RedactedSeq, h.Redacted); !errors.Is(err, ledger.ErrRedacted) {
			t.Errorf("MaxEntries %d: the copy's EntryBlob(%d), redacted = %v, want ErrRedacted", max, r.RedactedSeq, err)
		}
		if _, err := dst.EntryBlob(ctx, h.Restored, h.Redacted); err != nil {
			t.Errorf("MaxEntries %d: the copy's EntryBlob(%d), stored again = %v", max, h.Restored, err)
		}
		// And back, into memory.
		back, err := memory.Open(src.Origin(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.Copy(ctx, back.Driver(), dst.Driver(), &ledger.CopyOptions{MaxEntries: max}); err != nil {
			t.Fatalf("MaxEntries %d: Copy back: %v", max, err)
		}
		governtest.Same(t, dst, back)
		back.Close()
		dst.Close()
	}
}

func mustVerify(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	rep, err := verify.Replay(context.Background(), verify.LedgerSource(l), verify.Options{Structural: l.Check, Head: l.Head})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %v", rep.Findings)
	}
}

// TestCopyRefuses: a destination holding entries, or of another origin,
// is refused before anything is written.
func TestCopyRefuses(t *testing.T) {
	ctx := context.Background()
	cfg := governtest.Config(t)
	src, _ := memory.Open("copy.example/a", &ledger.Options{Now: cfg.Now})
	defer src.Close()
	governtest.Record(t, src, cfg, "01", governtest.Handoff(t, "00000000-0000-4000-8000-000000000001"))
	full, _ := memory.Open("copy.example/a", &ledger.Options{Now: cfg.Now})
	defer full.Close()
	governtest.Record(t, full, cfg, "01", governtest.Handoff(t, "00000000-0000-4000-8000-000000000002"))
	other, _ := memory.Open("copy.example/b", nil)
	defer other.Close()
	for _, tc := range []struct {
		name string
		dst  *ledger.Ledger
		want error
	}{{"not empty", full, ledger.ErrNotEmpty}, {"other origin", other, ledger.ErrBadOptions}} {
		before, _, _ := tc.dst.Head(ctx)
		_, err := ledger.Copy(ctx, tc.dst.Driver(), src.Driver(), nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Copy = %v, want %v", tc.name, err, tc.want)
		}
		if after, _, _ := tc.dst.Head(ctx); after != before {
			t.Errorf("%s: the destination went from %d to %d entries", tc.name, before, after)
		}
	}
}

// damaged serves a source whose entry bad has other bytes (as a store
// rewritten behind the ledger's back would).
type damaged struct {
	ledger.Driver
	bad  uint64
	with func([]byte) []byte
}

func (d damaged) View(ctx context.Context) (ledger.View, error) {
	v, err := d.Driver.View(ctx)
	return damagedView{v, d}, err
}

type damagedView struct {
	ledger.View
	d damaged
}

func (v damagedView) Scan(ctx context.Context, from uint64, fn func(uint64, []byte) error) error {
	return v.View.Scan(ctx, from, func(seq uint64, raw []byte) error {
		if seq == v.d.bad {
			raw = v.d.with(bytes.Clone(raw))
		}
		return fn(seq, raw)
	})
}

// TestCopyDamagedSource: an entry of the source that does not follow the
// chain stops the copy with ErrCorrupt naming it; the destination holds
// only whole batches before it.
func TestCopyDamagedSource(t *testing.T) {
	ctx := context.Background()
	cfg := governtest.Config(t)
	src, _ := memory.Open("copy.example/a", &ledger.Options{Now: cfg.Now})
	defer src.Close()
	h := governtest.Populate(t, src, cfg)
	for _, tc := range []struct {
		name string
		with func([]byte) []byte
	}{
		{"edited", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"submitter":"fixture"`), []byte(`"submitter":"fixturX"`), 1)
		}},
		{"not an entry", func([]byte) []byte { return []byte("{}") }},
	} {
		bad := h.Restored
		dst, _ := memory.Open(src.Origin(), nil)
		_, err := ledger.Copy(ctx, dst.Driver(), damaged{src.Driver(), bad, tc.with}, &ledger.CopyOptions{MaxEntries: 2})
		var re *ledger.RecordError
		if !errors.Is(err, ledger.ErrCorrupt) || !errors.As(err, &re) || re.Seq < bad || re.Seq > bad+1 {
			t.Errorf("%s: Copy = %v, want ErrCorrupt naming seq %d (or the next, whose prev breaks)", tc.name, err, bad)
		}
		if got, _, _ := dst.Head(ctx); got >= bad {
			t.Errorf("%s: the destination holds %d entries, want whole batches before %d", tc.name, got, bad)
		}
		dst.Close()
	}
}
