package handoff_test

import (
	"bytes"
	"flag"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/handoff"
)

// hostileShape is a document built to cost its parser as much as possible
// per byte, grown to about size bytes.
type hostileShape struct {
	name string
	opts handoff.Options
	doc  func(t testing.TB, size int) []byte
}

func repeatTo(head, unit, tail string, size int) []byte {
	n := max(1, (size-len(head)-len(tail))/len(unit))
	var b bytes.Buffer
	b.Grow(len(head) + n*len(unit) + len(tail))
	b.WriteString(head)
	for range n {
		b.WriteString(unit)
	}
	b.WriteString(tail)
	return b.Bytes()
}

func demoDoc(t testing.TB, name string) string {
	b, err := demo.Document(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// keysTo returns a mapping body of tiny distinct keys, about size bytes.
func keysTo(size int, item func(i int) string) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(item(i))
	}
	return b.String()
}

var hostileShapes = []hostileShape{
	{"yaml-flow-sequence", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return repeatTo("handoff:\n  source:\n    skill: perspective-swarm\n  flow: [", "1,", "1]\n", size)
	}},
	{"yaml-flow-nested", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return repeatTo("handoff:\n  source:\n    skill: perspective-swarm\n  flow: [", "[],", "[]]\n", size)
	}},
	{"yaml-block-sequence", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return repeatTo("handoff:\n  source:\n    skill: perspective-swarm\n  list:\n", "  - 1\n", "", size)
	}},
	{"yaml-tiny-keys", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return []byte("handoff:\n  source:\n    skill: perspective-swarm\n  many:\n" +
			keysTo(size, func(i int) string { return fmt.Sprintf("    k%x: 0\n", i) }))
	}},
	{"yaml-deep", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return repeatTo("handoff:\n  source:\n    skill: perspective-swarm\n  deep: ", "[", "", size)
	}},
	{"task-blank-lines", handoff.Options{From: "orchestrator", To: "domain-04-content"}, func(t testing.TB, size int) []byte {
		return repeatTo("", "\n", demoDoc(t, "10-task-handoff.md"), size)
	}},
	{"task-yaml-lines", handoff.Options{From: "orchestrator", To: "domain-04-content"}, func(_ testing.TB, size int) []byte {
		return repeatTo("# Task 1: x\n\n## Handoff\n\n```yaml\noutcome: completed\nx:\n", "- 1\n", "```\n", size)
	}},
	{"markdown-lines", handoff.Options{From: "orchestrator", To: "domain-04-content"}, func(_ testing.TB, size int) []byte {
		return repeatTo("# Notes\n", "a\n", "", size)
	}},
	{"json-zeros", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return repeatTo("[", "0,", "0]", size)
	}},
	{"governed-zeros", handoff.Options{}, func(t testing.TB, size int) []byte {
		doc := demoDoc(t, "01-product-to-analysis.json")
		i := strings.Index(doc, `"context": {`) + len(`"context": {`)
		return repeatTo(doc[:i]+`"zeros": [`, "0,", "0],"+doc[i:], size)
	}},
	{"governed-tiny-keys", handoff.Options{}, func(t testing.TB, size int) []byte {
		doc := demoDoc(t, "01-product-to-analysis.json")
		i := strings.Index(doc, `"context": {`) + len(`"context": {`)
		return []byte(doc[:i] + `"many": {` + keysTo(size, func(i int) string { return fmt.Sprintf(`"%x":0,`, i) }) + `"z":0},` + doc[i:])
	}},
	{"json-deep", handoff.Options{}, func(_ testing.TB, size int) []byte {
		return repeatTo(`{"handoff_id":`, "[", "", size)
	}},
	{"vbw-zeros", handoff.Options{From: "domain-03-technical", To: "domain-02-analysis"}, func(_ testing.TB, size int) []byte {
		return repeatTo(`{"type":"qa_result","x":[`, "0,", "0]}", size)
	}},
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// underCaps returns the densest document of shape s, padded with blanks
// to size bytes, that the parse caps of rules let through (within a
// eighth of the cap), or nil.
func underCaps(t testing.TB, s hostileShape, size, rules int) []byte {
	try := func(d int) []byte {
		doc := s.doc(t, d)
		if len(doc) > size {
			return nil
		}
		doc = append(doc, bytes.Repeat([]byte(" "), size-len(doc))...)
		opts := s.opts
		opts.Rules = rules
		if hasCode(handoff.Parse(doc, opts), "PARSE_LIMIT") {
			return nil
		}
		return doc
	}
	for d := size; d > 64; d /= 2 {
		if doc := try(d); doc != nil {
			for k := 7; k > 0; k-- {
				if denser := try(d + d*k/8); denser != nil {
					return denser
				}
			}
			return doc
		}
	}
	return nil
}

