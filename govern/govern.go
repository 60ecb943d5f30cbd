// Package govern joins the pieces of a governed handoff: it reads a
// submitted document, gathers the file-system facts its format rules need,
// asks policy for a decision and appends that decision to the ledger.
//
// The decision is taken inside the ledger's write transaction from exactly
// the inputs that are recorded in the entry (payload, snapshots, entry time,
// parameters, observations), so verify can re-run it later and must get the
// same answer. File-system facts are gathered before the transaction, once,
// and replayed into the decision.
package govern

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
)

// Defaults for Params.
const (
	DefaultMaxPayload = 1 << 20
	DefaultMaxAge     = 24 * time.Hour
)

// Config is what every decision needs besides the document.
type Config struct {
	Registry  *manifest.Registry
	Lock      *lockfile.Lock
	LockBytes []byte // the lockfile as read, recorded as the lock snapshot
	Params    policy.Params
	// Root is the folder relative paths in documents resolve against; ""
	// means paths are not checked (validate without a root).
	Root string
	// Now is the clock for Validate (Record uses the ledger's clock).
	Now func() time.Time
	// Submitter is recorded as the submitter of every entry Record writes:
	// the CLI's --as (default the OS user), the server's principal.
	Submitter string
	// IdempotencyKey, when set, is recorded in the handoff entry Record
	// writes. If an earlier entry used the same key, Record writes nothing
	// and returns a *KeyUsedError naming that entry; the check runs inside
	// the write transaction, so two concurrent uses of one key append once.
	IdempotencyKey string
	// TraceParent, when set, is a W3C traceparent recorded in the handoff
	// entry Record writes.
	TraceParent string
	// WorkflowID, when set, is the workflow the submission names outside
	// the document (the CLI's --workflow, the server's Govledger-Workflow
	// header or traceparent trace-id). The entry's workflow_id is the
	// document's own when it has one, else this. A document whose own
	// workflow id differs makes Record fail with a *WorkflowMismatchError,
	// nothing written; the document is never changed.
	WorkflowID string
	// InForceOnly makes Record refuse (ledger.ErrPolicyChanged, nothing
	// written) when Registry and LockBytes are not the snapshots in force,
	// instead of bringing them into force: set it for a submitter who is
	// not an operator (the server's writers).
	InForceOnly bool
	// Detection, when set, is handoff.NewDetection of the document under
	// policy.CurrentRules, made by a caller that read it already (a
	// server's source check): every later step reuses it.
	Detection *handoff.Detection
}

// KeyUsedError is returned by Record when Config.IdempotencyKey was used
// by an earlier entry: nothing was written. The caller compares Payload
// (and whatever else it scopes the key by) with its request to tell a
// retry from a conflict.
type KeyUsedError struct {
	Key     string
	Seq     uint64     // the entry that first used the key
	Payload entry.Hash // that entry's payload_sha256
}

func (e *KeyUsedError) Error() string {
	return fmt.Sprintf("idempotency key %q was used by entry %d", e.Key, e.Seq)
}

// ErrWorkflowMismatch is wrapped by a *WorkflowMismatchError.
var ErrWorkflowMismatch = errors.New("the request's workflow id contradicts the document's")

// WorkflowMismatchError is returned by Record when Config.WorkflowID is
// not the workflow id the document itself carries: nothing was written.
type WorkflowMismatchError struct {
	Document, Request string
}

func (e *WorkflowMismatchError) Error() string {
	return fmt.Sprintf("%v: the document says %q, the request %q", ErrWorkflowMismatch, e.Document, e.Request)
}

// Unwrap returns ErrWorkflowMismatch.
func (e *WorkflowMismatchError) Unwrap() error { return ErrWorkflowMismatch }

// CheckWorkflowID reports whether id may be a workflow id given outside a
// document: 1 to 256 bytes of UTF-8 without control characters.
func CheckWorkflowID(id string) error {
	if id == "" || len(id) > 256 {
		return fmt.Errorf("workflow id of %d bytes: want 1 to 256", len(id))
	}
	if !utf8.ValidString(id) {
		return errors.New("workflow id is not valid UTF-8")
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return errors.New("workflow id contains a control character")
		}
	}
	return nil
}

