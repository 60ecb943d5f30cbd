package postgres

import (
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// TestLeafOf: every stored tree hash is attributed to the entry whose
// append stored it.
func TestLeafOf(t *testing.T) {
	for n := int64(0); n < 3000; n++ {
		for idx := tlog.StoredHashIndex(0, n); idx < tlog.StoredHashIndex(0, n+1); idx++ {
			if got := leafOf(idx); got != uint64(n)+1 {
				t.Fatalf("leafOf(%d) = %d, want %d", idx, got, n+1)
			}
		}
	}
}
