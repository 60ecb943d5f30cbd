// Package forward lets the replicas of one ledger on PostgreSQL share the
// work of committing instead of fighting over the head: the replica
// holding the writer role (postgres.Role) decides and commits, and the
// others forward it the submissions they receive, so that every
// submission of every replica joins one group commit.
//
// Types:
//
//   - Backend (New): a server.Backend over a replica's own backend whose
//     Submit and SubmitBatch forward each document to the writer while
//     another replica holds the role, and decide and commit locally when
//     this replica holds it, when none does, or when the writer cannot be
//     reached. Every other method is the local backend's.
//   - Handler (NewHandler): the writer's end of the channel, an
//     http.Handler serving POST /forward/v1/submit, which decides the
//     forwarded document with the writer's own backend.
//   - Role: what the role tells a replica (postgres.Role implements it).
//
// Guarantees:
//
//   - Only the record decides the policy in force: the writer decides a
//     forwarded document as it decides its own (the manifest and lock it
//     loaded must be the ones in force, else it adopts them), with the
//     forwarding replica's principal: its name (the submitter), the
//     sources it may submit for, its idempotency key, traceparent and
//     workflow.
//   - Nothing acknowledged is lost and nothing is appended twice: the
//     forwarding replica answers 201 only with the writer's answer, which
//     the writer gives after the commit is durable. A forward that never
//     reached the writer (no connection, or an answer that the writer
//     no longer holds the role) is decided locally; one whose answer was
//     lost is decided locally when it carries an idempotency key (the
//     local commit then finds the writer's entry, if it landed, and
//     replays its answer) and otherwise fails with
//     server.ErrOutcomeUnknown (503: the client retries).
//   - The role only routes: every commit, the writer's or a local one,
//     goes through the head row's compare-and-append, so a replica that
//     commits while another holds the role costs a conflict, never a fork.
//   - The channel is authenticated by the writer's secret (random per
//     tenure, read by the replicas from the database). It is plain HTTP:
//     run it on a private network (see docs/guides/replicas.md).
//
// The package never prints, exits or reads flags or the environment.
package forward

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/tiles"
)

// Path is the route of the writer's channel.
const Path = "/forward/v1/submit"

// Role is what a replica knows of the writer role (postgres.Role).
type Role interface {
	// Writer returns the writer's address and secret, whether it is this
	// replica (self), and whether any replica is known to hold the role.
	Writer() (addr string, secret []byte, self, ok bool)
}

// RoleFunc adapts a function to Role.
type RoleFunc func() (addr string, secret []byte, self, ok bool)

// Writer implements Role.
func (f RoleFunc) Writer() (addr string, secret []byte, self, ok bool) { return f() }

// Options configure New.
type Options struct {
	// Client sends the forwards (default: a client whose transport keeps
	// up to 64 idle connections to the writer, with a 1 minute timeout).
	Client *http.Client
	// Workers bounds how many documents of one SubmitBatch are forwarded
	// at once (default 16).
	Workers int
}

// Backend forwards submissions to the writer (see the package
// documentation); it embeds the replica's own backend.
type Backend struct {
	server.Backend
	role Role
	hc   *http.Client
	opts Options

	mu    sync.Mutex
	stats Stats
}

// Stats count what a Backend did with the submissions it received.
type Stats struct {
	Forwarded uint64 // answered by the writer
	Local     uint64 // decided here: this replica holds the role, or none does
	Fallback  uint64 // forwarded, but decided here: the writer was not reached or its answer was lost
	Lost      uint64 // forwarded, the answer lost, no idempotency key: answered outcome unknown
}

// New returns local with Submit and SubmitBatch forwarded to the writer
// role names.
func New(local server.Backend, role Role, o *Options) *Backend {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: time.Minute,
			Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}
	}
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	return &Backend{Backend: local, role: role, hc: opts.Client, opts: opts}
}

// Stats returns the Backend's counters.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

func (b *Backend) count(f func(*Stats)) {
	b.mu.Lock()
	f(&b.stats)
	b.mu.Unlock()
}

