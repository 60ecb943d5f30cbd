package perf_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	grouped := filepath.Join(t.TempDir(), "group.db")
	for _, writers := range []int{1, 8} {
		if _, err := perf.RawBboltGroupAppend(grouped, values, writers); err != nil {
			t.Fatalf("RawBboltGroupAppend(%d writers): %v", writers, err)
		}
	}
	if n, _, err := perf.RawBboltScanSHA256(grouped); err != nil || n != 2*len(values) {
		t.Fatalf("RawBboltScanSHA256(group appended twice) = %d, %v; want %d", n, err, 2*len(values))
	}
	if c, d, err := perf.SHA256Buckets(grouped, "raw"); err != nil || len(c) != 1 || c[0] != 2*len(values) || d <= 0 {
		t.Fatalf("SHA256Buckets(group appended twice) = %v, %v, %v; want [%d]", c, d, err, 2*len(values))
	}
	if _, _, err := perf.SHA256Buckets(grouped, "missing"); err == nil {
		t.Error("SHA256Buckets of a missing bucket succeeded")
	}
	logPath := filepath.Join(t.TempDir(), "raw.log")
	size := 0
	for _, writers := range []int{1, 8} {
		if _, err := perf.RawFileAppend(logPath, values, writers); err != nil {
			t.Fatalf("RawFileAppend(%d writers): %v", writers, err)
		}
		for _, v := range values {
			size += len(v)
		}
		if fi, err := os.Stat(logPath); err != nil || fi.Size() != int64(size) {
			t.Fatalf("after RawFileAppend(%d writers): %v, %v; want %d bytes", writers, fi, err, size)
		}
	}
	if _, err := perf.RawFileAppend(filepath.Join(t.TempDir(), "missing", "raw.log"), values, 2); err == nil {
		t.Error("RawFileAppend into a missing folder succeeded")
	}
	for _, f := range []func(string, [][]byte, int) (time.Duration, error){perf.RawBboltAppend, perf.RawBboltGroupAppend, perf.RawFileAppend} {
		if _, err := f(filepath.Join(t.TempDir(), "zero"), values, 0); err == nil {
			t.Error("an append with writers=0 succeeded")
		}
	}
	if d := perf.SHA256Values(values); d <= 0 {
		t.Errorf("SHA256Values = %v, want > 0", d)
	}
	if _, err := perf.RawBboltAppend(path, values, 0); err == nil {
		t.Error("RawBboltAppend(writers=0) succeeded")
	}
	if _, _, err := perf.RawBboltScanSHA256(filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("scan of a missing file succeeded")
	}
}
