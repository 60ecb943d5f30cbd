package entry

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/reason"
)

// vectorEntries returns the canonical bytes of every published vector.
func vectorEntries(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, path := range []string{"../testdata/vectors/entries.jsonl", "../testdata/vectors/govledger-entries.jsonl"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v struct {
				Canonical string `json:"canonical"`
			}
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, []byte(v.Canonical))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 11 {
		t.Fatalf("%d vectors, want >= 11", len(out))
	}
	return out
}

// agree checks that the canonical pass and the general decoder agree on
// data: the pass accepts only what the general decoder accepts, with the
// same Entry, and Decode answers as the general decoder does.
func agree(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	fe, ok := decodeCanonical(data)
	ge, gerr := decodeGeneral(data)
	if ok {
		if verr := fe.Validate(); verr != nil {
			if gerr == nil || gerr.Error() != verr.Error() {
				t.Fatalf("%q: canonical pass + Validate = %v, general = %v", data, verr, gerr)
			}
		} else if gerr != nil {
			t.Fatalf("%q: canonical pass accepts, general decoder says %v", data, gerr)
		} else if !reflect.DeepEqual(fe, ge) {
			t.Fatalf("%q: canonical pass gives\n%+v\ngeneral gives\n%+v", data, fe, ge)
		}
	}
	de, derr := Decode(data)
	if (derr == nil) != (gerr == nil) || derr != nil && derr.Error() != gerr.Error() || !reflect.DeepEqual(de, ge) {
		t.Fatalf("%q: Decode = %+v, %v; general = %+v, %v", data, de, derr, ge, gerr)
	}
	return ok
}