func hasCode(rec *handoff.Record, code string) bool {
	for _, f := range rec.Findings {
		if string(f.Code) == code {
			return true
		}
	}
	return false
}

// TestHostileAllocations prints, per hostile shape, the bytes Parse
// allocates per byte of input, for the shape itself and for its densest
// form under the caps (go test -run TestHostileAllocations -v
// -hostile-size N -hostile-rules R).
func TestHostileAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("short, or allocations counted by the race detector")
	}
	size := *hostileSize
	bound := 0.0
	if *hostileRules >= handoff.RulesBounded {
		bound = maxAllocRatio
	}
	for _, s := range hostileShapes {
		for _, under := range []bool{false, true} {
			doc := s.doc(t, size)
			name := s.name
			if under {
				if doc = underCaps(t, s, size, *hostileRules); doc == nil {
					continue
				}
				name += "/under-caps"
			}
			var rec *handoff.Record
			opts := s.opts
			opts.Rules = *hostileRules
			a := allocated(func() { rec = handoff.Parse(doc, opts) })
			codes := []string{}
			for _, f := range rec.Findings {
				codes = append(codes, string(f.Code))
			}
			ratio := float64(a) / float64(len(doc))
			t.Logf("%-33s %9d bytes: %11d allocated, %6.1fx  format %q %v", name, len(doc), a, ratio, rec.Format, codes)
			if bound > 0 && ratio > bound {
				t.Errorf("%s: Parse allocated %d bytes for %d, %.1fx, more than %vx", name, a, len(doc), ratio, bound)
			}
			if bound > 0 && !under && !hasCode(rec, "PARSE_LIMIT") && s.name != "json-zeros" {
				t.Errorf("%s: no PARSE_LIMIT for %d bytes: %v", name, len(doc), codes)
			}
		}
	}
}

// maxAllocRatio is the most Parse may allocate per byte of a document
// under the parse caps.
const maxAllocRatio = 8

var (
	hostileRules = flag.Int("hostile-rules", handoff.CurrentRules, "rules version of TestHostileAllocations")
	hostileSize  = flag.Int("hostile-size", 4<<20, "size of the hostile documents of TestHostileAllocations")
)

// TestDetectionReadOnce: a swarm/2 document detected once is not parsed
// again by Parse given that detection (govern and the server hand it from
// the source check to the observation and the decision), and is judged the
// same.
func TestDetectionReadOnce(t *testing.T) {
	long := strings.Repeat("x", 240)
	doc := []byte(demoDoc(t, "11-swarm-to-litpm.yaml") + "  extra:\n" + keysTo(256<<10, func(i int) string { return fmt.Sprintf("    k%x: %s\n", i, long) }))
	opts := handoff.Options{Rules: handoff.CurrentRules}
	var fresh, again *handoff.Record
	whole := allocated(func() { fresh = handoff.Parse(doc, opts) })
	d := handoff.NewDetection(doc, opts.Rules)
	opts.Detection = d
	reread := allocated(func() { again = handoff.Parse(doc, opts) })
	if !reflect.DeepEqual(fresh, again) {
		t.Fatalf("Parse with a detection differs:\n%+v\n%+v", again, fresh)
	}
	if fresh.Format != handoff.Swarm || hasCode(fresh, "PARSE_LIMIT") {
		t.Fatalf("Parse = %s %v, want a swarm/2 document read", fresh.Format, fresh.Findings)
	}
	if reread*4 > whole && !raceEnabled {
		t.Errorf("Parse given the detection allocated %d bytes, alone %d: the YAML was read again", reread, whole)
	}
}
