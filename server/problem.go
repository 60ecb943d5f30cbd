package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Problem is an RFC 9457 problem detail, the body of every error answer
// (Content-Type application/problem+json).
type Problem struct {
	Type   string `json:"type"`   // "urn:govledger:problem:" + the code in lower case
	Title  string `json:"title"`  // short, fixed per code
	Status int    `json:"status"` // the HTTP status
	Detail string `json:"detail,omitzero"`
	// Instance is the request's path.
	Instance string `json:"instance,omitzero"`
	// Code is the stable machine-readable reason (Codes below).
	Code string `json:"code"`
	// RequestID is the X-Request-Id of the request, for the server's logs.
	RequestID string `json:"request_id,omitzero"`
	// Written is set on answers to writes: "no" when nothing was written,
	// "unknown" when the outcome is unknown (retry with the same
	// Idempotency-Key), "yes" when the write is stored but not
	// acknowledged (NOT_WITNESSED: retry with the same Idempotency-Key to
	// learn when it is witnessed).
	Written string `json:"written,omitzero"`
	// Seq is the stored entry a NOT_WITNESSED answer is about.
	Seq uint64 `json:"seq,omitzero"`
	// RetryAfter repeats the Retry-After header, in seconds.
	RetryAfter int `json:"retry_after,omitzero"`
}

// Problem codes. They are stable: never renamed once released.
const (
	CodeBadRequest          = "BAD_REQUEST"          // 400: malformed parameter, header or body
	CodeInvalidParameters   = "INVALID_PARAMETERS"   // 422: well-formed but invalid together
	CodeUnauthenticated     = "UNAUTHENTICATED"      // 401: no, unknown or expired credential
	CodeForbiddenScope      = "FORBIDDEN_SCOPE"      // 403: the principal lacks a scope the route needs
	CodeForbiddenSource     = "FORBIDDEN_SOURCE"     // 403: the handoff's source is not one of the principal's agents
	CodeForbiddenCSRF       = "FORBIDDEN_CSRF"       // 403: a UI form without its session's CSRF token, or from another origin
	CodeNotFound            = "NOT_FOUND"            // 404
	CodeMethodNotAllowed    = "METHOD_NOT_ALLOWED"   // 405
	CodeIdempotencyConflict = "IDEMPOTENCY_CONFLICT" // 409: key reused with other bytes
	CodeRedacted            = "REDACTED"             // 410: the payload was redacted
	CodeBodyTooLarge        = "BODY_TOO_LARGE"       // 413
	CodeUnsupportedMedia    = "UNSUPPORTED_MEDIA"    // 415: Content-Encoding, or a wrong Content-Type
	CodeRateLimited         = "RATE_LIMITED"         // 429, with Retry-After
	CodeRequestTimeout      = "REQUEST_TIMEOUT"      // 408: the request body came too slowly
	CodeInternal            = "INTERNAL"             // 500
	CodeOverloaded          = "OVERLOADED"           // 503, with Retry-After: nothing written
	CodeOutcomeUnknown      = "OUTCOME_UNKNOWN"      // 503: retry with the same Idempotency-Key
	CodeUnavailable         = "UNAVAILABLE"          // 503: nothing written
	CodeNotWitnessed        = "NOT_WITNESSED"        // 503: written, not acknowledged: no checkpoint covering it was cosigned in time
)

var problemTitles = map[string]string{
	CodeBadRequest:          "Bad request",
	CodeInvalidParameters:   "Invalid parameters",
	CodeUnauthenticated:     "Authentication required",
	CodeForbiddenScope:      "Missing scope",
	CodeForbiddenSource:     "Source agent not allowed",
	CodeForbiddenCSRF:       "Cross-site request refused",
	CodeNotFound:            "Not found",
	CodeMethodNotAllowed:    "Method not allowed",
	CodeIdempotencyConflict: "Idempotency key reused",
	CodeRedacted:            "Payload redacted",
	CodeBodyTooLarge:        "Request body too large",
	CodeUnsupportedMedia:    "Unsupported media",
	CodeRateLimited:         "Too many requests",
	CodeRequestTimeout:      "Request body too slow",
	CodeInternal:            "Internal error",
	CodeOverloaded:          "Overloaded",
	CodeOutcomeUnknown:      "Outcome unknown",
	CodeUnavailable:         "Unavailable",
	CodeNotWitnessed:        "Written, not witnessed",
}

// httpError is an error the server itself answers with a problem.
type httpError struct {
	status int
	code   string
	detail string
	err    error
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.detail + ": " + e.err.Error()
	}
	return e.detail
}

func (e *httpError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, code: CodeBadRequest, detail: fmt.Sprintf(format, args...)}
}

