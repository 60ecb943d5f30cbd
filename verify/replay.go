package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/tiles"
)

// Options are the caller's additions to a replay. The zero value replays
// the source alone, re-evaluating every decision.
type Options struct {
	// Progress, if set, is called after each entry with its seq. It must
	// be fast and must not call back into the Source.
	Progress func(seq uint64)
	// SkipReevaluate turns off re-taking each handoff's decision with
	// policy.Decide (chain, hashes, blobs and snapshots are still checked).
	SkipReevaluate bool
	// Structural, if set, runs a structural check of the store beside the
	// replay, on a goroutine of its own, and its findings join the report
	// after the replay's: for a ledger, the method value l.Check (unknown
	// buckets and keys, indexes, meta head, tree hashes). An error wrapping
	// ledger.ErrCorrupt becomes a "corrupt" finding; any other error fails
	// the replay. Its ctx is done when the replay stops early; Replay
	// returns only after Structural has.
	Structural func(ctx context.Context) ([]ledger.Finding, error)
	// Head, if set, returns the head the store claims (for a ledger, the
	// method value l.Head). It anchors the last entry: without it, a change
	// to the last entry that leaves it valid cannot be told from the
	// original.
	Head func(ctx context.Context) (seq uint64, h entry.Hash, err error)
}

// Replay reads every entry of src in stored order, checks it (see the
// package documentation), and returns a Report of everything it found.
// Findings are not errors: Replay returns an error only when the replay
// could not be completed (ctx was cancelled, or the source failed for a
// reason other than corruption: ErrSource), together with the report so far.
// Replay never writes to src and never panics.
func Replay(ctx context.Context, src Source, opts Options) (rep *Report, err error) {
	return replay(ctx, src, opts, pool{workers: defaultWorkers()}, nil)
}

// replayStats counts what the pipeline did, for tests.
type replayStats struct {
	decidedAgain int // decisions judge took again itself (no speculation, or it did not hold)
}

// pool sizes the pipeline: workers goroutines (none below 2) handed batch
// jobs at a time (0: batchSize).
type pool struct{ workers, batch int }

// replay is Replay with the pool p; stats, if not nil, receives the
// replay's counts.
func replay(ctx context.Context, src Source, opts Options, p pool, stats *replayStats) (rep *Report, err error) {
	r := &replayer{
		ctx:  ctx,
		src:  src,
		opts: opts,
		rep:  &Report{Counts: map[string]int{}, Findings: []Finding{}, Redacted: []uint64{}},
	}
	r.snap = newSnapshots()
	er, _ := src.(entryReader)
	r.state = newState(ctx, er)
	if rs, ok := src.(replayScope); ok {
		rs.beginReplay()
		defer rs.endReplay() // after the workers stopped
	}
	r.pipe = newPipeline(r, p.workers, p.batch)
	defer r.pipe.close()
	if stats != nil {
		defer func() { *stats = r.stats }()
	}
	if es, ok := src.(emitter); ok {
		// A source's own finding comes after those of the entries it
		// delivered before.
		es.setEmit(func(f Finding) { r.pipe.drain(); r.add(f) })
		defer es.setEmit(nil)
	}
	defer func() {
		if p := recover(); p != nil {
			func() {
				defer func() { _ = recover() }()
				r.pipe.drain()
			}()
			r.add(Finding{Seq: r.lastSeq + 1, Kind: KindCorrupt, Message: fmt.Sprintf("replay stopped: %v", p)})
			r.rep.finish()
			rep, err = r.rep, nil
		}
	}()
	if err := r.run(); err != nil {
		r.rep.finish()
		return r.rep, err
	}
	r.rep.finish()
	return r.rep, nil
}

type replayer struct {
	ctx    context.Context
	src    Source
	opts   Options
	rep    *Report
	state  *state
	snap   *snapshots      // in force so far, in stored order
	parsed parsedSnapshots // every snapshot parsed, by judge or a worker
	pipe   *pipeline
	feed   *checkFeed // to Options.Structural; nil when it is not fed

	inputs inputsCache // of judge and of jobs prepared inline
	stats  replayStats

	n        uint64     // entries read
	lastSeq  uint64     // seq of the previous entry
	prevHash entry.Hash // recomputed hash of the previous entry's bytes
	lastTime time.Time
	pending  *brokenLink
	fold     entry.Head   // the state fold's head after the previous entry
	st       *entry.State // the fold on r.state, positioned anew for each entry

	missing   map[uint64]missingBlob // seq -> a blob that is not there
	redaction map[uint64]bool        // seqs named by redaction entries
	links     links                  // accepted handoffs and their outcomes
}

