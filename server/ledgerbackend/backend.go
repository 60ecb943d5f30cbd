package ledgerbackend

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/tiles"
)

// DefaultMaxQueue is Options.MaxQueue's default.
const DefaultMaxQueue = 4096

// maxStoredKey is the longest idempotency key an entry holds (entry.Validate).
const maxStoredKey = 255

// Policy is the registry and lock decisions are taken against.
type Policy struct {
	Registry  *manifest.Registry
	Lock      *lockfile.Lock
	LockBytes []byte // the lock file as read: recorded as the lock snapshot
}

// LoadFiles returns a loader reading the registry at manifestPath (a
// prompt-manifest.json or a skills folder) and the lock at lockPath. Its
// errors name the file.
func LoadFiles(manifestPath, lockPath string) func() (*Policy, error) {
	return func() (*Policy, error) {
		reg, err := manifest.Load(manifestPath)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", manifestPath, err)
		}
		b, err := os.ReadFile(lockPath)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		lk, err := lockfile.Parse(lockPath, b)
		if err != nil {
			return nil, err
		}
		return &Policy{Registry: reg, Lock: lk, LockBytes: b}, nil
	}
}

// Options configure a Backend. Load is required.
type Options struct {
	// Load reads the registry and lock: once by New, again by Reload.
	Load func() (*Policy, error)
	// Params are the decision settings of every submission (Strict, MaxAge,
	// MaxPayload; 0 MaxPayload means govern.DefaultMaxPayload). Format,
	// From and To come from each request.
	Params policy.Params
	// Root is the folder relative paths in documents resolve against
	// ("" skips the file-system rules).
	Root string
	// Signer signs the checkpoints of the head (Checkpoint); nil: Checkpoint
	// answers ErrUnavailable and proofs carry no checkpoint.
	Signer note.Signer
	// Metrics receive appends and commits (nil: none).
	Metrics *server.Metrics
	// MaxQueue bounds the submissions being decided or waiting for a
	// commit; beyond it writes fail with server.ErrOverloaded.
	MaxQueue int
	// Now is the clock of Validate (time.Now if nil); appends use the
	// ledger's clock.
	Now func() time.Time
	// Poll, when above zero, is how often Watch reads the stored head even
	// when this process appended nothing: for a store other processes
	// write too (PostgreSQL replicas), so every replica's event stream
	// delivers every replica's entries. 0: only this process's appends
	// wake Watch.
	Poll time.Duration
	// Operator is the submitter of the snapshot entries New records on a
	// ledger with no policy in force: whoever started the server with
	// these files ("operator" if empty).
	Operator string
	// MaxParseBytes bounds the bytes of documents being parsed and decided
	// at once, server-wide (0: DefaultMaxParseBytes); a document that finds
	// no room within ParseWait (0: DefaultParseWait) is refused with a
	// *ParseBudgetError (503, Retry-After, nothing written).
	MaxParseBytes int64
	ParseWait     time.Duration
	// BatchWorkers bounds the documents of one batch decided at once (0:
	// DefaultBatchWorkers).
	BatchWorkers int
}

// Backend is the server.Backend over one open ledger. It is safe for
// concurrent use.
type Backend struct {
	l      *ledger.Ledger
	o      Options
	pol    atomic.Pointer[Policy]
	reload sync.Mutex

	queued atomic.Int64
	budget *parseBudget

	failOnce sync.Once
	failErr  error
	failed   chan struct{}

	note string // New's word to the operator

	notifyMu sync.Mutex
	changed  chan struct{} // closed and replaced after every append

	statsMu sync.Mutex
	stats   ledger.Stats

	filters filterIndex // codes, formats and kinds (index.go)

	cpMu   sync.Mutex
	cpText []byte // the latest signed checkpoint (Checkpoint), of cpSize entries
	cpSize uint64
}

var _ server.Backend = (*Backend)(nil)

