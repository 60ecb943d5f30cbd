// Package fault holds the test-only fault switches of govledger: places in
// the product that skip a durability step on purpose when a switch is on,
// so that the power-cut trials (cmd/govledger's TestPowerCutCatchesFaults)
// can show they catch the missing step.
//
// The switches exist only in a binary built with the govledger_faults
// build tag. In every other build On is a constant false and the faulty
// branches compile away: no flag, environment variable or call can turn
// them on. In a govledger_faults build, cmd/govledger's main reads the
// GOVLEDGER_TEST_FAULTS environment variable (a comma-separated list of
// names) and calls Set; libraries only ask On.
package fault

// The switches.
const (
	// BoltNoSync opens the bbolt file with NoSync: commits are
	// acknowledged before anything reaches the disk.
	BoltNoSync = "bolt-nosync"
	// CompactNoSync skips the fsync of the compacted file before it is
	// renamed over the ledger, and of the folder after.
	CompactNoSync = "compact-nosync"
)

// Names lists every switch.
var Names = []string{BoltNoSync, CompactNoSync}