func unprocessable(format string, args ...any) error {
	return &httpError{status: http.StatusUnprocessableEntity, code: CodeInvalidParameters, detail: fmt.Sprintf(format, args...)}
}

func unsupportedMedia(format string, args ...any) error {
	return &httpError{status: http.StatusUnsupportedMediaType, code: CodeUnsupportedMedia, detail: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, code: CodeNotFound, detail: fmt.Sprintf(format, args...)}
}

// classify maps an error to its status and code; internal is set for
// errors that are the server's fault (logged at error level, detail
// withheld). write is whether the request was a write.
func classify(err error, write bool) (status int, code, detail string, internal bool) {
	var he *httpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		return he.status, he.code, he.Error(), false
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("request body over the %d-byte limit", mbe.Limit), false
	case errors.Is(err, ErrNotWitnessed):
		return http.StatusServiceUnavailable, CodeNotWitnessed, err.Error() +
			"; the entry stays in the ledger: retry with the same Idempotency-Key to be answered once it is witnessed", false
	case errors.Is(err, ErrOutcomeUnknown):
		return http.StatusServiceUnavailable, CodeOutcomeUnknown,
			"outcome unknown; retry with the same Idempotency-Key (" + err.Error() + ")", true
	case errors.Is(err, ErrOverloaded):
		return http.StatusServiceUnavailable, CodeOverloaded, err.Error(), false
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, CodeUnavailable, err.Error(), true
	case errors.Is(err, ErrForbiddenSource):
		return http.StatusForbidden, CodeForbiddenSource, err.Error(), false
	case errors.Is(err, ErrIdempotencyConflict):
		return http.StatusConflict, CodeIdempotencyConflict, err.Error(), false
	case errors.Is(err, ErrRedacted):
		return http.StatusGone, CodeRedacted, err.Error(), false
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, CodeNotFound, err.Error(), false
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge, CodeBodyTooLarge, err.Error(), false
	case errors.Is(err, ErrUnprocessable):
		return http.StatusUnprocessableEntity, CodeInvalidParameters, err.Error(), false
	case errors.Is(err, ErrBadInput):
		return http.StatusBadRequest, CodeBadRequest, err.Error(), false
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, CodeUnauthenticated, err.Error(), false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		if write {
			// The backend may have committed before it noticed: say so.
			return http.StatusServiceUnavailable, CodeOutcomeUnknown,
				"outcome unknown; retry with the same Idempotency-Key (request deadline passed)", true
		}
		return http.StatusServiceUnavailable, CodeUnavailable, "request deadline passed", true
	}
	return http.StatusInternalServerError, CodeInternal, "internal error; see the server log for the request id", true
}

// newProblem builds the problem for status and code.
func newProblem(status int, code, detail string) *Problem {
	return &Problem{
		Type:   "urn:govledger:problem:" + strings.ToLower(strings.ReplaceAll(code, "_", "-")),
		Title:  problemTitles[code],
		Status: status,
		Detail: detail,
		Code:   code,
	}
}

// writeProblem writes p as the answer, with Retry-After when p carries one.
func writeProblem(w http.ResponseWriter, p *Problem) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	p.sanitize()
	b, err := marshal(p)
	if err != nil { // cannot happen: Problem has only valid strings and ints
		b = []byte(`{"type":"urn:govledger:problem:internal","title":"Internal error","status":500,"code":"INTERNAL"}`)
		p.Status = http.StatusInternalServerError
	}
	w.WriteHeader(p.Status)
	w.Write(append(b, '\n'))
}

// sanitize keeps the strings that may quote the request (a path, a
// parameter) valid UTF-8, so the problem can always be encoded.
func (p *Problem) sanitize() {
	p.Detail = strings.ToValidUTF8(p.Detail, "\uFFFD")
	p.Instance = strings.ToValidUTF8(p.Instance, "\uFFFD")
}

// retrySeconds rounds d up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}

// marshal is the one JSON encoding of answers: compact, no HTML escaping,
// deterministic.
func marshal(v any) ([]byte, error) {
	return json.Marshal(v, jsontext.EscapeForHTML(false), json.Deterministic(true))
}

// writeJSON writes v with status as application/json.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// markWritten sets p's Written for an answer to a write that failed with
// err: "yes" (and the seq) for a stored write not witnessed, "unknown"
// when the outcome is unknown, else "no".
func (p *Problem) markWritten(err error) {
	var nw *NotWitnessedError
	switch {
	case p.Code == CodeNotWitnessed && errors.As(err, &nw):
		p.Written, p.Seq = "yes", nw.Seq
	case p.Code == CodeOutcomeUnknown || p.Code == CodeInternal:
		p.Written = "unknown"
	default:
		p.Written = "no"
	}
}