// TestDecodePaths: every vector takes the canonical pass with the general
// decoder's result, and each change of a vector that makes it
// non-canonical or malformed is refused by the pass (the general decoder
// then gives the error).
func TestDecodePaths(t *testing.T) {
	for i, v := range vectorEntries(t) {
		if !agree(t, v) {
			t.Errorf("vector %d: the canonical pass refuses %s", i+1, v)
		}
	}
	vs := vectorEntries(t)
	handoff := string(vs[len(vs)-8]) // the handoff with inputs, blocks and hostile strings
	if !strings.Contains(handoff, `"inputs":{`) || !strings.Contains(handoff, `"blocks":[`) {
		t.Fatalf("vector layout changed: %s", handoff)
	}
	// valid marks the changes that leave a canonical entry (which the
	// pass may still leave to the general decoder).
	valid := map[string]bool{"empty blocks": true, "inputs float": true, "inputs long int": true, "inputs null": true}
	for _, c := range []struct{ name, old, new string }{
		{"space", `"kind":`, `"kind": `},
		{"key order", `"kind":"handoff"`, `"kind":"handoff","decision":"rejected"`},
		{"unknown member", `"kind":`, `"kinf":1,"kind":`},
		{"escaped solidus", `domain-01-research"`, `domain-01\/research"`},
		{"escaped letter", `domain-01-research"`, `domain-01-re\u0073earch"`},
		{"uppercase escape", `\u0001`, `\u0001\u001F`},
		{"short escape as \\u", `\u0001`, `\u000a`},
		{"raw control", `\u0001`, "\x01"},
		{"invalid UTF-8", `domain-01-research"`, "domain-01-research\xff\""},
		{"uppercase hash", `"prev":"`, `"prev":"A`},
		{"leading zero", `"payload_size":`, `"payload_size":0`},
		{"negative zero", `"payload_size":1442`, `"payload_size":-0`},
		{"fraction", `"seq":3`, `"seq":3.0`},
		{"exponent", `"seq":3`, `"seq":3e0`},
		{"huge seq", `"seq":3`, `"seq":99999999999999999999`},
		{"null hash", `"lock_sha256":"0200000000000000000000000000000000000000000000000000000000000002"`, `"lock_sha256":null`},
		{"null blocks", `"blocks":["domain-01-research"]`, `"blocks":null`},
		{"empty blocks", `"blocks":["domain-01-research"]`, `"blocks":[]`},
		{"empty string member", `"kind":`, `"idempotency_key":"","kind":`},
		{"inputs spaced", `"inputs":{`, `"inputs":{ `},
		{"inputs unordered", `{"observations"`, `{"zz":1,"observations"`},
		{"inputs float", `86400000000000`, `86400000000000.5`},
		{"inputs long int", `86400000000000`, `8640000000000000`},
		{"inputs null", `"inputs":{"observations":[{"exists":true,"is_dir":true,"names":["perspective-a.md"],"op":"dir","path":"sessions/s-1/"}],"params":{"max_age_ns":86400000000000,"max_payload":1048576}}`, `"inputs":null`},
		{"time not canonical", `.000000001Z`, `.000000010Z`},
		{"trailing data", `"workflow_id":null}`, `"workflow_id":null} `},
		{"missing v", `,"v":1`, ``},
		{"reason member missing", `,"severity":"critical"`, ``},
		{"v too large", `"v":1`, `"v":9223372036854775808`},
		{"decision contradicts", `"decision":"rejected"`, `"decision":"accepted"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(handoff, c.old) {
				t.Fatalf("%q not in the vector", c.old)
			}
			data := []byte(strings.Replace(handoff, c.old, c.new, 1))
			fast := agree(t, data)
			if _, err := Decode(data); (err == nil) != valid[c.name] {
				t.Fatalf("Decode(%s) = %v", data, err)
			}
			if fast && !valid[c.name] && c.name != "decision contradicts" {
				t.Fatalf("the canonical pass accepts %s", data)
			}
		})
	}
	outcome := string(vs[len(vs)-2]) // the outcome with every optional field
	if !strings.Contains(outcome, `"kind":"outcome"`) || !strings.Contains(outcome, `"duration_ms":1234`) {
		t.Fatalf("vector layout changed: %s", outcome)
	}
	for _, c := range []struct{ name, old, new string }{
		{"decision_seq zero", `"decision_seq":6`, `"decision_seq":0`},
		{"decision_seq later", `"decision_seq":6`, `"decision_seq":9`},
		{"decision_seq string", `"decision_seq":6`, `"decision_seq":"6"`},
		{"duration leading zero", `"duration_ms":1234`, `"duration_ms":01234`},
		{"duration negative", `"duration_ms":1234`, `"duration_ms":-1`},
		{"duration fraction", `"duration_ms":1234`, `"duration_ms":1234.5`},
		{"status unknown", `"status":"succeeded"`, `"status":"done"`},
		{"status empty", `"status":"succeeded"`, `"status":""`},
		{"output hash upper", `"output_sha256":"09`, `"output_sha256":"0A`},
		{"output hash null", `"output_sha256":"0900000000000000000000000000000000000000000000000000000000000009"`, `"output_sha256":null`},
		{"no agent", `"agent":"domain-02-analysis",`, ``},
		{"no workflow", `,"workflow_id":"03-01"`, ``},
		{"key order", `"decision_seq":6,"duration_ms":1234`, `"duration_ms":1234,"decision_seq":6`},
		{"handoff field", `"kind":"outcome"`, `"format":null,"kind":"outcome"`},
	} {
		t.Run("outcome "+c.name, func(t *testing.T) {
			if !strings.Contains(outcome, c.old) {
				t.Fatalf("%q not in the vector", c.old)
			}
			data := []byte(strings.Replace(outcome, c.old, c.new, 1))
			agree(t, data)
			if _, err := Decode(data); err == nil {
				t.Fatalf("Decode(%s) = nil error", data)
			}
		})
	}
}

// FuzzDecodePaths: on any bytes, the canonical pass accepts only what the
// general decoder accepts, with the same Entry.
func FuzzDecodePaths(f *testing.F) {
	for _, v := range vectorEntries(f) {
		f.Add(v)
	}
	f.Add([]byte(`{"kind":"unblock","prev":"0000000000000000000000000000000000000000000000000000000000000000","seq":1,"time":"2026-01-01T00:00:00Z","v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data)
	})
}

// FuzzCanonicalPass: the bytes Canonical writes for any strings take the
// canonical pass.
func FuzzCanonicalPass(f *testing.F) {
	f.Add("prompt verified <ok> & \"done\"", "domain-01-research", "\u2028\u007f\t\n\u0001\u001f 😀 é \\", "x")
	f.Add("", "a", "\x00\b\f\r", `{"a":"\u0001"}`)
	f.Fuzz(func(t *testing.T, note, agent, msg, inputKey string) {
		rs := []reason.Reason{{Code: reason.SchemaInvalid, Severity: reason.Error, Field: agent, Message: msg}}
		size := int64(len(msg))
		var h Hash
		h[3] = 0xab
		in, err := strictjson.Canonical(map[string]any{inputKey: msg, "n": -len(note)})
		if err != nil {
			in = nil
		}
		entries := []*Entry{
			{V: 1, Seq: 2, Time: Time{Time: time.Unix(1, 5).UTC()}, Kind: KindUnblock, Agent: agent, Note: note, Submitter: msg},
			{V: 1, Seq: 3, Time: Time{Time: time.Unix(2, 0).UTC()}, Kind: KindHandoff, Format: Str(note),
				Decision: reason.Rejected, Reasons: &rs, HandoffID: Null(), Source: Str(agent), Target: StrOrNull(msg),
				WorkflowID: Null(), PayloadSHA256: &h, PayloadSize: &size, ManifestSHA256: &h, LockSHA256: &h,
				Blocks: []string{agent, msg}, IdempotencyKey: agent, Inputs: in},
		}
		for _, e := range entries {
			c, err := e.Canonical()
			if err != nil {
				continue // refused (invalid UTF-8, an empty required string)
			}
			if !agree(t, c) && (e.Inputs == nil || plainName(inputKey)) {
				t.Fatalf("the canonical pass refuses %q", c)
			}
		}
	})
}

// plainName reports whether s is written as is in a JSON string.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 || s[i] == '"' || s[i] == '\\' {
			return false
		}
	}
	return true
}

