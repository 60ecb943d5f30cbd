// Package perf holds the baselines that `govledger bench` compares the
// ledger with: the same work done with bare bbolt, so a report can state
// what the ledger's hashing, indexing and checks cost on top of storage.
package perf

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// rawBucket is the bucket the baselines write and scan.
var rawBucket = []byte("raw")

// RawBboltAppend appends each value to the bbolt file at path (created
// when it does not exist; a file it wrote before is appended to) in its
// own fsynced db.Update, from writers goroutines
// sharing one DB, with big-endian NextSequence keys. It returns the wall
// time of the appends (open and close excluded).
func RawBboltAppend(path string, values [][]byte, writers int) (time.Duration, error) {
	return rawAppend(path, values, writers, false)
}

// RawBboltBatchAppend is RawBboltAppend with db.Batch instead of db.Update:
// concurrent writers share commits (bbolt's own group commit), the
// baseline of a service whose clients share commits.
func RawBboltBatchAppend(path string, values [][]byte, writers int) (time.Duration, error) {
	return rawAppend(path, values, writers, true)
}

func rawAppend(path string, values [][]byte, writers int, batch bool) (time.Duration, error) {
	if writers < 1 {
		return 0, fmt.Errorf("perf: writers = %d, want >= 1", writers)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(rawBucket)
		return err
	}); err != nil {
		return 0, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(values)) {
					return
				}
				update := db.Update
				if batch {
					update = db.Batch
				}
				if err := update(func(tx *bolt.Tx) error {
					b := tx.Bucket(rawBucket)
					seq, err := b.NextSequence()
					if err != nil {
						return err
					}
					k := make([]byte, 8)
					binary.BigEndian.PutUint64(k, seq)
					return b.Put(k, values[i])
				}); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	return d, errors.Join(errs...)
}

// RawBboltScanSHA256 reads every value of the file written by
// RawBboltAppend in one read transaction and SHA-256s it. It returns the
// number of values and the wall time of the scan.
func RawBboltScanSHA256(path string) (n int, d time.Duration, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: true})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	start := time.Now()
	var sink [sha256.Size]byte
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(rawBucket)
		if b == nil {
			return fmt.Errorf("perf: %s has no %q bucket", path, rawBucket)
		}
		return b.ForEach(func(_, v []byte) error {
			s := sha256.Sum256(v)
			sink[0] ^= s[0]
			n++
			return nil
		})
	})
	return n, time.Since(start), err
}

// RawBboltScanBuckets reads every value of the named buckets of any bbolt
// file (a ledger's, say) in one read transaction and SHA-256s it: the
// least a verifier of that file has to do. It returns the number of values
// of each bucket and the wall time of the scan.
func RawBboltScanBuckets(path string, buckets ...string) (counts []int, d time.Duration, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	counts = make([]int, len(buckets))
	start := time.Now()
	var sink [sha256.Size]byte
	err = db.View(func(tx *bolt.Tx) error {
		for i, name := range buckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return fmt.Errorf("perf: %s has no %q bucket", path, name)
			}
			if err := b.ForEach(func(_, v []byte) error {
				s := sha256.Sum256(v)
				sink[0] ^= s[0]
				counts[i]++
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return counts, time.Since(start), err
}

// RawBboltLoad appends values to the file at path (created if missing) as
// RawBboltAppend lays them out, but in one transaction: a quick way to
// write the file a scan baseline reads.
func RawBboltLoad(path string, values [][]byte) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(rawBucket)
		if err != nil {
			return err
		}
		for _, v := range values {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			k := make([]byte, 8)
			binary.BigEndian.PutUint64(k, seq)
			if err := b.Put(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	return errors.Join(err, db.Close())
}
