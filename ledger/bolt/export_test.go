package bolt

import (
	"fmt"
	"os"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// DiskUsage reports the file's pages in use (bytes), its size, and a line
// per bucket (leaf and branch bytes allocated and used, keys), for the
// disk benchmarks.
func DiskUsage(d *Driver) (inUse, fileSize int64, perBucket string, err error) {
	err = d.read(func(tx *bolt.Tx) error {
		inUse = tx.Size()
		var lines []string
		tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			lines = append(lines, fmt.Sprintf("%-16s keys %8d  alloc %10d  used %10d  leaf pages %6d+%d overflow",
				name, s.KeyN, s.LeafAlloc+s.BranchAlloc, s.LeafInuse+s.BranchInuse, s.LeafPageN, s.LeafOverflowN))
			return nil
		})
		sort.Strings(lines)
		perBucket = strings.Join(lines, "\n")
		return nil
	})
	if err != nil {
		return
	}
	fi, err := os.Stat(d.path)
	if err != nil {
		return inUse, 0, perBucket, err
	}
	return inUse, fi.Size(), perBucket, nil
}

// LeafFill reports, per bucket, the bytes its leaf pages hold and the
// bytes they take (leaf in use, leaf allocated).
func LeafFill(d *Driver) (map[string][2]int, error) {
	out := map[string][2]int{}
	err := d.read(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			out[string(name)] = [2]int{s.LeafInuse, s.LeafAlloc}
			return nil
		})
	})
	return out, err
}

// Index record codec, for the codec's tests.
var (
	EncodePostings = encodePostings
	DecodePostings = decodePostings
	MaxPostings    = maxPostings
)

// SyncOptions reports how the open bbolt file is synced, for
// TestDurableOptions.
func SyncOptions(d *Driver) (noSync, noFreelistSync, noGrowSync bool) {
	db := d.current()
	return db.NoSync, db.NoFreelistSync, db.NoGrowSync
}
