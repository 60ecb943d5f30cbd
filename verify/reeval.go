package verify

import (
	"fmt"
	"sync"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

// snapshots holds the snapshots in force so far (in stored order), parsed,
// by content hash. A ledger holds few snapshots (one per change of the
// manifest or lock), so all stay. Only judge uses it.
type snapshots struct {
	registries map[entry.Hash]*manifest.Registry
	locks      map[entry.Hash]*lockfile.Lock
}

func newSnapshots() *snapshots {
	return &snapshots{registries: map[entry.Hash]*manifest.Registry{}, locks: map[entry.Hash]*lockfile.Lock{}}
}

// parseSnapshot takes in b, the snapshot what whose content hash is sum,
// unless it was taken in before.
func (r *replayer) parseSnapshot(what string, sum entry.Hash, b []byte) error {
	p := r.parsed.parse(what, sum, b)
	if p.panicked != nil {
		panic(p.panicked) // as if judge had parsed it
	}
	if p.err != nil {
		return p.err
	}
	if what == entry.SnapshotLock {
		r.snap.locks[sum] = p.lock
	} else {
		r.snap.registries[sum] = p.reg
	}
	return nil
}

// parsedSnapshots parses each snapshot once, for judge and the workers
// alike: the bytes whose SHA-256 is sum parse to the same value whoever
// asks, so judge can tell a worker's speculation used the snapshot in
// force by comparing pointers.
type parsedSnapshots struct {
	mu sync.Mutex
	m  map[snapshotKey]*parsedSnapshot
}

type snapshotKey struct {
	lock bool
	sum  entry.Hash
}

type parsedSnapshot struct {
	// ready is closed once the fields below are set, by the one caller of
	// parse that created the entry. (A sync.Once would let a lookup's
	// empty Do win the race with that parse and leave the entry empty.)
	ready    chan struct{}
	reg      *manifest.Registry
	lock     *lockfile.Lock
	err      error
	panicked any // the parser panicked (err is set too)
}

// parse returns the snapshot what whose content hash is sum, parsing b
// (whose SHA-256 the caller checked is sum) if nobody did before.
func (ps *parsedSnapshots) parse(what string, sum entry.Hash, b []byte) *parsedSnapshot {
	k := snapshotKey{what == entry.SnapshotLock, sum}
	ps.mu.Lock()
	if ps.m == nil {
		ps.m = map[snapshotKey]*parsedSnapshot{}
	}
	p, ok := ps.m[k]
	if !ok {
		p = &parsedSnapshot{ready: make(chan struct{})}
		ps.m[k] = p
	}
	ps.mu.Unlock()
	if ok {
		<-p.ready // parsed, or being parsed, by whoever created it
		return p
	}
	defer close(p.ready)
	defer func() {
		if v := recover(); v != nil {
			p.panicked, p.err = v, fmt.Errorf("snapshot %s: parser panicked: %v", sum, v)
		}
	}()
	if k.lock {
		p.lock, p.err = lockfile.Parse("lock snapshot "+sum.String(), b)
	} else {
		p.reg, p.err = manifest.ParseSnapshot(b)
	}
	if p.err == nil && p.reg == nil && p.lock == nil {
		p.err = fmt.Errorf("snapshot %s parses to nothing", sum)
	}
	return p
}

// lookup returns the snapshot what whose content hash is sum if someone
// parsed it without error.
func (ps *parsedSnapshots) lookup(what string, sum entry.Hash) (*parsedSnapshot, bool) {
	ps.mu.Lock()
	p, ok := ps.m[snapshotKey{what == entry.SnapshotLock, sum}]
	ps.mu.Unlock()
	if !ok {
		return nil, false
	}
	<-p.ready // wait for the parse under way
	return p, p.err == nil
}

// reevaluate takes e's decision again and reports differences. It returns
// false when it could not (a snapshot in force is unavailable, or the
// inputs do not parse). spec, if not nil, is the decision a worker took
// again against a guessed state: it is used when st gives the answers
// the guess gave.
func (r *replayer) reevaluate(seq uint64, e *entry.Entry, payload []byte, st policy.State, spec *speculation) bool {
	reg, ok1 := r.snap.registries[*e.ManifestSHA256]
	lock, ok2 := r.snap.locks[*e.LockSHA256]
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
	// again and compare what the document gave. Fill's own checks of its
	// input hold already and need not hash the bytes again: the payload
	// was checked against the entry's size and SHA-256 when it was read
	// (judgeBlob, or the store itself), and reg was parsed from the
	// snapshot whose SHA-256 the entry names as its manifest, which is
	// the one in force (checked by judge; a guessed state says so).
	var re entry.Entry
	fillIn := in2
	fillIn.Payload, fillIn.Registry = nil, nil
	if err := d.Fill(&re, fillIn); err != nil {
		add(Finding{Seq: seq, Kind: KindDecision, Message: fmt.Sprintf("the decision cannot be recorded again: %v", err)})
		return
	}
	// A workflow id the document does not carry came with the request
	// (--workflow, Govledger-Workflow, a traceparent): the entry's is the
	// record of it. One the document carries must be the entry's.
	if !re.WorkflowID.Valid {
		re.WorkflowID = e.WorkflowID
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