// BenchmarkDecode compares Decode with the general decoder on the
// published handoff vector with inputs.
func BenchmarkDecode(b *testing.B) {
	vs := vectorEntries(b)
	data := vs[len(vs)-6]
	for _, c := range []struct {
		name string
		fn   func([]byte) (*Entry, error)
	}{{"Decode", Decode}, {"general", decodeGeneral}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fn(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCanonicalTime: the canonical pass's time reader agrees with
// Time.UnmarshalText on any string.
func FuzzCanonicalTime(f *testing.F) {
	for _, s := range []string{
		"2026-11-21T10:00:00Z", "2026-11-21T10:00:00.000000001Z", "2026-11-21T10:00:01.5Z", "2026-11-21T10:00:01.50Z",
		"2026-02-29T10:00:00Z", "2024-02-29T23:59:59.999999999Z", "2026-11-21T24:00:00Z", "2026-11-21T10:00:60Z",
		"0000-01-01T00:00:00Z", "2026-11-21T10:00:00.Z", "2026-11-21T10:00:00.1234567891Z", "2026-11-21t10:00:00Z",
		"2026-11-21T10:00:00+00:00", "+026-11-21T10:00:00Z", "2026-13-01T00:00:00Z", "2026-04-31T00:00:00Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := canonicalTime(s)
		var slow Time
		err := slow.UnmarshalText([]byte(s))
		if ok != (err == nil) || ok && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: canonical pass %v, %v; UnmarshalText %v, %v", s, fast, ok, slow, err)
		}
	})
}
