package verify

import (
	"fmt"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// snapshots caches parsed snapshot bytes by content hash. A ledger holds
// few snapshots (one per change of the manifest or lock), so all stay.
type snapshots struct {
	registries map[entry.Hash]*manifest.Registry
	locks      map[entry.Hash]*lockfile.Lock
}

func newSnapshots() *snapshots {
	return &snapshots{registries: map[entry.Hash]*manifest.Registry{}, locks: map[entry.Hash]*lockfile.Lock{}}
}

func (s *snapshots) parse(what string, sum entry.Hash, b []byte) error {
	if what == entry.SnapshotLock {
		if _, ok := s.locks[sum]; ok {
			return nil
		}
		l, err := lockfile.Parse("lock snapshot "+sum.String(), b)
		if err != nil {
			return err
		}
		s.locks[sum] = l
		return nil
	}
	if _, ok := s.registries[sum]; ok {
		return nil
	}
	reg, err := manifest.ParseSnapshot(b)
	if err != nil {
		return err
	}
	s.registries[sum] = reg
	return nil
}

// reevaluate takes e's decision again and reports differences. It returns
// false when it could not (a snapshot in force is unavailable, or the
// inputs do not parse).
func (r *replayer) reevaluate(seq uint64, e *entry.Entry, payload []byte, st policy.State) bool {
	reg, ok1 := r.snap.registries[*e.ManifestSHA256]
	lock, ok2 := r.snap.locks[*e.LockSHA256]
	if !ok1 || !ok2 {
		return false
	}
	var in policy.Inputs
	if e.Inputs != nil {
		var err error
		if in, err = policy.ParseInputs(e.Inputs); err != nil {
			r.add(Finding{Seq: seq, Kind: KindMalformed, Message: fmt.Sprintf("inputs: %v", err)})
			return false
		}
	}
	r.state.current, r.state.approximated = *e.PayloadSHA256, false
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
		r.add(Finding{Seq: seq, Kind: KindDecision, Want: d.Decision, Got: e.Decision,
			Message: "re-taking the decision with the recorded policy gives another decision"})
	}
	if want, got := reasonList(d.Reasons), reasonList(*e.Reasons); want != got {
		r.add(Finding{Seq: seq, Kind: KindReasons, Want: want, Got: got,
			Message: "re-taking the decision gives other reason codes, severities or fields"})
	} else if !r.state.approximated {
		for i, x := range d.Reasons {
			if y := (*e.Reasons)[i]; x.Message != y.Message {
				r.add(Finding{Seq: seq, Kind: KindMessage, Want: x.Message, Got: y.Message,
					Message: fmt.Sprintf("re-taking the decision gives another message for reason %d (%s)", i, x.Code)})
			}
		}
	}
	if want, got := sortedList(d.Blocks), sortedList(e.Blocks); want != got {
		r.add(Finding{Seq: seq, Kind: KindBlocks, Want: want, Got: got,
			Message: "re-taking the decision blocks other agents"})
	}
	// The rest of the entry is a function of the same inputs: Fill it
	// again and compare what the document gave.
	var re entry.Entry
	if err := d.Fill(&re, in2); err != nil {
		r.add(Finding{Seq: seq, Kind: KindDecision, Message: fmt.Sprintf("the decision cannot be recorded again: %v", err)})
		return true
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
			r.add(Finding{Seq: seq, Kind: KindDecision, Want: nullText(c.want), Got: nullText(c.got),
				Message: fmt.Sprintf("re-reading the payload gives another %s", c.name)})
		}
	}
	return true
}

func nullText(n entry.NullString) string {
	if !n.Valid {
		return "null"
	}
	return fmt.Sprintf("%q", n.S)
}