// New returns a Backend serving l under the policy in force: the ledger
// decides it, never this process's files alone. On a ledger with no policy
// in force, the registry and lock Options.Load reads are brought into
// force, with Options.Operator as their submitter. On a ledger that has
// one, that one is served, and Note says so when the files differ (a
// replica that was not reloaded, or files edited while the server was
// down): only an operator's Reload brings the files into force.
//
// Submissions are decided under the policy in force when their commit is
// built: when another process (a replica, an operator's reload) brought
// another into force meanwhile, the submission is decided again under it.
// A submission never brings a policy into force.
func New(l *ledger.Ledger, o Options) (*Backend, error) {
	if l == nil || o.Load == nil {
		return nil, errors.New("ledgerbackend: a ledger and Options.Load are required")
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.Params.MaxPayload <= 0 {
		o.Params.MaxPayload = govern.DefaultMaxPayload
	}
	if o.Params.MaxAge < 0 {
		return nil, errors.New("ledgerbackend: negative MaxAge")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxParseBytes <= 0 {
		o.MaxParseBytes = DefaultMaxParseBytes
	}
	if o.ParseWait <= 0 {
		o.ParseWait = DefaultParseWait
	}
	if o.BatchWorkers <= 0 {
		o.BatchWorkers = DefaultBatchWorkers
	}
	o.Params.Format, o.Params.From, o.Params.To = "", "", ""
	if o.Operator == "" {
		o.Operator = "operator"
	}
	p, err := o.Load()
	if err != nil {
		return nil, err
	}
	b := &Backend{l: l, o: o, failed: make(chan struct{}), changed: make(chan struct{}), stats: l.Stats(),
		budget: newParseBudget(o.MaxParseBytes, o.ParseWait)}
	b.pol.Store(p)
	ctx := context.Background() // start-up reads; New has no caller context
	m, k, ok, err := b.inForce(ctx)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		if _, err := l.Append(ctx, &ledger.Request{Snapshots: snapshotsOf(p), Submitter: o.Operator,
			LockChanges: lockfile.ChangedBytes}); err != nil {
			return nil, fmt.Errorf("bringing the registry and lock into force: %w", err)
		}
	case m != entry.Sum256(p.Registry.Snapshot) || k != entry.Sum256(p.LockBytes):
		if err := b.adopt(ctx); err != nil {
			return nil, err
		}
		b.note = fmt.Sprintf("the manifest and lock files differ from the policy in force in the ledger (manifest %s, lock %s): "+
			"serving the ledger's; a reload (SIGHUP or POST /v1/reload) brings the files into force", m, k)
	}
	return b, nil
}

// Note is what New found worth telling the operator ("" when nothing):
// the files differ from the policy in force.
func (b *Backend) Note() string { return b.note }

// snapshotsOf is p as the snapshots that bring it into force.
func snapshotsOf(p *Policy) []ledger.Snapshot {
	return []ledger.Snapshot{
		{What: entry.SnapshotManifest, Bytes: p.Registry.Snapshot},
		{What: entry.SnapshotLock, Bytes: p.LockBytes},
	}
}

// inForce returns the hashes of the manifest and lock in force.
func (b *Backend) inForce(ctx context.Context) (manifest, lock entry.Hash, ok bool, err error) {
	err = b.l.View(ctx, func(st ledger.State) error {
		manifest, lock, ok = st.InForce()
		return nil
	})
	return manifest, lock, ok, readErr(err)
}

// adopt serves the policy in force in the ledger: the manifest and lock
// snapshots its head names, read from their stored bytes.
func (b *Backend) adopt(ctx context.Context) error {
	b.reload.Lock()
	defer b.reload.Unlock()
	m, k, ok, err := b.inForce(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the ledger has no policy in force: an operator must reload", server.ErrUnavailable)
	}
	if cur := b.pol.Load(); entry.Sum256(cur.Registry.Snapshot) == m && entry.Sum256(cur.LockBytes) == k {
		return nil // another submission adopted it first
	}
	mb, err := b.l.Blob(ctx, m)
	if err != nil {
		return fmt.Errorf("the manifest snapshot in force (%s): %w", m, readErr(err))
	}
	kb, err := b.l.Blob(ctx, k)
	if err != nil {
		return fmt.Errorf("the lock snapshot in force (%s): %w", k, readErr(err))
	}
	reg, err := manifest.ParseSnapshot(mb)
	if err != nil {
		return fmt.Errorf("the manifest snapshot in force (%s): %w", m, err)
	}
	reg.Dir = b.pol.Load().Registry.Dir
	lk, err := lockfile.Parse("the lock snapshot in force", kb)
	if err != nil {
		return fmt.Errorf("the lock snapshot in force (%s): %w", k, err)
	}
	b.pol.Store(&Policy{Registry: reg, Lock: lk, LockBytes: kb})
	return nil
}

// QueueDepth is the number of submissions being decided or waiting for a
// commit (server.Config.QueueDepth).
func (b *Backend) QueueDepth() int { return int(b.queued.Load()) }

// Failed is closed when a commit failed: the ledger refuses writes until
// it is opened again, so the process should drain and exit.
func (b *Backend) Failed() <-chan struct{} { return b.failed }

// Err returns the commit failure that closed Failed, or nil.
func (b *Backend) Err() error {
	select {
	case <-b.failed:
		return b.failErr
	default:
		return nil
	}
}

func (b *Backend) fail(err error) {
	b.failOnce.Do(func() {
		b.failErr = err
		close(b.failed)
	})
}

// writable refuses writes once a commit failed.
func (b *Backend) writable() error {
	if err := b.Err(); err != nil {
		return fmt.Errorf("%w: the ledger failed a commit and must be reopened (restart the server): %v", server.ErrUnavailable, err)
	}
	return nil
}

// enter takes n places in the commit queue, or reports it full.
func (b *Backend) enter(n int) error {
	if b.queued.Add(int64(n)) > int64(b.o.MaxQueue) {
		b.queued.Add(-int64(n))
		return fmt.Errorf("%w: %d submissions waiting (limit %d)", server.ErrOverloaded, b.queued.Load(), b.o.MaxQueue)
	}
	return nil
}

func (b *Backend) leave(n int) { b.queued.Add(-int64(n)) }

// subscribe returns a channel closed by the next append.
func (b *Backend) subscribe() <-chan struct{} {
	b.notifyMu.Lock()
	defer b.notifyMu.Unlock()
	return b.changed
}

// appended is called after every successful append that took d: it wakes
// watchers and records the commits the ledger made since the last call.
func (b *Backend) appended(d time.Duration) {
	b.notifyMu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.notifyMu.Unlock()

	b.statsMu.Lock()
	s := b.l.Stats()
	commits, entries := s.Commits-b.stats.Commits, s.Entries-b.stats.Entries
	b.stats = s
	b.statsMu.Unlock()
	for i := uint64(0); i < commits; i++ {
		// The ledger reports commit counts, not each commit's size: spread
		// the entries evenly over the commits seen since the last append.
		per := entries / commits
		if i < entries%commits {
			per++
		}
		b.o.Metrics.ObserveCommit(int(per), d)
	}
}

// writeErr turns an append's error into the server's terms.
func (b *Backend) writeErr(err error) error {
	switch {
	case errors.Is(err, ledger.ErrClosed):
		return fmt.Errorf("%w: the ledger is closed (shutting down); nothing written", server.ErrUnavailable)
	case errors.Is(err, ledger.ErrFailed):
		b.fail(err)
		return fmt.Errorf("%w: %v; nothing written", server.ErrUnavailable, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// ledger.Append returns ctx's error only for a request no commit took.
		return fmt.Errorf("%w: %v before the commit; nothing written", server.ErrUnavailable, err)
	case errors.Is(err, govern.ErrWorkflowMismatch), errors.Is(err, ledger.ErrOutcomeRefused):
		return fmt.Errorf("%w: %v; nothing written", server.ErrUnprocessable, err)
	case errors.Is(err, govern.ErrIdempotencyConflict):
		return fmt.Errorf("%w: %v; nothing written", server.ErrIdempotencyConflict, err)
	case errors.Is(err, entry.ErrMalformed), errors.Is(err, entry.ErrFold), errors.Is(err, policy.ErrNoPolicy),
		errors.Is(err, policy.ErrPolicyMismatch), errors.Is(err, policy.ErrPayloadMismatch),
		errors.Is(err, policy.ErrDecisionMismatch), errors.Is(err, policy.ErrInputs):
		// A Build or validation error fails this request alone.
		return fmt.Errorf("entry refused by the ledger, nothing written: %w", err)
	case errors.Is(err, ledger.ErrOutcomeUnknown):
		// A shared store (PostgreSQL) lost the commit's answer; the core
		// stays writable: its next batch is built on the head stored.
		return fmt.Errorf("%w: %v", server.ErrOutcomeUnknown, err)
	case errors.Is(err, ledger.ErrUnavailable):
		// The store is out of reach (a database restarting); nothing was
		// stored and the next request may succeed.
		return fmt.Errorf("%w: %v; nothing written", server.ErrUnavailable, err)
	}
	b.fail(err)
	return fmt.Errorf("%w: %v", server.ErrOutcomeUnknown, err)
}

// readErr turns a read's error into the server's terms.
func readErr(err error) error {
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return fmt.Errorf("%w: %v", server.ErrNotFound, err)
	case errors.Is(err, ledger.ErrRedacted):
		return fmt.Errorf("%w: %v", server.ErrRedacted, err)
	case errors.Is(err, ledger.ErrBadRange):
		return fmt.Errorf("%w: %v", server.ErrUnprocessable, err)
	case errors.Is(err, ledger.ErrClosed), errors.Is(err, ledger.ErrUnavailable):
		return fmt.Errorf("%w: %v", server.ErrUnavailable, err)
	}
	return err
}

// maxPolicyTries bounds how often one submission is decided again because
// another policy came into force while it was decided.
const maxPolicyTries = 4

// request is a submission checked and ready to decide.
type request struct {
	cfg *govern.Config
	p   *govern.Payload
	r   server.SubmitRequest
}

// prepare checks r and builds its decision config: a known format, a
// storable key and traceparent, and a source the submitter may submit
// for, read from the document itself.
func (b *Backend) prepare(r server.SubmitRequest) (*request, error) {
	f := handoff.Format(r.Format)
	if f != "" && !slices.Contains(handoff.Formats, f) {
		return nil, fmt.Errorf("%w: format %q: want one of governed/1, swarm/2, skill/1, vbw/1, task/1, a2a/1", server.ErrBadInput, r.Format)
	}
	if r.TraceParent != "" && len(r.TraceParent) != 55 {
		return nil, fmt.Errorf("%w: traceparent: only version 00 (55 characters) can be stored", server.ErrBadInput)
	}
	pol := b.pol.Load()
	cfg := &govern.Config{Registry: pol.Registry, Lock: pol.Lock, LockBytes: pol.LockBytes, Params: b.o.Params,
		Root: b.o.Root, Now: b.o.Now, Submitter: r.Submitter, TraceParent: r.TraceParent, WorkflowID: r.WorkflowID, InForceOnly: true}
	cfg.Params.Format, cfg.Params.From, cfg.Params.To = f, r.From, r.To
	if r.IdempotencyKey != "" {
		cfg.IdempotencyKey = r.Submitter + "/" + r.IdempotencyKey
		if len(cfg.IdempotencyKey) > maxStoredKey {
			return nil, fmt.Errorf("%w: idempotency key: at most %d bytes for principal %q", server.ErrBadInput,
				maxStoredKey-len(r.Submitter)-1, r.Submitter)
		}
	}
	if r.Sources != nil {
		if int64(len(r.Body)) > cfg.Params.MaxPayload {
			// Its source is not read: a document over --max-payload is
			// never parsed, and only its source could let it through.
			return nil, fmt.Errorf("%w: a document of %d bytes is over --max-payload (%d) and is not parsed, so its source agent cannot be established; %q may submit only for %v: nothing written",
				server.ErrForbiddenSource, len(r.Body), cfg.Params.MaxPayload, r.Submitter, r.Sources)
		}
		// A cheap read first: a source named by it that the principal may
		// not submit for is refused before any parse.
		if src, ok := handoff.SourceHint(r.Body, handoff.Options{Format: f, From: r.From, To: r.To}); ok && !slices.Contains(r.Sources, src) {
			return nil, fmt.Errorf("%w: %q may not submit for source agent %q", server.ErrForbiddenSource, r.Submitter, src)
		}
		// Read once, under the parse caps: the decision reuses the detection.
		cfg.Detection = handoff.NewDetection(r.Body, policy.CurrentRules)
		rec := handoff.Parse(r.Body, handoff.Options{Format: f, From: r.From, To: r.To, Strict: cfg.Params.Strict,
			Rules: policy.CurrentRules, Detection: cfg.Detection})
		switch src := rec.Source.ID; {
		case src == "":
			return nil, fmt.Errorf("%w: the document names no source agent, and %q may submit only for %v",
				server.ErrForbiddenSource, r.Submitter, r.Sources)
		case !slices.Contains(r.Sources, src):
			return nil, fmt.Errorf("%w: %q may not submit for source agent %q", server.ErrForbiddenSource, r.Submitter, src)
		}
	}
	p, err := govern.ReadPayload(bytes.NewReader(r.Body), cfg.Params.MaxPayload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrBadInput, err)
	}
	return &request{cfg: cfg, p: p, r: r}, nil
}

