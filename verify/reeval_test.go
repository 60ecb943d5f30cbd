package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// fakeFromLedger copies a closed ledger file's entries and blobs into a
// fakeSource (redacted payloads stay redacted).
func fakeFromLedger(t *testing.T, path string) *fakeSource {
	t.Helper()
	l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	src := &fakeSource{blobs: map[entry.Hash][]byte{}, redact: map[entry.Hash]bool{}}
	err = l.Scan(context.Background(), 0, func(seq uint64, raw []byte) error {
		src.keys = append(src.keys, seq)
		src.raws = append(src.raws, raw)
		e, err := entry.Decode(raw)
		if err != nil {
			return err
		}
		for _, h := range []*entry.Hash{e.PayloadSHA256, e.ContentSHA256} {
			if h == nil {
				continue
			}
			b, err := l.Blob(t.Context(), *h)
			switch {
			case err == nil:
				src.blobs[*h] = b
			case strings.Contains(err.Error(), "redacted"):
				src.redact[*h] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// rewrite edits entry seq of src and recomputes every later prev: a
// rewritten history whose chain is sound, so only re-evaluation can tell.
func rewrite(t *testing.T, src *fakeSource, seq uint64, edit func(e *entry.Entry)) {
	t.Helper()
	var prev entry.Hash
	for i, raw := range src.raws {
		e, err := entry.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq == seq {
			edit(e)
		}
		if e.Seq >= seq {
			e.Prev = prev
			if raw, err = e.Canonical(); err != nil {
				t.Fatalf("rewrite seq %d: %v", e.Seq, err)
			}
			src.raws[i] = raw
		}
		prev = entry.LeafHash(raw)
	}
}

func TestReevaluate(t *testing.T) {
	f := buildLedger(t)
	tests := []struct {
		name     string
		edit     func(t *testing.T, src *fakeSource)
		firstBad uint64
		kinds    string // every finding's "seq:kind", sorted
	}{
		{"valid", func(*testing.T, *fakeSource) {}, 0, ""},
		{"decision-flipped-@3", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 3, func(e *entry.Entry) {
				e.Decision, e.Reasons = reason.Rejected, &[]reason.Reason{{Code: reason.Stale, Severity: reason.Error, Message: "old"}}
			})
		}, 3, "3:decision 3:reasons 5:decision 5:reasons"},
		{"reason-field-@4", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 4, func(e *entry.Entry) { (*e.Reasons)[0].Field = "elsewhere" })
		}, 4, "4:reasons"},
		{"reason-message-@4", func(t *testing.T, s *fakeSource) {
			// Only the wording differs, and the chain was re-hashed: reported
			// as a warning (wording may change between versions); a
			// checkpoint anchor is what catches a re-hashed rewrite.
			rewrite(t, s, 4, func(e *entry.Entry) { (*e.Reasons)[0].Message = "all good" })
		}, 0, "4:message"},
		{"warning-added-@9", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 9, func(e *entry.Entry) {
				*e.Reasons = append(*e.Reasons, reason.Reason{Code: reason.HandoffLoop, Severity: reason.Warning, Message: "loop"})
			})
		}, 9, "9:reasons"},
		{"blocks-moved-@6", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 6, func(e *entry.Entry) { e.Blocks = []string{"domain-02-analysis"} })
		}, 6, "6:blocks 7:reasons 16:reasons"},
		{"unblock-dropped-@8", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 8, func(e *entry.Entry) { e.Agent = "domain-01-research" })
		}, 9, "9:decision 9:reasons 16:reasons 16:blocks 18:reasons"},
		{"handoff-id-@12", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 12, func(e *entry.Entry) { e.HandoffID = entry.Str("00000000-0000-4000-8000-000000000099") })
		}, 12, "12:decision"},
		// governed/1 carries no workflow id: one the request gave (the
		// Govledger-Workflow header, --workflow) is the entry's to record.
		{"workflow-given-by-the-request-@3", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 3, func(e *entry.Entry) { e.WorkflowID = entry.Str("run-42") })
		}, 0, ""},
		{"time-moved-@3", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 3, func(e *entry.Entry) { e.Time.Time = e.Time.Add(-48 * 3600e9) })
		}, 3, "3:time_backwards 3:decision 3:reasons"},
		{"inputs-@9", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 9, func(e *entry.Entry) { e.Inputs = jsontext.Value(`{"params":{}}`) })
		}, 9, "9:malformed"},
		{"lifts-added-@17", func(t *testing.T, s *fakeSource) {
			// Lock v1 again leaves domain-02-analysis's prompt hash as it
			// was: its block stays, and a lifts list naming it is not what
			// the two locks give (the fold accepts it: the agent is blocked).
			rewrite(t, s, 17, func(e *entry.Entry) { e.Lifts = &[]string{"domain-02-analysis"} })
		}, 17, "17:state 18:decision 18:reasons 19:reasons"},
		{"lifts-an-agent-not-blocked-@17", func(t *testing.T, s *fakeSource) {
			// domain-05-product was unblocked at seq 8: the fold refuses
			// the lift, and the two locks do not give it either.
			rewrite(t, s, 17, func(e *entry.Entry) { e.Lifts = &[]string{"domain-05-product"} })
		}, 17, "17:state 17:state 18:snapshot 19:snapshot"},
		{"key-rotation-old-key-not-in-force-@21", func(t *testing.T, s *fakeSource) {
			appendEntry(t, s, &entry.Entry{Kind: entry.KindKeyRotation, OldKey: "key-a", NewKey: "key-b", Note: "rotated"})
			appendEntry(t, s, &entry.Entry{Kind: entry.KindKeyRotation, OldKey: "key-a", NewKey: "key-c", Note: "rotated again"})
		}, 21, "21:state"},
		{"manifest-not-in-force-@15", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 15, func(e *entry.Entry) { e.ManifestSHA256 = hashPtr(entry.Sum256([]byte("other"))) })
		}, 15, "15:snapshot"},
		{"lock-not-in-force-@15", func(t *testing.T, s *fakeSource) {
			rewrite(t, s, 15, func(e *entry.Entry) { e.LockSHA256 = hashPtr(entry.Sum256([]byte("other"))) })
		}, 15, "15:snapshot"},
		{"snapshot-unparseable-@2", func(t *testing.T, s *fakeSource) {
			junk := []byte(`{"lock_version":2}`)
			s.blobs[entry.Sum256(junk)] = junk
			rewrite(t, s, 2, func(e *entry.Entry) {
				e.ContentSHA256, e.Size = hashPtr(entry.Sum256(junk)), int64Ptr(int64(len(junk)))
			})
		}, 2, "2:snapshot 3:snapshot 4:snapshot 5:snapshot 6:snapshot 7:snapshot 9:snapshot 10:snapshot 11:snapshot 12:snapshot"},
	}
	// Each case runs with workers and without (each entry prepared by the
	// goroutine that judges it): the findings are the same.
	for _, workers := range []int{0, 2} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/workers=%d", tt.name, workers), func(t *testing.T) {
				src := fakeFromLedger(t, f.path)
				tt.edit(t, src)
				var rep *verify.Report
				var err error
				if workers == 0 {
					rep, _, err = verify.ReplayWorkers(t.Context(), src, verify.Options{}, 0, 32)
				} else {
					rep, err = verify.Replay(t.Context(), src, verify.Options{})
				}
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, x := range rep.Findings {
					got = append(got, fmt.Sprintf("%d:%s", x.Seq, x.Kind))
				}
				if g := strings.Join(got, " "); g != tt.kinds {
					t.Errorf("findings = %q, want %q\n%v", g, tt.kinds, rep.Findings)
				}
				if rep.FirstBad != tt.firstBad {
					t.Errorf("FirstBad = %d, want %d", rep.FirstBad, tt.firstBad)
				}
				if tt.kinds == "" {
					if rep.Counts["reevaluated"] != 12 || rep.Counts["not_reevaluated"] != 1 || !slices.Equal(rep.Redacted, []uint64{10}) {
						t.Errorf("Counts = %v, Redacted = %v; want 12 re-evaluated, 1 not (seq 10, redacted)", rep.Counts, rep.Redacted)
					}
				}
			})
		}
	}
}

