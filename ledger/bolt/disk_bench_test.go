package bolt_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

var diskEntries = flag.Int("disk-entries", 20000, "ledger size for BenchmarkDiskPerEntry (e.g. 100000)")

// diskPayload is a 1,448-byte JSON document, the size of the governed/1
// document `govledger bench` records.
func diskPayload(i int) []byte {
	p := fmt.Appendf(nil, `{"i":%d,"pad":"`, i)
	for len(p) < 1448-2 {
		p = append(p, 'x')
	}
	return append(p, `"}`...)
}

// BenchmarkDiskPerEntry builds a ledger of -disk-entries handoffs of
// 1,448-byte payloads with 64 concurrent writers (group commit) and
// reports the file's bytes per entry beyond the payload: pages in use and
// file size (bbolt grows the file in 16 MiB steps), with per-bucket
// figures in the log.
func BenchmarkDiskPerEntry(b *testing.B) {
	n := *diskEntries
	for range b.N {
		path := filepath.Join(b.TempDir(), "disk.db")
		d, err := bolt.OpenDriver(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		l, err := ledger.New(d, nil)
		if err != nil {
			b.Fatal(err)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					h := bolttest.Handoff{ID: uuid.NewString(), Source: "domain-05-product", Target: "domain-02-analysis",
						Workflow: fmt.Sprintf("wf-%d", i%50), Payload: diskPayload(i)}
					if _, err := l.Append(context.Background(), h.Build()); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		head, _, err := l.Head(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		inUse, size, buckets, err := bolt.DiskUsage(d)
		if err != nil {
			b.Fatal(err)
		}
		const payload = 1448
		b.ReportMetric(float64(inUse)/float64(head)-payload, "B-over-payload/entry")
		b.ReportMetric(float64(size)/float64(head)-payload, "file-B-over-payload/entry")
		fmt.Fprintf(os.Stderr, "%d entries: %d bytes in use, file %d bytes\n%s\n", head, inUse, size, buckets)
		l.Close()
	}
}
