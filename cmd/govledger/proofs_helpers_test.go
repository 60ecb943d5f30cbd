package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
)

// runCLI runs the CLI with args (after "govledger") and returns the exit
// code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"govledger"}, args...), strings.NewReader(""), &out, &errb,
		func(string) string { return "" })
	return code, out.String(), errb.String()
}

const testOrigin = "example.com/ledger"

// newTestLedger creates a ledger file with n entries (two snapshots, then
// handoffs with payloads "payload-3", ...) and returns its path.
func newTestLedger(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "govledger.db")
	l, err := bolt.Open(path, &bolt.Options{Origin: testOrigin, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for size := uint64(0); size < uint64(n); size, _ = l.TreeSize(t.Context()) {
		payload := []byte(fmt.Sprintf("payload-%d", size+1))
		_, err := l.Append(context.Background(), &ledger.Request{
			Snapshots: []ledger.Snapshot{{What: entry.SnapshotManifest, Bytes: []byte("m")}, {What: entry.SnapshotLock, Bytes: []byte("l")}},
			Payload:   payload,
			Build: func(st ledger.State, e *entry.Entry) error {
				m, lk, _ := st.InForce()
				sum, sz, rs := entry.Sum256(payload), int64(len(payload)), []reason.Reason{}
				e.Kind, e.Format, e.Decision, e.Reasons = entry.KindHandoff, entry.Str("governed/1"), reason.Accepted, &rs
				e.HandoffID, e.Source, e.Target, e.WorkflowID = entry.Str(fmt.Sprintf("id-%d", e.Seq)), entry.Str("a"), entry.Str("b"), entry.Null()
				e.PayloadSHA256, e.PayloadSize, e.ManifestSHA256, e.LockSHA256 = &sum, &sz, &m, &lk
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}
