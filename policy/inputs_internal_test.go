package policy

import (
	"bytes"
	"testing"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/strictjson"
)

// canonicalInputs is what Marshal wrote before appendInputs: the
// reference the byte-by-byte encoder is held to.
func canonicalInputs(in Inputs) ([]byte, error) {
	if len(in.Observations) == 0 {
		in.Observations = nil
	}
	return strictjson.Canonical(in)
}

var inputsCases = []Inputs{
	{},
	{Params: Params{Format: handoff.Swarm, From: "a", To: "b", Strict: true, MaxAge: 1 << 53, MaxPayload: 1<<53 - 1}},
	{Params: Params{MaxAge: -(1<<53 - 1), MaxPayload: -1}},
	{Params: Params{From: "\x00\x1f\x7f\"\\/<>&\u2028\u2029é\U0001F600\b\t\n\f\r"}},
	{Params: Params{To: "\xff"}},
	{Observations: []handoff.Observation{}},
	{Observations: []handoff.Observation{{}, {Op: "dir", Path: "p", Names: []string{}}, {Op: "file", Path: "f", Escapes: true, Exists: true, IsDir: true, Size: 3, SHA256: "ab", Err: "e\n", Names: []string{"x", "y\x01"}}}},
	{Observations: []handoff.Observation{{Size: -(1 << 53)}}},
}

func TestAppendInputs(t *testing.T) {
	for i, in := range inputsCases {
		checkAppendInputs(t, i, in)
	}
}

func checkAppendInputs(t *testing.T, i int, in Inputs) {
	want, err := canonicalInputs(in)
	if len(in.Observations) == 0 {
		in.Observations = nil
	}
	got, ok := appendInputs(nil, in)
	switch {
	case err != nil && ok:
		t.Fatalf("%d: appendInputs wrote %s; strictjson.Canonical: %v", i, got, err)
	case err == nil && !ok:
		t.Fatalf("%d: appendInputs refused what strictjson.Canonical writes as %s", i, want)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("%d: appendInputs = %s, strictjson.Canonical = %s", i, got, want)
	}
}

func FuzzInputsMarshal(f *testing.F) {
	f.Add("governed/1", "a", "b", true, int64(1), int64(2), "file", "p", "sha", "err", "n1", true, int64(5), uint8(7))
	f.Add("", "\x00é", "\xff", false, int64(1<<53), int64(-1), "dir", "\u2028", "", "", "", false, int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, format, from, to string, strict bool, maxAge, maxPayload int64,
		op, path, sum, errText, name string, flag bool, size int64, shape uint8) {
		in := Inputs{Params: Params{Format: handoff.Format(format), From: from, To: to, Strict: strict, MaxAge: maxAge, MaxPayload: maxPayload}}
		o := handoff.Observation{Op: op, Path: path, SHA256: sum, Err: errText, Size: size,
			Escapes: flag && shape&1 != 0, Exists: shape&2 != 0, IsDir: flag && shape&4 != 0}
		switch shape % 3 {
		case 1:
			o.Names = []string{}
		case 2:
			o.Names = []string{name, path}
		}
		if shape&8 != 0 {
			in.Observations = []handoff.Observation{o}
			if shape&16 != 0 {
				in.Observations = append(in.Observations, handoff.Observation{Op: name})
			}
		} else if shape&16 != 0 {
			in.Observations = []handoff.Observation{}
		}
		if shape&32 != 0 {
			in.Rules = int(size % 4)
		}
		checkAppendInputs(t, 0, in)
	})
}
