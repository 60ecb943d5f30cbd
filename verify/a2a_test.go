package verify_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// TestReevaluateA2A: verify re-decides a2a/1 entries like any format's,
// under the snapshot of an A2A Agent Cards registry: a forged decision is
// found.
func TestReevaluateA2A(t *testing.T) {
	const cardsDir = "../testdata/a2a-cards"
	reg, err := manifest.Load(cardsDir)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := lockfile.Generate(reg, lockfile.DirOpener(cardsDir))
	if err != nil {
		t.Fatal(err)
	}
	card, err := os.ReadFile(filepath.Join(cardsDir, "router.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(card)
	msg := func(id, hash string) []byte {
		return []byte(`{"kind": "message", "messageId": "` + id + `", "contextId": "trip-1", "role": "user", "parts": [{"kind": "text", "text": "go"}],` +
			` "metadata": {"govledger": {"source": "planner", "target": "router", "target_prompt_hash": "` + hash + `"}}}`)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, &bolt.Options{Now: bolttest.NewClock(start).Now, Origin: "test.example/verify"})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{t: t, l: l, reg: reg, lock: lk, lockBytes: lk.Marshal(), params: policy.Params{MaxPayload: 4096}}
	for i, want := range []string{"accepted:", "rejected:REPLAY", "rejected:HASH_MISMATCH"} {
		doc := msg("m-1", hex.EncodeToString(sum[:]))
		if i == 2 {
			doc = msg("m-2", strings.Repeat("0", 64))
		}
		a := r.record(doc, true)
		if got := a.Entry.Decision + ":" + codes(a.Entry); got != want || a.Entry.Format.S != "a2a/1" {
			t.Fatalf("seq %d = %s (%s), want %s", a.Entry.Seq, got, a.Entry.Format.S, want)
		}
	}
	l.Close()
	for _, tc := range []struct {
		name  string
		edit  func(*fakeSource)
		kinds string
	}{
		{"valid", func(*fakeSource) {}, ""},
		{"mismatch-accepted-@5", func(s *fakeSource) {
			rewrite(t, s, 5, func(e *entry.Entry) { e.Decision, e.Reasons = reason.Accepted, &[]reason.Reason{} })
		}, "5:decision 5:reasons"},
		{"replay-accepted-@4", func(s *fakeSource) {
			rewrite(t, s, 4, func(e *entry.Entry) { e.Decision, e.Reasons = reason.Accepted, &[]reason.Reason{} })
		}, "4:decision 4:reasons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fakeFromLedger(t, path)
			tc.edit(src)
			rep, err := verify.Replay(t.Context(), src, verify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range rep.Findings {
				got = append(got, fmt.Sprintf("%d:%s", x.Seq, x.Kind))
			}
			if g := strings.Join(got, " "); g != tc.kinds {
				t.Errorf("findings = %q, want %q\n%v", g, tc.kinds, rep.Findings)
			}
			if rep.Counts["reevaluated"] != 3 {
				t.Errorf("Counts = %v; want the 3 a2a/1 entries re-evaluated", rep.Counts)
			}
		})
	}
}