// TestExportLedger exports a real ledger and verifies the export with
// re-evaluation: same head, same result, no database needed.
func TestExportLedger(t *testing.T) {
	f := buildLedger(t)
	l, err := bolt.Open(f.path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := verify.WriteExport(t.Context(), &b, verify.LedgerSource(l)); err != nil {
		t.Fatal(err)
	}
	_, head, err := l.Head(t.Context())
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Replay(t.Context(), verify.ExportSource(&b), verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Head != head || rep.Entries != 19 || rep.Counts["reevaluated"] != 12 {
		t.Errorf("Replay(export) = %+v, want OK, head %s, 19 entries, 12 re-evaluated", rep, head)
	}
}

// TestReevaluateExportInputs: damaged inputs in an export (its hashes
// recomputed) are reported as kind "malformed" at their seq, with and
// without workers.
func TestReevaluateExportInputs(t *testing.T) {
	f := buildLedger(t)
	src := fakeFromLedger(t, f.path)
	rewrite(t, src, 9, func(e *entry.Entry) { e.Inputs = jsontext.Value(`{"params":{}}`) })
	exp := exportOf(t, src)
	for _, workers := range []int{0, 2} {
		rep, _, err := verify.ReplayWorkers(t.Context(), verify.ExportSource(bytes.NewReader(exp)), verify.Options{}, workers, 32)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range rep.Findings {
			got = append(got, fmt.Sprintf("%d:%s", x.Seq, x.Kind))
		}
		if g := strings.Join(got, " "); g != "9:malformed" || rep.FirstBad != 9 {
			t.Errorf("workers %d: findings %q, first bad %d; want 9:malformed", workers, g, rep.FirstBad)
		}
	}
}

// appendEntry appends e to src as the entry after its last one (seq, prev
// and time set here).
func appendEntry(t *testing.T, src *fakeSource, e *entry.Entry) {
	t.Helper()
	last, err := entry.Decode(src.raws[len(src.raws)-1])
	if err != nil {
		t.Fatal(err)
	}
	e.V, e.Seq, e.Prev = entry.Version, last.Seq+1, entry.LeafHash(src.raws[len(src.raws)-1])
	e.Time = entry.Time{Time: last.Time.Add(time.Second)}
	raw, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	src.keys = append(src.keys, e.Seq)
	src.raws = append(src.raws, raw)
}
