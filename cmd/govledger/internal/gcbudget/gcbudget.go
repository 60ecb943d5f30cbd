// Package gcbudget lets a one-shot command that streams a ledger through
// memory (verify) trade a bounded amount of it for fewer garbage
// collections.
//
// A verify allocates about 10 KiB an entry (the entry and its blob read,
// decoded, the decision taken again), nearly all of it garbage as soon as
// the entry is judged, while it keeps little alive: the entries in flight
// and about 10 bytes an accepted handoff. With the collector's default
// (GOGC=100) it collects every few MiB allocated: about 150 times for
// 100,000 entries, each stopping the replay's goroutines. Verify lets the
// heap grow to five times what is alive (GOGC=400), under a soft memory
// limit that grows with the ledger (MemoryLimit), so that the number of
// collections drops about fivefold and the memory stays flat.
package gcbudget

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
)

// BaseLimit and PerEntry make MemoryLimit.
const (
	BaseLimit = 32 << 20
	PerEntry  = 16
)

// MemoryLimit is the soft memory limit Verify sets for a ledger of n
// entries: 32 MiB and 16 bytes an entry (47.3 MiB at 1,000,000 entries),
// well above what a verify keeps alive (about 17 MiB at 1,000,000), so the
// collector never runs back to back.
func MemoryLimit(n uint64) int64 {
	if n > (math.MaxInt64-BaseLimit)/PerEntry {
		return math.MaxInt64
	}
	return BaseLimit + int64(n)*PerEntry
}

// Verify sets the collector for a verify of a ledger of n entries
// (GOGC=400 under a soft limit of MemoryLimit(n) above the memory the
// runtime holds already, so that what a process held before the verify
// does not make the collector run back to back) and returns the function
// that restores the settings it found. The caller decides whether to: a
// user's GOGC or GOMEMLIMIT is theirs to keep.
func Verify(n uint64) (restore func()) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var held int64
	if s[0].Value.Kind() == metrics.KindUint64 && s[1].Value.Kind() == metrics.KindUint64 {
		held = int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	}
	gc := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(MemoryLimit(n) + min(held, math.MaxInt64-MemoryLimit(n)))
	return func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	}
}
