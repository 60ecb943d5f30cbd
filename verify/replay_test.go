package verify_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

var (
	manifestV1 = []byte("manifest one")
	lockV1     = []byte("lock one")
	lockV2     = []byte("lock two")
)

// baseChain is a valid 9-entry chain (re-evaluation off: its snapshots
// are not real registries):
//
//	1 snapshot manifest   2 snapshot lock     3 handoff h1 accepted
//	4 handoff h2 rejected HASH_MISMATCH, blocks "a"
//	5 unblock a           6 handoff h3 accepted
//	7 redaction of 3      8 snapshot lock v2  9 handoff h4 accepted
func baseChain(t testing.TB) *chain {
	c := newChain(t)
	c.snapshot(entry.SnapshotManifest, manifestV1)
	c.snapshot(entry.SnapshotLock, lockV1)
	c.handoff("h1", []byte("payload one"), manifestV1, lockV1, nil, nil)
	c.handoff("h2", []byte("payload two"), manifestV1, lockV1,
		[]reason.Reason{{Code: reason.HashMismatch, Severity: reason.Critical, Field: "source_agent.prompt_hash", Message: "m"}}, []string{"a"})
	c.add(&entry.Entry{Kind: entry.KindUnblock, Agent: "a", Note: "fixed"}, nil)
	c.handoff("h3", []byte("payload three"), manifestV1, lockV1, nil, nil)
	c.add(&entry.Entry{Kind: entry.KindRedaction, RedactedSeq: 3, Note: "gdpr"}, nil)
	delete(c.src.blobs, entry.Sum256([]byte("payload one")))
	c.src.redact[entry.Sum256([]byte("payload one"))] = true
	c.snapshot(entry.SnapshotLock, lockV2)
	c.handoff("h4", []byte("payload four"), manifestV1, lockV2, nil, nil)
	return c
}

var noReeval = verify.Options{SkipReevaluate: true}

func TestReplayValid(t *testing.T) {
	c := baseChain(t)
	var progress []uint64
	opts := noReeval
	opts.Progress = func(seq uint64) { progress = append(progress, seq) }
	rep, err := verify.Replay(t.Context(), c.src, opts)
	if err != nil {
		t.Fatalf("Replay = %v", err)
	}
	if !rep.OK() || rep.FirstBad != 0 || len(rep.Findings) != 0 {
		t.Fatalf("Replay(valid) findings = %v, want none", rep.Findings)
	}
	if rep.Entries != 9 || rep.LastSeq != 9 || rep.Head != c.head {
		t.Errorf("Replay = entries %d last %d head %s, want 9 9 %s", rep.Entries, rep.LastSeq, rep.Head, c.head)
	}
	if fmt.Sprint(rep.Redacted) != "[3]" {
		t.Errorf("Redacted = %v, want [3]", rep.Redacted)
	}
	want := map[string]int{"snapshot": 3, "handoff": 4, "accepted": 3, "rejected": 1, "unblock": 1, "redaction": 1}
	if fmt.Sprint(rep.Counts) != fmt.Sprint(want) {
		t.Errorf("Counts = %v, want %v", rep.Counts, want)
	}
	if len(progress) != 9 || progress[8] != 9 {
		t.Errorf("Progress calls = %v, want 1..9", progress)
	}
}

func TestReplayEmpty(t *testing.T) {
	rep, err := verify.Replay(t.Context(), &fakeSource{}, verify.Options{
		Head: func(context.Context) (uint64, entry.Hash, error) { return 0, entry.Hash{}, nil },
	})
	if err != nil || !rep.OK() || rep.Entries != 0 || rep.Head != (entry.Hash{}) {
		t.Fatalf("Replay(empty) = %+v, %v; want OK with 0 entries", rep, err)
	}
}

// mutate edits one stored entry of a valid chain by re-encoding it with
// fn applied (keeping it canonical and valid), without fixing any hash.
func mutate(t *testing.T, c *chain, seq uint64, fn func(e *entry.Entry)) {
	t.Helper()
	e, err := entry.Decode(c.src.raws[seq-1])
	if err != nil {
		t.Fatal(err)
	}
	fn(e)
	raw, err := e.Canonical()
	if err != nil {
		t.Fatalf("mutated seq %d: %v", seq, err)
	}
	c.src.raws[seq-1] = raw
}

