package verify

import (
	"fmt"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// snapshots caches parsed snapshot bytes by content hash. A ledger holds
// few snapshots (one per change of the manifest or lock), so all stay.
type snapshots struct {
	registries map[ledger.Hash]*manifest.Registry
	locks      map[ledger.Hash]*lockfile.Lock
}

func newSnapshots() *snapshots {
	return &snapshots{registries: map[ledger.Hash]*manifest.Registry{}, locks: map[ledger.Hash]*lockfile.Lock{}}
}

func (s *snapshots) parse(what string, sum ledger.Hash, b []byte) error {
	if what == ledger.SnapshotLock {
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
func (r *replayer) reevaluate(e *ledger.Entry, payload []byte) bool {
	reg, ok1 := r.snap.registries[*e.ManifestSHA256]
	lock, ok2 := r.snap.locks[*e.LockSHA256]
	if !ok1 || !ok2 {
		return false
	}
	var in policy.Inputs
	if e.Inputs != nil {
		var err error
		if in, err = policy.ParseInputs(e.Inputs); err != nil {
			r.add(Finding{Seq: e.Seq, Kind: KindMalformed, Message: fmt.Sprintf("inputs: %v", err)})
			return false
		}
	}
	r.state.current = *e.PayloadSHA256
	d := policy.Decide(policy.Input{
		Payload:       payload,
		PayloadSize:   *e.PayloadSize,
		PayloadSHA256: *e.PayloadSHA256,
		Registry:      reg,
		Lock:          lock,
		Now:           e.Time.Time,
		State:         r.state,
		Inputs:        in,
	})
	if d.Decision != e.Decision {
		r.add(Finding{Seq: e.Seq, Kind: KindDecision, Want: d.Decision, Got: e.Decision,
			Message: "re-taking the decision with the recorded policy gives another decision"})
	}
	if want, got := reasonList(d.Reasons), reasonList(*e.Reasons); want != got {
		r.add(Finding{Seq: e.Seq, Kind: KindReasons, Want: want, Got: got,
			Message: "re-taking the decision gives other reason codes or severities"})
	}
	if want, got := sortedList(d.Blocks), sortedList(e.Blocks); want != got {
		r.add(Finding{Seq: e.Seq, Kind: KindBlocks, Want: want, Got: got,
			Message: "re-taking the decision blocks other agents"})
	}
	return true
}