// links is what the outcomes of accepted handoffs must name (packed only
// for a source that cannot read the handoff again), kept compactly: for each accepted handoff, in seq order, one word packing its
// seq (40 bits) and a 24-bit keyed digest of its target and workflow_id
// (a handoff beyond 2^40 entries is kept in over); and the first outcome of
// each handoff that has one. Memory grows 8 bytes an accepted handoff. The
// digest key is random per replay, so an outcome naming another agent or
// workflow passes unnoticed with probability 2^-24, never by choice.
type links struct {
	packed []uint64
	over   map[uint64]uint64
	first  map[uint64]uint64 // handoff seq -> seq of its first outcome
}

const linkDigestBits = 24

// linkNames is the digest of the agent and workflow an outcome names.
func (r *replayer) linkNames(agent string, workflow entry.NullString) uint64 {
	b := make([]byte, 0, len(agent)+len(workflow.S)+2)
	b = append(append(b, agent...), 0)
	if workflow.Valid {
		b = append(append(b, 1), workflow.S...)
	}
	return r.state.digest(b) & (1<<linkDigestBits - 1)
}

func (l *links) add(seq, names uint64) {
	if seq > maxPackedSeq || len(l.packed) > 0 && l.packed[len(l.packed)-1]>>linkDigestBits >= seq {
		if l.over == nil {
			l.over = map[uint64]uint64{}
		}
		l.over[seq] = names
		return
	}
	l.packed = append(l.packed, seq<<linkDigestBits|names)
}

// names returns the digest kept for the accepted handoff seq.
func (l *links) names(seq uint64) (uint64, bool) {
	if n, ok := l.over[seq]; ok {
		return n, true
	}
	i, ok := slices.BinarySearchFunc(l.packed, seq, func(w, s uint64) int { return cmp.Compare(w>>linkDigestBits, s) })
	if !ok {
		return 0, false
	}
	return l.packed[i] & (1<<linkDigestBits - 1), true
}

// outcome judges the link of outcome e to the handoff it names: an earlier
// accepted handoff whose target and workflow_id it names, with no outcome
// before this one. (A decision_seq not before e's own seq is malformed.)
func (r *replayer) outcome(seq uint64, e *entry.Entry) {
	ok, same := r.decision(seq, e)
	first := r.links.first[e.DecisionSeq]
	switch {
	case !ok:
		r.add(Finding{Seq: e.Seq, Kind: KindOutcome, Want: "an accepted handoff", Got: "a rejected handoff or another kind of entry",
			Message: fmt.Sprintf("the outcome's decision_seq %d is not an accepted handoff: only a target that ran has an outcome", e.DecisionSeq)})
	case first != 0:
		r.add(Finding{Seq: e.Seq, Kind: KindOutcome, Want: "one outcome", Got: fmt.Sprintf("also seq %d", first),
			Message: fmt.Sprintf("decision seq %d has an outcome already (seq %d)", e.DecisionSeq, first)})
	case !same:
		r.add(Finding{Seq: e.Seq, Kind: KindOutcome, Want: "the handoff's target and workflow_id", Got: fmt.Sprintf("agent %q, workflow_id %s", e.Agent, nullText(e.WorkflowID)),
			Message: fmt.Sprintf("the outcome names another agent or workflow than decision seq %d", e.DecisionSeq)})
	}
	if ok && first == 0 {
		if r.links.first == nil {
			r.links.first = map[uint64]uint64{}
		}
		r.links.first[e.DecisionSeq] = e.Seq
	}
}