func TestReplayFindings(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(t *testing.T, c *chain, o *verify.Options)
		firstBad uint64
		kinds    string // "seq:kind" of every finding, in order
		redacted string
		ok       bool
	}{
		{name: "deleted", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.keys = append(c.src.keys[:4], c.src.keys[5:]...)
			c.src.raws = append(c.src.raws[:4], c.src.raws[5:]...)
		}, firstBad: 5, kinds: "5:gap 6:prev"},
		{name: "swapped", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.raws[3], c.src.raws[4] = c.src.raws[4], c.src.raws[3]
		}, firstBad: 4, kinds: "4:gap 4:prev 5:gap 5:time_backwards 5:prev 5:hash"},
		{name: "duplicated", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.keys = append(c.src.keys, 10)
			c.src.raws = append(c.src.raws, c.src.raws[5])
		}, firstBad: 10, kinds: "10:gap 10:time_backwards 10:snapshot 10:prev"},
		{name: "repeated-key", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.keys[5] = 5
		}, firstBad: 5, kinds: "5:gap 5:gap 6:gap"},
		{name: "first-prev", edit: func(t *testing.T, c *chain, o *verify.Options) {
			mutate(t, c, 1, func(e *entry.Entry) { e.Prev[0] = 1 })
		}, firstBad: 1, kinds: "1:prev 1:hash"},
		{name: "edited-decision-middle", edit: func(t *testing.T, c *chain, o *verify.Options) {
			mutate(t, c, 6, func(e *entry.Entry) { e.HandoffID = entry.Str("h3x") })
		}, firstBad: 6, kinds: "6:hash"},
		{name: "edited-prev-middle", edit: func(t *testing.T, c *chain, o *verify.Options) {
			mutate(t, c, 6, func(e *entry.Entry) { e.Prev[31] ^= 1 })
		}, firstBad: 6, kinds: "6:prev 6:hash"},
		{name: "edited-last-no-anchor", edit: func(t *testing.T, c *chain, o *verify.Options) {
			mutate(t, c, 9, func(e *entry.Entry) { e.HandoffID = entry.Str("h4x") })
		}, ok: true, redacted: "[3]"},
		{name: "edited-last-with-head", edit: func(t *testing.T, c *chain, o *verify.Options) {
			h := c.head
			mutate(t, c, 9, func(e *entry.Entry) { e.HandoffID = entry.Str("h4x") })
			o.Head = func(context.Context) (uint64, entry.Hash, error) { return 9, h, nil }
		}, firstBad: 9, kinds: "9:hash"},
		{name: "rewound-head", edit: func(t *testing.T, c *chain, o *verify.Options) {
			o.Head = func(context.Context) (uint64, entry.Hash, error) { return 8, entry.LeafHash(c.src.raws[7]), nil }
		}, firstBad: 9, kinds: "9:meta_head"},
		{name: "not-canonical", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.raws[2] = append([]byte(" "), c.src.raws[2]...)
		}, firstBad: 3, kinds: "3:not_canonical 3:hash"},
		{name: "not-canonical-escape", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.raws[4] = bytes.Replace(c.src.raws[4], []byte(`"agent":"a"`), []byte(`"agent":"\u0061"`), 1)
		}, firstBad: 5, kinds: "5:not_canonical 5:hash"},
		{name: "malformed", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.raws[4] = []byte("not json")
		}, firstBad: 5, kinds: "5:malformed 5:hash"},
		{name: "payload-edited", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.blobs[entry.Sum256([]byte("payload three"))] = []byte("payload thref")
		}, firstBad: 6, kinds: "6:payload"},
		{name: "payload-damaged-in-ledger", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.blobErr = fmt.Errorf("blob: %w", ledger.ErrCorrupt)
		}, firstBad: 1, kinds: "1:snapshot 2:snapshot 3:payload 4:payload 6:payload 8:snapshot 9:payload", redacted: "[]"},
		{name: "payload-missing", edit: func(t *testing.T, c *chain, o *verify.Options) {
			delete(c.src.blobs, entry.Sum256([]byte("payload four")))
		}, firstBad: 9, kinds: "9:payload_missing"},
		{name: "snapshot-edited", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.blobs[entry.Sum256(lockV2)] = []byte("lock twp")
		}, firstBad: 8, kinds: "8:snapshot"},
		{name: "redaction-without-entry", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.redact[entry.Sum256([]byte("payload three"))] = true
		}, firstBad: 6, kinds: "6:payload_missing"},
		{name: "handoff-names-old-lock", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.keys, c.src.raws = c.src.keys[:8], c.src.raws[:8]
			c.head = entry.LeafHash(c.src.raws[7])
			c.handoff("h4", []byte("payload four"), manifestV1, lockV1, nil, nil)
		}, firstBad: 9, kinds: "9:snapshot"},
		{name: "time-backwards-warning", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.keys, c.src.raws = c.src.keys[:8], c.src.raws[:8]
			c.head = entry.LeafHash(c.src.raws[7])
			c.now = c.now.Add(-time.Hour)
			c.handoff("h4", []byte("payload four"), manifestV1, lockV2, nil, nil)
		}, kinds: "9:time_backwards", ok: true},
		{name: "entry-too-large-warning", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.add(&entry.Entry{Kind: entry.KindUnblock, Agent: "a", Note: strings.Repeat("n", 70000)}, nil)
		}, kinds: "10:entry_too_large", ok: true},
		{name: "structural", edit: func(t *testing.T, c *chain, o *verify.Options) {
			o.Structural = func(context.Context) ([]ledger.Finding, error) {
				return []ledger.Finding{{Seq: 4, Kind: "index", Want: "x", Got: "y"}, {Kind: "unknown_key", Got: "bucket evil"}}, nil
			}
		}, firstBad: 4, kinds: "0:unknown_key 4:index"},
		{name: "structural-corrupt", edit: func(t *testing.T, c *chain, o *verify.Options) {
			o.Structural = func(context.Context) ([]ledger.Finding, error) { return nil, ledger.ErrCorrupt }
		}, kinds: "0:corrupt"},
		{name: "scan-corrupt", edit: func(t *testing.T, c *chain, o *verify.Options) {
			c.src.failAt, c.src.failErr = 4, &ledger.RecordError{Op: "scan", Err: ledger.ErrCorrupt}
		}, firstBad: 5, kinds: "5:corrupt 5:payload_missing", redacted: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := baseChain(t)
			opts := noReeval
			tt.edit(t, c, &opts)
			rep, err := verify.Replay(t.Context(), c.src, opts)
			if err != nil {
				t.Fatalf("Replay = %v", err)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, fmt.Sprintf("%d:%s", f.Seq, f.Kind))
				if f.Message == "" {
					t.Errorf("finding %v has no message", f)
				}
			}
			if g := strings.Join(got, " "); g != tt.kinds {
				t.Errorf("findings = %q, want %q\n%s", g, tt.kinds, rep.Findings)
			}
			if rep.FirstBad != tt.firstBad {
				t.Errorf("FirstBad = %d, want %d", rep.FirstBad, tt.firstBad)
			}
			if rep.OK() != (tt.kinds == "" || tt.ok) {
				t.Errorf("OK() = %v", rep.OK())
			}
			if tt.redacted != "" && fmt.Sprint(rep.Redacted) != tt.redacted {
				t.Errorf("Redacted = %v, want %s", rep.Redacted, tt.redacted)
			}
		})
	}
}

