package verify

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// This file splits the judgement of an entry in two. The part that depends
// on no other entry — decoding it (once), hashing it, fetching and hashing
// the blob it names, and taking its decision again against a guessed state
// — is prepared by a pool of runtime.GOMAXPROCS workers. The rest — the
// chain links, the state fold, and whether the guess held — is done by
// judge, one entry at a time in stored order, on the goroutine that
// delivers the entries. Findings are added only by judge, in the order a
// one-by-one replay adds them, so the report does not depend on the number
// of workers. At most a fixed number of entries are in flight (see
// batchSize).

// job is one stored entry on its way through the replay.
type job struct {
	seq uint64
	raw []byte // a copy of the stored bytes

	// Where prepare finds the blob: the source itself (a ledger), the
	// line's blob (an export), or the answer the delivering goroutine got
	// (a source that is not safe for concurrent use).
	from    fetchMode
	line    lineBlob
	hasLine bool
	blobRes blobFetch
	stored  []byte // fromSource: the blob stored under seq, if any (seqBlobSource)
	// storedOK: stored hashes to the sum the entry names.
	storedOK bool

	// Prepared.
	decoded bool
	h       entry.Hash
	e       *entry.Entry
	decErr  error
	blob    blobVerdict  // the payload (handoff) or content (snapshot) blob
	spec    *speculation // the decision taken again, nil when not taken
	failed  *stagePanic  // a panic while preparing, raised again by judge
}

type fetchMode int

const (
	fromSource fetchMode = iota
	fromLine
	fromPrefetch
)

// lineBlob is the blob an export line carries.
type lineBlob struct {
	sum entry.Hash
	b   []byte
}

// blobFetch is the answer of the source to a Blob call.
type blobFetch struct {
	b   []byte
	err error
}

// stage names where a panic happened while preparing a job.
type stage int

const (
	stageDecode stage = iota + 1
	stageBlob
	stageAny // raised at the end of judge
)

type stagePanic struct {
	at    stage
	val   any
	stack []byte
}

// raise panics again, in judge, with a panic prepare recovered at stage at.
func (j *job) raise(at stage) {
	if j.failed != nil && j.failed.at <= at {
		panic(j.failed)
	}
}

func (p *stagePanic) String() string { return fmt.Sprint(p.val) }

// blobVerdict is the outcome of checking the blob an entry names.
type blobVerdict struct {
	b       []byte       // the bytes, when usable
	missing *missingBlob // not stored
	finding *Finding     // wrong or unreadable
}

// concurrentSource is implemented by sources whose Blob may be called from
// any goroutine, for any entry already delivered (a ledger), and whose
// Blob checks the bytes against sum itself (an error wrapping
// ledger.ErrCorrupt otherwise). Their Entries delivers a copy of the
// stored bytes that stays valid.
type concurrentSource interface{ concurrentBlob() }

// seqBlobSource is implemented by concurrent sources that deliver, with
// an entry, the blob stored under its seq (a ledger whose driver keys
// blobs so): storedBlob returns it for the entry being delivered, or nil.
type seqBlobSource interface {
	storedBlob() []byte
	// reaches reports whether the source's Blob(sum) reads the blob
	// stored under seq.
	reaches(sum entry.Hash, seq uint64) bool
}

// replayScope is implemented by sources that hold resources for the
// length of a Replay (a ledger's shared view).
type replayScope interface {
	beginReplay()
	endReplay()
}

// lineSource is implemented by sources that deliver each entry's blob with
// it (an export): lineBlob returns the blob of the entry being delivered.
type lineSource interface {
	lineBlob() (entry.Hash, []byte, bool)
}

