// Package client is a typed Go client of the govledger HTTP API (/v1),
// the one "govledger serve" answers. It never prints: every failure is an
// error, and an answer the server gave as an RFC 9457 problem is a
// *ProblemError carrying its status and code.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/govledger/govledger/server"
)

// Limits on what the client reads from a server.
const (
	// MaxAnswer is the longest JSON answer (or payload) read whole.
	MaxAnswer = 64 << 20
	// maxProblem is the longest error body read.
	maxProblem = 64 << 10
)

// ErrTransport is wrapped by every error that got no HTTP answer at all
// (connection refused, reset, timeout, TLS failure).
var ErrTransport = errors.New("no answer from the server")

// ErrAnswer is wrapped by errors about a 2xx answer the client cannot use
// (not JSON, too long, missing fields).
var ErrAnswer = errors.New("malformed answer from the server")

// ProblemError is an error answer of the server: its status and the
// problem+json body (Code empty when the body was not a problem, e.g. from
// a proxy in between).
type ProblemError struct {
	Method, Path string
	Problem      server.Problem
}

func (e *ProblemError) Error() string {
	p := e.Problem
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.Path, p.Status)
	if p.Code != "" {
		b.WriteString(" " + p.Code)
	}
	switch {
	case p.Detail != "":
		b.WriteString(": " + p.Detail)
	case p.Title != "":
		b.WriteString(": " + p.Title)
	}
	if p.Written == "unknown" {
		b.WriteString(" (outcome unknown)")
	}
	if p.RequestID != "" {
		b.WriteString(" (request id " + p.RequestID + ")")
	}
	return b.String()
}

// Status returns the HTTP status of the answer.
func (e *ProblemError) Status() int { return e.Problem.Status }

// Client calls one govledger server. Its zero value is not usable: create
// it with New. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
}

// New returns a client of the server at baseURL (http or https, no query)
// authenticating with the bearer token ("" for none). Whole answers are
// bounded by a 60-second timeout, streams (Export) by their context. hc
// nil uses a client under the default Limits (an answer is cut after 60
// seconds without a byte, or beyond 8 GiB); give an hc whose Transport is
// Limits.Transport to choose them.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %v", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT (no query, fragment or user)", baseURL)
	}
	if strings.ContainsAny(token, "\r\n ") {
		return nil, errors.New("token: contains whitespace")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if hc == nil {
		hc = &http.Client{Transport: Limits{}.Transport(nil)}
	}
	return &Client{base: u, token: token, hc: hc}, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// answerTimeout bounds requests whose answer is read whole.
const answerTimeout = 60 * time.Second

// do sends a request and returns the answer when its status is 2xx; any
// other answer becomes a *ProblemError. The caller closes the body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, hdr http.Header) (*http.Response, error) {
	// path is escaped already (segments through url.PathEscape).
	target := c.base.String() + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrTransport, method, c.base.Redacted(), err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblem))
	return nil, &ProblemError{Method: method, Path: path, Problem: ParseProblem(resp.StatusCode, resp.Header.Get("Content-Type"), b)}
}

// ParseProblem reads an error answer: a problem+json body as sent, or, for
// any other body, a problem with only the status and a detail quoting the
// start of the body. It never fails: a malformed problem keeps the status.
func ParseProblem(status int, contentType string, body []byte) server.Problem {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/problem+json" {
		var p server.Problem
		if err := json.Unmarshal(body, &p); err == nil && p.Status == status {
			return p
		}
	}
	p := server.Problem{Status: status, Title: http.StatusText(status)}
	if d := strings.TrimSpace(strings.ToValidUTF8(string(body), "?")); d != "" {
		if len(d) > 200 {
			d = d[:200] + "..."
		}
		p.Detail = d
	}
	return p
}

// getJSON GETs path and decodes the JSON answer into v.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	resp, err := c.do(ctx, "GET", path, q, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decode(resp, "GET "+path, v)
}

func decode(resp *http.Response, what string, v any) error {
	b, err := readAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrTransport, what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrAnswer, what, err)
	}
	return nil
}

func readAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxAnswer+1))
	if err == nil && len(b) > MaxAnswer {
		return nil, fmt.Errorf("answer longer than %d bytes", MaxAnswer)
	}
	return b, err
}

// SubmitOptions are the parameters of a submission.
type SubmitOptions struct {
	Format, From, To string // query parameters ("" for none)
	IdempotencyKey   string // the Idempotency-Key header ("" for none)
	TraceParent      string // a W3C traceparent header ("" for none)
	// Workflow is the Govledger-Workflow header ("" for none): the workflow
	// the document is recorded under when it carries none of its own.
	Workflow string
}

