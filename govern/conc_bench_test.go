package govern_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger/bolt"
)

// BenchmarkRecordConcurrent8 is the group-commit record path with 8
// writers on governed/1 documents (profile it with -cpuprofile).
func BenchmarkRecordConcurrent8(b *testing.B) {
	dir := b.TempDir()
	if err := demo.Unpack(dir); err != nil {
		b.Fatal(err)
	}
	cfg, err := demo.Config(dir, "registry")
	if err != nil {
		b.Fatal(err)
	}
	tmpl, _ := demo.Document("01-product-to-analysis.json")
	now := time.Now().UTC().Format(time.RFC3339)
	docs := make([][]byte, b.N)
	for i := range docs {
		d := bytes.Replace(tmpl, []byte("550e8400-e29b-41d4-a716-446655440000"), []byte(uuid.NewString()), 1)
		d = bytes.Replace(d, []byte("2026-02-11T00:45:02Z"), []byte(now), 1)
		docs[i] = bytes.Replace(d, []byte("hypothesis\""), []byte("hypothesis "+strconv.Itoa(i)+"\""), 1)
	}
	l, err := bolt.Open(filepath.Join(dir, "b.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	next := make(chan []byte)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				p, _ := govern.ReadPayload(bytes.NewReader(d), 1<<20)
				if _, err := govern.Record(context.Background(), l, cfg, "b", p); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, d := range docs {
		next <- d
	}
	close(next)
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
