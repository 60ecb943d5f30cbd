package server

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/stream"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the API (served on
// /openapi.json).
func OpenAPI() []byte { return slices.Clone(openAPI) }

// Limits of request parameters.
const (
	maxIdempotencyKey = 255
	maxWorkflowID     = 256
	maxOperatorBody   = 64 << 10
	maxOperatorReason = 4096
	maxPageLimit      = 1000
	defaultPageLimit  = 100
)

func (s *Server) routeTable() []*route {
	w, rd, pr, op := []Scope{ScopeHandoffWrite}, []Scope{ScopeLedgerRead}, []Scope{ScopePayloadRead}, []Scope{ScopeOperator}
	return []*route{
		{method: "POST", path: "/v1/handoffs", scopes: w, write: true, body: true, h: s.postHandoff},
		{method: "POST", path: "/v1/handoffs:batch", scopes: w, write: true, body: true, h: s.postBatch},
		{method: "POST", path: "/v1/validate", scopes: w, body: true, h: s.postValidate},
		{method: "POST", path: "/v1/outcomes", scopes: w, write: true, body: true, h: s.postOutcome},
		{method: "GET", path: "/v1/entries", scopes: rd, h: s.getEntries},
		{method: "GET", path: "/v1/entries/{seq}", scopes: rd, h: s.getEntry},
		{method: "GET", path: "/v1/entries/{seq}/payload", scopes: pr, h: s.getPayload},
		{method: "GET", path: "/v1/entries/{seq}/proof", scopes: rd, h: s.getProof},
		{method: "GET", path: "/v1/workflows/{id}", scopes: rd, h: s.getWorkflow},
		{method: "GET", path: "/v1/blocks", scopes: rd, h: s.getBlocks},
		{method: "GET", path: "/v1/checkpoint", scopes: rd, h: s.getCheckpoint},
		{method: "GET", path: "/v1/consistency", scopes: rd, h: s.getConsistency},
		{method: "GET", path: "/v1/export", scopes: []Scope{ScopeLedgerRead, ScopePayloadRead}, stream: true, h: s.getExport},
		{method: "GET", path: "/v1/events", scopes: rd, stream: true, h: s.getEvents},
		{method: "POST", path: "/v1/blocks/{rest}", doc: "/v1/blocks/{agent}:unblock", scopes: op, write: true, body: true, h: s.postUnblock},
		{method: "POST", path: "/v1/entries/{rest}", doc: "/v1/entries/{seq}:redact", scopes: op, write: true, body: true, h: s.postRedact},
		// The same, at a path generic routers and gateways do not read as
		// GET /v1/entries/{seq} (they split at ':' no better than at '/').
		{method: "POST", path: "/v1/entries/{seq}/redact", scopes: op, write: true, body: true, h: s.postRedact},
		{method: "POST", path: "/v1/reload", scopes: op, write: true, body: true, h: s.postReload},
		{method: "GET", path: "/openapi.json", h: s.getOpenAPI},
		{method: "GET", path: "/livez", h: s.getLivez},
		{method: "GET", path: "/readyz", h: s.getReadyz},
		{method: "GET", path: "/metrics", h: s.getMetrics},
	}
}

// query returns the request's query parameters, refusing unknown, repeated
// and malformed ones.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string: %v", err)
	}
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, badRequest("unknown query parameter %q: this route takes none", k)
			}
			return nil, badRequest("unknown query parameter %q: want %s", k, strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return nil, badRequest("query parameter %q given %d times", k, len(v))
		}
		if !utf8.ValidString(v[0]) {
			return nil, badRequest("query parameter %q is not valid UTF-8", k)
		}
	}
	return q, nil
}

// parseSeq parses a canonical decimal seq (>= 1, no sign, no leading zero).
func parseSeq(name, s string) (uint64, error) {
	n, err := parseUint(name, s)
	if err == nil && n == 0 {
		err = badRequest("%s %q: want a seq, 1 or more", name, s)
	}
	return n, err
}

// parseUint parses a canonical decimal number (0 allowed).
func parseUint(name, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != s {
		return 0, badRequest("%s %q: want a decimal number without sign or leading zeros", name, s)
	}
	return n, nil
}

func checkAgent(name, v string) error {
	if v == "" {
		return nil
	}
	if err := manifest.CheckAgentID(v); err != nil {
		return badRequest("%s: %v", name, err)
	}
	return nil
}

