//go:build !unix

package handoff_test

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