// namedBlob returns the blob e names that Replay checks: a snapshot's
// content, or a handoff's payload unless it was too large to be stored.
func namedBlob(e *entry.Entry) (sum entry.Hash, size int64, kind string, ok bool) {
	switch e.Kind {
	case entry.KindSnapshot:
		return *e.ContentSHA256, *e.Size, KindSnapshot, true
	case entry.KindHandoff:
		if tooLarge(e) {
			return entry.Hash{}, 0, "", false
		}
		return *e.PayloadSHA256, *e.PayloadSize, KindPayload, true
	}
	return entry.Hash{}, 0, "", false
}

func tooLarge(e *entry.Entry) bool {
	return slices.ContainsFunc(*e.Reasons, func(x reason.Reason) bool { return x.Code == reason.PayloadTooLarge })
}

// Batches: jobs travel to the workers batchSize at a time, and at most
// batchesPerWorker batches per worker are in flight, so that handing a job
// over costs little next to preparing it, and memory stays bounded: at most
// batchSize*batchesPerWorker*workers entries and the blobs they name.
// Eight batches of 64 per worker, rather than two of 32, took a full
// verify with two workers from ~1.27 to ~1.14 s of CPU for 20,000 entries
// (fewer hand-overs, and a worker rarely waits for the judge on a machine
// whose other load delays it): the in-flight window is what absorbs that.
const (
	batchSize        = 64
	batchesPerWorker = 8
)

// batch is a run of consecutive jobs prepared by one worker.
type batch struct {
	jobs []job
	done chan struct{} // receives once every job is prepared
}

// pipeline holds the batches in flight, oldest first, and the batch being
// filled.
type pipeline struct {
	r     *replayer
	size  int         // jobs per batch
	work  chan *batch // nil: no workers, jobs are prepared inline
	ring  []*batch    // in flight, ring[head] the oldest
	head  int
	n     int
	fill  *batch // being filled (workers); nil until the first entry
	one   job    // the job of inline mode
	wg    sync.WaitGroup
	stop  sync.Once
	where func(*job) // how the delivering goroutine readies a job for prepare
	owned bool       // the source's raw stays valid after the call

	workers int
	started bool // the workers run (not before the first batch)
}

// newPipeline starts workers goroutines (none when workers < 2: each job is
// then prepared by the delivering goroutine, just before it is judged),
// handed size jobs at a time (0: batchSize).
func newPipeline(r *replayer, workers, size int) *pipeline {
	if size <= 0 {
		size = batchSize
	}
	p := &pipeline{r: r, size: size}
	switch src := r.src.(type) {
	case concurrentSource:
		p.where = func(*job) {}
		if sb, ok := src.(seqBlobSource); ok {
			p.where = func(j *job) { j.stored = sb.storedBlob() }
		}
		p.owned = true
	case lineSource:
		p.where = func(j *job) {
			j.from = fromLine
			j.line.sum, j.line.b, j.hasLine = src.lineBlob()
		}
	default:
		p.where = r.prefetch
	}
	if workers < 2 {
		return p
	}
	p.work = make(chan *batch, batchesPerWorker*workers)
	p.ring = make([]*batch, batchesPerWorker*workers+1) // +1: the one being filled
	for i := range p.ring {
		p.ring[i] = &batch{jobs: make([]job, 0, size), done: make(chan struct{}, 1)}
	}
	p.workers = workers
	return p
}

// start starts the workers, with the first batch handed over.
func (p *pipeline) start() {
	p.started = true
	for range p.workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var c inputsCache
			for b := range p.work {
				for i := range b.jobs {
					p.r.prepare(&b.jobs[i], &c)
				}
				b.done <- struct{}{}
			}
		}()
	}
}

// close stops the workers. Every batch handed over is prepared first.
func (p *pipeline) close() {
	p.stop.Do(func() {
		if p.work != nil {
			close(p.work)
			p.wg.Wait()
		}
	})
}