// Submit forwards r to the writer, or decides it locally (see the
// package documentation). Each submission is its own request to the
// writer, sent at once, so that it reaches the writer's commit queue as a
// local one would: the writer's committer forms the group. (Sending a
// replica's queued submissions as one request per group was measured:
// the writer then took them in smaller commit groups, 24 entries per
// commit against 29-30, and the rate was no better; see
// docs/guides/replicas.md.)
func (b *Backend) Submit(ctx context.Context, r server.SubmitRequest) (*server.SubmitResult, error) {
	addr, secret, self, ok := b.role.Writer()
	if !ok || self {
		b.count(func(s *Stats) { s.Local++ })
		return b.Backend.Submit(ctx, r)
	}
	res, err := b.forward(ctx, addr, secret, r)
	var lost *lostError
	switch {
	case err == nil, !errors.As(err, &lost):
		b.count(func(s *Stats) { s.Forwarded++ })
		return res, err
	case !lost.sent, r.IdempotencyKey != "" && ctx.Err() == nil:
		b.count(func(s *Stats) { s.Fallback++ })
		return b.Backend.Submit(ctx, r)
	}
	b.count(func(s *Stats) { s.Lost++ })
	return nil, fmt.Errorf("%w: forwarded to the writer at %s, whose answer was lost (%v): retry with an Idempotency-Key", server.ErrOutcomeUnknown, addr, lost.err)
}

// Tile implements server.TileBackend with the local backend's (tiles are
// read, never forwarded): ErrNotFound when it reads none.
func (b *Backend) Tile(ctx context.Context, t tiles.Tile) ([]byte, error) {
	tb, ok := b.Backend.(server.TileBackend)
	if !ok {
		return nil, fmt.Errorf("%w: this backend serves no tiles", server.ErrNotFound)
	}
	return tb.Tile(ctx, t)
}

