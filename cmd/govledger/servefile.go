package main

// A running "govledger serve" holds its ledger's file lock for as long as
// it runs. So that a CLI command on that file says so at once instead of
// waiting for the lock, serve writes a sidecar "<db>.serve" with its pid
// and URL, and removes it on exit. A sidecar left by a server that was
// killed names a pid that is no longer alive (or no longer a govledger
// serve) and is ignored; the lock itself stays the source of truth: the
// message is given only when the ledger is locked as well.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/internal/atomicfile"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
)

// serveSidecar is the content of "<db>.serve".
type serveSidecar struct {
	PID int    `json:"pid"`
	URL string `json:"url"`
}

func sidecarPath(db string) string { return db + ".serve" }

// heldProbe is how long a command waits for a lock a live server holds.
const heldProbe = 100 * time.Millisecond

// writeSidecar records the running server of db; the returned function
// removes the sidecar if it is still this process's.
func writeSidecar(db, url string) (func(), error) {
	b, err := json.Marshal(serveSidecar{PID: os.Getpid(), URL: url})
	if err != nil {
		return nil, err
	}
	path := sidecarPath(db)
	if err := atomicfile.Write(path, 0o600, func(f *os.File) error {
		_, err := f.Write(append(b, '\n'))
		return err
	}); err != nil {
		return nil, fmt.Errorf("serve: writing %s: %w", path, err)
	}
	return func() {
		if s := readSidecar(db); s != nil && s.PID == os.Getpid() {
			os.Remove(path)
		}
	}, nil
}

// readSidecar returns db's sidecar, or nil when there is none or it is
// unreadable.
func readSidecar(db string) *serveSidecar {
	b, err := os.ReadFile(sidecarPath(db))
	if err != nil || len(b) > 4096 {
		return nil
	}
	var s serveSidecar
	if strictjson.Unmarshal(sidecarPath(db), b, &s) != nil || s.PID <= 0 || s.URL == "" {
		return nil
	}
	return &s
}

// liveServer returns db's sidecar when the process it names is alive and,
// where /proc says, a govledger serve; nil otherwise.
func liveSidecar(db string) *serveSidecar {
	if postgres.IsDSN(db) {
		return nil // no file, no lock: replicas share the database
	}
	s := readSidecar(db)
	if s == nil || s.PID == os.Getpid() {
		return nil
	}
	if err := syscall.Kill(s.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil // no such process: a server that was killed
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.PID)); err == nil {
		args := strings.Split(string(b), "\x00")
		if !containsWord(args, "serve") {
			return nil // the pid was reused by another program
		}
	}
	return s
}

func containsWord(args []string, w string) bool {
	for _, a := range args {
		if a == w {
			return true
		}
	}
	return false
}

// heldError is the error for a ledger a live server holds.
func heldError(db string, s *serveSidecar) error {
	return &exitError{code: exitInternal, err: fmt.Errorf("ledger %s is held by govledger serve (pid %d) at %s; use --server %s (%w)",
		db, s.PID, s.URL, s.URL, ledger.ErrLocked)}
}