// workflow sets e's workflow_id from c.WorkflowID when the document gave
// none (Fill left it null), and refuses one that contradicts the
// document's.
func (c *Config) workflow(e *entry.Entry) error {
	switch {
	case c.WorkflowID == "":
	case !e.WorkflowID.Valid:
		e.WorkflowID = entry.Str(c.WorkflowID)
	case e.WorkflowID.S != c.WorkflowID:
		return &WorkflowMismatchError{Document: e.WorkflowID.S, Request: c.WorkflowID}
	}
	return nil
}

// Outcome is the result for one document.
type Outcome struct {
	Name     string // the document's name as given (file path or "-")
	Size     int64
	SHA256   entry.Hash
	Decision *policy.Decision
	// Appended holds the entries written by Record (snapshots first, the
	// handoff entry last); nil for Validate. For a replay it holds only the
	// first entry of the idempotency key.
	Appended []ledger.Appended
	// Replayed is set by Replay: Config.IdempotencyKey was used before for
	// the same request, nothing was appended now, and Decision and
	// Appended are those of the first entry.
	Replayed bool
}

// Entry returns the handoff entry Record appended, or nil.
func (o *Outcome) Entry() *ledger.Appended {
	if len(o.Appended) == 0 {
		return nil
	}
	return &o.Appended[len(o.Appended)-1]
}

// ErrRead is returned when a document cannot be read at all.
var ErrRead = errors.New("cannot read document")

// ErrIdempotencyConflict is returned (wrapped) by Replay when the
// idempotency key was used before for a different request. Nothing was
// appended.
var ErrIdempotencyConflict = errors.New("idempotency key already used for a different request")

// Payload is a submitted document: at most max bytes are kept, but the hash
// and size always cover every byte read.
type Payload struct {
	Data   []byte // nil when Size > max
	Size   int64
	SHA256 entry.Hash
}

// ReadPayload reads r to its end, keeping at most max bytes in memory.
func ReadPayload(r io.Reader, max int64) (*Payload, error) {
	h := sha256.New()
	var buf []byte
	lw := &limitedBuffer{max: max}
	n, err := io.Copy(io.MultiWriter(h, lw), r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRead, err)
	}
	p := &Payload{Size: n}
	h.Sum(p.SHA256[:0])
	if !lw.over {
		buf = lw.buf
		if buf == nil {
			buf = []byte{}
		}
		p.Data = buf
	}
	return p, nil
}

type limitedBuffer struct {
	max  int64
	buf  []byte
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if !b.over {
		if int64(len(b.buf))+int64(len(p)) > b.max {
			b.over, b.buf = true, nil
		} else {
			b.buf = append(b.buf, p...)
		}
	}
	return len(p), nil
}

// observation is what govern learns about a document before deciding:
// the recorded inputs and its format detection, reused by every decision
// on it.
type observation struct {
	in  policy.Inputs
	det *handoff.Detection
}

