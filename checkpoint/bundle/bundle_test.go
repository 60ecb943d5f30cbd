package bundle_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/checkpoint/bundle"
	"github.com/govledger/govledger/checkpoint/internal/memlog"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
)

const origin = "example.com/ledger"

type detRand struct{ seed string }

func (r detRand) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 32 {
		s := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", r.seed, i)))
		copy(p[i:], s[:])
	}
	return len(p), nil
}

func testKey(t testing.TB, seed string) (note.Signer, note.Verifiers) {
	t.Helper()
	skey, vkey, err := checkpoint.GenerateKey(detRand{seed}, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	v, _ := note.NewVerifier(vkey)
	return s, note.VerifierList(v)
}

// source is what the every-size test needs of a ledger under test.
type source interface {
	bundle.Source
	appendOne(t *testing.T, i int)
}

type memSource struct{ *memlog.Log }

func (m memSource) appendOne(t *testing.T, i int) {
	if _, err := m.AppendHandoff(fmt.Sprintf("h%d", i), []byte(fmt.Sprintf("payload %d", i))); err != nil {
		t.Fatal(err)
	}
}

type realSource struct{ *ledger.Ledger }

func (r realSource) appendOne(t *testing.T, i int) {
	agent := fmt.Sprintf("agent-%d", i)
	_, err := r.Append(context.Background(), &ledger.Request{Build: func(st ledger.State, e *entry.Entry) error {
		e.Kind, e.Agent, e.Note = entry.KindUnblock, agent, "reviewed"
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func openReal(t *testing.T) *ledger.Ledger {
	l, err := bolt.Open(filepath.Join(t.TempDir(), "l.db"), &bolt.Options{Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestEverySize grows a ledger to 64 entries and, at every size, checks
// every inclusion proof and every consistency proof made by this package
// with an independent RFC 6962 verifier (transparency-dev/merkle) and with
// bundle.Verify, both against the in-memory tlog tree and the real ledger.
func TestEverySize(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  func(t *testing.T) source
	}{
		{"memlog", func(t *testing.T) source { return memSource{memlog.New(origin)} }},
		{"ledger", func(t *testing.T) source { return realSource{openReal(t)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, vs := testKey(t, "k1")
			src := tc.src(t)
			h := rfc6962.DefaultHasher
			var cps [][]byte // cps[n] = checkpoint at size n
			cps = append(cps, nil)
			for n := 1; n <= 64; n++ {
				src.appendOne(t, n)
				cp, err := checkpoint.Make(t.Context(), src, s)
				if err != nil {
					t.Fatal(err)
				}
				cps = append(cps, cp)
				c, err := checkpoint.Open(cp, vs, origin)
				if err != nil || c.Size != uint64(n) {
					t.Fatalf("size %d: Open = %+v, %v", n, c, err)
				}
				// bundle.Verify checks a signature per call: run it at a
				// spread of sizes; the independent verifier runs at all.
				full := n <= 5 || n%8 == 0 || n == 33 || n == 63
				for seq := uint64(1); seq <= uint64(n); seq++ {
					b, err := bundle.Prove(t.Context(), src, seq, &bundle.Options{Checkpoint: cp})
					if err != nil {
						t.Fatalf("Prove(%d) at %d: %v", seq, n, err)
					}
					path := make([][]byte, len(b.InclusionProof))
					for i := range b.InclusionProof {
						path[i] = b.InclusionProof[i][:]
					}
					if err := proof.VerifyInclusion(h, seq-1, uint64(n), h.HashLeaf([]byte(b.Entry)), path, c.Hash[:]); err != nil {
						t.Fatalf("merkle.VerifyInclusion(seq %d, size %d): %v", seq, n, err)
					}
					if !full {
						continue
					}
					if _, err := bundle.Verify(mustMarshal(t, b), vs); err != nil {
						t.Fatalf("bundle.Verify(seq %d, size %d): %v", seq, n, err)
					}
				}
				for old := 1; old <= n; old++ {
					b, err := bundle.ProveConsistency(t.Context(), src, cps[old], &bundle.Options{Checkpoint: cp})
					if err != nil {
						t.Fatalf("ProveConsistency(%d, %d): %v", old, n, err)
					}
					oc, _ := checkpoint.Open(cps[old], vs, origin)
					path := make([][]byte, len(b.ConsistencyProof))
					for i := range b.ConsistencyProof {
						path[i] = b.ConsistencyProof[i][:]
					}
					if err := proof.VerifyConsistency(h, uint64(old), uint64(n), path, oc.Hash[:], c.Hash[:]); err != nil {
						t.Fatalf("merkle.VerifyConsistency(%d, %d): %v", old, n, err)
					}
					if !full {
						continue
					}
					if _, err := bundle.Verify(mustMarshal(t, b), vs); err != nil {
						t.Fatalf("bundle.Verify(consistency %d, %d): %v", old, n, err)
					}
				}
			}
			// Both trees agree with a root computed from the entries alone.
			root, err := checkpoint.RootFromLeaves(context.Background(), 64, func(i uint64) (tlog.Hash, error) {
				_, raw, err := src.Get(t.Context(), i+1)
				return tlog.RecordHash(raw), err
			})
			want, _ := src.TreeHash(t.Context(), 64)
			if err != nil || root != want {
				t.Fatalf("RootFromLeaves = %x, %v; TreeHash = %x", root, err, want)
			}
		})
	}
}

func mustMarshal(t testing.TB, b any) []byte {
	t.Helper()
	out, err := bundle.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProvePayloads(t *testing.T) {
	s, vs := testKey(t, "k1")
	l := openReal(t)
	payload := []byte(`{"handoff":"x"}`)
	var seq uint64
	_, err := l.Append(context.Background(), &ledger.Request{
		Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: []byte("m")}, {What: entry.SnapshotLock, Bytes: []byte("l")}},
		Payload:   payload,
		Build: func(st ledger.State, e *entry.Entry) error {
			m, lk, _ := st.InForce()
			sum, size, rs := entry.Sum256(payload), int64(len(payload)), []reason.Reason{}
			e.Kind, e.Format, e.Decision, e.Reasons = entry.KindHandoff, entry.Str("governed/1"), reason.Accepted, &rs
			e.HandoffID, e.Source, e.Target, e.WorkflowID = entry.Str("id"), entry.Str("a"), entry.Str("b"), entry.Null()
			e.PayloadSHA256, e.PayloadSize, e.ManifestSHA256, e.LockSHA256 = &sum, &size, &m, &lk
			seq = e.Seq
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(seq uint64, want string) {
		t.Helper()
		b, err := bundle.Prove(t.Context(), l, seq, &bundle.Options{Signer: s})
		if err != nil {
			t.Fatal(err)
		}
		r, err := bundle.Verify(mustMarshal(t, b), vs)
		if err != nil || r.Payload != want {
			t.Fatalf("seq %d: Verify = %+v, %v; want payload %s", seq, r, err, want)
		}
	}
	check(1, bundle.PayloadVerified) // manifest snapshot: its content
	check(seq, bundle.PayloadVerified)
	if _, err := l.Redact(context.Background(), seq, "GDPR request"); err != nil {
		t.Fatal(err)
	}
	check(seq, bundle.PayloadRedacted)
	check(seq+1, bundle.PayloadNone) // the redaction entry
	if _, err := bundle.Prove(t.Context(), l, 99, &bundle.Options{Signer: s}); !errors.Is(err, bundle.ErrSeqRange) {
		t.Fatalf("Prove(99) = %v, want ErrSeqRange", err)
	}
	if _, err := bundle.Prove(t.Context(), l, 0, &bundle.Options{Signer: s}); !errors.Is(err, bundle.ErrSeqRange) {
		t.Fatalf("Prove(0) = %v, want ErrSeqRange", err)
	}
}

// BenchmarkProve measures proof generation at one million entries on a
// tlog-backed in-memory store, reporting hashes read per proof (O(log n)).
func BenchmarkProve(b *testing.B) {
	const n = 1 << 20
	l := memlog.New(origin)
	start := time.Now()
	for i := range n {
		var h tlog.Hash
		h[0], h[1], h[2], h[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		if err := l.AppendLeaf(h); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("built %d leaves in %v", n, time.Since(start))
	size, _ := l.TreeSize(b.Context())
	b.Run("inclusion/1M", func(b *testing.B) {
		b.ReportAllocs()
		l.Reads.Store(0)
		l.Calls.Store(0)
		for i := 0; b.Loop(); i++ {
			seq := uint64(i*7919)%size + 1
			if _, err := l.ProveInclusion(b.Context(), seq, size); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(l.Reads.Load())/float64(b.N), "hashes/op")
		b.ReportMetric(float64(l.Calls.Load())/float64(b.N), "reads/op")
	})
	b.Run("consistency/1M", func(b *testing.B) {
		b.ReportAllocs()
		l.Reads.Store(0)
		l.Calls.Store(0)
		for i := 0; b.Loop(); i++ {
			old := uint64(i*7919)%size + 1
			if _, err := l.ProveConsistency(b.Context(), old, size); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(l.Reads.Load())/float64(b.N), "hashes/op")
		b.ReportMetric(float64(l.Calls.Load())/float64(b.N), "reads/op")
	})
	b.Run("treehash/1M", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.TreeHash(b.Context(), size); err != nil {
				b.Fatal(err)
			}
		}
	})
}