// submit takes the entry delivered as seq.
func (p *pipeline) submit(seq uint64, raw []byte) {
	if p.work == nil {
		j := &p.one
		*j = job{seq: seq, raw: raw}
		p.where(j)
		p.r.prepare(j, &p.r.inputs)
		p.r.judgeJob(j)
		if p.r.feed != nil {
			p.r.feed.add(j)
		}
		*j = job{}
		return
	}
	if p.fill == nil {
		if p.n == len(p.ring)-1 {
			p.judgeOldest()
		}
		p.fill = p.ring[(p.head+p.n)%len(p.ring)]
	}
	b := p.fill
	if !p.owned {
		raw = slices.Clone(raw)
	}
	b.jobs = append(b.jobs, job{seq: seq, raw: raw})
	p.where(&b.jobs[len(b.jobs)-1])
	if len(b.jobs) < p.size {
		return
	}
	p.handOver()
	// Judge what is prepared already, without waiting.
	for p.n > 0 {
		select {
		case <-p.ring[p.head].done:
			p.judgeTaken()
		default:
			return
		}
	}
}

// handOver sends the batch being filled to the workers.
func (p *pipeline) handOver() {
	if !p.started {
		p.start()
	}
	p.work <- p.fill
	p.fill = nil
	p.n++
}

// drain judges every job taken so far.
func (p *pipeline) drain() {
	if p.fill != nil {
		p.handOver()
	}
	for p.n > 0 {
		p.judgeOldest()
	}
}

func (p *pipeline) judgeOldest() {
	<-p.ring[p.head].done
	p.judgeTaken()
}

// judgeTaken judges the oldest batch, which is prepared.
func (p *pipeline) judgeTaken() {
	b := p.ring[p.head]
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	for i := range b.jobs {
		p.r.judgeJob(&b.jobs[i])
		if p.r.feed != nil {
			p.r.feed.add(&b.jobs[i])
		}
	}
	clear(b.jobs) // let go of the bytes
	b.jobs = b.jobs[:0]
}

// prefetch, for a source that must be read by the delivering goroutine
// while it delivers the entry, decodes the entry and fetches its blob.
func (r *replayer) prefetch(j *job) {
	j.from = fromPrefetch
	if !r.decode(j) || j.e == nil {
		return
	}
	sum, _, _, ok := namedBlob(j.e)
	if !ok {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			j.failed = &stagePanic{at: stageBlob, val: v, stack: debug.Stack()}
		}
	}()
	// The source may reuse the bytes once it delivers the next entry.
	b, err := blobOf(r.ctx, r.src, j.seq, sum)
	j.blobRes = blobFetch{slices.Clone(b), err}
}

// decode decodes and hashes j's bytes once; it reports false after a panic.
func (r *replayer) decode(j *job) (ok bool) {
	if j.decoded {
		return j.failed == nil
	}
	j.decoded = true
	defer func() {
		if v := recover(); v != nil {
			j.failed = &stagePanic{at: stageDecode, val: v, stack: debug.Stack()}
			ok = false
		}
	}()
	j.h = entry.LeafHash(j.raw)
	j.e, j.decErr = entry.Decode(j.raw)
	if j.decErr != nil {
		j.e = nil
	}
	return true
}

// prepare does the part of j's judgement that depends on no other entry.
// It may run on any goroutine; it reads only j, the source's blobs and the
// snapshots parsed so far, and writes only j.
func (r *replayer) prepare(j *job, c *inputsCache) {
	defer func() {
		if v := recover(); v != nil && j.failed == nil {
			j.failed = &stagePanic{at: stageAny, val: v, stack: debug.Stack()}
		}
	}()
	if !r.decode(j) || j.e == nil {
		return
	}
	e := j.e
	sum, size, kind, ok := namedBlob(e)
	if ok {
		if !r.checkBlob(j, kind, sum, size) {
			return
		}
	}
	if e.Kind == entry.KindSnapshot && !r.opts.SkipReevaluate && j.blob.b != nil {
		r.parsed.parse(e.What, sum, j.blob.b)
	}
	if e.Kind == entry.KindHandoff && !r.opts.SkipReevaluate && (j.blob.b != nil || !ok) {
		func() {
			defer func() {
				if recover() != nil {
					j.spec = nil // judge takes the decision again itself
				}
			}()
			j.spec = r.speculate(j.seq, e, j.blob.b, c)
		}()
	}
}

