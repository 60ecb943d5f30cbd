package lockfile

import (
	"crypto/sha256"
	"errors"
	"runtime"
	"slices"
	"sync"

	"github.com/govledger/govledger/manifest"
)

// Generate returns the lock of reg: every agent's version, prompt path and
// the SHA-256 of its prompt file's raw bytes, read once through open. open
// returns the bytes at a slash-separated path relative to the registry
// folder ((*Dir).ReadFile and DirOpener's result are such functions); it is
// called once per distinct path, from several goroutines at once. The
// files are read and hashed in parallel (runtime.NumCPU workers). When a
// file cannot be read, Generate returns every such failure joined, each a
// *FileError, and no lock.
func Generate(reg *manifest.Registry, open func(path string) ([]byte, error)) (*Lock, error) {
	paths := distinctPaths(reg)
	res := hashAll(paths, open, nil)
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, &FileError{Path: paths[i], Err: r.err})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	byPath := make(map[string]string, len(paths))
	for i, p := range paths {
		byPath[p] = FormatDigest(res[i].sum)
	}
	lk := &Lock{Version: Version, Agents: make(map[string]Entry, len(reg.Agents))}
	for _, a := range reg.Agents {
		lk.Agents[a.ID] = Entry{AgentVersion: a.Version, PromptPath: a.PromptPath, PromptHash: byPath[a.PromptPath]}
	}
	return lk, nil
}

// distinctPaths returns reg's prompt paths, each once, sorted.
func distinctPaths(reg *manifest.Registry) []string {
	paths := make([]string, 0, len(reg.Agents))
	for _, a := range reg.Agents {
		paths = append(paths, a.PromptPath)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// hashed is the outcome of reading and hashing one file.
type hashed struct {
	sum      [32]byte
	err      error
	cosmetic map[[32]byte]string // locked digest -> diagnosis, for digests the file does not match
}

// hashAll reads and hashes every path once with a bounded pool. When want
// is set, a file whose digest is not among want[i] is diagnosed against
// each of them while its bytes are still in hand.
func hashAll(paths []string, open func(string) ([]byte, error), want [][][32]byte) []hashed {
	res := make([]hashed, len(paths))
	workers := max(1, min(runtime.NumCPU(), len(paths)))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(paths) {
					return
				}
				data, err := open(paths[i])
				if err != nil {
					res[i].err = err
					continue
				}
				res[i].sum = sha256.Sum256(data)
				if want == nil {
					continue
				}
				for _, w := range want[i] {
					if w == res[i].sum {
						continue
					}
					if res[i].cosmetic == nil {
						res[i].cosmetic = map[[32]byte]string{}
					}
					res[i].cosmetic[w] = Diagnose(data, w)
				}
			}
		}()
	}
	wg.Wait()
	return res
}
