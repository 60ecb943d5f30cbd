package verify_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/verify"
)

// exampleExport writes a two-entry export by hand: a lock snapshot and an
// operator's unblock, chained by their hashes.
func exampleExport() string {
	lock := []byte(`{"agents":{},"lock_version":1}`)
	sum, size := entry.Sum256(lock), int64(len(lock))
	t0 := time.Date(2026, 2, 11, 9, 0, 0, 0, time.UTC)
	entries := []*entry.Entry{
		{V: 1, Seq: 1, Time: entry.Time{Time: t0}, Kind: entry.KindSnapshot, What: entry.SnapshotLock, ContentSHA256: &sum, Size: &size},
		{V: 1, Seq: 2, Time: entry.Time{Time: t0.Add(time.Second)}, Kind: entry.KindUnblock, Agent: "domain-05-product", Note: "prompt reviewed"},
	}
	var b strings.Builder
	var prev entry.Hash
	for i, e := range entries {
		e.Prev = prev
		raw, _ := e.Canonical()
		prev = entry.LeafHash(raw)
		fmt.Fprintf(&b, `{"entry":%s,"hash":"%s"`, raw, prev)
		if i == 0 {
			fmt.Fprintf(&b, `,"payload_b64":"%s"`, base64.StdEncoding.EncodeToString(lock))
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func ExampleReplay() {
	export := exampleExport()
	rep, err := verify.Replay(context.Background(), verify.ExportSource(strings.NewReader(export)), verify.Options{SkipReevaluate: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("entries:", rep.Entries, "ok:", rep.OK())

	// Someone edits the unblock's note and does not fix the line's hash.
	tampered := strings.Replace(export, "prompt reviewed", "prompt reviewer", 1)
	rep, _ = verify.Replay(context.Background(), verify.ExportSource(strings.NewReader(tampered)), verify.Options{SkipReevaluate: true})
	fmt.Println("ok:", rep.OK(), "first bad seq:", rep.FirstBad)
	for _, f := range rep.Findings {
		fmt.Println(f.Seq, f.Kind, f.Message)
	}
	// Output:
	// entries: 2 ok: true
	// ok: false first bad seq: 2
	// 2 hash line 2: the line's hash is not the hash of its entry
}
