// Package perf holds the yardsticks that `govledger bench` compares the
// ledger with: the same work done with bare bbolt (one fsync'd Update per
// value; writers sharing commits through one committer), with a plain
// file (append and fdatasync: the disk's limit) and with SHA-256 alone
// (the hashing limit), so a report can state what the ledger's hashing,
// indexing and checks cost on top of storage.
package perf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
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
	if writers < 1 {
		return 0, fmt.Errorf("perf: writers = %d, want >= 1", writers)
	}
	db, err := openRaw(path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
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
				if err := db.Update(func(tx *bolt.Tx) error {
					return putAll(tx.Bucket(rawBucket), values[i:i+1])
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

// RawBboltGroupAppend appends the values to the bbolt file at path as
// RawBboltAppend lays them out, from writers goroutines that each append
// one value at a time and wait until it is durable, and one committer that
// takes every value queued so far and writes them in one fsync'd db.Update,
// then acknowledges them: the group commit a competent user writes (no
// timer, no batch size to tune: a commit carries what arrived while the
// previous one was syncing). It returns the wall time of the appends.
//
// It is the yardstick of a service whose clients share commits;
// db.Batch, with its default 10 ms wait per batch, is slower than one
// writer on a fast disk and makes a poor one.
func RawBboltGroupAppend(path string, values [][]byte, writers int) (time.Duration, error) {
	if writers < 1 {
		return 0, fmt.Errorf("perf: writers = %d, want >= 1", writers)
	}
	db, err := openRaw(path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return groupCommit(values, writers, func(vs [][]byte) error {
		return db.Update(func(tx *bolt.Tx) error { return putAll(tx.Bucket(rawBucket), vs) })
	})
}

// RawFileAppend appends the values to the plain file at path (created
// when it does not exist) and makes them durable with fdatasync, as a log
// written with no database at all would: the disk's limit. With one
// writer, each value is one write and one fdatasync; with more, the
// writers share commits as in RawBboltGroupAppend (one write of every
// value queued, one fdatasync). It returns the wall time of the appends.
func RawFileAppend(path string, values [][]byte, writers int) (time.Duration, error) {
	if writers < 1 {
		return 0, fmt.Errorf("perf: writers = %d, want >= 1", writers)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	var buf []byte
	d, err := groupCommit(values, writers, func(vs [][]byte) error {
		buf = buf[:0]
		for _, v := range vs {
			buf = append(buf, v...)
		}
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return fdatasync(f)
	})
	return d, errors.Join(err, f.Close())
}

// groupCommit has writers goroutines append the values, each waiting for
// its value to be committed before it takes the next, and one committer
// pass every value queued so far to commit at once. With one writer,
// commit gets each value alone, on the calling goroutine. It returns the
// wall time and the first error.
func groupCommit(values [][]byte, writers int, commit func([][]byte) error) (time.Duration, error) {
	start := time.Now()
	if writers == 1 {
		for _, v := range values {
			if err := commit([][]byte{v}); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	type req struct {
		v    []byte
		done chan error
	}
	queue := make(chan req, writers)
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		var group []req
		var vs [][]byte
		for r := range queue {
			group, vs = append(group[:0], r), append(vs[:0], r.v)
		drain:
			for {
				select {
				case r, ok := <-queue:
					if !ok {
						break drain
					}
					group, vs = append(group, r), append(vs, r.v)
				default:
					break drain
				}
			}
			err := commit(vs)
			for _, r := range group {
				r.done <- err
			}
		}
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(values)) {
					return
				}
				queue <- req{values[i], done}
				if err := <-done; err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	close(queue)
	<-committed
	return d, errors.Join(errs...)
}

// SHA256Values SHA-256s each value in memory and returns the time it
// took: the hashing limit of anything that hashes those bytes.
func SHA256Values(values [][]byte) time.Duration {
	var sink [sha256.Size]byte
	start := time.Now()
	for _, v := range values {
		s := sha256.Sum256(v)
		sink[0] ^= s[0]
	}
	d := time.Since(start)
	hashSink.Store(uint32(sink[0]))
	return d
}

// hashSink keeps the hashes of SHA256Values from being optimised away.
var hashSink atomic.Uint32

// SHA256Buckets SHA-256s every value of the named buckets of any bbolt
// file (a ledger's) in memory: it copies them out a chunk of at most
// hashChunk bytes at a time, and times only the hashing. It returns the
// number of values of each bucket and the time spent hashing: the hashing
// limit of a verifier of that file.
func SHA256Buckets(path string, buckets ...string) (counts []int, d time.Duration, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	counts = make([]int, len(buckets))
	var chunk [][]byte
	size := 0
	flush := func() {
		d += SHA256Values(chunk)
		chunk, size = chunk[:0], 0
	}
	err = db.View(func(tx *bolt.Tx) error {
		for i, name := range buckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return fmt.Errorf("perf: %s has no %q bucket", path, name)
			}
			if err := b.ForEach(func(_, v []byte) error {
				chunk = append(chunk, bytes.Clone(v))
				size += len(v)
				counts[i]++
				if size >= hashChunk {
					flush()
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	flush()
	return counts, d, err
}

// hashChunk is how many bytes SHA256Buckets holds in memory at a time.
const hashChunk = 16 << 20

// openRaw opens (or creates) the bbolt file of the baselines, with its
// bucket.
func openRaw(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(rawBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// putAll appends vs to b under big-endian NextSequence keys.
func putAll(b *bolt.Bucket, vs [][]byte) error {
	for _, v := range vs {
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
	db, err := openRaw(path)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error { return putAll(tx.Bucket(rawBucket), values) })
	return errors.Join(err, db.Close())
}
