//go:build govledger_faults

package fault

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Enabled reports whether this build carries the switches.
const Enabled = true

var (
	mu  sync.RWMutex
	set = map[string]bool{}
)

// On reports whether switch name is on.
func On(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	return set[name]
}

// Set turns on the switches of a comma-separated list (and off the
// others); an unknown name is an error.
func Set(list string) error {
	m := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(Names, n) {
			return fmt.Errorf("unknown fault %q (known: %s)", n, strings.Join(Names, ", "))
		}
		m[n] = true
	}
	mu.Lock()
	set = m
	mu.Unlock()
	return nil
}