// decision reports whether the outcome e, delivered as seq, names an
// earlier accepted handoff, and whether it names that handoff's target and
// workflow_id. A source that reads entries again (a ledger) answers from
// the handoff itself, so the replay keeps no links; otherwise from links.
func (r *replayer) decision(seq uint64, e *entry.Entry) (ok, same bool) {
	if r.state.reader == nil {
		names, ok := r.links.names(e.DecisionSeq)
		return ok, ok && names == r.linkNames(e.Agent, e.WorkflowID)
	}
	if e.DecisionSeq == 0 || e.DecisionSeq >= seq {
		return false, false
	}
	d, err := r.state.reader.entry(r.ctx, e.DecisionSeq)
	if err != nil || d.Kind != entry.KindHandoff || d.Decision != reason.Accepted || !d.Target.Valid {
		return false, false
	}
	w, dw := e.WorkflowID, d.WorkflowID
	return true, d.Target.S == e.Agent && w.Valid == dw.Valid && (!w.Valid || w.S == dw.S)
}

// missingBlob is a blob an entry names that the source does not have.
type missingBlob struct {
	sum      entry.Hash
	redacted bool // the source says a redaction removed it (ledger.ErrRedacted)
}

// brokenLink is an entry whose prev does not match the hash of the entry
// before it; the next entry decides whom to blame.
type brokenLink struct {
	seq       uint64     // the entry whose prev does not match
	want      entry.Hash // hash of the previous entry's bytes
	got       entry.Hash // its prev
	blame     uint64     // the previous entry's seq
	canBlame  bool       // there is a previous entry and no gap before this one
	gapBefore bool
}

func (r *replayer) add(f Finding) { r.rep.Findings = append(r.rep.Findings, f) }

func (r *replayer) run() (err error) {
	// The store's check reads the store on its own, beside the replay: on
	// a machine with a core to spare, its time hides behind the replay's.
	var check <-chan structuralResult
	if r.opts.Structural != nil {
		ctx, cancel := context.WithCancel(r.ctx)
		if r.pipe.owned {
			// The check may take each entry as the replay prepared it.
			r.feed = newCheckFeed()
			ctx = ledger.WithCheckFeed(ctx, r.feed)
			defer r.feed.end()
		}
		c := make(chan structuralResult, 1)
		go func() {
			fs, err := r.structural(ctx)
			if r.feed != nil {
				r.feed.checked()
			}
			c <- structuralResult{fs, err}
		}()
		check = c
		defer func() {
			if check != nil { // not taken: the replay stopped early
				cancel()
				<-check
			}
			cancel()
		}()
	}
	err = r.src.Entries(r.ctx, r.entry)
	r.pipe.drain()
	if r.feed != nil {
		r.feed.end()
	}
	switch {
	case err == nil:
	case r.ctx.Err() != nil && errors.Is(err, r.ctx.Err()):
		return err
	case errors.Is(err, ledger.ErrCorrupt):
		r.add(Finding{Seq: r.lastSeq + 1, Kind: KindCorrupt, Message: fmt.Sprintf("reading entries: %v", err)})
	default:
		return fmt.Errorf("%w: %w", ErrSource, err)
	}
	if err := r.head(); err != nil {
		return err
	}
	r.blobsMissing()
	// The replay is judged: its tables (one row per accepted handoff id)
	// go before waiting for the store's check.
	r.state, r.st, r.missing, r.redaction = nil, nil, nil, nil
	if check != nil {
		res := <-check
		check = nil
		if res.err != nil {
			if errors.Is(res.err, ledger.ErrCorrupt) {
				r.add(Finding{Kind: KindCorrupt, Message: fmt.Sprintf("structural check: %v", res.err), Structural: true})
			} else {
				return fmt.Errorf("%w: structural check: %w", ErrSource, res.err)
			}
		}
		r.addStructural(res.fs)
	}
	return r.ctx.Err()
}

// structuralResult is what Options.Structural returned.
type structuralResult struct {
	fs  []ledger.Finding
	err error
}

// structural runs Options.Structural, turning a panic into ErrCorrupt.
func (r *replayer) structural(ctx context.Context) (fs []ledger.Finding, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: panic: %v", ledger.ErrCorrupt, p)
		}
	}()
	return r.opts.Structural(ctx)
}

