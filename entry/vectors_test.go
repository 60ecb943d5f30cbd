package entry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
)

type vector struct {
	Entry     json.RawMessage `json:"entry"`
	Canonical string          `json:"canonical"`
	Hash      string          `json:"hash"`
}

func readVectors(t *testing.T, path string) []vector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestSharedVectors reproduces the known-answer vectors in
// testdata/vectors byte for byte, both as generic JSON and through the
// typed Entry.
func TestSharedVectors(t *testing.T) {
	for _, path := range []string{"../testdata/vectors/entries.jsonl", "../testdata/vectors/govledger-entries.jsonl"} {
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		vs := readVectors(t, path)
		if len(vs) < 3 {
			t.Fatalf("%s: %d vectors, want >= 3", path, len(vs))
		}
		prev := entry.ZeroHash
		for i, v := range vs {
			c, err := strictjson.CanonicalizeBytes(v.Entry)
			if err != nil {
				t.Fatalf("%s line %d: %v", path, i+1, err)
			}
			if string(c) != v.Canonical {
				t.Errorf("%s line %d: canonical\n got %s\nwant %s", path, i+1, c, v.Canonical)
			}
			e, err := entry.Decode([]byte(v.Canonical))
			if err != nil {
				t.Fatalf("%s line %d: DecodeEntry: %v", path, i+1, err)
			}
			if e.Prev != prev {
				t.Errorf("%s line %d: prev = %s, want %s", path, i+1, e.Prev, prev)
			}
			tc, err := e.Canonical()
			if err != nil || !bytes.Equal(tc, []byte(v.Canonical)) {
				t.Errorf("%s line %d: typed round trip = %s, %v", path, i+1, tc, err)
			}
			h := entry.LeafHash([]byte(v.Canonical))
			if h.String() != v.Hash {
				t.Errorf("%s line %d: hash = %s, want %s", path, i+1, h, v.Hash)
			}
			prev = h
		}
	}
}

// TestZeroHashFieldKept guards against a present all-zero hash being
// dropped by "omitzero" (a hash field must never vanish from an entry).
func TestZeroHashFieldKept(t *testing.T) {
	var zero entry.Hash
	size := int64(0)
	e := &entry.Entry{V: 1, Seq: 1, Time: entry.Time{Time: time.Unix(1, 0).UTC()}, Kind: entry.KindSnapshot,
		What: entry.SnapshotLock, ContentSHA256: &zero, Size: &size}
	c, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := entry.Decode(c); err != nil {
		t.Fatalf("DecodeEntry(%s) = %v, want round trip", c, err)
	}
}

// TestMarshalIsCanonical checks that plain marshaling of an Entry (what
// DecodeEntry compares against) equals the RFC 8785 form, on the shared
// vectors' hostile strings and on every kind.
func TestMarshalIsCanonical(t *testing.T) {
	for i, v := range readVectors(t, "../testdata/vectors/entries.jsonl") {
		e, err := entry.Decode([]byte(v.Canonical))
		if err != nil {
			t.Fatalf("vector %d: %v", i+1, err)
		}
		m, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		c, err := strictjson.CanonicalizeBytes(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.Canonical(); err != nil || !bytes.Equal(got, c) {
			t.Errorf("vector %d: Canonical() = %s, %v; want %s", i+1, got, err, c)
		}
	}
}

// FuzzCanonical: for any strings in an entry, Canonical() equals the full
// RFC 8785 canonicalization of its bytes, and the bytes decode back to the
// same entry.
func FuzzCanonical(f *testing.F) {
	f.Add("prompt verified <ok> & \"done\"", "domain-01-research", "\u2028\u007f\t\n\u0001 😀 é")
	f.Add("", "a", "\x00")
	f.Fuzz(func(t *testing.T, note, agent, msg string) {
		rs := []reason.Reason{{Code: reason.SchemaInvalid, Severity: reason.Error, Field: agent, Message: msg}}
		size := int64(len(msg))
		var h entry.Hash
		entries := []*entry.Entry{
			{V: 1, Seq: 2, Time: entry.Time{Time: time.Unix(1, 5).UTC()}, Kind: entry.KindUnblock, Agent: agent, Note: note},
			{V: 1, Seq: 3, Time: entry.Time{Time: time.Unix(2, 0).UTC()}, Kind: entry.KindHandoff, Format: entry.Str(note),
				Decision: reason.Rejected, Reasons: &rs, HandoffID: entry.Null(), Source: entry.Str(agent), Target: entry.StrOrNull(msg),
				WorkflowID: entry.Null(), PayloadSHA256: &h, PayloadSize: &size, ManifestSHA256: &h, LockSHA256: &h},
		}
		for _, e := range entries {
			c, err := e.Canonical()
			if err != nil {
				return // invalid UTF-8 or an empty required string: refused, fine
			}
			full, err := strictjson.CanonicalizeBytes(c)
			if err != nil || !bytes.Equal(full, c) {
				t.Fatalf("Canonical() = %q, full JCS = %q (%v)", c, full, err)
			}
			d, err := entry.Decode(c)
			if err != nil {
				t.Fatalf("DecodeEntry(%q) = %v", c, err)
			}
			if c2, _ := d.Canonical(); !bytes.Equal(c2, c) {
				t.Fatalf("round trip %q -> %q", c, c2)
			}
		}
	})
}
