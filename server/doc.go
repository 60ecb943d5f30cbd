// Package server is the HTTP API of "govledger serve": JSON under /v1,
// RFC 9457 problems, bearer tokens and mutual TLS, limits, metrics and the
// embedded OpenAPI 3.1 document (OpenAPI, served on /openapi.json).
//
// The server owns HTTP only. Everything about the ledger goes through a
// Backend (backend.go), which reports failures by wrapping the sentinels of
// errors.go; the server maps them to statuses:
//
//	ErrNotFound 404, ErrRedacted 410, ErrIdempotencyConflict 409,
//	ErrForbiddenSource 403, ErrBadInput 400, ErrUnprocessable 422,
//	ErrTooLarge 413, ErrOverloaded 503 (Retry-After), ErrUnavailable 503,
//	ErrOutcomeUnknown 503 ("retry with the same Idempotency-Key"),
//	anything else 500 (logged; the answer says nothing more).
//
// Types:
//
//   - Server (New, Handler, Serve, ServeTLS, Reload, Routes) and its Config:
//     limits, timeouts, logger, clock. Serve drains on shutdown: requests
//     in flight finish, event streams and exports end.
//   - Backend and its values: SubmitRequest, SubmitResult, BatchItem,
//     EntryView, Query, Page, Block, Proof.
//   - Principal and Scope; Authenticator, implemented by TokenStore over a
//     TokensFile (the tokens file keeps only SHA-256 hashes of tokens, see
//     NewToken, ParseTokensFile, WriteTokensFile).
//   - Problem, the body of every error answer, with its Code constants.
//   - Metrics (NewMetrics): the backend calls ObserveAppend and
//     ObserveCommit; the server records the HTTP series itself.
//
// Every write is answered after what it appended is durable, or with a
// problem saying nothing was written ("written": "no"), except a storage
// failure whose outcome is unknown ("written": "unknown"): the client
// retries with the same Idempotency-Key and gets the first answer if the
// entry was in fact committed.
//
// The package never prints, exits or reads flags or the environment; the
// logger, the clock and the tokens come in through Config.
package server
