//go:build govledger_faults

package main

import "github.com/govledger/govledger/internal/fault"

// setFaults turns on the test-only faults GOVLEDGER_TEST_FAULTS names.
// This file is built only with the govledger_faults tag (see
// internal/fault); the power-cut trials build such a binary to show
// they catch each fault.
func setFaults(getenv func(string) string) error {
	return fault.Set(getenv("GOVLEDGER_TEST_FAULTS"))
}
