package verify

import (
	"fmt"
	"maps"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// snapshots holds parsed snapshot bytes by content hash. A ledger holds
// few snapshots (one per change of the manifest or lock), so all stay. A
// snapshots value is never changed once published (replayer.snap): judge
// publishes a copy with each new one, and workers read without locking.
type snapshots struct {
	registries map[entry.Hash]*manifest.Registry
	locks      map[entry.Hash]*lockfile.Lock
}

func newSnapshots() *snapshots {
	return &snapshots{registries: map[entry.Hash]*manifest.Registry{}, locks: map[entry.Hash]*lockfile.Lock{}}
}

// parse parses b, the snapshot what whose content hash is sum, unless it
// was parsed before, and publishes it.
func (r *replayer) parseSnapshot(what string, sum entry.Hash, b []byte) error {
	old := r.snap.Load()
	next := &snapshots{registries: old.registries, locks: old.locks}
	if what == entry.SnapshotLock {
		if _, ok := old.locks[sum]; ok {
			return nil
		}
		l, err := lockfile.Parse("lock snapshot "+sum.String(), b)
		if err != nil {
			return err
		}
		next.locks = maps.Clone(old.locks)
		next.locks[sum] = l
	} else {
		if _, ok := old.registries[sum]; ok {
			return nil
		}
		reg, err := manifest.ParseSnapshot(b)
		if err != nil {
			return err
		}
		next.registries = maps.Clone(old.registries)
		next.registries[sum] = reg
	}
	r.snap.Store(next)
	return nil
}

// reevaluate takes e's decision again and reports differences. It returns
// false when it could not (a snapshot in force is unavailable, or the
// inputs do not parse). spec, if not nil, is the decision a worker took
// again against a guessed state: it is used when st gives the answers
// the guess gave.
func (r *replayer) reevaluate(seq uint64, e *entry.Entry, payload []byte, st policy.State, spec *speculation) bool {
	snaps := r.snap.Load()
	reg, ok1 := snaps.registries[*e.ManifestSHA256]
	lock, ok2 := snaps.locks[*e.LockSHA256]
	if !ok1 || !ok2 {
		return false
	}
	if spec != nil && spec.reg == reg && spec.lock == lock && spec.holds(st) {
		for _, f := range spec.findings {
			r.add(f)
		}
		return spec.ok
	}
	r.stats.decidedAgain++
	in, err := r.inputs.parse(e.Inputs)
	if err != nil {
		r.add(Finding{Seq: seq, Kind: KindMalformed, Message: fmt.Sprintf("inputs: %v", err)})
		return false
	}
	r.state.current, r.state.approximated = *e.PayloadSHA256, false
	decideAgain(seq, e, payload, reg, lock, in, st, func() bool { return !r.state.approximated }, r.add)
	return true
}

// decideAgain takes e's decision again with policy.Decide from the
// recorded payload, snapshots and inputs and the state st, and adds a
// finding for each difference. exactMessages reports, after the decision,
// whether st's answers were exact, so that reason messages can be compared.
func decideAgain(seq uint64, e *entry.Entry, payload []byte, reg *manifest.Registry, lock *lockfile.Lock,
	in policy.Inputs, st policy.State, exactMessages func() bool, add func(Finding)) {
	in2 := policy.Input{
		Payload:       payload,
		PayloadSize:   *e.PayloadSize,
		PayloadSHA256: *e.PayloadSHA256,
		Registry:      reg,
		Lock:          lock,
		Now:           e.Time.Time,
		State:         st,
		Inputs:        in,
	}
	d := policy.Decide(in2)
	if d.Decision != e.Decision {
		add(Finding{Seq: seq, Kind: KindDecision, Want: d.Decision, Got: e.Decision,
			Message: "re-taking the decision with the recorded policy gives another decision"})
	}
	if want, got := reasonList(d.Reasons), reasonList(*e.Reasons); want != got {
		add(Finding{Seq: seq, Kind: KindReasons, Want: want, Got: got,
			Message: "re-taking the decision gives other reason codes, severities or fields"})
	} else if exactMessages() {
		for i, x := range d.Reasons {
			if y := (*e.Reasons)[i]; x.Message != y.Message {
				add(Finding{Seq: seq, Kind: KindMessage, Want: x.Message, Got: y.Message,
					Message: fmt.Sprintf("re-taking the decision gives another message for reason %d (%s)", i, x.Code)})
			}
		}
	}
	if want, got := sortedList(d.Blocks), sortedList(e.Blocks); want != got {
		add(Finding{Seq: seq, Kind: KindBlocks, Want: want, Got: got,
			Message: "re-taking the decision blocks other agents"})
	}
	// The rest of the entry is a function of the same inputs: Fill it
	// again and compare what the document gave.
	var re entry.Entry
	if err := d.Fill(&re, in2); err != nil {
		add(Finding{Seq: seq, Kind: KindDecision, Message: fmt.Sprintf("the decision cannot be recorded again: %v", err)})
		return
	}
	for _, c := range []struct {
		name      string
		want, got entry.NullString
	}{
		{"format", re.Format, e.Format},
		{"handoff_id", re.HandoffID, e.HandoffID},
		{"source", re.Source, e.Source},
		{"target", re.Target, e.Target},
		{"workflow_id", re.WorkflowID, e.WorkflowID},
	} {
		if c.want != c.got {
			add(Finding{Seq: seq, Kind: KindDecision, Want: nullText(c.want), Got: nullText(c.got),
				Message: fmt.Sprintf("re-reading the payload gives another %s", c.name)})
		}
	}
}

func nullText(n entry.NullString) string {
	if !n.Valid {
		return "null"
	}
	return fmt.Sprintf("%q", n.S)
}