// checkFormat checks a format id's shape ("governed/1"); the backend
// decides whether it knows it.
func checkFormat(v string) error {
	name, ver, ok := strings.Cut(v, "/")
	if v == "" {
		return nil
	}
	if !ok || len(v) > 32 || name == "" || ver == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
		strings.Trim(ver, "0123456789") != "" {
		return badRequest("format %q: want a format id such as governed/1", v)
	}
	return nil
}

func checkIdempotencyKey(k string) error {
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return badRequest("idempotency key: want 1 to %d characters", maxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return badRequest("idempotency key: want visible ASCII characters only")
		}
	}
	return nil
}

// singleHeader returns the one value of header name ("" when absent).
func singleHeader(r *http.Request, name string) (string, error) {
	switch v := r.Header.Values(name); len(v) {
	case 0:
		return "", nil
	case 1:
		return v[0], nil
	default:
		return "", badRequest("%s given %d times", name, len(v))
	}
}

// traceParent returns the request's W3C traceparent header, refusing a
// malformed one (it would be stored in the entry).
func traceParent(r *http.Request) (string, error) {
	tp, err := singleHeader(r, "Traceparent")
	if err != nil || tp == "" {
		return "", err
	}
	parts := strings.Split(tp, "-")
	hexOK := func(s string, n int, nonZero bool) bool {
		if len(s) != n || strings.Trim(s, "0123456789abcdef") != "" {
			return false
		}
		return !nonZero || strings.Trim(s, "0") != ""
	}
	ok := len(parts) >= 4 && hexOK(parts[0], 2, false) && parts[0] != "ff" &&
		hexOK(parts[1], 32, true) && hexOK(parts[2], 16, true) && hexOK(parts[3], 2, false) &&
		(parts[0] != "00" || len(parts) == 4)
	if !ok {
		return "", badRequest("traceparent %q: want a W3C trace context traceparent (00-<32 hex>-<16 hex>-<2 hex>)", truncate(tp, 80))
	}
	return tp, nil
}

// workflowHeader returns the request's Govledger-Workflow header ("" when
// absent), refusing a malformed one.
func workflowHeader(r *http.Request) (string, error) {
	id, err := singleHeader(r, "Govledger-Workflow")
	if err != nil || id == "" {
		return "", err
	}
	if err := checkWorkflowID(id); err != nil {
		return "", badRequest("Govledger-Workflow: %v", err)
	}
	return id, nil
}

// checkWorkflowID accepts 1 to 256 bytes of UTF-8 without control
// characters (govern.CheckWorkflowID's rule).
func checkWorkflowID(id string) error {
	if id == "" || len(id) > maxWorkflowID {
		return fmt.Errorf("workflow id of %d bytes: want 1 to %d", len(id), maxWorkflowID)
	}
	if !utf8.ValidString(id) {
		return errors.New("workflow id is not valid UTF-8")
	}
	for _, c := range id {
		if unicode.IsControl(c) {
			return errors.New("workflow id contains a control character")
		}
	}
	return nil
}

// requestWorkflow is the workflow a request names outside its document:
// the header's (or a batch line's), else the traceparent's trace-id.
func requestWorkflow(workflow, traceParent string) string {
	if workflow == "" && len(traceParent) >= 35 {
		return traceParent[3:35]
	}
	return workflow
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// readBody reads the request body up to limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return data, nil
}

func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// submitRequest reads the parameters shared by /v1/handoffs and /v1/validate.
func (s *Server) submitRequest(w http.ResponseWriter, r *http.Request, p *Principal) (SubmitRequest, error) {
	q, err := query(r, "format", "from", "to")
	if err != nil {
		return SubmitRequest{}, err
	}
	req := SubmitRequest{Format: q.Get("format"), From: q.Get("from"), To: q.Get("to"), Submitter: p.Name, Sources: p.Agents}
	if err := errors.Join(checkFormat(req.Format), checkAgent("from", req.From), checkAgent("to", req.To)); err != nil {
		return req, err
	}
	if strings.HasPrefix(mediaType(r), "multipart/") {
		return req, unsupportedMedia("multipart bodies are refused: send the document's bytes as the body")
	}
	if req.TraceParent, err = traceParent(r); err != nil {
		return req, err
	}
	if req.WorkflowID, err = workflowHeader(r); err != nil {
		return req, err
	}
	req.WorkflowID = requestWorkflow(req.WorkflowID, req.TraceParent)
	if req.From != "" && !p.MaySubmitFor(req.From) {
		return req, fmt.Errorf("%w: %q may not submit for %q", ErrForbiddenSource, p.Name, req.From)
	}
	if req.Body, err = readBody(w, r, s.cfg.MaxBody); err != nil {
		return req, err
	}
	if len(req.Body) == 0 {
		return req, badRequest("empty body: send the document's bytes")
	}
	return req, nil
}

