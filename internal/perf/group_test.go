package perf

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestGroupCommit: every value is committed exactly once, in groups of at
// most the number of writers, and a failed commit fails the run without
// leaving a writer waiting.
func TestGroupCommit(t *testing.T) {
	values := make([][]byte, 200)
	for i := range values {
		values[i] = []byte(fmt.Sprint(i))
	}
	for _, writers := range []int{1, 3, 8} {
		var mu sync.Mutex
		var got []string
		if _, err := groupCommit(values, writers, func(vs [][]byte) error {
			if len(vs) < 1 || len(vs) > writers {
				return fmt.Errorf("a group of %d values with %d writers", len(vs), writers)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range vs {
				got = append(got, string(v))
			}
			return nil
		}); err != nil {
			t.Fatalf("%d writers: %v", writers, err)
		}
		want := make([]string, len(values))
		for i, v := range values {
			want[i] = string(v)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%d writers: committed %d values, want each of %d once", writers, len(got), len(want))
		}
		boom := errors.New("disk full")
		calls := 0
		if _, err := groupCommit(values, writers, func([][]byte) error {
			mu.Lock()
			defer mu.Unlock()
			if calls++; calls == 2 {
				return boom
			}
			return nil
		}); !errors.Is(err, boom) {
			t.Errorf("%d writers, the second commit failing: err = %v, want %v", writers, err, boom)
		}
	}
}
