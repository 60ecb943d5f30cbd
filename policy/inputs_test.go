package policy_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/policy"
)

func TestInputsRoundTrip(t *testing.T) {
	cases := []policy.Inputs{
		{},
		{Params: policy.Params{MaxAge: int64(24 * time.Hour), MaxPayload: 1 << 20}},
		{Params: policy.Params{Format: handoff.VBW, From: "domain-01-research", To: "domain-02-analysis", Strict: true, MaxAge: 1, MaxPayload: 2}},
		{Params: policy.Params{Format: handoff.Task}, Observations: []handoff.Observation{
			{Op: "dir", Path: "sessions/<a>&\u2028", Exists: true, IsDir: true, Names: []string{"a.md", "b.md"}},
			{Op: "file", Path: "out/report.md", Exists: true, Size: 12, SHA256: "ab"},
			{Op: "file", Path: "../x", Escapes: true, Err: "escapes the root"},
		}},
		{Params: policy.Params{MaxPayload: 1}, Rules: policy.CurrentRules},
		{Params: policy.Params{Format: handoff.Task}, Observations: []handoff.Observation{{Op: "dir", Path: "x"}}, Rules: handoff.RulesBounded},
	}
	for i, in := range cases {
		b, err := in.Marshal()
		if err != nil {
			t.Fatalf("%d: Marshal = %v", i, err)
		}
		c, err := strictjson.CanonicalizeBytes(b)
		if err != nil || string(c) != string(b) {
			t.Errorf("%d: Marshal is not canonical: %s", i, b)
		}
		got, err := policy.ParseInputs(b)
		if err != nil {
			t.Fatalf("%d: ParseInputs(%s) = %v", i, b, err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Errorf("%d: ParseInputs(Marshal(x)) = %+v, want %+v", i, got, in)
		}
	}
	// Empty observations have one encoding: absent.
	a, _ := policy.Inputs{Observations: []handoff.Observation{}}.Marshal()
	b, _ := policy.Inputs{}.Marshal()
	if string(a) != string(b) {
		t.Errorf("empty observations marshal to %s, nil to %s", a, b)
	}
}

func TestParseInputsRejects(t *testing.T) {
	cases := map[string]string{
		"empty":                  ``,
		"not an object":          `[]`,
		"white space":            `{"params": {"max_age_ns":0,"max_payload":0}}`,
		"keys out of order":      `{"params":{"max_payload":0,"max_age_ns":0}}`,
		"missing max_age_ns":     `{"params":{"max_payload":0}}`,
		"missing params":         `{}`,
		"unknown member":         `{"params":{"max_age_ns":0,"max_payload":0},"x":1}`,
		"unknown param":          `{"params":{"max_age_ns":0,"max_payload":0,"now":1}}`,
		"wrong case":             `{"params":{"MAX_AGE_NS":0,"max_payload":0}}`,
		"duplicate member":       `{"params":{"max_age_ns":0,"max_age_ns":0,"max_payload":0}}`,
		"negative max_age":       `{"params":{"max_age_ns":-1,"max_payload":0}}`,
		"negative max_payload":   `{"params":{"max_age_ns":0,"max_payload":-1}}`,
		"unknown format":         `{"params":{"format":"evil/9","max_age_ns":0,"max_payload":0}}`,
		"empty format":           `{"params":{"format":"","max_age_ns":0,"max_payload":0}}`,
		"strict false":           `{"params":{"max_age_ns":0,"max_payload":0,"strict":false}}`,
		"empty observations":     `{"observations":[],"params":{"max_age_ns":0,"max_payload":0}}`,
		"bad op":                 `{"observations":[{"op":"exec","path":"x"}],"params":{"max_age_ns":0,"max_payload":0}}`,
		"negative size":          `{"observations":[{"op":"file","path":"x","size":-1}],"params":{"max_age_ns":0,"max_payload":0}}`,
		"float":                  `{"params":{"max_age_ns":1.5,"max_payload":0}}`,
		"huge number":            `{"params":{"max_age_ns":9007199254740993,"max_payload":0}}`,
		"invalid UTF-8":          "{\"params\":{\"from\":\"\xff\",\"max_age_ns\":0,\"max_payload\":0}}",
		"trailing data":          `{"params":{"max_age_ns":0,"max_payload":0}}{}`,
		"escaped where not need": `{"params":{"from":"\u0061","max_age_ns":0,"max_payload":0}}`,
		"rules 1 written":        `{"params":{"max_age_ns":0,"max_payload":0},"rules":1}`,
		"rules 0 written":        `{"params":{"max_age_ns":0,"max_payload":0},"rules":0}`,
		"rules negative":         `{"params":{"max_age_ns":0,"max_payload":0},"rules":-2}`,
		"rules from the future":  `{"params":{"max_age_ns":0,"max_payload":0},"rules":99}`,
		"rules before params":    `{"rules":2,"params":{"max_age_ns":0,"max_payload":0}}`,
		"rules as a string":      `{"params":{"max_age_ns":0,"max_payload":0},"rules":"2"}`,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := policy.ParseInputs([]byte(s))
			if !errors.Is(err, policy.ErrInputs) {
				t.Errorf("ParseInputs(%s) = %v, want ErrInputs", s, err)
			}
		})
	}
}

func TestMarshalRejects(t *testing.T) {
	for name, in := range map[string]policy.Inputs{
		"negative max age": {Params: policy.Params{MaxAge: -1}},
		"unknown format":   {Params: policy.Params{Format: "x"}},
		"bad op":           {Observations: []handoff.Observation{{Op: "rm"}}},
		"rules 1":          {Rules: handoff.RulesUnbounded},
		"rules too new":    {Rules: policy.CurrentRules + 1},
	} {
		if _, err := in.Marshal(); !errors.Is(err, policy.ErrInputs) {
			t.Errorf("%s: Marshal = %v, want ErrInputs", name, err)
		}
	}
}
