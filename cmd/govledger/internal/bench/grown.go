package bench

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json"
)

// The names of the stream rows.
const (
	PathStreamGrown  = "record - (NDJSON stream), on a %d-entry ledger"
	PathStreamNew    = "record - (NDJSON stream), on a new ledger"
	PathRecordBeside = "record, 1 writer, in the same rounds"
)

// streamRounds is how many turns the stream rows take.
const streamRounds = 3

// measureStream writes a ledger of o.GrowN entries (verifyWriters writers
// sharing commits), then, streamRounds times in turn, each on its share
// of o.N new documents: "govledger record -" (a child process, as a user
// runs it: its open included) appending them to that ledger, the same
// appending to a ledger it created in the first round, and the in-process
// record path with one writer. Each rate is the best of its rounds.
func measureStream(ctx context.Context, o Options, dir string, g *generator, res *Result, stage func(string)) error {
	if o.Run == nil {
		return fmt.Errorf("bench: the stream rows need Options.Run")
	}
	grown, fresh := filepath.Join(dir, "grown.db"), filepath.Join(dir, "stream.db")
	stage(fmt.Sprintf("writing a %d-entry ledger for the stream rows (%d writers)", o.GrowN, verifyWriters))
	if err := writeVerifyLedger(ctx, grown, filepath.Join(dir, "grown-raw.db"), g, o.GrowN, 10*o.N); err != nil {
		return err
	}
	beside, err := openRecordLedger(ctx, filepath.Join(dir, "beside.db"), g.cfg)
	if err != nil {
		return err
	}
	defer beside.Close()
	data := filepath.Join(dir, "data")
	reg := filepath.Join(data, "registry", "prompt-manifest.json")
	lock := filepath.Join(data, "registry-lock.json")
	if g.cfg.Registry != nil && g.cfg.Registry.Dir != "" && filepath.Base(g.cfg.Registry.Dir) == "skills" {
		reg, lock = filepath.Join(data, "skills"), filepath.Join(data, "skills-lock.json")
	}
	stream := func(db string, docs [][]byte) (time.Duration, error) {
		var in bytes.Buffer
		for _, d := range docs {
			line, err := json.Marshal(map[string]string{"document": string(d)})
			if err != nil {
				return 0, err
			}
			in.Write(append(line, '\n'))
		}
		args := []string{"record", "--manifest", reg, "--lock", lock, "--db", db, "--root", g.cfg.Root, "--as", "bench"}
		if g.cfg.Params.From != "" {
			args = append(args, "--from", g.cfg.Params.From, "--to", g.cfg.Params.To)
		}
		start := time.Now()
		err := o.Run(ctx, append(args, "-"), &in)
		return time.Since(start), err
	}
	res.GrownEntries = o.GrowN
	now := time.Now().UTC()
	base := 10*o.N + o.GrowN
	for r := range streamRounds {
		lo, hi := r*o.N/streamRounds, (r+1)*o.N/streamRounds
		if hi == lo {
			continue
		}
		best := func(rate *float64, d time.Duration) { *rate = max(*rate, float64(hi-lo)/d.Seconds()) }
		round := fmt.Sprintf(" (round %d of %d)", r+1, streamRounds)
		docs := func(k int) [][]byte {
			out := make([][]byte, hi-lo)
			for i := range out {
				out[i] = g.doc(base+k*o.N+lo+i, now)
			}
			return out
		}
		stage(fmt.Sprintf("record -, on the %d-entry ledger%s", o.GrowN, round))
		d, err := stream(grown, docs(0))
		if err != nil {
			return fmt.Errorf("bench: record - on the grown ledger: %w", err)
		}
		best(&res.StreamGrownPerSec, d)
		stage("record -, on a new ledger" + round)
		if d, err = stream(fresh, docs(1)); err != nil {
			return fmt.Errorf("bench: record - on a new ledger: %w", err)
		}
		best(&res.StreamNewPerSec, d)
		stage("record, 1 writer" + round)
		var scratch Result
		if d, err = record(ctx, beside, g.cfg, docs(2), base+2*o.N+lo, 1, &scratch); err != nil {
			return err
		}
		best(&res.RecordBesidePerSec, d)
	}
	return beside.Close()
}