// Submit POSTs one document to /v1/handoffs and returns the decision the
// server recorded (a rejected handoff is a result too, not an error).
func (c *Client) Submit(ctx context.Context, doc []byte, o SubmitOptions) (*server.SubmitResult, error) {
	q := url.Values{}
	for k, v := range map[string]string{"format": o.Format, "from": o.From, "to": o.To} {
		if v != "" {
			q.Set(k, v)
		}
	}
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	if o.IdempotencyKey != "" {
		h.Set("Idempotency-Key", o.IdempotencyKey)
	}
	if o.TraceParent != "" {
		h.Set("Traceparent", o.TraceParent)
	}
	if o.Workflow != "" {
		h.Set("Govledger-Workflow", o.Workflow)
	}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	resp, err := c.do(ctx, "POST", "/v1/handoffs", q, doc, h)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res server.SubmitResult
	if err := decode(resp, "POST /v1/handoffs", &res); err != nil {
		return nil, err
	}
	if res.Seq == 0 || res.Decision == "" {
		return nil, fmt.Errorf("%w: POST /v1/handoffs: no seq or decision in the answer", ErrAnswer)
	}
	return &res, nil
}

// OutcomeOptions are the headers of an outcome.
type OutcomeOptions struct {
	IdempotencyKey string // the Idempotency-Key header ("" for none)
	TraceParent    string // a W3C traceparent header ("" for none)
}

// Outcome POSTs to /v1/outcomes how the target of the accepted handoff
// o.DecisionSeq finished (o's DecisionSeq, Status, OutputSHA256 and
// DurationMS are the body) and returns the outcome recorded. Replayed is
// set when the server answered 200: the first answer to the same
// Idempotency-Key.
func (c *Client) Outcome(ctx context.Context, o server.OutcomeRequest, opts OutcomeOptions) (*server.OutcomeResult, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if opts.IdempotencyKey != "" {
		h.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	if opts.TraceParent != "" {
		h.Set("Traceparent", opts.TraceParent)
	}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	resp, err := c.do(ctx, "POST", "/v1/outcomes", nil, body, h)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res server.OutcomeResult
	if err := decode(resp, "POST /v1/outcomes", &res); err != nil {
		return nil, err
	}
	if res.Seq == 0 || res.Kind != "outcome" || res.DecisionSeq != o.DecisionSeq {
		return nil, fmt.Errorf("%w: POST /v1/outcomes: answer names seq %d, kind %q, decision_seq %d", ErrAnswer, res.Seq, res.Kind, res.DecisionSeq)
	}
	res.Replayed = resp.StatusCode == http.StatusOK
	return &res, nil
}

// Query selects entries (GET /v1/entries); zero fields are not sent.
type Query struct {
	Agent, Decision, Code, Format, Workflow, Kind string
	Handoff                                       string // a handoff id
	Since, Until                                  time.Time
	Before                                        uint64 // cursor: seqs below it
	Limit                                         int    // page size (server default when 0)
}

// Entries returns one page of entries, newest first.
func (c *Client) Entries(ctx context.Context, qu Query) (*server.Page, error) {
	q := url.Values{}
	for k, v := range map[string]string{"agent": qu.Agent, "decision": qu.Decision, "code": qu.Code,
		"format": qu.Format, "workflow": qu.Workflow, "handoff_id": qu.Handoff, "kind": qu.Kind} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !qu.Since.IsZero() {
		q.Set("since", qu.Since.Format(time.RFC3339Nano))
	}
	if !qu.Until.IsZero() {
		q.Set("until", qu.Until.Format(time.RFC3339Nano))
	}
	if qu.Before != 0 {
		q.Set("before", strconv.FormatUint(qu.Before, 10))
	}
	if qu.Limit != 0 {
		q.Set("limit", strconv.Itoa(qu.Limit))
	}
	var p server.Page
	if err := c.getJSON(ctx, "/v1/entries", q, &p); err != nil {
		return nil, err
	}
	if qu.Before != 0 {
		for _, e := range p.Entries {
			if e.Seq >= qu.Before {
				return nil, fmt.Errorf("%w: GET /v1/entries: seq %d at or above the cursor %d", ErrAnswer, e.Seq, qu.Before)
			}
		}
	}
	if p.Next != 0 && len(p.Entries) > 0 && p.Next > p.Entries[len(p.Entries)-1].Seq {
		return nil, fmt.Errorf("%w: GET /v1/entries: cursor %d does not go back", ErrAnswer, p.Next)
	}
	return &p, nil
}

// AllEntries pages through every entry matching qu (qu.Before and
// qu.Limit are the first page's) and calls fn with each, newest first.
func (c *Client) AllEntries(ctx context.Context, qu Query, fn func(server.EntryView) error) error {
	if qu.Limit == 0 {
		qu.Limit = 1000
	}
	for {
		p, err := c.Entries(ctx, qu)
		if err != nil {
			return err
		}
		for _, e := range p.Entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		if p.Next == 0 || len(p.Entries) == 0 {
			return nil
		}
		qu.Before = p.Next
	}
}

// Entry returns entry seq.
func (c *Client) Entry(ctx context.Context, seq uint64) (*server.EntryView, error) {
	var v server.EntryView
	if err := c.getJSON(ctx, "/v1/entries/"+strconv.FormatUint(seq, 10), nil, &v); err != nil {
		return nil, err
	}
	if v.Seq != seq {
		return nil, fmt.Errorf("%w: GET /v1/entries/%d answered seq %d", ErrAnswer, seq, v.Seq)
	}
	return &v, nil
}

// Payload returns the stored document of entry seq (a *ProblemError with
// status 410 when redacted, 404 when none is stored).
func (c *Client) Payload(ctx context.Context, seq uint64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	path := "/v1/entries/" + strconv.FormatUint(seq, 10) + "/payload"
	resp, err := c.do(ctx, "GET", path, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrTransport, path, err)
	}
	return b, nil
}

