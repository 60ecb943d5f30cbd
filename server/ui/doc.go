// Package ui is the audit viewer of "govledger serve": HTML pages under
// /ui/ where a reviewer reads the ledger and checks an entry's inclusion
// proof in the browser.
//
// UI (New, with a Config) is an http.Handler and a server.UI: the server
// mounts it under /ui/ (server.Config.UI). It reads the ledger only through
// a server.Backend and authenticates with the API's tokens (a
// server.Authenticator):
//
//   - GET /ui/login shows a form; POST /ui/login exchanges a bearer token
//     for a session cookie (HttpOnly, SameSite=Strict, random id; the
//     sessions live in memory with an expiry and end with POST
//     /ui/logout). The token is authenticated again on every request, so a
//     revoked or expired token ends its sessions. The cookie also
//     authenticates the API's GET requests, which the pages' scripts use
//     (the proof, the event stream).
//   - Pages (ledger:read): / (overview), /timeline, /entries/{seq},
//     /workflows/{id}, /agents/{id}, /evidence (proof bundles and JSON
//     Lines slices). Payloads need payload:read; unblock and redact need
//     operator, a typed reason, a typed confirmation and the session's
//     CSRF token.
//   - Every answer carries a strict Content-Security-Policy (scripts and
//     styles from /ui/static/ only, no inline script or style). Document
//     data is only ever rendered through html/template's escaping, as
//     text.
//
// Errors are answered by server.ServeError, as problems
// (application/problem+json). Templates, styles and scripts are embedded:
// the viewer needs no network beyond its own server.
//
// The package never prints, exits or reads flags or the environment.
package ui