// structuralKinds maps the kinds of ledger.Check to the kinds of this
// package. Kinds mapped to "" are chain properties the replay judges
// itself (with blame placed by the chain), so Check's copy is dropped.
var structuralKinds = map[string]string{
	ledger.FindUnknownBucket: KindUnknownKey,
	ledger.FindUnknownKey:    KindUnknownKey,
	ledger.FindBlobOrphan:    KindUnknownKey,
	ledger.FindMissingBucket: KindCorrupt,
	ledger.FindBadValue:      KindCorrupt,
	ledger.FindSeqGap:        "",
	ledger.FindUndecodable:   "",
	ledger.FindSeqMismatch:   "",
	ledger.FindPrevLink:      "",
	ledger.FindStateRule:     "",
	ledger.FindKey:           KindIndex,
	ledger.FindTimeOrder:     "",
	ledger.FindMetaHead:      KindMetaHead,
	ledger.FindTreeHash:      KindTree,
	ledger.FindTreeExtra:     KindTree,
	ledger.FindIndexMissing:  KindIndex,
	ledger.FindIndexExtra:    KindIndex,
	ledger.FindAccepted:      KindIndex,
	ledger.FindBlocked:       KindIndex,
	ledger.FindRedacted:      KindIndex,
	ledger.FindInForce:       KindIndex,
	ledger.FindBlobUnremoved: KindIndex,
	ledger.FindBlobHash:      KindPayload,
	ledger.FindBlobMissing:   KindPayloadMissing,
}

// addStructural adds the findings of Options.Structural, in this package's
// kinds (an unknown kind is kept as is), skipping those the replay made
// itself: same seq and kind.
func (r *replayer) addStructural(fs []ledger.Finding) {
	type sk struct {
		seq  uint64
		kind string
	}
	have := map[sk]bool{}
	for _, f := range r.rep.Findings {
		have[sk{f.Seq, f.Kind}] = true
	}
	for _, f := range fs {
		kind, known := structuralKinds[f.Kind]
		switch {
		case !known:
			kind = f.Kind
		case kind == "":
			continue
		}
		if kind == KindMetaHead && r.opts.Head != nil {
			continue // judged by head(), against the chain
		}
		if have[sk{f.Seq, kind}] {
			continue
		}
		have[sk{f.Seq, kind}] = true
		r.add(Finding{Seq: f.Seq, Kind: kind, Want: f.Want, Got: f.Got, Message: "structural check: " + f.Kind, Structural: true})
	}
}

// entry takes one stored entry into the pipeline. Findings never stop the
// replay; only a source error does.
func (r *replayer) entry(seq uint64, raw []byte) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	r.pipe.submit(seq, raw)
	return nil
}

// judgeJob judges a prepared job, in stored order.
func (r *replayer) judgeJob(j *job) {
	func() {
		defer func() {
			if p := recover(); p != nil {
				stack := debug.Stack()
				if sp, ok := p.(*stagePanic); ok {
					p, stack = sp.val, sp.stack
				}
				r.add(Finding{Seq: j.seq, Kind: KindCorrupt, Message: fmt.Sprintf("panic while judging the entry: %v\n%s", p, stack)})
			}
		}()
		r.judge(j)
	}()
	if r.opts.Progress != nil {
		r.opts.Progress(j.seq)
	}
}