// Workflow returns a workflow's entries in seq order, following the
// answer's pages (a *ProblemError with status 404 when it has none).
func (c *Client) Workflow(ctx context.Context, id string) ([]server.EntryView, error) {
	var out []server.EntryView
	var after uint64
	for {
		var a struct {
			WorkflowID string             `json:"workflow_id"`
			Entries    []server.EntryView `json:"entries"`
			Next       uint64             `json:"next"`
		}
		var q url.Values
		if after != 0 {
			q = url.Values{"after": {strconv.FormatUint(after, 10)}}
		}
		if err := c.getJSON(ctx, "/v1/workflows/"+url.PathEscape(id), q, &a); err != nil {
			return nil, err
		}
		out = append(out, a.Entries...)
		if a.Next <= after {
			return out, nil // the last page (or a server that does not page)
		}
		after = a.Next
	}
}

// Blocks returns the agents blocked now.
func (c *Client) Blocks(ctx context.Context) ([]server.Block, error) {
	var a struct {
		Blocks []server.Block `json:"blocks"`
	}
	if err := c.getJSON(ctx, "/v1/blocks", nil, &a); err != nil {
		return nil, err
	}
	return a.Blocks, nil
}

// Proof returns the inclusion proof of entry seq against the server's
// latest checkpoint and, when oldSize is not 0 (a tree size the caller
// holds), the consistency proof from oldSize to it. The server never
// signs a checkpoint at oldSize: check your root of that size with
// tlog.CheckTree against the answer's checkpoint, opened with a key you
// trust. Nothing is verified here but the answer's shape: its seq, and a
// consistency proof from oldSize to the proof's tree size.
func (c *Client) Proof(ctx context.Context, seq, oldSize uint64) (*server.Proof, error) {
	var q url.Values
	if oldSize != 0 {
		q = url.Values{"tree_size": {strconv.FormatUint(oldSize, 10)}}
	}
	path := "/v1/entries/" + strconv.FormatUint(seq, 10) + "/proof"
	var pf server.Proof
	if err := c.getJSON(ctx, path, q, &pf); err != nil {
		return nil, err
	}
	switch cs := pf.Consistency; {
	case pf.Seq != seq || pf.TreeSize < seq:
		return nil, fmt.Errorf("%w: GET %s: a proof of seq %d in a tree of %d entries", ErrAnswer, path, pf.Seq, pf.TreeSize)
	case oldSize != 0 && (cs == nil || cs.From != oldSize || cs.To != pf.TreeSize):
		return nil, fmt.Errorf("%w: GET %s: no consistency proof from %d to the proof's tree size %d", ErrAnswer, path, oldSize, pf.TreeSize)
	}
	return &pf, nil
}

// Checkpoint returns the server's signed checkpoint note of its head. It
// is not verified here: open it with checkpoint.Open and a key you trust.
func (c *Client) Checkpoint(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	resp, err := c.do(ctx, "GET", "/v1/checkpoint", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProblem+1))
	if err != nil {
		return nil, fmt.Errorf("%w: GET /v1/checkpoint: %w", ErrTransport, err)
	}
	if len(b) > maxProblem {
		return nil, fmt.Errorf("%w: GET /v1/checkpoint: longer than %d bytes", ErrAnswer, maxProblem)
	}
	return b, nil
}

// Export opens the export stream (JSON Lines, as "govledger export" writes
// them) of the entries after seq after; the caller reads and closes it. A
// server that fails mid-stream cuts the connection, so a short export ends
// in a read error, never in a clean EOF.
func (c *Client) Export(ctx context.Context, after uint64) (io.ReadCloser, error) {
	var q url.Values
	if after != 0 {
		q = url.Values{"after": {strconv.FormatUint(after, 10)}}
	}
	resp, err := c.do(ctx, "GET", "/v1/export", q, nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
