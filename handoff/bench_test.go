package handoff_test

import (
	"testing"
	"time"

	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/handoff"
)

// benchDocs are the documents `govledger bench` records, one per format,
// with the options it records them with.
var benchDocs = []struct {
	name string
	file string
	opts handoff.Options
}{
	{"governed", "01-product-to-analysis.json", handoff.Options{}},
	{"swarm", "11-swarm-to-litpm.yaml", handoff.Options{}},
	{"skill", "12-researcher-to-synthesizer.yaml", handoff.Options{}},
	{"vbw", "09-qa-result.vbw.json", handoff.Options{From: "domain-03-technical", To: "domain-02-analysis"}},
	{"task", "10-task-handoff.md", handoff.Options{From: "orchestrator", To: "domain-04-content"}},
}

// BenchmarkParse measures, per format, format detection alone and the
// whole of Parse (detection included), with the allocations of each: the
// cost verify pays per entry to read a payload again. The YAML formats'
// documents are made distinct per iteration (a trailing comment), so that
// the package's cache of recent YAML trees does not answer.
func BenchmarkParse(b *testing.B) {
	for _, d := range benchDocs {
		doc, err := demo.Document(d.file)
		if err != nil {
			b.Fatal(err)
		}
		docs := [][]byte{doc}
		if d.name == "swarm" || d.name == "skill" || d.name == "task" {
			docs = make([][]byte, 64)
			for i := range docs {
				docs[i] = append(append([]byte{}, doc...), []byte("\n# "+string(rune('a'+i%26))+string(rune('a'+i/26))+"\n")...)
			}
		}
		b.Run(d.name+"/detect", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			i := 0
			for b.Loop() {
				if f, _, err := handoff.Detect(docs[i%len(docs)]); err != nil || f == "" {
					b.Fatalf("Detect: %v", err)
				}
				i++
			}
		})
		b.Run(d.name+"/parse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			opts := d.opts
			opts.Now = time.Now()
			i := 0
			for b.Loop() {
				rec := handoff.Parse(docs[i%len(docs)], opts)
				if rec.Format == "" {
					b.Fatalf("Parse: %v", rec.Findings)
				}
				i++
			}
		})
	}
}