func TestReplaySourceErrors(t *testing.T) {
	c := baseChain(t)
	c.src.failAt, c.src.failErr = 3, errors.New("disk on fire")
	rep, err := verify.Replay(t.Context(), c.src, noReeval)
	if !errors.Is(err, verify.ErrSource) || rep == nil || rep.Entries != 3 {
		t.Errorf("Replay(failing source) = %v, %v; want ErrSource after 3 entries", rep, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := verify.Replay(ctx, baseChain(t).src, noReeval); !errors.Is(err, context.Canceled) {
		t.Errorf("Replay(cancelled) = %v, want context.Canceled", err)
	}

	_, err = verify.Replay(t.Context(), baseChain(t).src, verify.Options{SkipReevaluate: true,
		Head: func(context.Context) (uint64, entry.Hash, error) { return 0, entry.Hash{}, errors.New("io") }})
	if !errors.Is(err, verify.ErrSource) {
		t.Errorf("Replay(head fails) = %v, want ErrSource", err)
	}
}

type panicSource struct{ fakeSource }

func (p *panicSource) Blob(context.Context, entry.Hash) ([]byte, error) { panic("boom") }

func TestReplayNeverPanics(t *testing.T) {
	c := baseChain(t)
	rep, err := verify.Replay(t.Context(), &panicSource{*c.src}, noReeval)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.FirstBad != 1 || rep.Findings[0].Kind != verify.KindCorrupt {
		t.Errorf("Replay(panicking Blob) = %v, want corrupt findings from seq 1", rep.Findings)
	}
}
