package bolt_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const bboltPath = "go.etcd.io/bbolt"

// goList runs `go list` in the module root with args.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list package imports: %v", err)
	}
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// TestLayers: the libraries above the storage seam do not depend on bbolt,
// not even indirectly; only the driver imports it (besides the raw baseline the
// benchmark compares with and the test helpers that damage files).
func TestLayers(t *testing.T) {
	for _, pkg := range []string{"./policy", "./verify", "./govern", "./checkpoint", "./checkpoint/bundle", "./entry", "./ledger", "./ledger/memory", "./server"} {
		deps := goList(t, "-deps", pkg)
		if len(deps) < 5 {
			t.Fatalf("go list -deps %s listed %d packages: the listing is wrong", pkg, len(deps))
		}
		for _, d := range deps {
			if d == bboltPath || strings.HasPrefix(d, bboltPath+"/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	allowed := []string{
		"github.com/govledger/govledger/ledger/bolt",
		"github.com/govledger/govledger/internal/perf",        // raw bbolt, the benchmark's baseline
		"github.com/govledger/govledger/ledger/bolt/bolttest", // tests' helpers that damage files
	}
	var importers []string
	for _, line := range goList(t, "-f", `{{.ImportPath}}:{{join .Imports ","}}`, "./...") {
		pkg, imports, _ := strings.Cut(line, ":")
		for _, imp := range strings.Split(imports, ",") {
			if imp == bboltPath || strings.HasPrefix(imp, bboltPath+"/") {
				importers = append(importers, pkg)
				break
			}
		}
	}
	if !slices.Contains(importers, allowed[0]) {
		t.Fatalf("bbolt importers %v do not include the driver: the listing is wrong", importers)
	}
	for _, pkg := range importers {
		if !slices.Contains(allowed, pkg) {
			t.Errorf("%s imports bbolt; only %v may", pkg, allowed)
		}
	}
}