// observe detects the document's format once and runs the format rules
// once against the live file system to learn which facts they need, and
// returns the recorded inputs.
func (c *Config) observe(p *Payload) (observation, error) {
	o := observation{in: policy.Inputs{Params: c.Params, Rules: policy.CurrentRules}}
	if p.Data == nil {
		return o, nil
	}
	f := c.Params.Format
	if f == "" {
		o.det = c.Detection
		if o.det == nil {
			o.det = handoff.NewDetection(p.Data, o.in.Rules)
		}
		f = o.det.Format
	}
	// Only these formats have file-system rules (swarm/2 session_path,
	// skill/1 deliverable, task/1 paths); governed/1, vbw/1 and
	// undetectable bytes ask nothing of the file system.
	switch {
	case c.Root == "":
		return o, nil
	case f != handoff.Swarm && f != handoff.Skill && f != handoff.Task:
		return o, nil
	}
	env, err := handoff.NewRootEnv(c.Root)
	if err != nil {
		return o, fmt.Errorf("root %s: %w", c.Root, err)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	handoff.Parse(p.Data, handoff.Options{
		Format: c.Params.Format, From: c.Params.From, To: c.Params.To,
		Strict: c.Params.Strict, Now: now(), Env: env, Detection: o.det, Rules: o.in.Rules,
	})
	o.in.Observations = env.Observations()
	return o, nil
}

func (c *Config) input(p *Payload, o observation, now time.Time, st policy.State) policy.Input {
	return policy.Input{
		Payload: p.Data, PayloadSize: p.Size, PayloadSHA256: p.SHA256,
		Registry: c.Registry, Lock: c.Lock, Now: now, State: st, Inputs: o.in, Detection: o.det,
	}
}

// Validate decides on p without recording it. st may be nil (no ledger).
func Validate(c *Config, name string, p *Payload, st policy.State) (*Outcome, error) {
	in, err := c.observe(p)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	d, _ := decide(c.input(p, in, now().UTC(), st))
	return &Outcome{Name: name, Size: p.Size, SHA256: p.SHA256, Decision: d}, nil
}

// Record decides on p and appends the decision, bringing the registry and
// lock snapshots into force first when they changed. An error means nothing
// was acknowledged: the outcome of a storage error is unknown until the
// ledger is reopened and verified.
//
// The decision is computed before the commit, in the caller's goroutine,
// with the proposed entry time and a recording view of ledger state; inside
// the write transaction it is reused only if the entry got exactly that
// time and every state question it asked has the same answer there.
// Otherwise it is recomputed in the transaction. Decide is pure, so either
// way the entry holds exactly what policy.Decide gives for the recorded
// inputs, which is what verify re-runs.
func Record(ctx context.Context, l *ledger.Ledger, c *Config, name string, p *Payload) (*Outcome, error) {
	in, err := c.observe(p)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	t0 := now().UTC().Round(0)
	guess := &recordingState{manifest: entry.Sum256(c.Registry.Snapshot), lock: entry.Sum256(c.LockBytes)}
	pre, pin := decide(c.input(p, in, t0, guess))
	// Fill the entry too, outside the commit: Build copies it when the
	// entry time and every answer of the ledger state are the guessed ones.
	filled := &entry.Entry{}
	fillErr := pre.Fill(filled, pin)
	filled.Submitter, filled.IdempotencyKey, filled.TraceParent = c.Submitter, c.IdempotencyKey, c.TraceParent
	if fillErr == nil {
		// Refused before the commit: the document's workflow id does not
		// depend on the ledger state.
		if err := c.workflow(filled); err != nil {
			return nil, err
		}
	}

	out := &Outcome{Name: name, Size: p.Size, SHA256: p.SHA256}
	req := &ledger.Request{
		Snapshots: []ledger.Snapshot{
			{What: entry.SnapshotManifest, Bytes: c.Registry.Snapshot},
			{What: entry.SnapshotLock, Bytes: c.LockBytes},
		},
		Payload:     p.Data,
		Time:        t0,
		Submitter:   c.Submitter,
		InForceOnly: c.InForceOnly,
		LockChanges: lockfile.ChangedBytes,
		Build: func(st ledger.State, e *entry.Entry) error {
			if c.IdempotencyKey != "" {
				if a, ok := st.Idempotent(c.IdempotencyKey); ok {
					return &KeyUsedError{Key: c.IdempotencyKey, Seq: a.Seq, Payload: a.Payload}
				}
			}
			if fillErr == nil && e.Time.Time.Equal(t0) && guess.sameAnswers(st) {
				v, seq, prev, t := e.V, e.Seq, e.Prev, e.Time
				*e = *filled
				e.V, e.Seq, e.Prev, e.Time = v, seq, prev, t
				out.Decision = pre
				return nil
			}
			d, pin := decide(c.input(p, in, e.Time.Time, st))
			if err := d.Fill(e, pin); err != nil {
				return err
			}
			e.Submitter, e.IdempotencyKey, e.TraceParent = c.Submitter, c.IdempotencyKey, c.TraceParent
			if err := c.workflow(e); err != nil {
				return err
			}
			out.Decision = d
			return nil
		},
	}
	res, err := l.Append(ctx, req)
	if err != nil {
		return nil, err
	}
	out.Appended = res.Entries
	return out, nil
}

// decide takes the decision on pin, and again with
// Params.MaxReasonsBytes set when its reasons exceed
// policy.DefaultMaxReasonsBytes: that decision is recorded compact
// (ENTRY_TOO_LARGE), so its entry fits a tlog-tiles entry bundle. Only such
// entries record the bound in their inputs; verify re-decides each entry
// with the params it records, so every entry replays as it was taken.
func decide(pin policy.Input) (*policy.Decision, policy.Input) {
	d := policy.Decide(pin)
	if pin.Inputs.Params.MaxReasonsBytes == 0 && policy.ReasonsSize(d.Reasons) > policy.DefaultMaxReasonsBytes {
		pin.Inputs.Params.MaxReasonsBytes = policy.DefaultMaxReasonsBytes
		d = policy.Decide(pin)
	}
	return d, pin
}

// recordingState answers as a ledger in which nothing was accepted or
// blocked and the caller's snapshots are in force, and remembers every
// question, so the answers can be compared with the real state later.
type recordingState struct {
	manifest, lock entry.Hash
	accepted       []string
	blocked        []string
	inForce        bool
}

func (s *recordingState) Accepted(id string) (uint64, entry.Hash, bool) {
	s.accepted = append(s.accepted, id)
	return 0, entry.Hash{}, false
}

func (s *recordingState) Blocked(agent string) (uint64, bool) {
	s.blocked = append(s.blocked, agent)
	return 0, false
}

func (s *recordingState) InForce() (entry.Hash, entry.Hash, bool) {
	s.inForce = true
	return s.manifest, s.lock, true
}

// sameAnswers reports whether st answers every recorded question as s did.
func (s *recordingState) sameAnswers(st policy.State) bool {
	for _, id := range s.accepted {
		if _, _, ok := st.Accepted(id); ok {
			return false
		}
	}
	for _, a := range s.blocked {
		if _, ok := st.Blocked(a); ok {
			return false
		}
	}
	if s.inForce {
		m, l, ok := st.InForce()
		if !ok || m != s.manifest || l != s.lock {
			return false
		}
	}
	return true
}

// Replay answers a Record that failed with used (its idempotency key was
// used by an earlier entry; nothing was appended) as the command line
// scopes keys: when that entry records the same request — the same
// payload bytes, submitter, format, from and to — the outcome is that
// entry's (Replayed set); otherwise an error wrapping
// ErrIdempotencyConflict. Entries never change, so reading the first entry
// after the commit that found it is safe.
func (c *Config) Replay(ctx context.Context, l *ledger.Ledger, name string, p *Payload, used *KeyUsedError) (*Outcome, error) {
	conflict := func(what string) error {
		return fmt.Errorf("%w: key %q was used by seq %d for %s", ErrIdempotencyConflict, used.Key, used.Seq, what)
	}
	if used.Payload != p.SHA256 {
		return nil, conflict("other bytes (payload_sha256 " + used.Payload.String() + ")")
	}
	e, raw, err := l.Get(ctx, used.Seq)
	if err != nil {
		return nil, err
	}
	if e.Kind != entry.KindHandoff || e.IdempotencyKey != used.Key || e.PayloadSHA256 == nil || *e.PayloadSHA256 != p.SHA256 {
		return nil, &ledger.RecordError{Seq: used.Seq, Op: "replay", Err: fmt.Errorf("%w: does not carry idempotency key %q", ledger.ErrCorrupt, used.Key)}
	}
	if e.Submitter != c.Submitter {
		return nil, conflict(fmt.Sprintf("submitter %q", e.Submitter))
	}
	var params policy.Params
	if e.Inputs != nil {
		in, err := policy.ParseInputs(e.Inputs)
		if err != nil {
			return nil, &ledger.RecordError{Seq: used.Seq, Op: "decode inputs", Err: fmt.Errorf("%w: %w", ledger.ErrCorrupt, err)}
		}
		params = in.Params
	}
	if params.Format != c.Params.Format || params.From != c.Params.From || params.To != c.Params.To {
		return nil, conflict(fmt.Sprintf("format %q, from %q, to %q", params.Format, params.From, params.To))
	}
	d := &policy.Decision{Decision: e.Decision, Reasons: []reason.Reason{}, Blocks: e.Blocks,
		Record: &handoff.Record{Format: handoff.Format(e.Format.S), HandoffID: e.HandoffID.S,
			Source: handoff.AgentRef{ID: e.Source.S}, Target: handoff.AgentRef{ID: e.Target.S}, WorkflowID: e.WorkflowID.S}}
	if e.Reasons != nil {
		d.Reasons = *e.Reasons
	}
	return &Outcome{Name: name, Size: p.Size, SHA256: p.SHA256, Decision: d, Replayed: true,
		Appended: []ledger.Appended{{Entry: e, Raw: raw, Hash: entry.LeafHash(raw)}}}, nil
}
