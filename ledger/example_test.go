package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/memory"
)

// Append records an operator's unblock, after bringing a manifest and a
// lock into force.
func ExampleLedger_Append() {
	d, err := memory.New("example.com/ledger") // or bolt.OpenDriver, a file
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := ledger.New(d, &ledger.Options{
		Now: func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	res, err := l.Append(context.Background(), &ledger.Request{
		Snapshots: []ledger.Snapshot{
			{What: entry.SnapshotManifest, Bytes: []byte(`{"manifest_version":1}`)},
			{What: entry.SnapshotLock, Bytes: []byte(`{"lock_version":1}`)},
		},
		Build: func(st ledger.State, e *entry.Entry) error {
			e.Kind, e.Agent, e.Note = entry.KindUnblock, "domain-06-security", "prompt re-reviewed"
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range res.Entries {
		fmt.Println(strings.TrimSpace(fmt.Sprint(a.Entry.Seq, " ", a.Entry.Kind, " ", a.Entry.What)))
	}
	fmt.Println(string(res.Last().Raw))
	// Output:
	// 1 snapshot manifest
	// 2 snapshot lock
	// 3 unblock
	// {"agent":"domain-06-security","kind":"unblock","note":"prompt re-reviewed","prev":"ff94f8163224e06a4ac963c2a4191dd8a52d8d791f63c1597fda8a6c7bb196d0","seq":3,"time":"2026-11-21T10:00:00Z","v":1}
}