// Submit implements server.Backend.
func (b *Backend) Submit(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	if err := b.writable(); err != nil {
		return nil, err
	}
	if err := b.enter(1); err != nil {
		return nil, err
	}
	defer b.leave(1)
	return b.submit(ctx, r)
}

// SubmitBatch implements server.Backend: the documents are decided and
// appended concurrently, so they share commits (group commit); their seqs
// follow the order in which the commit took them, not necessarily the
// order of rs.
func (b *Backend) SubmitBatch(ctx context.Context, rs []server.SubmitRequest) ([]server.BatchItem, error) {
	if err := b.writable(); err != nil {
		return nil, err
	}
	if err := b.enter(len(rs)); err != nil {
		return nil, err
	}
	defer b.leave(len(rs))
	items := make([]server.BatchItem, len(rs))
	// At most BatchWorkers documents of the batch are decided at once:
	// enough to share commits, never the whole batch in memory as trees.
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(b.o.BatchWorkers, len(rs)) {
		wg.Go(func() {
			for i := range work {
				items[i].Result, items[i].Err = b.submit(ctx, rs[i])
			}
		})
	}
	for i := range rs {
		work <- i
	}
	close(work)
	wg.Wait()
	return items, nil
}

// parsing takes room in the parse budget for r's document (nothing for
// one over --max-payload: it is never parsed) and returns its release.
func (b *Backend) parsing(ctx context.Context, r server.SubmitRequest) (func(), error) {
	n := int64(len(r.Body))
	if n > b.o.Params.MaxPayload {
		n = 0
	}
	took, err := b.budget.acquire(ctx, n)
	if err != nil {
		return nil, err
	}
	return func() { b.budget.release(took) }, nil
}