// SubmitBatch submits each request of rs as Submit does, up to
// Options.Workers at once: forwarded ones share the writer's commits.
func (b *Backend) SubmitBatch(ctx context.Context, rs []server.SubmitRequest) ([]server.BatchItem, error) {
	if _, _, self, ok := b.role.Writer(); !ok || self {
		return b.Backend.SubmitBatch(ctx, rs)
	}
	items := make([]server.BatchItem, len(rs))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(b.opts.Workers, len(rs)) {
		wg.Go(func() {
			for i := range work {
				items[i].Result, items[i].Err = b.Submit(ctx, rs[i])
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

// lostError is a forward that did not bring the writer's answer: sent
// false when the writer certainly did not decide it.
type lostError struct {
	sent bool
	err  error
}

func (e *lostError) Error() string { return e.err.Error() }

// request is a forwarded submission on the wire.
type request struct {
	Body           []byte   `json:"body"`
	Format         string   `json:"format,omitzero"`
	From           string   `json:"from,omitzero"`
	To             string   `json:"to,omitzero"`
	Submitter      string   `json:"submitter"`
	Sources        []string `json:"sources"` // null: any source
	IdempotencyKey string   `json:"idempotency_key,omitzero"`
	TraceParent    string   `json:"traceparent,omitzero"`
	WorkflowID     string   `json:"workflow_id,omitzero"`
}

// answer is the writer's answer on the wire: a result, or an error with
// the code of the server sentinel it wraps.
type answer struct {
	Result *server.SubmitResult `json:"result,omitzero"`
	Code   string               `json:"code,omitzero"`
	Error  string               `json:"error,omitzero"`
}

// codes name the server sentinels an error crosses the channel with, the
// more specific first (ErrUnprocessable wraps ErrBadInput).
var codes = []struct {
	code string
	err  error
}{
	{"outcome_unknown", server.ErrOutcomeUnknown},
	{"overloaded", server.ErrOverloaded},
	{"unavailable", server.ErrUnavailable},
	{"forbidden_source", server.ErrForbiddenSource},
	{"idempotency_conflict", server.ErrIdempotencyConflict},
	{"redacted", server.ErrRedacted},
	{"not_found", server.ErrNotFound},
	{"too_large", server.ErrTooLarge},
	{"unprocessable", server.ErrUnprocessable},
	{"bad_input", server.ErrBadInput},
}

// codeNotWriter answers a forward to a replica that does not hold the
// role (any more): nothing was decided.
const codeNotWriter = "not_writer"

// errRemote is an error the writer answered that wraps no sentinel.
var errRemote = errors.New("the writer failed")

func (b *Backend) forward(ctx context.Context, addr string, secret []byte, r server.SubmitRequest) (*server.SubmitResult, error) {
	body, err := json.Marshal(request{Body: r.Body, Format: r.Format, From: r.From, To: r.To, Submitter: r.Submitter,
		Sources: r.Sources, IdempotencyKey: r.IdempotencyKey, TraceParent: r.TraceParent, WorkflowID: r.WorkflowID})
	if err != nil {
		return nil, &lostError{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+Path, bytes.NewReader(body))
	if err != nil {
		return nil, &lostError{err: err}
	}
	req.Header.Set("Authorization", "Govledger-Forward "+hex.EncodeToString(secret))
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		var op *net.OpError
		return nil, &lostError{sent: !(errors.As(err, &op) && op.Op == "dial"), err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, &lostError{sent: true, err: err}
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, &lostError{sent: resp.StatusCode != http.StatusUnauthorized, err: fmt.Errorf("forward: %s: %v", resp.Status, err)}
	}
	switch {
	case a.Code == codeNotWriter || resp.StatusCode == http.StatusUnauthorized:
		// The writer's tenure ended (or the secret read was of an older
		// tenure): it decided nothing.
		return nil, &lostError{err: fmt.Errorf("forward: %s: %s", resp.Status, a.Error)}
	case a.Result != nil && resp.StatusCode == http.StatusOK:
		return a.Result, nil
	case a.Code == "" && resp.StatusCode == http.StatusOK:
		return nil, fmt.Errorf("%w: %s", errRemote, a.Error)
	}
	for _, c := range codes {
		if c.code == a.Code {
			return nil, fmt.Errorf("%w: the writer answered: %s", c.err, a.Error)
		}
	}
	return nil, &lostError{sent: true, err: fmt.Errorf("forward: %s: code %q: %s", resp.Status, a.Code, a.Error)}
}

// Handler is the writer's end of the channel.
type Handler struct {
	local server.Backend
	role  Role
}

// NewHandler returns the handler deciding forwarded submissions with
// local while role names this replica the writer.
func NewHandler(local server.Backend, role Role) *Handler {
	return &Handler{local: local, role: role}
}

// MaxForward bounds a forwarded request's bytes.
const MaxForward = 64 << 20

// ServeHTTP implements http.Handler: POST Path with the writer's secret.
// It answers 200 with the result or the error's code, 401 for a wrong
// secret, 503 with code not_writer when this replica does not hold the
// role.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, a answer) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(a)
	}
	if r.URL.Path != Path || r.Method != http.MethodPost {
		reply(http.StatusNotFound, answer{Code: "not_found", Error: "not found: POST " + Path})
		return
	}
	_, secret, self, ok := h.role.Writer()
	if !ok || !self {
		reply(http.StatusServiceUnavailable, answer{Code: codeNotWriter, Error: "this replica does not hold the writer role"})
		return
	}
	got, err := hex.DecodeString(trimPrefix(r.Header.Get("Authorization"), "Govledger-Forward "))
	if err != nil || subtle.ConstantTimeCompare(got, secret) != 1 {
		reply(http.StatusUnauthorized, answer{Code: "unauthenticated", Error: "not this tenure's forwarding secret"})
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxForward))
	var q request
	if err == nil {
		err = json.Unmarshal(data, &q)
	}
	if err != nil {
		reply(http.StatusBadRequest, answer{Code: "bad_input", Error: err.Error()})
		return
	}
	res, err := h.local.Submit(r.Context(), server.SubmitRequest{Body: q.Body, Format: q.Format, From: q.From, To: q.To,
		Submitter: q.Submitter, Sources: q.Sources, IdempotencyKey: q.IdempotencyKey, TraceParent: q.TraceParent, WorkflowID: q.WorkflowID})
	if err != nil {
		a := answer{Error: err.Error()}
		for _, c := range codes {
			if errors.Is(err, c.err) {
				a.Code = c.code
				break
			}
		}
		reply(http.StatusOK, a)
		return
	}
	reply(http.StatusOK, answer{Result: res})
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return "\x00" // not hex: refused
}