func normalize(res *SubmitResult) *SubmitResult {
	if res.Reasons == nil {
		res.Reasons = []reason.Reason{}
	}
	return res
}

func (s *Server) postHandoff(w http.ResponseWriter, r *http.Request, p *Principal) error {
	req, err := s.submitRequest(w, r, p)
	if err != nil {
		return err
	}
	if req.IdempotencyKey, err = singleHeader(r, "Idempotency-Key"); err != nil {
		return err
	}
	if req.IdempotencyKey != "" {
		if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
			return err
		}
	}
	res, err := s.cfg.Backend.Submit(r.Context(), req)
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("backend returned no result")
	}
	if err := s.acknowledge(r.Context(), res.Seq); err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/entries/%d", res.Seq))
	return writeJSON(w, http.StatusCreated, normalize(res))
}

// acknowledge lets Config.Acknowledge hold the answer to a write whose
// last entry is seq; its error is always a *NotWitnessedError (the entry
// is stored).
func (s *Server) acknowledge(ctx context.Context, seq uint64) error {
	if s.cfg.Acknowledge == nil || seq == 0 {
		return nil
	}
	err := s.cfg.Acknowledge(ctx, seq)
	var nw *NotWitnessedError
	if err != nil && !errors.As(err, &nw) {
		err = &NotWitnessedError{Seq: seq, Err: err}
	}
	return err
}

func (s *Server) postValidate(w http.ResponseWriter, r *http.Request, p *Principal) error {
	req, err := s.submitRequest(w, r, p)
	if err != nil {
		return err
	}
	if r.Header.Get("Idempotency-Key") != "" {
		return badRequest("Idempotency-Key has no meaning on /v1/validate: nothing is written")
	}
	res, err := s.cfg.Backend.Validate(r.Context(), req)
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("backend returned no result")
	}
	return writeJSON(w, http.StatusOK, normalize(res))
}

// maxOutcomeBody bounds the body of POST /v1/outcomes.
const maxOutcomeBody = 4 << 10

func (s *Server) postOutcome(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	if mediaType(r) != "application/json" {
		return unsupportedMedia("Content-Type %q: want application/json with {\"decision_seq\": N, \"status\": \"succeeded\"}", r.Header.Get("Content-Type"))
	}
	var req OutcomeRequest
	var err error
	if req.IdempotencyKey, err = singleHeader(r, "Idempotency-Key"); err != nil {
		return err
	}
	if req.IdempotencyKey != "" {
		if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
			return err
		}
	}
	if req.TraceParent, err = traceParent(r); err != nil {
		return err
	}
	data, err := readBody(w, r, maxOutcomeBody)
	if err != nil {
		return err
	}
	if err := strictjson.Unmarshal("body", data, &req); err != nil {
		return badRequest("%v", err)
	}
	switch {
	case req.DecisionSeq == 0:
		return unprocessable("decision_seq: want the seq of the handoff entry the outcome follows (1 or more)")
	case !entry.ValidStatus(req.Status):
		return unprocessable("status %q: want succeeded, failed or cancelled", truncate(req.Status, 40))
	case req.DurationMS != nil && *req.DurationMS < 0:
		return unprocessable("duration_ms %d: want 0 or more", *req.DurationMS)
	case req.OutputSHA256 != "":
		if _, err := entry.ParseHash(req.OutputSHA256); err != nil {
			return unprocessable("output_sha256: %v", err)
		}
	}
	req.Submitter, req.Agents = p.Name, p.Agents
	res, err := s.cfg.Backend.Outcome(r.Context(), req)
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("backend returned no result")
	}
	if err := s.acknowledge(r.Context(), res.Seq); err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/entries/%d", res.Seq))
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	return writeJSON(w, status, res)
}

// Batch answer lines (application/x-ndjson), one per input document, in
// input order.
type batchResultLine struct {
	Line         int `json:"line"`
	Status       int `json:"status"` // 201
	SubmitResult `json:",inline"`
}