func (r *replayer) judge(j *job) {
	seq := j.seq
	r.n++
	r.rep.Entries = r.n

	gapBefore := seq != r.lastSeq+1
	switch {
	case seq <= r.lastSeq:
		r.add(Finding{Seq: seq, Kind: KindGap, Want: fmt.Sprint(r.lastSeq + 1), Got: fmt.Sprint(seq),
			Message: fmt.Sprintf("seq %d comes after seq %d: repeated or out of order", seq, r.lastSeq)})
	case seq > r.lastSeq+1:
		missing := fmt.Sprint(r.lastSeq + 1)
		if seq > r.lastSeq+2 {
			missing += fmt.Sprintf("..%d", seq-1)
		}
		r.add(Finding{Seq: r.lastSeq + 1, Kind: KindGap, Want: fmt.Sprint(r.lastSeq + 1), Got: fmt.Sprint(seq),
			Message: fmt.Sprintf("seq %s missing: the next stored entry is seq %d", missing, seq)})
	}

	j.raise(stageDecode)
	h, e, err := j.h, j.e, j.decErr
	switch {
	case errors.Is(err, entry.ErrNotCanonical):
		r.add(Finding{Seq: seq, Kind: KindNotCanonical, Got: h.String(), Message: "the stored bytes are not the canonical form of the entry they encode"})
	case err != nil:
		r.add(Finding{Seq: seq, Kind: KindMalformed, Got: h.String(), Message: err.Error()})
	case e.Seq != seq:
		r.add(Finding{Seq: seq, Kind: KindGap, Want: fmt.Sprint(seq), Got: fmt.Sprint(e.Seq),
			Message: fmt.Sprintf("the entry stored as seq %d says seq %d", seq, e.Seq)})
	}

	linkOK := e != nil && e.Prev == r.prevHash
	r.resolve(linkOK)
	if e != nil && !linkOK {
		r.pending = &brokenLink{seq: seq, want: r.prevHash, got: e.Prev, blame: r.lastSeq,
			canBlame: r.n > 1 && !gapBefore, gapBefore: gapBefore}
	}
	r.prevHash, r.lastSeq = h, seq
	r.rep.Head, r.rep.LastSeq = h, seq
	if e == nil {
		j.raise(stageAny)
		return
	}
	if len(j.raw) > tiles.MaxEntrySize {
		r.add(Finding{Seq: seq, Kind: KindEntryTooLarge, Want: fmt.Sprintf("<= %d bytes", tiles.MaxEntrySize), Got: fmt.Sprintf("%d bytes", len(j.raw)),
			Message: "the entry is longer than a tlog-tiles entry bundle carries: its bundle is not served or published (read it from /v1/entries or an export)"})
	}
	if !r.lastTime.IsZero() && e.Time.Before(r.lastTime) {
		r.add(Finding{Seq: seq, Kind: KindTimeBackwards, Want: ">= " + r.lastTime.Format(time.RFC3339Nano), Got: e.Time.Format(time.RFC3339Nano),
			Message: "the entry's time is earlier than the previous entry's"})
	}
	if e.Time.After(r.lastTime) {
		r.lastTime = e.Time.Time
	}
	r.rep.Counts[e.Kind]++
	// The fold, positioned on the entry's own seq, prev and time: the
	// chain is judged above, with blame; the fold judges the state rules.
	if r.st == nil {
		r.st = entry.NewState(entry.Head{}, r.state)
	}
	st := r.st
	st.Reset(entry.PositionAt(r.fold, e))
	switch e.Kind {
	case entry.KindSnapshot:
		r.snapshot(j, e, st)
	case entry.KindHandoff:
		r.handoff(j, e, st)
	}
	j.raise(stageAny)
	r.apply(seq, e, h, st)
	switch e.Kind {
	case entry.KindHandoff:
		if e.Decision == reason.Accepted && e.Target.Valid && r.state.reader == nil {
			r.links.add(seq, r.linkNames(e.Target.S, e.WorkflowID))
		}
	case entry.KindOutcome:
		r.outcome(seq, e)
	case entry.KindRedaction:
		if r.redaction == nil {
			r.redaction = map[uint64]bool{}
		}
		r.redaction[e.RedactedSeq] = true
		r.unredacted(seq, e.RedactedSeq)
	}
}

// unredacted reports the payload of entry of, which the redaction entry
// seq erased, when the source reads it again: redaction is per entry, so
// bytes a later entry stored again are that entry's, never of's. Only a
// source that reads entries again and answers per entry (a ledger) is
// asked.
func (r *replayer) unredacted(seq, of uint64) {
	er, ok1 := r.src.(entryReader)
	es, ok2 := r.src.(EntryBlobSource)
	if !ok1 || !ok2 || of >= seq {
		return
	}
	t, err := er.entry(r.ctx, of)
	if err != nil || t.Kind != entry.KindHandoff || t.PayloadSHA256 == nil {
		return // the fold reports a redaction of no handoff
	}
	if b, err := es.EntryBlob(r.ctx, of, *t.PayloadSHA256); err == nil && b != nil {
		r.add(Finding{Seq: of, Kind: KindUnredacted, Want: "erased", Got: t.PayloadSHA256.String(),
			Message: fmt.Sprintf("the payload redaction seq %d erased is readable again", seq)})
	}
}

