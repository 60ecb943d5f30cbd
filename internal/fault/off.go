//go:build !govledger_faults

package fault

// Enabled reports whether this build carries the switches.
const Enabled = false

// On reports whether switch name is on: never, in this build.
func On(name string) bool { return false }
