package checkpoint_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
)

func testCosigner(t *testing.T, name, seed string) *checkpoint.Cosigner {
	t.Helper()
	seedBytes := make([]byte, ed25519.SeedSize)
	detRand{seed}.Read(seedBytes)
	c, err := checkpoint.NewCosigner(name, ed25519.NewKeyFromSeed(seedBytes))
	if err != nil {
		t.Fatal(err)
	}
	c.Now = func() time.Time { return t0 }
	return c
}

// cosign adds w's cosignature lines to the signed checkpoint msg.
func cosign(t *testing.T, msg []byte, ws ...*checkpoint.Cosigner) []byte {
	t.Helper()
	n, err := note.Open(msg, note.VerifierList())
	var u *note.UnverifiedNoteError
	if !errors.As(err, &u) {
		t.Fatalf("open: %v", err)
	}
	for _, w := range ws {
		signed, err := note.Sign(&note.Note{Text: u.Note.Text}, w)
		if err != nil {
			t.Fatal(err)
		}
		msg = checkpoint.AddSignatures(msg, signed)
	}
	_ = n
	return msg
}

func TestPolicyQuorum(t *testing.T) {
	logS, _, logV := testKey(t, "example.com/log", "log")
	w1, w2, w3 := testCosigner(t, "w1.example", "w1"), testCosigner(t, "w2.example", "w2"), testCosigner(t, "w3.example", "w3")
	other := testCosigner(t, "stranger.example", "stranger")
	policy := fmt.Sprintf(`# two of three witnesses
log %s https://example.com/log/
witness a %s https://w1.example/
witness b %s
witness c %s
group g 2 a b c
quorum g
`, logV, w1.VerifierKey(), w2.VerifierKey(), w3.VerifierKey())
	p, err := checkpoint.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: "example.com/log", Size: 3, Hash: [32]byte{1}}, logS)
	if err != nil {
		t.Fatal(err)
	}
	// An unknown signature type (0x05 style line from a stranger, and a
	// cosignature from a witness outside the policy) is ignored.
	for _, tc := range []struct {
		name string
		msg  []byte
		ok   bool
	}{
		{"log only", cp, false},
		{"one witness", cosign(t, cp, w1), false},
		{"one witness and a stranger", cosign(t, cp, w1, other), false},
		{"two witnesses", cosign(t, cp, w1, w3), true},
		{"all three", cosign(t, cp, w1, w2, w3), true},
	} {
		_, who, err := p.Open(tc.msg, "example.com/log")
		if tc.ok != (err == nil) {
			t.Errorf("%s: cosigned by %v: err = %v, want ok=%v", tc.name, who, err, tc.ok)
		}
		if !tc.ok && !errors.Is(err, checkpoint.ErrPolicy) {
			t.Errorf("%s: err = %v, want ErrPolicy", tc.name, err)
		}
	}
	// A witness's cosignature that does not verify is refused.
	bad := cosign(t, cp, w1, w2)
	bad = []byte(strings.Replace(string(bad), "\n3\n", "\n4\n", 1))
	if _, _, err := p.Open(bad, ""); err == nil {
		t.Error("a changed checkpoint with cosignatures verified")
	}
	// Without a log signature, witnesses alone do not do.
	wOnly, err := note.Sign(&note.Note{Text: "example.com/log\n3\n" + "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"}, w1, w2)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Open(wOnly, ""); !errors.Is(err, checkpoint.ErrUnknownKey) {
		t.Errorf("witness-only checkpoint: err = %v, want ErrUnknownKey", err)
	}
	// A witness key is a verifier key like any other now (was: "unknown
	// verifier algorithm").
	if _, _, err := checkpoint.ParseVerifier([]byte(w1.VerifierKey()), ""); err != nil {
		t.Errorf("ParseVerifier(witness key): %v", err)
	}
}

