package perf_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/internal/perf"
)

func TestRawRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.db")
	values := make([][]byte, 40)
	for i := range values {
		values[i] = []byte(fmt.Sprint("value ", i))
	}
	if _, err := perf.RawBboltAppend(path, values, 4); err != nil {
		t.Fatal(err)
	}
	n, _, err := perf.RawBboltScanSHA256(path)
	if err != nil || n != len(values) {
		t.Fatalf("RawBboltScanSHA256 = %d, %v; want %d", n, err, len(values))
	}
	loaded := filepath.Join(t.TempDir(), "loaded.db")
	for range 2 {
		if err := perf.RawBboltLoad(loaded, values); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := perf.RawBboltScanSHA256(loaded); err != nil || n != 2*len(values) {
		t.Fatalf("RawBboltScanSHA256(loaded twice) = %d, %v; want %d", n, err, 2*len(values))
	}
	if c, _, err := perf.RawBboltScanBuckets(loaded, "raw"); err != nil || len(c) != 1 || c[0] != 2*len(values) {
		t.Fatalf("RawBboltScanBuckets(loaded twice, raw) = %v, %v; want [%d]", c, err, 2*len(values))
	}
	if _, _, err := perf.RawBboltScanBuckets(loaded, "raw", "missing"); err == nil {
		t.Error("RawBboltScanBuckets of a missing bucket succeeded")
	}
	if _, err := perf.RawBboltAppend(path, values, 0); err == nil {
		t.Error("RawBboltAppend(writers=0) succeeded")
	}
	if _, _, err := perf.RawBboltScanSHA256(filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("scan of a missing file succeeded")
	}
}