// checkBlob fetches the bytes named by sum for j and checks them against
// sum and size, into j.blob. It reports false after a panic.
func (r *replayer) checkBlob(j *job, kind string, sum entry.Hash, size int64) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			j.failed = &stagePanic{at: stageBlob, val: v, stack: debug.Stack()}
			ok = false
		}
	}()
	if j.failed != nil {
		return false // the prefetch panicked
	}
	var b []byte
	var err error
	switch j.from {
	case fromLine:
		// What the export source's Blob answers.
		// What the export source's Blob answers (the line's bytes are
		// its own: no copy is needed).
		if j.hasLine && j.line.sum == sum {
			b = j.line.b
		} else {
			err = fmt.Errorf("blob %s: %w", sum, ledger.ErrNotFound)
		}
	case fromPrefetch:
		b, err = j.blobRes.b, j.blobRes.err
	default:
		// The blob stored under the entry's own seq, read beside it, is
		// the one it names when it hashes so (the first entry to name a
		// blob stores it) and readers reach it by that hash; otherwise the
		// source looks it up by hash.
		sb, _ := r.src.(seqBlobSource)
		j.storedOK = j.stored != nil && entry.Sum256(j.stored) == sum
		if j.storedOK && sb != nil && sb.reaches(sum, j.seq) {
			b = j.stored
		} else {
			b, err = blobOf(r.ctx, r.src, j.seq, sum)
		}
	}
	_, checked := r.src.(concurrentSource)
	j.blob = judgeBlob(j.seq, kind, sum, size, b, err, checked && j.from == fromSource)
	return true
}

// judgeBlob checks the bytes b (or the source's error err) that entry seq
// names by sum and size; checked says the source checked them against sum
// already.
func judgeBlob(seq uint64, kind string, sum entry.Hash, size int64, b []byte, err error, checked bool) blobVerdict {
	switch {
	case err == nil:
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrRedacted):
		return blobVerdict{missing: &missingBlob{sum: sum, redacted: errors.Is(err, ledger.ErrRedacted)}}
	case errors.Is(err, ledger.ErrCorrupt):
		// A ledger checks the bytes against their key itself.
		return blobVerdict{finding: &Finding{Seq: seq, Kind: kind, Want: sum.String(), Message: fmt.Sprintf("the stored bytes are damaged: %v", err)}}
	default:
		return blobVerdict{finding: &Finding{Seq: seq, Kind: KindCorrupt, Message: fmt.Sprintf("reading the bytes %s: %v", sum, err)}}
	}
	if !checked {
		if got := entry.Sum256(b); got != sum {
			return blobVerdict{finding: &Finding{Seq: seq, Kind: kind, Want: sum.String(), Got: got.String(), Message: "the stored bytes do not hash to the SHA-256 the entry names"}}
		}
	}
	if int64(len(b)) != size {
		return blobVerdict{finding: &Finding{Seq: seq, Kind: kind, Want: fmt.Sprint(size), Got: fmt.Sprint(len(b)), Message: "the stored bytes are not the size the entry names"}}
	}
	return blobVerdict{b: b}
}

// speculation is a handoff's decision taken again by a worker, against a
// state that answers every question as an empty ledger would (nothing
// accepted, nobody blocked) and records the questions. judge uses its
// findings when the real state gives the same answers and the snapshots
// are the ones in force; otherwise it takes the decision again itself.
type speculation struct {
	reg      *manifest.Registry
	lock     *lockfile.Lock
	findings []Finding
	ok       bool     // the decision could be taken again
	ids      []string // Accepted questions
	agents   []string // Blocked questions
}