// ParseBytes is the bytes of documents being parsed and decided now.
func (b *Backend) ParseBytes() int64 { return b.budget.inUse() }

func (b *Backend) submit(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	done, err := b.parsing(ctx, r)
	if err != nil {
		return nil, err
	}
	defer done()
	req, err := b.prepare(r)
	if err != nil {
		return nil, err
	}
	// A key used before is found inside the commit (govern.KeyUsedError):
	// a retry costs a decision, and a first use no extra read.
	start := time.Now()
	out, err := govern.Record(ctx, b.l, req.cfg, "request", req.p)
	for try := 0; errors.Is(err, ledger.ErrPolicyChanged) && try < maxPolicyTries; try++ {
		// Another policy came into force since req was prepared: decide
		// it again under that one.
		if err = b.adopt(ctx); err != nil {
			return nil, err
		}
		if req, err = b.prepare(r); err != nil {
			return nil, err
		}
		out, err = govern.Record(ctx, b.l, req.cfg, "request", req.p)
	}
	var used *govern.KeyUsedError
	switch {
	case errors.As(err, &used):
		return b.replay(ctx, req, used.Seq)
	case err != nil:
		return nil, b.writeErr(err)
	}
	b.appended(time.Since(start))
	a := out.Entry()
	res := resultOf(a.Entry, a.Hash)
	codes := make([]string, len(res.Reasons))
	for i, x := range res.Reasons {
		codes[i] = string(x.Code)
	}
	b.o.Metrics.ObserveAppend(res.Decision, codes)
	return res, nil
}