// resolve places the blame for a pending broken link, given whether the
// link after it holds. If it holds, the later entry is authentic (the entry
// after it commits to its bytes), so its prev is what the chain had and the
// earlier entry's bytes changed.
func (r *replayer) resolve(nextOK bool) {
	p := r.pending
	if p == nil {
		return
	}
	r.pending = nil
	if p.canBlame && nextOK {
		r.add(Finding{Seq: p.blame, Kind: KindHash, Want: p.got.String(), Got: p.want.String(),
			Message: fmt.Sprintf("the entry's bytes do not hash to the prev of seq %d, which the rest of the chain confirms", p.seq)})
		return
	}
	msg := "prev is not the hash of the previous entry's bytes"
	if p.gapBefore {
		msg += " (entries are missing or out of order before it)"
	} else if r.n == 1 || p.blame == 0 {
		msg = "the first entry's prev is not 64 zeros"
	}
	r.add(Finding{Seq: p.seq, Kind: KindPrev, Want: p.want.String(), Got: p.got.String(), Message: msg})
}

// head anchors the last entry to the head the store claims, and resolves
// the last pending link.
func (r *replayer) head() error {
	if r.opts.Head == nil {
		r.resolve(false)
		return nil
	}
	hs, hh, err := r.opts.Head(r.ctx)
	if err != nil {
		r.resolve(false)
		if errors.Is(err, ledger.ErrCorrupt) {
			r.add(Finding{Seq: r.lastSeq, Kind: KindCorrupt, Message: fmt.Sprintf("reading the stored head: %v", err)})
			return nil
		}
		return fmt.Errorf("%w: head: %w", ErrSource, err)
	}
	r.resolve(hs == r.lastSeq && hh == r.prevHash)
	switch {
	case hs != r.lastSeq:
		r.add(Finding{Seq: min(hs, r.lastSeq) + 1, Kind: KindMetaHead,
			Want: fmt.Sprintf("seq %d %s", r.lastSeq, r.prevHash), Got: fmt.Sprintf("seq %d %s", hs, hh),
			Message: fmt.Sprintf("the stored head names seq %d but the chain ends at seq %d", hs, r.lastSeq)})
	case hh != r.prevHash:
		r.add(Finding{Seq: r.lastSeq, Kind: KindHash, Want: hh.String(), Got: r.prevHash.String(),
			Message: "the last entry's bytes do not hash to the head the store records (the entry or the stored head was changed)"})
	}
	return nil
}

// blob takes the verdict on the blob j's entry names: its bytes when they
// are usable; nil when missing (recorded for the end of the replay) or
// wrong (reported now).
func (r *replayer) blob(j *job) []byte {
	j.raise(stageBlob)
	v := j.blob
	switch {
	case v.missing != nil:
		if r.missing == nil {
			r.missing = map[uint64]missingBlob{}
		}
		r.missing[j.seq] = *v.missing
	case v.finding != nil:
		r.add(*v.finding)
	}
	return v.b
}