// TestCosignatureMessage pins the cosigned message of c2sp.org/tlog-cosignature:
// an Ed25519 signature over "cosignature/v1\ntime T\n" + checkpoint text,
// checked here with crypto/ed25519 alone.
func TestCosignatureMessage(t *testing.T) {
	logS, _, _ := testKey(t, "example.com/log", "log")
	w := testCosigner(t, "w1.example", "w1")
	cp, _ := checkpoint.Sign(&checkpoint.Checkpoint{Origin: "example.com/log", Size: 3, Hash: [32]byte{1}}, logS)
	text := "example.com/log\n3\nAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	sig, err := w.Sign([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 72 {
		t.Fatalf("cosignature is %d bytes, want 8+64", len(sig))
	}
	pub := w.VerifierKey()
	v, err := checkpoint.NewVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprintf("cosignature/v1\ntime %d\n%s", t0.Unix(), text)
	seedBytes := make([]byte, ed25519.SeedSize)
	detRand{"w1"}.Read(seedBytes)
	if !ed25519.Verify(ed25519.NewKeyFromSeed(seedBytes).Public().(ed25519.PublicKey), []byte(msg), sig[8:]) {
		t.Error("cosignature is not an Ed25519 signature of the cosignature/v1 message")
	}
	if !v.Verify([]byte(text), sig) {
		t.Error("verifier refuses a good cosignature")
	}
	sig[3] ^= 1 // another time
	if v.Verify([]byte(text), sig) {
		t.Error("verifier accepts a cosignature with a changed timestamp")
	}
	_ = cp
}

func TestParsePolicyErrors(t *testing.T) {
	_, _, logV := testKey(t, "example.com/log", "log")
	w := testCosigner(t, "w1.example", "w1").VerifierKey()
	for _, tc := range []struct{ text, want string }{
		{"quorum none\n", "no log key"},
		{"log " + logV + "\n", "no quorum"},
		{"log " + logV + "\nquorum w\n", "line 2"},
		{"log " + logV + "\nwitness w " + w + "\ngroup g 3 w\nquorum g\n", "threshold"},
		{"log " + logV + "\nwitness w " + w + "\nwitness w " + w + "\nquorum w\n", "twice"},
		{"log nope\nquorum none\n", "line 1"},
		{"log " + logV + "\nfrobnicate\nquorum none\n", "unknown rule"},
		{"log " + logV + "\nwitness w example+00000000+BQ==\nquorum w\n", "line 2"},
	} {
		_, err := checkpoint.ParsePolicy([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, checkpoint.ErrPolicySyntax) {
			t.Errorf("ParsePolicy(%q) = %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}

func TestProofRoundTrip(t *testing.T) {
	l := openLedger(t, "example.com/log")
	fill(t, l, 5, "p")
	logS, _, logV := testKey(t, "example.com/log", "log")
	w := testCosigner(t, "w1.example", "w1")
	signed, err := checkpoint.Make(t.Context(), l, logS)
	if err != nil {
		t.Fatal(err)
	}
	cosigned := cosign(t, signed, w)
	_, raw, err := l.Get(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := l.ProveInclusion(t.Context(), 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	p := &checkpoint.Proof{Extra: raw, Index: 2, Hashes: rp, Checkpoint: cosigned}
	text := p.Format()
	q, err := checkpoint.ParseProof(text)
	if err != nil {
		t.Fatal(err)
	}
	if string(q.Format()) != string(text) {
		t.Fatalf("round trip changed the proof:\n%s\n%s", text, q.Format())
	}
	needW, _ := checkpoint.ParsePolicy(fmt.Appendf(nil, "log %s\nwitness w %s\nquorum w\n", logV, w.VerifierKey()))
	if _, _, err := q.Verify(needW, "example.com/log"); err != nil {
		t.Fatalf("verify: %v", err)
	}
	q.Extra = append([]byte(nil), raw...)
	q.Extra[10] ^= 1
	if _, _, err := q.Verify(needW, ""); err == nil {
		t.Error("a changed entry verified")
	}
	noW, _ := checkpoint.ParseProof((&checkpoint.Proof{Extra: raw, Index: 2, Hashes: rp, Checkpoint: signed}).Format())
	if _, _, err := noW.Verify(needW, ""); !errors.Is(err, checkpoint.ErrPolicy) {
		t.Errorf("without the cosignature: err = %v, want ErrPolicy", err)
	}
	for _, bad := range []string{"", "c2sp.org/tlog-proof@v1\nindex 01\n\n" + string(signed), "c2sp.org/tlog-proof@v1\nindex 1\nxx\n\n" + string(signed)} {
		if _, err := checkpoint.ParseProof([]byte(bad)); !errors.Is(err, checkpoint.ErrProofFormat) {
			t.Errorf("ParseProof(%q) = %v", bad, err)
		}
	}
}
