// Package ledgerbackend is the server.Backend of "govledger serve": the
// HTTP API's view of one open *ledger.Ledger, deciding with govern and
// appending through the ledger's group commit.
//
// Types:
//
//   - Backend (New): implements server.Backend. One process owns the
//     ledger (its file lock); every append goes through the Backend, which
//     is how Watch learns of new entries.
//   - Options: the policy loader, decision parameters, checkpoint signer,
//     metrics and the commit queue bound.
//   - Policy (LoadFiles): a registry and a lock, re-read by Reload.
//
// Guarantees:
//
//   - A write returns after its entries are durable, or with an error that
//     says nothing was written (wrapping server.ErrForbiddenSource,
//     ErrIdempotencyConflict, ErrOverloaded, ErrUnavailable, ErrBadInput),
//     or with one wrapping server.ErrOutcomeUnknown when a commit failed.
//     After a failed commit the ledger refuses writes until it is opened
//     again: Ready reports it and Failed is closed, so the process can exit
//     and be restarted (reopening is what settles the outcome).
//   - The source agent is read from the document before anything is
//     appended; a principal restricted to some agents cannot record a
//     handoff from any other (or from a document that names none).
//   - Idempotency keys are scoped by principal: the entry records
//     "<principal>/<key>", and the check that a key is new runs inside the
//     write transaction, so concurrent retries append once. A retry must
//     carry the same bytes and the same format, from and to, else it is
//     a conflict.
//   - Watch subscribes before it reads the backlog, so it never skips an
//     entry; Export stops at the head as of the call.
//
// The package never prints, exits or reads flags or the environment.
package ledgerbackend
