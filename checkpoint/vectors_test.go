package checkpoint_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/checkpoint/bundle"
	"github.com/govledger/govledger/checkpoint/internal/memlog"
)

var update = flag.Bool("update", false, "rewrite testdata/proofs from the generator")

// A vector is one bundle file and the error Verify must return for it.
type vector struct {
	File    string `json:"file"`
	Desc    string `json:"desc"`
	WantErr string `json:"want_err"` // "" for a valid bundle
}

// wantErrs names the sentinels a vector may expect.
var wantErrs = map[string]error{
	"ErrInclusionProof":   bundle.ErrInclusionProof,
	"ErrConsistencyProof": bundle.ErrConsistencyProof,
	"ErrMismatch":         bundle.ErrMismatch,
	"ErrOrigin":           bundle.ErrOrigin,
	"ErrEntryHash":        bundle.ErrEntryHash,
	"ErrPayloadHash":      bundle.ErrPayloadHash,
	"ErrUnreadable":       bundle.ErrUnreadable,
	"ErrUnknownKey":       checkpoint.ErrUnknownKey,
	"ErrBadSignature":     checkpoint.ErrBadSignature,
	"ErrNonCanonicalSize": checkpoint.ErrNonCanonicalSize,
}

// generate builds the vectors from a deterministic in-memory ledger and key.
func generate(t *testing.T) (map[string][]byte, []vector, string) {
	s, _, vkey := testKey(t, origin, "vectors")
	other, _, _ := testKey(t, origin, "attacker")
	l := memlog.New(origin)
	for i := 1; i <= 13; i++ {
		if _, err := l.AppendHandoff("h"+strings.Repeat("x", i), []byte(`{"n":`+strings.Repeat("1", i)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := checkpoint.Make(t.Context(), l, s)
	oldCP, _ := checkpoint.Parse(old)
	for i := 14; i <= 21; i++ {
		l.AppendHandoff("h"+strings.Repeat("y", i), []byte(`{"n":`+strings.Repeat("2", i)+`}`))
	}
	cpMsg, _ := checkpoint.Make(t.Context(), l, s)
	cp, _ := checkpoint.Parse(cpMsg)
	incl, err := bundle.Prove(t.Context(), l, 6, &bundle.Options{Checkpoint: cpMsg})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := bundle.ProveConsistency(t.Context(), l, old, &bundle.Options{Checkpoint: cpMsg})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var vs []vector
	add := func(name, desc, want string, b any) {
		data, err := bundle.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		files[name+".json"] = data
		vs = append(vs, vector{File: name + ".json", Desc: desc, WantErr: want})
	}
	cloneI := func() *bundle.Inclusion {
		c := *incl
		c.InclusionProof = append(c.InclusionProof[:0:0], incl.InclusionProof...)
		return &c
	}
	cloneC := func() *bundle.Consistency {
		c := *cons
		c.ConsistencyProof = append(c.ConsistencyProof[:0:0], cons.ConsistencyProof...)
		return &c
	}
	add("inclusion-ok", "entry 6 in a tree of 21, with its payload", "", incl)
	add("consistency-ok", "tree of 13 extended to 21", "", cons)

	b := cloneI()
	b.InclusionProof = b.InclusionProof[:len(b.InclusionProof)-1]
	add("inclusion-truncated-proof", "last proof hash removed", "ErrInclusionProof", b)
	b = cloneI()
	b.InclusionProof = append(b.InclusionProof, b.InclusionProof[0])
	add("inclusion-extra-proof-hash", "a proof hash appended", "ErrInclusionProof", b)
	b = cloneI()
	b.InclusionProof[0][3] ^= 0x08
	add("inclusion-flipped-bit-proof0", "bit 3 of proof[0] flipped", "ErrInclusionProof", b)
	b = cloneI()
	b.TreeSize = 22
	add("inclusion-wrong-size", "tree_size says 22, checkpoint says 21", "ErrMismatch", b)
	b = cloneI()
	b.Checkpoint = string(flipRoot(t, cpMsg))
	add("inclusion-flipped-bit-root", "bit 0 of the checkpoint root flipped, signature kept", "ErrBadSignature", b)
	b = cloneI()
	b.Entry = strings.Replace(b.Entry, `"decision":"accepted"`, `"decision":"rejected"`, 1)
	add("inclusion-flipped-entry", "entry edited (decision), entry_hash kept", "ErrEntryHash", b)
	b = cloneI()
	b.Entry = strings.Replace(b.Entry, `"handoff_id":"hxxxxxx"`, `"handoff_id":"hxxxxxz"`, 1)
	b.EntryHash = hashOf(b.Entry)
	add("inclusion-flipped-entry-rehashed", "entry edited (handoff_id) and entry_hash recomputed", "ErrInclusionProof", b)
	b = cloneI()
	p := []byte(`{"n":1111112}`)
	s64 := base64.StdEncoding.EncodeToString(p)
	b.PayloadB64 = &s64
	add("inclusion-payload-swapped", "payload replaced", "ErrPayloadHash", b)
	b = cloneI()
	b.Origin = "example.com/other"
	add("inclusion-wrong-origin", "bundle origin differs from the checkpoint's", "ErrOrigin", b)
	b = cloneI()
	bad, _ := checkpoint.Sign(cp, other)
	b.Checkpoint = string(bad)
	add("inclusion-wrong-key", "checkpoint signed by a key the verifier does not trust", "ErrUnknownKey", b)
	b = cloneI()
	b.Checkpoint = string(relabel(t, bad, mustVerifier(t, vkey).KeyHash()))
	add("inclusion-signature-from-another-key", "signature by another key labelled as the trusted key", "ErrBadSignature", b)
	b = cloneI()
	text, _ := cp.Text()
	nc, _ := note.Sign(&note.Note{Text: strings.Replace(string(text), "\n21\n", "\n021\n", 1)}, s)
	b.Checkpoint = string(nc)
	add("inclusion-non-canonical-size", `signed checkpoint with size "021"`, "ErrNonCanonicalSize", b)
	b = cloneI()
	b.Seq, b.LeafIndex = 7, 6
	add("inclusion-wrong-seq", "seq and leaf_index moved to 7 for entry 6", "ErrMismatch", b)

	c := cloneC()
	c.ConsistencyProof = c.ConsistencyProof[:len(c.ConsistencyProof)-1]
	add("consistency-truncated-proof", "last proof hash removed", "ErrConsistencyProof", c)
	c = cloneC()
	c.ConsistencyProof = append(c.ConsistencyProof, c.ConsistencyProof[0])
	add("consistency-extra-proof-hash", "a proof hash appended", "ErrConsistencyProof", c)
	c = cloneC()
	c.ConsistencyProof[1][0] ^= 0x80
	add("consistency-flipped-bit-proof1", "bit 7 of proof[1] flipped", "ErrConsistencyProof", c)
	c = cloneC()
	c.OldCheckpoint, c.NewCheckpoint, c.OldSize, c.NewSize = c.NewCheckpoint, c.OldCheckpoint, c.NewSize, c.OldSize
	add("consistency-swapped-roots", "old and new checkpoints swapped", "ErrConsistencyProof", c)
	c = cloneC()
	c.NewSize = 20
	add("consistency-wrong-size", "new_size says 20, checkpoint says 21", "ErrMismatch", c)
	c = cloneC()
	forkRoot := oldCP.Hash
	forkRoot[0] ^= 1
	fk, _ := checkpoint.Sign(&checkpoint.Checkpoint{Origin: origin, Size: oldCP.Size, Hash: forkRoot}, s)
	c.OldCheckpoint = string(fk)
	add("consistency-fork", "validly signed old checkpoint of a forked tree", "ErrConsistencyProof", c)
	return files, vs, vkey
}

func hashOf(entry string) (h [32]byte) {
	return [32]byte(ledgerLeaf([]byte(entry)))
}

func mustVerifier(t *testing.T, vkey string) note.Verifier {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNegativeVectors checks every bundle in testdata/proofs against its
// expected error, and that the files are what the generator makes
// (go test -run TestNegativeVectors -update rewrites them).
func TestNegativeVectors(t *testing.T) {
	dir := filepath.Join("testdata", "proofs")
	files, vs, vkey := generate(t)
	index, _ := json.Marshal(vs, json.Deterministic(true))
	if *update {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		for name, data := range files {
			os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		os.WriteFile(filepath.Join(dir, "index.json"), append(index, '\n'), 0o644)
		os.WriteFile(filepath.Join(dir, "key.pub"), []byte(vkey+"\n"), 0o644)
	}
	var got []vector
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(filepath.Join(dir, "key.pub"))
	v, _, err := checkpoint.ParseVerifier(key, "")
	if err != nil {
		t.Fatal(err)
	}
	var failures []string
	for _, vec := range got {
		b, err := os.ReadFile(filepath.Join(dir, vec.File))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, files[vec.File]) {
			failures = append(failures, vec.File+": differs from the generator (run with -update)")
		}
		_, err = bundle.Verify(b, note.VerifierList(v))
		want := wantErrs[vec.WantErr]
		switch {
		case vec.WantErr == "" && err != nil:
			failures = append(failures, vec.File+": "+err.Error())
		case vec.WantErr != "" && (want == nil || !errors.Is(err, want)):
			failures = append(failures, vec.File+": got "+errString(err)+", want "+vec.WantErr)
		case vec.WantErr != "" && !errors.Is(err, bundle.ErrInvalid):
			failures = append(failures, vec.File+": not in the ErrInvalid family: "+errString(err))
		}
	}
	if len(got) != len(files) {
		failures = append(failures, "index.json lists a different set of files (run with -update)")
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d vectors failed:\n%s", len(failures), len(got), strings.Join(failures, "\n"))
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func FuzzVerifyBundle(f *testing.F) {
	files, _, vkey := generate(&testing.T{})
	for _, data := range files {
		f.Add(data)
	}
	v, _ := note.NewVerifier(vkey)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := bundle.Verify(data, note.VerifierList(v))
		if err == nil && r == nil {
			t.Fatal("nil result without error")
		}
	})
}
