package strictjson_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/govledger/govledger/internal/strictjson"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want      error
		line, col int
	}{
		{`{"a":1}`, nil, 0, 0},
		{"{\"a\":[1,2,{\"b\":null}]}\n", nil, 0, 0},
		{`{"a":9007199254740991}`, nil, 0, 0},
		{`{"a":1,"a":2}`, strictjson.ErrSyntax, 1, 8},
		{`{"a":{"b":1,"b":1}}`, strictjson.ErrSyntax, 1, 13},
		{`{"a":1} {}`, strictjson.ErrSyntax, 1, 9},
		{"{\"a\":\"\xff\"}", strictjson.ErrSyntax, 1, 7},
		{`{"a":"\ud800"}`, strictjson.ErrSyntax, 1, 7},
		{`{"a":9007199254740992}`, strictjson.ErrNumber, 1, 6},
		{`{"a":-9007199254740993}`, strictjson.ErrNumber, 1, 6},
		{`{"a":1e400}`, strictjson.ErrNumber, 1, 6},
		{"", strictjson.ErrEmpty, 1, 1},
		{"  \n ", strictjson.ErrEmpty, 1, 1},
		{"\xef\xbb\xbf{}", strictjson.ErrBOM, 1, 1},
		{"{\n \"a\": tru}", strictjson.ErrSyntax, 2, 10},
		{`[[[`, strictjson.ErrSyntax, 1, 4},
		{string(bytes.Repeat([]byte("["), strictjson.MaxDepth+1)) + string(bytes.Repeat([]byte("]"), strictjson.MaxDepth+1)), strictjson.ErrDepth, 1, strictjson.MaxDepth + 1},
	} {
		err := strictjson.Check("f.json", []byte(tc.in))
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("Check(%.40q) = %v, want %v", tc.in, err, tc.want)
			continue
		}
		var e *strictjson.Error
		if tc.want != nil && errors.As(err, &e) && (e.Line != tc.line || e.Column != tc.col || e.File != "f.json") {
			t.Errorf("Check(%.40q) at %s:%d:%d, want f.json:%d:%d", tc.in, e.File, e.Line, e.Column, tc.line, tc.col)
		}
	}
}

func TestUnmarshal(t *testing.T) {
	type T struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"a":1,"b":"x"}`, nil},
		{`{"a":"1"}`, strictjson.ErrType},
		{`{"A":1}`, strictjson.ErrType}, // names match exactly
		{`{"a":1,"c":2}`, strictjson.ErrType},
		{`{"a":1,"a":1}`, strictjson.ErrSyntax},
	} {
		var v T
		if err := strictjson.Unmarshal("f", []byte(tc.in), &v); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("Unmarshal(%s) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	got, err := strictjson.CanonicalizeBytes([]byte(`{"b":"<&>\u2028","a":[1.50,-0,{"z":null,"é":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":[1.5,0,{\"z\":null,\"é\":true}],\"b\":\"<&>\u2028\"}"; string(got) != want {
		t.Errorf("CanonicalizeBytes = %s, want %s", got, want)
	}
	if _, err := strictjson.CanonicalizeBytes([]byte(`{"a":9007199254740993}`)); !errors.Is(err, strictjson.ErrNumber) {
		t.Errorf("CanonicalizeBytes(2^53+1) = %v, want ErrNumber (JCS would round it)", err)
	}
}

func TestPositions(t *testing.T) {
	p := strictjson.NewPositions([]byte("{\n  \"a\": [\n    1,\n    {\"b\": 2}\n  ]\n}"))
	for ptr, want := range map[string][2]int{"/a": {2, 3}, "/a/1/b": {4, 6}, "/a/1/zz": {4, 5}, "/nope": {1, 1}} {
		if l, c := p.At(ptr); l != want[0] || c != want[1] {
			t.Errorf("At(%s) = %d:%d, want %d:%d", ptr, l, c, want[0], want[1])
		}
	}
}

// FuzzCheck: Check never panics; whatever it accepts canonicalizes, and the
// canonical form is accepted again and is a fixed point.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,"x",null,true,{"b":[]}]`, `{"a":1,"a":2}`, `"\u00e9"`, `1e3`, `{"b":1,"a":{"d":2,"c":3}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if strictjson.Check("", data) != nil {
			return
		}
		c, err := strictjson.CanonicalizeBytes(data)
		if err != nil {
			t.Fatalf("accepted %q but CanonicalizeBytes failed: %v", data, err)
		}
		c2, err := strictjson.CanonicalizeBytes(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("canonical form %q is not a fixed point: %q, %v", c, c2, err)
		}
	})
}