// replay answers a submission whose key entry seq used first: its answer,
// when the request is the same, else a conflict.
func (b *Backend) replay(ctx context.Context, req *request, seq uint64) (*server.SubmitResult, error) {
	e, raw, err := b.l.Get(ctx, seq)
	if err != nil {
		return nil, readErr(err)
	}
	same := e.Kind == entry.KindHandoff && e.Submitter == req.r.Submitter &&
		e.PayloadSHA256 != nil && *e.PayloadSHA256 == req.p.SHA256 &&
		(req.cfg.WorkflowID == "" || e.WorkflowID.S == req.cfg.WorkflowID)
	if same {
		in, err := policy.ParseInputs(e.Inputs)
		same = err == nil && in.Params.Format == req.cfg.Params.Format &&
			in.Params.From == req.cfg.Params.From && in.Params.To == req.cfg.Params.To
	}
	if !same {
		return nil, fmt.Errorf("%w: key %q was first used by entry %d for other bytes or other format, from, to or workflow",
			server.ErrIdempotencyConflict, req.r.IdempotencyKey, seq)
	}
	res := resultOf(e, entry.LeafHash(raw))
	res.Replayed = true
	return res, nil
}

// Outcome implements server.Backend.
func (b *Backend) Outcome(ctx context.Context, r server.OutcomeRequest) (*server.OutcomeResult, error) {
	if err := b.writable(); err != nil {
		return nil, err
	}
	if err := b.enter(1); err != nil {
		return nil, err
	}
	defer b.leave(1)
	if r.TraceParent != "" && len(r.TraceParent) != 55 {
		return nil, fmt.Errorf("%w: traceparent: only version 00 (55 characters) can be stored", server.ErrBadInput)
	}
	req := govern.OutcomeRequest{DecisionSeq: r.DecisionSeq, Status: r.Status, DurationMS: r.DurationMS,
		Submitter: r.Submitter, TraceParent: r.TraceParent}
	if r.OutputSHA256 != "" {
		h, err := entry.ParseHash(r.OutputSHA256)
		if err != nil {
			return nil, fmt.Errorf("%w: output_sha256: %v", server.ErrUnprocessable, err)
		}
		req.OutputSHA256 = &h
	}
	if r.IdempotencyKey != "" {
		req.IdempotencyKey = r.Submitter + "/" + r.IdempotencyKey
		if len(req.IdempotencyKey) > maxStoredKey {
			return nil, fmt.Errorf("%w: idempotency key: at most %d bytes for principal %q", server.ErrBadInput,
				maxStoredKey-len(r.Submitter)-1, r.Submitter)
		}
	}
	if r.Agents != nil {
		req.Allow = func(agent string) error {
			if !slices.Contains(r.Agents, agent) {
				return fmt.Errorf("%w: %q may not record outcomes for agent %q (the handoff's target)", server.ErrForbiddenSource, r.Submitter, agent)
			}
			return nil
		}
	}
	start := time.Now()
	res, err := govern.RecordOutcome(ctx, b.l, req)
	switch {
	case errors.Is(err, server.ErrForbiddenSource), errors.Is(err, server.ErrBadInput):
		return nil, err
	case err != nil:
		return nil, b.writeErr(err)
	}
	e := res.Entry
	if !res.Replayed {
		b.appended(time.Since(start))
		b.o.Metrics.ObserveOutcome(e.Status)
	}
	out := &server.OutcomeResult{Seq: e.Seq, Kind: e.Kind, DecisionSeq: e.DecisionSeq, Agent: e.Agent, Status: e.Status, Replayed: res.Replayed}
	if e.WorkflowID.Valid {
		w := e.WorkflowID.S
		out.WorkflowID = &w
	}
	return out, nil
}

// resultOf is the answer to a submission recorded as e.
func resultOf(e *entry.Entry, h entry.Hash) *server.SubmitResult {
	res := &server.SubmitResult{Seq: e.Seq, EntryHash: h.String(), Decision: e.Decision, Reasons: []reason.Reason{},
		Format: e.Format.S, HandoffID: e.HandoffID.S, Source: e.Source.S, Target: e.Target.S, WorkflowID: e.WorkflowID.S}
	if e.Reasons != nil {
		res.Reasons = slices.Clone(*e.Reasons)
	}
	return res
}

