// Package testenv decides what a test does when an outside program it needs
// (a shell, Chromium, PostgreSQL, python3, node, FUSE) is missing.
//
// With the CI environment variable set (.ci/run sets CI=true), a missing
// program fails the test: CI must never pass by skipping what it was meant
// to run. Without it, the test is skipped with one line naming the program
// and how to install it, so `go test ./...` passes on a machine with only Go
// and says what it did not run.
//
// It is a test-support package, like the Go tree's internal/testenv: it
// reads the environment so the product's libraries never have to.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// InCI reports whether the CI environment variable is set to a true value
// ("true", "1", … as strconv.ParseBool reads it; any other non-empty value
// counts as set too, as CI systems write it in several spellings).
func InCI() bool {
	v := os.Getenv("CI")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// Missing ends t because program is missing: t.Fatalf under CI, t.Skipf
// otherwise. install says how to get it ("apt-get install zsh"); why, when
// not empty, is the underlying error.
func Missing(t testing.TB, program, install string, why error) {
	t.Helper()
	msg := fmt.Sprintf("needs %s, which is missing (install: %s)", program, install)
	if why != nil {
		msg += ": " + why.Error()
	}
	if InCI() {
		t.Fatal(msg + "; CI is set, so this fails instead of skipping")
	}
	t.Skip(msg)
}

// LookPath returns the path of the first of names found on PATH, or ends t
// through Missing naming the first one.
func LookPath(t testing.TB, install string, names ...string) string {
	t.Helper()
	var first error
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err == nil {
			return p
		}
		if first == nil {
			first = err
		}
	}
	Missing(t, names[0], install, first)
	return ""
}
