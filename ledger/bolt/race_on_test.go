//go:build race

package bolt_test

// raceEnabled: the race detector slows each crash child's start ~5x.
const raceEnabled = true