// Validate implements server.Backend.
func (b *Backend) Validate(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	r.IdempotencyKey = ""
	done, err := b.parsing(ctx, r)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := b.follow(ctx); err != nil {
		return nil, err
	}
	req, err := b.prepare(r)
	if err != nil {
		return nil, err
	}
	var out *govern.Outcome
	err = b.l.View(ctx, func(st ledger.State) error {
		var verr error
		out, verr = govern.Validate(req.cfg, "request", req.p, st)
		return verr
	})
	if err != nil {
		return nil, readErr(err)
	}
	d := out.Decision
	res := &server.SubmitResult{Decision: d.Decision, Reasons: slices.Clone(d.Reasons)}
	if rec := d.Record; rec != nil {
		res.Format, res.HandoffID, res.Source, res.Target, res.WorkflowID =
			string(rec.Format), rec.HandoffID, rec.Source.ID, rec.Target.ID, rec.WorkflowID
	}
	// As Record would: the document's own workflow id, else the request's.
	switch {
	case r.WorkflowID == "":
	case res.WorkflowID == "" || !utf8.ValidString(res.WorkflowID):
		res.WorkflowID = r.WorkflowID
	case res.WorkflowID != r.WorkflowID:
		return nil, fmt.Errorf("%w: %v", server.ErrUnprocessable,
			&govern.WorkflowMismatchError{Document: res.WorkflowID, Request: r.WorkflowID})
	}
	return res, nil
}

// follow adopts the policy in force when it is not the one served.
func (b *Backend) follow(ctx context.Context) error {
	m, k, ok, err := b.inForce(ctx)
	if err != nil {
		return err
	}
	if cur := b.pol.Load(); ok && (entry.Sum256(cur.Registry.Snapshot) != m || entry.Sum256(cur.LockBytes) != k) {
		return b.adopt(ctx)
	}
	return nil
}

// view returns entry seq as the API shows it.
func (b *Backend) view(ctx context.Context, seq uint64) (*entry.Entry, server.EntryView, error) {
	e, raw, err := b.l.Get(ctx, seq)
	if err != nil {
		return nil, server.EntryView{}, readErr(err)
	}
	return e, server.EntryView{Seq: seq, Hash: entry.LeafHash(raw).String(), Entry: raw}, nil
}

func viewOf(a ledger.Appended) server.EntryView {
	return server.EntryView{Seq: a.Entry.Seq, Hash: a.Hash.String(), Entry: a.Raw}
}

// Entry implements server.Backend.
func (b *Backend) Entry(ctx context.Context, seq uint64) (*server.EntryView, error) {
	_, v, err := b.view(ctx, seq)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Payload implements server.Backend.
func (b *Backend) Payload(ctx context.Context, seq uint64) ([]byte, error) {
	e, _, err := b.view(ctx, seq)
	if err != nil {
		return nil, err
	}
	// A handoff's document, or a snapshot's content (the manifest or lock
	// it put in force), as "govledger show" prints them.
	sum := e.PayloadSHA256
	if e.Kind == entry.KindSnapshot {
		sum = e.ContentSHA256
	}
	if sum == nil || (e.Kind != entry.KindHandoff && e.Kind != entry.KindSnapshot) {
		return nil, fmt.Errorf("%w: entry %d is a %s entry, without a payload", server.ErrNotFound, seq, e.Kind)
	}
	data, err := b.l.EntryBlob(ctx, seq, *sum)
	switch {
	case errors.Is(err, ledger.ErrRedacted):
		return nil, fmt.Errorf("%w: the payload of entry %d was redacted", server.ErrRedacted, seq)
	case errors.Is(err, ledger.ErrNotFound):
		return nil, fmt.Errorf("%w: the payload of entry %d was not stored (over the payload limit)", server.ErrNotFound, seq)
	case err != nil:
		return nil, readErr(err)
	}
	return data, nil
}

// Entries implements server.Backend. Filters on agent, workflow, handoff
// id, decision and time read the ledger's indexes, filters on reason code,
// format and kind the in-memory filter index (index.go); every candidate
// is confirmed on its entry. Only a query without any filter walks the
// ledger, from the newest entry, where every entry matches.
func (b *Backend) Entries(ctx context.Context, q server.Query) (*server.Page, error) {
	head, err := b.l.TreeSize(ctx)
	if err != nil {
		return nil, readErr(err)
	}
	top := head
	if q.Before != 0 && q.Before-1 < top {
		top = q.Before - 1
	}
	page := &server.Page{Entries: []server.EntryView{}}
	limit := max(q.Limit, 1)
	visit := func(seq uint64) (bool, error) {
		e, v, err := b.view(ctx, seq)
		if err != nil {
			return false, err
		}
		if !matches(e, q) {
			return false, nil
		}
		if len(page.Entries) == limit {
			page.Next = page.Entries[limit-1].Seq
			return true, nil
		}
		page.Entries = append(page.Entries, v)
		return false, nil
	}
	ledgerIndexed := q.Agent != "" || q.Workflow != "" || q.Handoff != "" || q.Decision != "" || !q.Since.IsZero() || !q.Until.IsZero()
	if indexed(q) {
		seqs, err := b.filters.candidates(ctx, b.l, top, q)
		if err != nil {
			return nil, readErr(err)
		}
		// A long list (a common format) with a ledger-indexed filter:
		// the ledger's index is likely the shorter walk.
		if !ledgerIndexed || len(seqs) <= 4096 {
			for i := len(seqs) - 1; i >= 0; i-- {
				if i%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
				}
				if done, err := visit(seqs[i]); err != nil || done {
					return page, err
				}
			}
			return page, nil
		}
	}
	if ledgerIndexed {
		lq := ledger.Query{Agent: q.Agent, WorkflowID: q.Workflow, HandoffID: q.Handoff, Decision: q.Decision, Since: q.Since, Until: q.Until}
		if q.Code == "" && q.Format == "" && q.Kind == "" && q.Before == 0 {
			lq.Limit, lq.Newest = limit+1, true
		}
		seqs, err := b.l.Find(ctx, lq)
		if err != nil {
			return nil, readErr(err)
		}
		for i := len(seqs) - 1; i >= 0; i-- {
			if seqs[i] > top {
				continue
			}
			if done, err := visit(seqs[i]); err != nil || done {
				return page, err
			}
		}
		return page, nil
	}
	for seq := top; seq >= 1; seq-- {
		if seq%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if done, err := visit(seq); err != nil || done {
			return page, err
		}
	}
	return page, nil
}

