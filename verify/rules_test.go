package verify_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/verify"
)

// Tests of one documented rule each, broken in a stored ledger (the
// buildLedger fixture), for the rules the named tamper cases do not
// reach: each fails when the check of its rule is removed (see
// docs/verify-findings.md for the table of kinds, tests and checks).

// storedEntry returns entry seq of the ledger file at path.
func storedEntry(t *testing.T, path string, seq uint64) *entry.Entry {
	t.Helper()
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e, _, err := l.Get(t.Context(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// replaceLast stores e as the last entry of the file at path (its prev
// unchanged) and points the stored head at it: the chain and the head
// hold, and nothing the appender checks was run.
func replaceLast(t *testing.T, path string, e *entry.Entry) {
	t.Helper()
	raw, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if err := bolttest.InsertKey(path, bolttest.BucketEntries, bolttest.SeqKey(e.Seq), raw); err != nil {
		t.Fatal(err)
	}
	if err := bolttest.RewindMetaHead(path, 0); err != nil {
		t.Fatal(err)
	}
}

// findingAt reports whether rep has a finding of kind at seq that is not
// structural (the replay of the chain made it).
func findingAt(rep *verify.Report, seq uint64, kind string) bool {
	return slices.ContainsFunc(rep.Findings, func(f verify.Finding) bool {
		return f.Seq == seq && f.Kind == kind && !f.Structural
	})
}

// TestRuleIdempotencyKeyReused: an idempotency key names one payload
// (README "Derived state, one fold"). Seq 12 gets key "retry-1" (a
// rewritten history, which the appender accepts), then the last entry,
// seq 19, is given the same key for other bytes, written past the
// appender: the replay's fold reports kind "state" at seq 19.
func TestRuleIdempotencyKeyReused(t *testing.T) {
	f := buildLedger(t)
	p := bolttest.CopyFile(t, f.path)
	if err := bolttest.RewriteSuffix(p, 12, func(e *entry.Entry) { e.IdempotencyKey = "retry-1" }); err != nil {
		t.Fatal(err)
	}
	rep, err := verifyFile(t, p, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("first use of the key: %v", rep.Findings)
	}
	last := storedEntry(t, p, 19)
	if *last.PayloadSHA256 == *storedEntry(t, p, 12).PayloadSHA256 {
		t.Fatal("seq 12 and 19 name the same bytes: the test's premise is wrong")
	}
	last.IdempotencyKey = "retry-1"
	replaceLast(t, p, last)
	for _, full := range []bool{false, true} {
		rep, err := flippedReport(t, p, full)
		if err != nil {
			t.Fatal(err)
		}
		if !findingAt(rep, 19, verify.KindState) || rep.FirstBad != 19 {
			t.Errorf("full %v: first bad %d, findings %v; want kind state at seq 19", full, rep.FirstBad, rep.Findings)
		}
	}
}

// TestTamperSameSize: a payload or snapshot edited to other bytes of the
// same length (so the size check cannot see it) is caught by re-hashing
// the bytes: kind "payload" or "snapshot" at the first entry naming them,
// in the chain-only replay and in the full verify. (The named tamper
// cases change the length, and the size check fires first.)
func TestTamperSameSize(t *testing.T) {
	f := buildLedger(t)
	for _, tt := range []struct {
		seq  uint64
		kind string
	}{
		{9, verify.KindPayload},  // an accepted handoff's payload
		{1, verify.KindSnapshot}, // the manifest snapshot
		{2, verify.KindSnapshot}, // the lock snapshot
	} {
		t.Run(fmt.Sprintf("%s-@%d", tt.kind, tt.seq), func(t *testing.T) {
			p := bolttest.CopyFile(t, f.path)
			e := storedEntry(t, p, tt.seq)
			sum := e.PayloadSHA256
			if e.Kind == entry.KindSnapshot {
				sum = e.ContentSHA256
			}
			l, err := bolt.Open(p, &bolt.Options{ReadOnly: true, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			b, err := l.Blob(t.Context(), *sum)
			l.Close()
			if err != nil {
				t.Fatal(err)
			}
			// A letter of the middle byte's case swapped: valid JSON
			// still (a string's contents), the same length.
			edited := slices.Clone(b)
			i := len(edited) / 2
			for ; i < len(edited) && !('a' <= edited[i] && edited[i] <= 'z'); i++ {
			}
			if i == len(edited) {
				t.Fatal("no letter to edit")
			}
			edited[i] -= 'a' - 'A'
			if err := bolttest.EditBlob(p, *sum, edited); err != nil {
				t.Fatal(err)
			}
			for _, full := range []bool{false, true} {
				rep, err := flippedReport(t, p, full)
				if err != nil {
					t.Fatal(err)
				}
				if !findingAt(rep, tt.seq, tt.kind) || rep.FirstBad != tt.seq {
					t.Errorf("full %v: first bad %d, findings %v; want kind %s at seq %d", full, rep.FirstBad, rep.Findings, tt.kind, tt.seq)
				}
			}
		})
	}
}

// TestRulePayloadSize: the payload's size is part of what an entry
// commits to. The last entry's payload_size is made one larger (its bytes
// and SHA-256 unchanged, the stored head moved to the new hash): only
// the size check can see it, kind "payload" at seq 19.
func TestRulePayloadSize(t *testing.T) {
	f := buildLedger(t)
	p := bolttest.CopyFile(t, f.path)
	last := storedEntry(t, p, 19)
	*last.PayloadSize++
	replaceLast(t, p, last)
	for _, full := range []bool{false, true} {
		rep, err := flippedReport(t, p, full)
		if err != nil {
			t.Fatal(err)
		}
		if !findingAt(rep, 19, verify.KindPayload) || rep.FirstBad != 19 {
			t.Errorf("full %v: first bad %d, findings %v; want kind payload at seq 19", full, rep.FirstBad, rep.Findings)
		}
	}
}

// TestRuleKeyInForce: meta "key" is the new_key of the last key_rotation
// (the checkpoint key readers trust). A ledger whose last entry rotates
// to "key-b" and whose meta key then says "key-x" fails verify with a
// structural finding of kind "index" (the store check's key_state).
func TestRuleKeyInForce(t *testing.T) {
	f := buildLedger(t)
	p := bolttest.CopyFile(t, f.path)
	l, err := bolt.Open(p, &bolt.Options{NoCreate: true, Now: bolttest.NewClock(start.Add(time.Hour)).Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(t.Context(), &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
		e.Kind, e.OldKey, e.NewKey, e.Note = entry.KindKeyRotation, "key-a", "key-b", "rotated"
		return nil
	}})
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := verifyFile(t, p, verify.Options{}); err != nil || !rep.OK() {
		t.Fatalf("after the rotation: %v, %v", err, rep.Findings)
	}
	if err := bolttest.InsertKey(p, bolttest.BucketMeta, []byte("key"), []byte("key-x")); err != nil {
		t.Fatal(err)
	}
	rep, err := verifyFile(t, p, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !slices.ContainsFunc(rep.Findings, func(x verify.Finding) bool {
		return x.Kind == verify.KindIndex && x.Structural && strings.Contains(x.Message, ledger.FindKey)
	}) {
		t.Errorf("meta key edited: %v; want a structural index finding (%s)", rep.Findings, ledger.FindKey)
	}
}

// entriesPanic is a source whose Entries panics after delivering three
// entries.
type entriesPanic struct{ fakeSource }

func (s *entriesPanic) Entries(ctx context.Context, fn func(uint64, []byte) error) error {
	n := 0
	return s.fakeSource.Entries(ctx, func(seq uint64, raw []byte) error {
		if n == 3 {
			panic("the source broke")
		}
		n++
		return fn(seq, raw)
	})
}

// TestReplaySourcePanics: a source that panics while delivering entries
// stops the replay with a report, not a crash: kind "corrupt" at the seq
// after the last one delivered ("replay stopped"), the entries before it
// judged.
func TestReplaySourcePanics(t *testing.T) {
	c := baseChain(t)
	rep, err := verify.Replay(t.Context(), &entriesPanic{*c.src}, noReeval)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.FirstBad != 4 || rep.Entries != 3 || !findingAt(rep, 4, verify.KindCorrupt) ||
		!strings.Contains(rep.Findings[len(rep.Findings)-1].Message, "replay stopped") {
		t.Errorf("Replay(panicking Entries) = first bad %d, %d entries, %v; want corrupt at 4 after 3 entries", rep.FirstBad, rep.Entries, rep.Findings)
	}
}

// TestReplayHeadCorrupt: a stored head that cannot be read (the store
// says ErrCorrupt) is a finding of kind "corrupt" at the last seq, not an
// error that would hide the rest of the report.
func TestReplayHeadCorrupt(t *testing.T) {
	c := baseChain(t)
	opts := noReeval
	opts.Head = func(context.Context) (uint64, entry.Hash, error) {
		return 0, entry.Hash{}, fmt.Errorf("%w: meta head is 7 bytes", ledger.ErrCorrupt)
	}
	rep, err := verify.Replay(t.Context(), c.src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.FirstBad != 9 || !findingAt(rep, 9, verify.KindCorrupt) {
		t.Errorf("Replay(head corrupt) = first bad %d, %v; want corrupt at 9", rep.FirstBad, rep.Findings)
	}
}

// TestReplayBlobUnreadable: bytes the source cannot read for a reason
// other than their absence or damage (an I/O error) are kind "corrupt" at
// the entry naming them, and the replay goes on.
func TestReplayBlobUnreadable(t *testing.T) {
	c := baseChain(t)
	c.src.blobErr = errors.New("read /dev/sdb: input/output error")
	rep, err := verify.Replay(t.Context(), c.src, noReeval)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.FirstBad != 1 || !findingAt(rep, 1, verify.KindCorrupt) || !findingAt(rep, 9, verify.KindCorrupt) || rep.Entries != 9 {
		t.Errorf("Replay(blob I/O error) = first bad %d, %d entries, %v; want corrupt at 1 and 9", rep.FirstBad, rep.Entries, rep.Findings)
	}
}
