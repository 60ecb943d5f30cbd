//go:build !race

package handoff_test

const raceEnabled = false