type batchProblemLine struct {
	Line    int `json:"line"`
	Problem `json:",inline"`
}

// ndjsonTypes are the Content-Types a batch may be sent as.
var ndjsonTypes = []string{"application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/ndjson"}

func (s *Server) postBatch(w http.ResponseWriter, r *http.Request, p *Principal) error {
	q, err := query(r, "format", "from", "to")
	if err != nil {
		return err
	}
	def := stream.Item{Format: q.Get("format"), From: q.Get("from"), To: q.Get("to")}
	if err := errors.Join(checkFormat(def.Format), checkAgent("from", def.From), checkAgent("to", def.To)); err != nil {
		return err
	}
	if !slices.Contains(ndjsonTypes, mediaType(r)) {
		return unsupportedMedia("Content-Type %q: a batch is NDJSON, send it as application/x-ndjson", r.Header.Get("Content-Type"))
	}
	if r.Header.Get("Idempotency-Key") != "" {
		return badRequest("Idempotency-Key header on a batch: give each line its own \"idempotency_key\" in an envelope")
	}
	tp, err := traceParent(r)
	if err != nil {
		return err
	}
	wf, err := workflowHeader(r)
	if err != nil {
		return err
	}
	if r.ContentLength > s.cfg.MaxBatchBody {
		return &http.MaxBytesError{Limit: s.cfg.MaxBatchBody}
	}
	rd := stream.NewReader(http.MaxBytesReader(w, r.Body, s.cfg.MaxBatchBody), int(min(s.cfg.MaxBatchBody, 1<<30)))
	type slot struct {
		line int
		req  SubmitRequest
		prob *Problem // set when the line is refused before submission
	}
	var slots []slot
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return err
			}
			return badRequest("reading the request body: %v", err)
		}
		if len(slots) == s.cfg.MaxBatchItems {
			return hitLimit(LimitBatchItems, &httpError{status: http.StatusRequestEntityTooLarge, code: CodeBodyTooLarge,
				detail: fmt.Sprintf("more than %d documents in one batch", s.cfg.MaxBatchItems)})
		}
		sl := slot{line: it.Line}
		if it.Err != nil {
			sl.prob = newProblem(http.StatusBadRequest, CodeBadRequest, it.Err.Error())
			slots = append(slots, sl)
			continue
		}
		sl.req = SubmitRequest{Body: it.Doc, Format: cmpOr(it.Format, def.Format), From: cmpOr(it.From, def.From),
			To: cmpOr(it.To, def.To), Submitter: p.Name, Sources: p.Agents, IdempotencyKey: it.IdempotencyKey, TraceParent: tp,
			WorkflowID: requestWorkflow(cmpOr(it.Workflow, wf), tp)}
		err = errors.Join(checkFormat(sl.req.Format), checkAgent("from", sl.req.From), checkAgent("to", sl.req.To))
		if err == nil && sl.req.IdempotencyKey != "" {
			err = checkIdempotencyKey(sl.req.IdempotencyKey)
		}
		if err == nil && it.Workflow != "" {
			if werr := checkWorkflowID(it.Workflow); werr != nil {
				err = fmt.Errorf("workflow: %w", werr)
			}
		}
		switch {
		case err != nil:
			sl.prob = newProblem(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("line %d: %v", it.Line, err))
		case int64(len(it.Doc)) > s.cfg.MaxBody:
			sl.prob = newProblem(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
				fmt.Sprintf("line %d: document of %d bytes over the %d-byte limit", it.Line, len(it.Doc), s.cfg.MaxBody))
		case sl.req.From != "" && !p.MaySubmitFor(sl.req.From):
			sl.prob = newProblem(http.StatusForbidden, CodeForbiddenSource,
				fmt.Sprintf("line %d: %v: %q may not submit for %q", it.Line, ErrForbiddenSource, p.Name, sl.req.From))
		}
		slots = append(slots, sl)
	}
	if len(slots) == 0 {
		return badRequest("empty batch: no documents")
	}
	var reqs []SubmitRequest
	for _, sl := range slots {
		if sl.prob == nil {
			reqs = append(reqs, sl.req)
		}
	}
	var items []BatchItem
	if len(reqs) > 0 {
		items, err = s.cfg.Backend.SubmitBatch(r.Context(), reqs)
		if err != nil {
			return err
		}
		if len(items) != len(reqs) {
			return fmt.Errorf("backend answered %d of %d batch documents", len(items), len(reqs))
		}
	}
	// Every stored document waits for the acknowledgement of the last one
	// (Config.Acknowledge): refused, they are answered NOT_WITNESSED.
	var last uint64
	for _, it := range items {
		if it.Err == nil && it.Result != nil {
			last = max(last, it.Result.Seq)
		}
	}
	var ackErr error // why the last one was not acknowledged
	var nw *NotWitnessedError
	if err := s.acknowledge(r.Context(), last); errors.As(err, &nw) {
		ackErr = nw.Err
	}
	info := infoFrom(r.Context())
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	for _, sl := range slots {
		var line any
		var lineErr error
		prob := sl.prob
		if prob == nil {
			it := items[0]
			items = items[1:]
			if it.Err == nil && it.Result != nil && ackErr != nil {
				it.Err = &NotWitnessedError{Seq: it.Result.Seq, Err: ackErr}
			}
			if it.Err == nil && it.Result != nil {
				line = batchResultLine{Line: sl.line, Status: http.StatusCreated, SubmitResult: *normalize(it.Result)}
			} else {
				if it.Err == nil {
					it.Err = errors.New("backend returned no result")
				}
				lineErr = it.Err
				status, code, detail, internal := classify(it.Err, true)
				if internal {
					s.log.LogAttrs(r.Context(), slog.LevelError, "batch document failed", slog.String("request_id", info.id),
						slog.Int("line", sl.line), slog.String("error", it.Err.Error()))
				}
				prob = newProblem(status, code, fmt.Sprintf("line %d: %s", sl.line, detail))
				if status == http.StatusServiceUnavailable {
					prob.RetryAfter = retrySeconds(s.cfg.RetryAfter)
				}
			}
		}
		if prob != nil {
			prob.markWritten(lineErr)
			prob.Instance, prob.RequestID = r.URL.Path, info.id
			prob.sanitize()
			line = batchProblemLine{Line: sl.line, Problem: *prob}
		}
		b, err := marshal(line)
		if err != nil {
			return err
		}
		bw.Write(append(b, '\n'))
	}
	return bw.Flush()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var timeLayout = time.RFC3339Nano

func parseTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, v)
	if err != nil {
		return time.Time{}, badRequest("%s %q: want an RFC 3339 time such as 2026-11-24T10:00:00Z", name, v)
	}
	return t, nil
}

// entryKinds are the entry kinds ?kind= may name.
var entryKinds = []string{entry.KindHandoff, entry.KindSnapshot, entry.KindUnblock, entry.KindRedaction, entry.KindKeyRotation, entry.KindOutcome}

func (s *Server) getEntries(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := query(r, "agent", "decision", "code", "format", "workflow", "handoff_id", "kind", "since", "until", "before", "limit")
	if err != nil {
		return err
	}
	qu := Query{Agent: q.Get("agent"), Decision: q.Get("decision"), Code: q.Get("code"), Format: q.Get("format"),
		Workflow: q.Get("workflow"), Handoff: q.Get("handoff_id"), Kind: q.Get("kind"), Limit: defaultPageLimit}
	if err := errors.Join(checkAgent("agent", qu.Agent), checkFormat(qu.Format)); err != nil {
		return err
	}
	if qu.Code != "" && strings.Trim(qu.Code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return badRequest("code %q: want a reason code such as HASH_MISMATCH", qu.Code)
	}
	if qu.Kind != "" && !slices.Contains(entryKinds, qu.Kind) {
		// As decision: a well-formed query naming a value that does not exist.
		return unprocessable("kind %q: want one of %s", qu.Kind, strings.Join(entryKinds, ", "))
	}
	if len(qu.Workflow) > maxWorkflowID {
		return badRequest("workflow: longer than %d bytes", maxWorkflowID)
	}
	if len(qu.Handoff) > maxWorkflowID {
		return badRequest("handoff_id: longer than %d bytes", maxWorkflowID)
	}
	if qu.Decision != "" && qu.Decision != reason.Accepted && qu.Decision != reason.Rejected {
		return unprocessable("decision %q: want accepted or rejected", qu.Decision)
	}
	if qu.Since, err = parseTime("since", q.Get("since")); err != nil {
		return err
	}
	if qu.Until, err = parseTime("until", q.Get("until")); err != nil {
		return err
	}
	if !qu.Since.IsZero() && !qu.Until.IsZero() && qu.Until.Before(qu.Since) {
		return unprocessable("until %s is before since %s", q.Get("until"), q.Get("since"))
	}
	if v := q.Get("before"); v != "" {
		if qu.Before, err = parseSeq("before", v); err != nil {
			return err
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := parseUint("limit", v)
		if err != nil {
			return err
		}
		if n < 1 || n > maxPageLimit {
			return unprocessable("limit %d: want 1 to %d", n, maxPageLimit)
		}
		qu.Limit = int(n)
	}
	page, err := s.cfg.Backend.Entries(r.Context(), qu)
	if err != nil {
		return err
	}
	if page == nil {
		page = &Page{}
	}
	if page.Entries == nil {
		page.Entries = []EntryView{}
	}
	return writeJSON(w, http.StatusOK, page)
}

func pathSeq(r *http.Request) (uint64, error) {
	return parseSeq("seq", r.PathValue("seq"))
}

func (s *Server) getEntry(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	seq, err := pathSeq(r)
	if err != nil {
		return err
	}
	v, err := s.cfg.Backend.Entry(r.Context(), seq)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) getPayload(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	seq, err := pathSeq(r)
	if err != nil {
		return err
	}
	b, err := s.cfg.Backend.Payload(r.Context(), seq)
	if err != nil {
		return err
	}
	h := w.Header()
	// A payload is whatever a client sent: never let a browser render it.
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="payload-%d"`, seq))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	return err
}

func (s *Server) getProof(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := query(r, "tree_size")
	if err != nil {
		return err
	}
	seq, err := pathSeq(r)
	if err != nil {
		return err
	}
	var old uint64
	if v := q.Get("tree_size"); v != "" {
		if old, err = parseSeq("tree_size", v); err != nil {
			return err
		}
		if old < seq {
			return unprocessable("tree_size %d is below seq %d: the entry is not in that tree", old, seq)
		}
	}
	// The latest checkpoint, never one signed at the reader's size: an
	// old size is answered with a consistency proof to the latest.
	cp, err := s.latestCheckpoint(r.Context(), max(seq, old))
	if err != nil {
		return err
	}
	pf, err := LatestProof(r.Context(), s.cfg.Backend, cp, seq, old)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, pf)
}

type workflowAnswer struct {
	WorkflowID string      `json:"workflow_id"`
	Entries    []EntryView `json:"entries"`
	// Next is the ?after= of the next page; absent on the last.
	Next uint64 `json:"next,omitzero"`
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := query(r, "after", "limit")
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if id == "" || len(id) > maxWorkflowID || !utf8.ValidString(id) {
		return badRequest("workflow id: want 1 to %d bytes of UTF-8", maxWorkflowID)
	}
	var after uint64
	if v := q.Get("after"); v != "" {
		if after, err = parseUint("after", v); err != nil {
			return err
		}
	}
	limit := maxPageLimit
	if v := q.Get("limit"); v != "" {
		n, err := parseUint("limit", v)
		if err != nil {
			return err
		}
		if n < 1 || n > maxPageLimit {
			return unprocessable("limit %d: want 1 to %d", n, maxPageLimit)
		}
		limit = int(n)
	}
	page, err := s.cfg.Backend.Workflow(r.Context(), id, after, limit)
	if err != nil {
		return err
	}
	a := workflowAnswer{WorkflowID: id, Entries: []EntryView{}}
	if page != nil {
		a.Next = page.Next
		if page.Entries != nil {
			a.Entries = page.Entries
		}
	}
	return writeJSON(w, http.StatusOK, a)
}

type blocksAnswer struct {
	Blocks []Block `json:"blocks"`
}

func (s *Server) getBlocks(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	bs, err := s.cfg.Backend.Blocks(r.Context())
	if err != nil {
		return err
	}
	if bs == nil {
		bs = []Block{}
	}
	return writeJSON(w, http.StatusOK, blocksAnswer{Blocks: bs})
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	b, err := s.latestCheckpoint(r.Context(), 0)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	return err
}

func (s *Server) getConsistency(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := query(r, "from", "to")
	if err != nil {
		return err
	}
	if q.Get("from") == "" || q.Get("to") == "" {
		return badRequest("from and to (tree sizes) are required")
	}
	from, err := parseSeq("from", q.Get("from"))
	if err != nil {
		return err
	}
	to, err := parseSeq("to", q.Get("to"))
	if err != nil {
		return err
	}
	if from > to {
		return unprocessable("from %d is after to %d", from, to)
	}
	hs, err := s.cfg.Backend.Consistency(r.Context(), from, to)
	if err != nil {
		return err
	}
	if hs == nil {
		hs = []string{}
	}
	return writeJSON(w, http.StatusOK, Consistency{From: from, To: to, Hashes: hs})
}

// streamWriter writes a long answer: each write extends the connection's
// write deadline by WriteTimeout (a client that stops reading is cut off
// after it), and the read deadline is lifted (the request is read).
type streamWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

func newStreamWriter(w http.ResponseWriter, timeout time.Duration) *streamWriter {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{}) // ErrNotSupported under a recorder: nothing to lift
	return &streamWriter{w: w, rc: rc, timeout: timeout}
}

// write writes b (after the headers, on first use) and flushes when flush is set.
func (sw *streamWriter) write(b []byte, flush bool) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	if !sw.started {
		sw.started = true
		sw.w.WriteHeader(http.StatusOK)
	}
	if _, err := sw.w.Write(b); err != nil {
		return err
	}
	if flush {
		return sw.rc.Flush()
	}
	return nil
}

// streamContext ends with the request or when the server shuts down.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.stopCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (s *Server) getExport(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := query(r, "after")
	if err != nil {
		return err
	}
	var after uint64
	if v := q.Get("after"); v != "" {
		if after, err = parseUint("after", v); err != nil {
			return err
		}
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	w.Header().Set("Content-Type", "application/jsonl")
	sw := newStreamWriter(w, s.cfg.WriteTimeout)
	n := 0
	err = s.cfg.Backend.Export(ctx, after, func(line []byte) error {
		n++
		return sw.write(append(line, '\n'), n%256 == 0)
	})
	if err != nil {
		if sw.started {
			// A short export must not look whole: cut the connection.
			infoFrom(r.Context()).err = err
			panic(http.ErrAbortHandler)
		}
		return err
	}
	return sw.write(nil, true)
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	q, err := query(r, "after")
	if err != nil {
		return err
	}
	last, err := singleHeader(r, "Last-Event-Id")
	if err != nil {
		return err
	}
	var after uint64
	switch {
	case last != "" && q.Get("after") != "":
		return badRequest("both Last-Event-ID and ?after: give one")
	case last != "":
		if after, err = parseUint("Last-Event-ID", last); err != nil {
			return err
		}
	case q.Get("after") != "":
		if after, err = parseUint("after", q.Get("after")); err != nil {
			return err
		}
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	sw := newStreamWriter(w, s.cfg.WriteTimeout)
	if err := sw.write([]byte("retry: 2000\n\n"), true); err != nil {
		return nil // the client is gone
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // heartbeat: keeps proxies from closing an idle stream, finds dead clients
		defer wg.Done()
		t := time.NewTicker(s.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if sw.write([]byte(": keep-alive\n\n"), true) != nil {
					cancel()
					return
				}
			}
		}
	}()
	err = s.cfg.Backend.Watch(ctx, after, func(v EntryView) error {
		b, err := marshal(v)
		if err != nil {
			return err
		}
		ev := make([]byte, 0, len(b)+48)
		ev = fmt.Appendf(ev, "id: %d\nevent: entry\ndata: ", v.Seq)
		ev = append(append(ev, b...), "\n\n"...)
		return sw.write(ev, true)
	})
	cancel()
	wg.Wait()
	if re := revokedCause(r.Context()); re != nil {
		// The credential no longer holds: say so, as the stream's last
		// event (an EventSource reconnecting then gets 401).
		p := newProblem(http.StatusUnauthorized, CodeUnauthenticated, re.Error())
		p.Instance, p.RequestID = r.URL.Path, infoFrom(r.Context()).id
		if b, err := marshal(p); err == nil {
			sw.write(append(append([]byte("event: revoked\ndata: "), b...), "\n\n"...), true)
		}
		return nil
	}
	if err != nil && ctx.Err() == nil {
		var ne interface{ Timeout() bool }
		if !errors.As(err, &ne) { // a write that timed out is a gone client, not a server error
			infoFrom(r.Context()).err = err
			panic(http.ErrAbortHandler)
		}
	}
	return nil
}

// operatorBody reads {"reason": "..."} (application/json).
func operatorBody(w http.ResponseWriter, r *http.Request) (string, error) {
	if mediaType(r) != "application/json" {
		return "", unsupportedMedia("Content-Type %q: want application/json with {\"reason\": \"...\"}", r.Header.Get("Content-Type"))
	}
	data, err := readBody(w, r, maxOperatorBody)
	if err != nil {
		return "", err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := strictjson.Unmarshal("body", data, &body); err != nil {
		return "", badRequest("%v", err)
	}
	why := strings.TrimSpace(body.Reason)
	if why == "" || len(why) > maxOperatorReason {
		return "", unprocessable("reason: want 1 to %d bytes saying why", maxOperatorReason)
	}
	return why, nil
}

// splitAction splits "name:action" at its last colon.
func splitAction(rest, want string) (string, error) {
	i := strings.LastIndexByte(rest, ':')
	if i < 0 || rest[i+1:] != want {
		return "", notFound("no such route: want POST .../{id}:%s", want)
	}
	return rest[:i], nil
}

func (s *Server) postUnblock(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	agent, err := splitAction(r.PathValue("rest"), "unblock")
	if err != nil {
		return err
	}
	if err := manifest.CheckAgentID(agent); err != nil {
		return badRequest("agent: %v", err)
	}
	why, err := operatorBody(w, r)
	if err != nil {
		return err
	}
	v, err := s.cfg.Backend.Unblock(r.Context(), agent, why, p.Name)
	if err != nil {
		return err
	}
	if err := s.acknowledge(r.Context(), v.Seq); err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/entries/%d", v.Seq))
	return writeJSON(w, http.StatusCreated, v)
}

func (s *Server) postRedact(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	seqText := r.PathValue("seq") // /v1/entries/{seq}/redact
	if seqText == "" {
		var err error
		if seqText, err = splitAction(r.PathValue("rest"), "redact"); err != nil {
			return err
		}
	}
	seq, err := parseSeq("seq", seqText)
	if err != nil {
		return err
	}
	why, err := operatorBody(w, r)
	if err != nil {
		return err
	}
	v, err := s.cfg.Backend.Redact(r.Context(), seq, why, p.Name)
	if err != nil {
		return err
	}
	if err := s.acknowledge(r.Context(), v.Seq); err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/entries/%d", v.Seq))
	return writeJSON(w, http.StatusCreated, v)
}

type reloadAnswer struct {
	Entries []EntryView `json:"entries"`
}

func (s *Server) postReload(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if _, err := query(r); err != nil {
		return err
	}
	data, err := readBody(w, r, maxOperatorBody)
	if err != nil {
		return err
	}
	if len(data) > 0 && mediaType(r) != "application/json" {
		// As the other operator routes: the body's type first (415).
		return unsupportedMedia("Content-Type %q: want application/json ({} or no body)", r.Header.Get("Content-Type"))
	}
	if len(data) > 0 {
		var empty struct{}
		if err := strictjson.Unmarshal("body", data, &empty); err != nil {
			return badRequest("reload takes no parameters: send no body or {}: %v", err)
		}
	}
	vs, err := s.Reload(r.Context(), p.Name)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		if err := s.acknowledge(r.Context(), vs[len(vs)-1].Seq); err != nil {
			return err
		}
	}
	if vs == nil {
		vs = []EntryView{}
	}
	return writeJSON(w, http.StatusOK, reloadAnswer{Entries: vs})
}

func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(openAPI)
	return err
}

type statusAnswer struct {
	Status string `json:"status"`
}

func (s *Server) getLivez(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	return writeJSON(w, http.StatusOK, statusAnswer{Status: "ok"})
}

func (s *Server) getReadyz(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	if s.stopping.Load() {
		return &httpError{status: http.StatusServiceUnavailable, code: CodeUnavailable, detail: "shutting down"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Backend.Ready(ctx); err != nil {
		return &httpError{status: http.StatusServiceUnavailable, code: CodeUnavailable, detail: "not ready", err: err}
	}
	if f := s.cfg.Degraded; f != nil {
		if err := f(); err != nil {
			return &httpError{status: http.StatusServiceUnavailable, code: CodeUnavailable, detail: "degraded: " + err.Error(), err: err}
		}
	}
	return writeJSON(w, http.StatusOK, statusAnswer{Status: "ready"})
}

func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request, _ *Principal) error {
	if s.metricsHandler == nil {
		return notFound("metrics are registered with a registry that cannot be gathered")
	}
	s.metricsHandler.ServeHTTP(w, r)
	return nil
}