// matches applies every filter of q to e.
func matches(e *entry.Entry, q server.Query) bool {
	switch {
	case q.Agent != "" && e.Source.S != q.Agent && e.Target.S != q.Agent && e.Agent != q.Agent,
		q.Decision != "" && e.Decision != q.Decision,
		q.Format != "" && e.Format.S != q.Format,
		q.Workflow != "" && e.WorkflowID.S != q.Workflow,
		q.Handoff != "" && e.HandoffID.S != q.Handoff,
		q.Kind != "" && e.Kind != q.Kind,
		!q.Since.IsZero() && e.Time.Before(q.Since),
		!q.Until.IsZero() && !e.Time.Before(q.Until):
		return false
	case q.Code != "":
		return e.Reasons != nil && slices.ContainsFunc(*e.Reasons, func(r reason.Reason) bool { return string(r.Code) == q.Code })
	}
	return true
}

// Workflow implements server.Backend: one page, read through the
// ledger's workflow index.
func (b *Backend) Workflow(ctx context.Context, id string, after uint64, limit int) (*server.Page, error) {
	limit = max(limit, 1)
	seqs, err := b.l.Find(ctx, ledger.Query{WorkflowID: id, After: after, Limit: limit + 1})
	if err != nil {
		return nil, readErr(err)
	}
	if len(seqs) == 0 && after == 0 {
		return nil, fmt.Errorf("%w: no entry of workflow %q", server.ErrNotFound, id)
	}
	p := &server.Page{Entries: make([]server.EntryView, 0, min(len(seqs), limit))}
	for i, seq := range seqs {
		if i == limit {
			p.Next = seqs[i-1]
			break
		}
		_, v, err := b.view(ctx, seq)
		if err != nil {
			return nil, err
		}
		p.Entries = append(p.Entries, v)
	}
	return p, nil
}

// Blocks implements server.Backend.
func (b *Backend) Blocks(ctx context.Context) ([]server.Block, error) {
	bs, err := b.l.Blocks(ctx)
	if err != nil {
		return nil, readErr(err)
	}
	out := make([]server.Block, 0, len(bs))
	for _, x := range bs {
		v := server.Block{Agent: x.Agent, Since: x.Seq, Submitter: x.Entry.Submitter}
		if x.Entry.Reasons != nil {
			for _, r := range *x.Entry.Reasons {
				if r.Code == reason.HashMismatch && r.Severity == reason.Critical {
					v.Code, v.Message = string(r.Code), r.Message
					break
				}
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// Proof implements server.Backend: the inclusion proof only, unsigned
// (the server adds the latest checkpoint, see server.LatestProof).
func (b *Backend) Proof(ctx context.Context, seq, treeSize uint64) (*server.Proof, error) {
	head, err := b.l.TreeSize(ctx)
	if err != nil {
		return nil, readErr(err)
	}
	if treeSize == 0 {
		treeSize = head
	}
	if treeSize > head {
		return nil, fmt.Errorf("%w: tree size %d is beyond the head %d", server.ErrUnprocessable, treeSize, head)
	}
	if seq > treeSize {
		return nil, fmt.Errorf("%w: entry %d is not in the tree of %d entries", server.ErrNotFound, seq, treeSize)
	}
	_, v, err := b.view(ctx, seq)
	if err != nil {
		return nil, err
	}
	rp, err := b.l.ProveInclusion(ctx, seq, treeSize)
	if err != nil {
		return nil, readErr(err)
	}
	root, err := b.l.TreeHash(ctx, treeSize)
	if err != nil {
		return nil, readErr(err)
	}
	return &server.Proof{Seq: seq, TreeSize: treeSize, LeafHash: v.Hash, RootHash: hex.EncodeToString(root[:]), Hashes: hexes(rp)}, nil
}

func hexes[H ~[32]byte](hs []H) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = hex.EncodeToString(h[:])
	}
	return out
}

// Checkpoint implements server.Backend: the checkpoint of the stored
// head, signed once per head size (kept and served again while the head
// does not move).
func (b *Backend) Checkpoint(ctx context.Context) ([]byte, error) {
	if b.o.Signer == nil {
		return nil, fmt.Errorf("%w: the server has no checkpoint signing key (serve --key)", server.ErrUnavailable)
	}
	n, err := b.l.TreeSize(ctx)
	if err != nil {
		return nil, readErr(err)
	}
	b.cpMu.Lock()
	defer b.cpMu.Unlock()
	if b.cpText != nil && b.cpSize == n {
		return b.cpText, nil
	}
	root, err := b.l.TreeHash(ctx, n)
	if err != nil {
		return nil, readErr(err)
	}
	msg, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: b.l.Origin(), Size: n, Hash: root}, b.o.Signer)
	if err != nil {
		return nil, err
	}
	if n >= b.cpSize { // a racing reader may have signed a newer head meanwhile
		b.cpText, b.cpSize = msg, n
	}
	return msg, nil
}

