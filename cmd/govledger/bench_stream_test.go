package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/govledger/govledger/cmd/govledger/internal/bench"
	"github.com/govledger/govledger/ledger/bolt"
)

// TestBenchStream: "bench --grow-n" runs the real "govledger record -" as a
// child process on a grown ledger and on a new one: both files hold the
// streamed documents afterwards, the rates are measured, and the two
// ratios are reported against their goals.
func TestBenchStream(t *testing.T) {
	bin := govledgerBinary(t)
	dir := t.TempDir()
	out, err := exec.Command(bin, "--output", "json", "bench", "--n", "30", "--grow-n", "200", "--dir", dir).Output()
	if err != nil {
		t.Fatalf("bench --grow-n: %v\n%s", err, out)
	}
	var res bench.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("bench output: %v\n%s", err, out)
	}
	if res.GrownEntries != 200 || res.StreamGrownPerSec <= 0 || res.StreamNewPerSec <= 0 || res.RecordBesidePerSec <= 0 {
		t.Errorf("stream rows: %+v", res)
	}
	goals := map[string]float64{}
	for _, r := range res.Ratios {
		goals[r.Path+" / "+r.Yardstick] = r.Goal
	}
	for k, want := range map[string]float64{
		"record - (NDJSON stream), on a 200-entry ledger / " + bench.PathStreamNew: 0.9,
		bench.PathStreamNew + " / " + bench.PathRecordBeside:                       0.8,
	} {
		if goals[k] != want {
			t.Errorf("ratio %q: goal %v, want %v (ratios %+v)", k, goals[k], want, res.Ratios)
		}
	}
	// The streamed documents are in the files: 30 on each (10 a round),
	// beside the grown ledger's 200 and the snapshots in force.
	for name, least := range map[string]uint64{"grown.db": 200 + 30, "stream.db": 30} {
		l, err := bolt.Open(filepath.Join(dir, name), &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		head, _, err := l.Head(t.Context())
		l.Close()
		if err != nil || head < least || head > least+2 {
			t.Errorf("%s: head %d, %v; want %d to %d", name, head, err, least, least+2)
		}
	}
}
