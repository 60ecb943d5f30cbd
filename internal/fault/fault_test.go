package fault_test

import (
	"testing"

	"github.com/govledger/govledger/internal/fault"
)

// TestOffWithoutTag: a build without the govledger_faults tag (every
// release, and go test ./...) has no switch on, and none can be.
func TestOffWithoutTag(t *testing.T) {
	if fault.Enabled {
		t.Skip("built with -tags govledger_faults, where the switches are meant to be on (CI tests them in TestPowerCutCatchesFaults)")
	}
	for _, name := range fault.Names {
		if fault.On(name) {
			t.Errorf("fault.On(%q) = true in a build without the tag", name)
		}
	}
}