// blobsMissing judges the missing blobs once every redaction entry is
// known: a redaction may come after the entry it redacts, and removing one
// entry's bytes removes them for every entry with the same bytes.
//
// Bytes the source marks as redacted that no readable redaction entry
// explains are blamed on the first damaged entry after them, if there is
// one: the damage may have destroyed the redaction entry (the finding says
// so); otherwise on the entry naming the bytes.
func (r *replayer) blobsMissing() {
	gone := map[entry.Hash]bool{}
	for seq := range r.redaction {
		if m, ok := r.missing[seq]; ok {
			gone[m.sum] = true
		}
	}
	seqs := make([]uint64, 0, len(r.missing))
	for seq := range r.missing {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	var damaged []uint64
	for _, f := range r.rep.Findings {
		if !f.Warning() && f.Seq != 0 {
			damaged = append(damaged, f.Seq)
		}
	}
	slices.Sort(damaged)
	for _, seq := range seqs {
		m := r.missing[seq]
		if r.redaction[seq] || gone[m.sum] {
			r.rep.Redacted = append(r.rep.Redacted, seq)
			continue
		}
		f := Finding{Seq: seq, Kind: KindPayloadMissing, Want: m.sum.String(),
			Message: "the bytes the entry names are not stored, and no redaction entry removed them"}
		if m.redacted {
			i, _ := slices.BinarySearch(damaged, seq+1)
			if i < len(damaged) {
				f.Seq = damaged[i]
				f.Message = fmt.Sprintf("the bytes named by seq %d were removed by a redaction, but no readable redaction entry names them: the damaged entry seq %d may have been it", seq, f.Seq)
			} else {
				f.Message = "the bytes the entry names were removed by a redaction, but no redaction entry names them"
			}
		}
		r.add(f)
	}
}

// apply folds e (hash h, stored as seq) with st, the fold positioned on
// it, into the replay's state. A state rule the entry breaks is a finding;
// a handoff naming snapshots not in force was reported by handoff, and
// its state effects are kept.
func (r *replayer) apply(seq uint64, e *entry.Entry, h entry.Hash, st *entry.State) {
	if err := st.Judge(e, h); err != nil {
		r.add(Finding{Seq: seq, Kind: KindState, Message: err.Error()})
	}
	r.state.commit(&st.Delta)
	r.fold = st.Head
}

// snapshot judges a snapshot entry stored as seq (findings name the seq
// it is stored under, which differs from e.Seq only in a damaged chain):
// its bytes, and for a lock the blocks it lifts: exactly the blocked
// agents whose prompt hash it changed.
func (r *replayer) snapshot(j *job, e *entry.Entry, st *entry.State) {
	seq, sum := j.seq, *e.ContentSHA256
	b := r.blob(j)
	if b != nil && !r.opts.SkipReevaluate {
		if err := r.parseSnapshot(e.What, sum, b); err != nil {
			r.add(Finding{Seq: seq, Kind: KindSnapshot, Message: fmt.Sprintf("the %s snapshot does not parse: %v", e.What, err)})
		}
	}
	if e.What != entry.SnapshotLock || e.Lifts == nil || !st.HasLock {
		return
	}
	locks := r.snap.locks
	old, ok1 := locks[st.Lock]
	next, ok2 := locks[sum]
	if !ok1 || !ok2 {
		return // a lock that is missing or does not parse was reported
	}
	want := []string{}
	for _, a := range lockfile.ChangedAgents(old, next) {
		if _, ok := st.Blocked(a); ok {
			want = append(want, a)
		}
	}
	if w, g := strings.Join(want, ","), strings.Join(*e.Lifts, ","); w != g {
		r.add(Finding{Seq: seq, Kind: KindState, Want: w, Got: g,
			Message: "the lock snapshot's lifts are not the blocked agents whose prompt hash it changed"})
	}
}

func (r *replayer) handoff(j *job, e *entry.Entry, st *entry.State) {
	seq := j.seq
	r.rep.Counts[e.Decision]++
	inForce := true
	if !st.HasManifest || *e.ManifestSHA256 != st.Manifest {
		inForce = false
		r.add(Finding{Seq: seq, Kind: KindSnapshot, Want: hashOrNone(st.Manifest, st.HasManifest), Got: e.ManifestSHA256.String(),
			Message: "manifest_sha256 is not the manifest snapshot in force"})
	}
	if !st.HasLock || *e.LockSHA256 != st.Lock {
		inForce = false
		r.add(Finding{Seq: seq, Kind: KindSnapshot, Want: hashOrNone(st.Lock, st.HasLock), Got: e.LockSHA256.String(),
			Message: "lock_sha256 is not the lock snapshot in force"})
	}
	tooLarge := tooLarge(e)
	var payload []byte
	if !tooLarge {
		payload = r.blob(j)
	}
	if !r.opts.SkipReevaluate {
		if inForce && (payload != nil || tooLarge) && r.reevaluate(seq, e, payload, st, j.spec) {
			r.rep.Counts["reevaluated"]++
		} else {
			r.rep.Counts["not_reevaluated"]++
		}
	}
}

func hashOrNone(h entry.Hash, ok bool) string {
	if !ok {
		return "none"
	}
	return h.String()
}

// reasonList renders reasons as "CODE/severity/field,…" (messages are
// compared separately, when the replay can reproduce them exactly).
func reasonList(rs []reason.Reason) string {
	parts := make([]string, len(rs))
	for i, x := range rs {
		parts[i] = string(x.Code) + "/" + string(x.Severity) + "/" + x.Field
	}
	return strings.Join(parts, ",")
}

func sortedList(ss []string) string {
	c := slices.Clone(ss)
	slices.Sort(c)
	return strings.Join(c, ",")
}