// speculate takes e's decision again against the guessed state, with the
// snapshots parsed so far; nil when they are not parsed yet.
func (r *replayer) speculate(seq uint64, e *entry.Entry, payload []byte, c *inputsCache) *speculation {
	reg, ok1 := r.speculativeSnapshot(entry.SnapshotManifest, *e.ManifestSHA256)
	lock, ok2 := r.speculativeSnapshot(entry.SnapshotLock, *e.LockSHA256)
	if !ok1 || !ok2 {
		return nil
	}
	s := &speculation{reg: reg.reg, lock: lock.lock}
	add := func(f Finding) { s.findings = append(s.findings, f) }
	in, err := c.parse(e.Inputs)
	if err != nil {
		add(Finding{Seq: seq, Kind: KindMalformed, Message: fmt.Sprintf("inputs: %v", err)})
		return s
	}
	g := &guessState{manifest: *e.ManifestSHA256, lock: *e.LockSHA256, spec: s}
	// Its answers are exact (a handoff ID it calls accepted would make
	// the guess fail), so messages are compared.
	decideAgain(seq, e, payload, s.reg, s.lock, in, g, func() bool { return true }, add)
	s.ok = true
	return s
}

// speculativeSnapshot returns the snapshot what whose content hash is sum,
// parsed: by a worker or judge before, or now from the source's bytes when
// any goroutine may read them (a ledger). Whether it is the snapshot in
// force is judge's question.
func (r *replayer) speculativeSnapshot(what string, sum entry.Hash) (*parsedSnapshot, bool) {
	if p, ok := r.parsed.lookup(what, sum); ok {
		return p, true
	}
	if _, ok := r.src.(concurrentSource); !ok {
		return nil, false
	}
	b, err := r.src.Blob(r.ctx, sum)
	if err != nil || entry.Sum256(b) != sum {
		return nil, false
	}
	p := r.parsed.parse(what, sum, b)
	return p, p.err == nil
}

// holds reports whether st answers the speculation's questions as the
// guessed state did.
func (s *speculation) holds(st policy.State) bool {
	for _, id := range s.ids {
		if _, _, ok := st.Accepted(id); ok {
			return false
		}
	}
	for _, a := range s.agents {
		if _, ok := st.Blocked(a); ok {
			return false
		}
	}
	return true
}

// guessState is the state a speculation decides against.
type guessState struct {
	manifest, lock entry.Hash
	spec           *speculation
}

func (g *guessState) Accepted(id string) (uint64, entry.Hash, bool) {
	g.spec.ids = append(g.spec.ids, id)
	return 0, entry.Hash{}, false
}

func (g *guessState) Blocked(agent string) (uint64, bool) {
	g.spec.agents = append(g.spec.agents, agent)
	return 0, false
}

// InForce answers with the entry's snapshots: a speculation is used only
// when they are the ones in force.
func (g *guessState) InForce() (entry.Hash, entry.Hash, bool) { return g.manifest, g.lock, true }

// inputsCache keeps the parsed inputs of recent entries: a ledger
// recorded with the same parameters repeats the same inputs bytes.
type inputsCache struct {
	m map[string]inputsParsed
}

type inputsParsed struct {
	in  policy.Inputs
	err error
}

const inputsCacheSize = 64

func (c *inputsCache) parse(b []byte) (policy.Inputs, error) {
	if b == nil {
		return policy.Inputs{}, nil
	}
	if p, ok := c.m[string(b)]; ok {
		return p.in, p.err
	}
	in, err := policy.ParseInputs(b)
	if c.m == nil || len(c.m) >= inputsCacheSize {
		c.m = make(map[string]inputsParsed, inputsCacheSize)
	}
	c.m[string(b)] = inputsParsed{in, err}
	return in, err
}

func defaultWorkers() int { return runtime.GOMAXPROCS(0) }
