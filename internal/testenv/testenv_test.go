package testenv_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/govledger/govledger/internal/testenv"
)

// TestMissing runs a child test binary that needs a program no machine has,
// with CI unset and set: unset it skips with the install hint, set it fails.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		testenv.LookPath(t, "apt-get install no-such-program", "govledger-no-such-program")
		t.Fatal("LookPath returned for a missing program")
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP"},
		{"false", false, "--- SKIP"},
		{"true", true, "--- FAIL"},
		{"1", true, "--- FAIL"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantFail || !strings.Contains(string(out), tc.want) ||
			!strings.Contains(string(out), "install: apt-get install no-such-program") {
			t.Errorf("CI=%q: err %v, output:\n%s\nwant %s with the install hint", tc.ci, err, out, tc.want)
		}
	}
}
