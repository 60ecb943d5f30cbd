//go:build !govledger_faults

package main

// setFaults does nothing: a build without the govledger_faults tag has
// no test faults (see internal/fault).
func setFaults(func(string) string) error { return nil }