// Tile implements server.TileBackend: a tlog-tiles hash tile or entry
// bundle of the stored tree. An entry bundle holding an entry over the
// 65,535 bytes a bundle can carry answers 422, naming the entry (read it
// from /v1/entries/SEQ).
func (b *Backend) Tile(ctx context.Context, t tiles.Tile) ([]byte, error) {
	data, err := b.l.Tile(ctx, t)
	if errors.Is(err, tiles.ErrEntryTooLarge) {
		return nil, fmt.Errorf("%w: %s: %v (read the entry from /v1/entries)", server.ErrUnprocessable, t.Path(), err)
	}
	if err != nil {
		return nil, readErr(err)
	}
	return data, nil
}

// Consistency implements server.Backend.
func (b *Backend) Consistency(ctx context.Context, from, to uint64) ([]string, error) {
	head, err := b.l.TreeSize(ctx)
	if err != nil {
		return nil, readErr(err)
	}
	if to > head {
		return nil, fmt.Errorf("%w: tree size %d is beyond the head %d", server.ErrUnprocessable, to, head)
	}
	p, err := b.l.ProveConsistency(ctx, from, to)
	if err != nil {
		return nil, readErr(err)
	}
	return hexes(p), nil
}

// Unblock implements server.Backend.
func (b *Backend) Unblock(ctx context.Context, agent, why, operator string) (*server.EntryView, error) {
	if err := b.writable(); err != nil {
		return nil, err
	}
	start := time.Now()
	u, err := govern.Unblock(ctx, b.l, agent, why, operator)
	switch {
	case errors.Is(err, govern.ErrNotBlocked):
		return nil, fmt.Errorf("%w: agent %q is not blocked", server.ErrNotFound, agent)
	case errors.Is(err, govern.ErrNoReason):
		return nil, fmt.Errorf("%w: %v", server.ErrBadInput, err)
	case err != nil:
		return nil, b.writeErr(err)
	}
	b.appended(time.Since(start))
	v := viewOf(u.Appended)
	return &v, nil
}

// Redact implements server.Backend. The redaction entry records why and,
// as its submitter, the operator.
func (b *Backend) Redact(ctx context.Context, seq uint64, why, operator string) (*server.EntryView, error) {
	if err := b.writable(); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := b.l.RedactAs(ctx, seq, why, operator)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil, fmt.Errorf("%w: no entry %d", server.ErrNotFound, seq)
	case errors.Is(err, ledger.ErrNotRedactable):
		return nil, fmt.Errorf("%w: entry %d has no stored payload to redact", server.ErrNotFound, seq)
	case errors.Is(err, ledger.ErrRedacted):
		return nil, fmt.Errorf("%w: the payload of entry %d was already redacted", server.ErrRedacted, seq)
	case err != nil:
		return nil, b.writeErr(err)
	}
	b.appended(time.Since(start))
	v := viewOf(*res.Last())
	return &v, nil
}

// Reload implements server.Backend: it re-reads the registry and lock
// and brings whichever changed into force as snapshot entries (a new
// lock lifts the blocks of the agents whose hash it changed). On a load
// error nothing changes and the previous policy stays in force.
func (b *Backend) Reload(ctx context.Context, operator string) ([]server.EntryView, error) {
	if err := b.writable(); err != nil {
		return nil, err
	}
	b.reload.Lock()
	defer b.reload.Unlock()
	p, err := b.o.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: the previous manifest and lock stay in force: %v", server.ErrUnprocessable, err)
	}
	start := time.Now()
	res, err := b.l.Append(ctx, &ledger.Request{
		Snapshots:   snapshotsOf(p),
		Submitter:   operator,
		LockChanges: lockfile.ChangedBytes,
	})
	if err != nil {
		return nil, b.writeErr(err)
	}
	b.pol.Store(p)
	out := []server.EntryView{}
	for _, a := range res.Entries {
		out = append(out, viewOf(a))
	}
	if len(out) > 0 {
		b.appended(time.Since(start))
	}
	return out, nil
}

// Ready implements server.Backend.
func (b *Backend) Ready(ctx context.Context) error {
	if err := b.writable(); err != nil {
		return err
	}
	_, _, err := b.l.Head(ctx)
	return readErr(err)
}
