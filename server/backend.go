package server

import (
	"context"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/reason"
)

// Backend is the ledger as the HTTP layer sees it: storage-neutral, safe for
// concurrent use. Errors wrap the sentinels of errors.go, which decide the
// HTTP status; any other error is answered 500 and logged.
//
// Writes (Submit, SubmitBatch, Unblock, Redact, Reload) return only after
// what they appended is durable, or with an error saying nothing was
// written, or with one wrapping ErrOutcomeUnknown. Reads never wait for
// writes.
type Backend interface {
	// Submit decides and appends one handoff. A rejected handoff is
	// appended too (Decision "rejected"). A request whose IdempotencyKey
	// was seen before with the same bytes returns the first result with
	// Replayed set and appends nothing; with other bytes it fails with
	// ErrIdempotencyConflict. A source outside r.Sources fails with
	// ErrForbiddenSource and appends nothing.
	Submit(ctx context.Context, r SubmitRequest) (*SubmitResult, error)
	// SubmitBatch is Submit for several handoffs committed as one group.
	// It returns one BatchItem per request, in order; its own error means
	// no item was handled (nothing written, or ErrOutcomeUnknown).
	SubmitBatch(ctx context.Context, rs []SubmitRequest) ([]BatchItem, error)
	// Validate decides as Submit would, against the ledger's current state,
	// and writes nothing (Seq 0, EntryHash "").
	Validate(ctx context.Context, r SubmitRequest) (*SubmitResult, error)
	// Outcome appends an outcome entry linked to the accepted handoff
	// r.DecisionSeq (its agent and workflow id are the handoff's). It
	// fails with ErrUnprocessable, nothing written, when the decision is
	// missing, not a handoff, rejected, or has an outcome already; with
	// ErrForbiddenSource when r.Agents does not allow the handoff's
	// target. A request whose IdempotencyKey was used before for the same
	// outcome returns the first result with Replayed set; for anything
	// else ErrIdempotencyConflict.
	Outcome(ctx context.Context, r OutcomeRequest) (*OutcomeResult, error)

	// Entries returns one page of entries matching q, newest first.
	Entries(ctx context.Context, q Query) (*Page, error)
	// Entry returns entry seq (ErrNotFound beyond the head).
	Entry(ctx context.Context, seq uint64) (*EntryView, error)
	// Payload returns the stored bytes of entry seq's document, or of a
	// snapshot entry's content (ErrNotFound without one, ErrRedacted when
	// they were redacted).
	Payload(ctx context.Context, seq uint64) ([]byte, error)
	// Proof returns the inclusion proof of entry seq in the tree of
	// treeSize entries (0: the current head), leaving Checkpoint and
	// Consistency empty: it signs nothing. The server answers readers
	// against the latest signed checkpoint only (LatestProof), never one
	// signed at a size a reader names.
	Proof(ctx context.Context, seq, treeSize uint64) (*Proof, error)
	// Workflow returns one page of a workflow's entries in seq order: at
	// most limit (> 0) of those after seq after. The page's Next is the
	// after of the next page (0 on the last). ErrNotFound when the
	// workflow has no entry at all.
	Workflow(ctx context.Context, id string, after uint64, limit int) (*Page, error)
	// Blocks returns the agents blocked now.
	Blocks(ctx context.Context) ([]Block, error)
	// Checkpoint returns a signed C2SP checkpoint note of the current head
	// (ErrUnavailable when the server has no signing key). It is the only
	// method that signs: a checkpoint of the latest size, never of a past
	// one (the same note while the head does not move).
	Checkpoint(ctx context.Context) ([]byte, error)
	// Consistency returns the RFC 6962 consistency proof between tree sizes
	// from and to (lowercase hex hashes).
	Consistency(ctx context.Context, from, to uint64) ([]string, error)
	// Export calls fn with each export line (as "govledger export" writes
	// them, without the newline) of the entries after seq after, in order,
	// up to the head at the call; it stops at fn's first error.
	Export(ctx context.Context, after uint64, fn func(line []byte) error) error
	// Watch calls fn with every entry after seq after, in order, then with
	// each new entry as it commits, until ctx ends (returning ctx.Err()) or
	// fn fails (returning its error). It never skips an entry.
	Watch(ctx context.Context, after uint64, fn func(EntryView) error) error

	// Unblock appends an unblock entry for agent (ErrNotFound when the
	// agent is not blocked).
	Unblock(ctx context.Context, agent, reason, operator string) (*EntryView, error)
	// Redact appends a redaction of entry seq's payload (ErrNotFound for no
	// such entry or payload, ErrRedacted when already redacted).
	Redact(ctx context.Context, seq uint64, reason, operator string) (*EntryView, error)
	// Reload re-reads the manifest and lock and appends a snapshot entry
	// for each that changed (none: an empty slice).
	Reload(ctx context.Context, operator string) ([]EntryView, error)
	// Ready reports whether the backend can serve (nil) or why not.
	Ready(ctx context.Context) error
}

// SubmitRequest is one handoff to decide (and, for Submit, to append).
type SubmitRequest struct {
	Body   []byte // the document's raw bytes
	Format string // format id, or "" to detect it
	From   string // source and target for formats that name no agents
	To     string
	// Submitter is the authenticated principal's name, stored in the entry.
	Submitter string
	// Sources, when not nil, are the only source agents the submitter may
	// submit for: a handoff from any other source (or from an unknown one)
	// fails with ErrForbiddenSource and nothing is written.
	Sources []string
	// IdempotencyKey makes a retry return the first answer ("" for none).
	IdempotencyKey string
	// TraceParent is a W3C traceparent header, stored with the entry ("" for none).
	TraceParent string
	// WorkflowID is the workflow the request names outside the document
	// (the Govledger-Workflow header, a batch line's "workflow", else the
	// traceparent's trace-id; "" for none). The entry's workflow_id is the
	// document's own when it has one, else this; a document whose own
	// differs fails with ErrUnprocessable, nothing written.
	WorkflowID string
}

// OutcomeRequest is the body of POST /v1/outcomes with the request's
// principal and headers: how the target of an accepted handoff finished.
type OutcomeRequest struct {
	DecisionSeq  uint64 `json:"decision_seq"`
	Status       string `json:"status"`                 // succeeded, failed or cancelled
	OutputSHA256 string `json:"output_sha256,omitzero"` // 64 lowercase hex digits, or ""
	DurationMS   *int64 `json:"duration_ms,omitzero"`   // >= 0, or nil
	// Submitter is the authenticated principal's name, stored in the entry.
	Submitter string `json:"-"`
	// Agents, when not nil, are the only agents the submitter may record
	// outcomes for: the handoff's target must be among them.
	Agents         []string `json:"-"`
	IdempotencyKey string   `json:"-"`
	TraceParent    string   `json:"-"`
}

// OutcomeResult is the answer to POST /v1/outcomes (201, or 200 for a
// replay).
type OutcomeResult struct {
	Seq         uint64  `json:"seq"`
	Kind        string  `json:"kind"` // "outcome"
	DecisionSeq uint64  `json:"decision_seq"`
	WorkflowID  *string `json:"workflow_id"` // the handoff's, null when it has none
	Agent       string  `json:"agent"`       // the handoff's target
	Status      string  `json:"status"`
	// Replayed is set when this is the first answer to the same
	// Idempotency-Key: nothing was appended now (answered 200).
	Replayed bool `json:"-"`
}

// SubmitResult is the answer to a submission: the JSON body of a 201, and
// of each result line of a batch.
type SubmitResult struct {
	Seq        uint64          `json:"seq"`        // 0 for Validate
	EntryHash  string          `json:"entry_hash"` // lowercase hex; "" for Validate
	Decision   string          `json:"decision"`   // accepted or rejected
	Reasons    []reason.Reason `json:"reasons"`
	Format     string          `json:"format,omitzero"`
	HandoffID  string          `json:"handoff_id,omitzero"`
	Source     string          `json:"source,omitzero"`
	Target     string          `json:"target,omitzero"`
	WorkflowID string          `json:"workflow_id,omitzero"`
	// Replayed is set when this is the first answer to the same
	// Idempotency-Key: nothing was appended now.
	Replayed bool `json:"replayed,omitzero"`
}

// BatchItem is the outcome of one request of a batch: a result or an error
// (wrapping the sentinels, as Submit's).
type BatchItem struct {
	Result *SubmitResult
	Err    error
}

// EntryView is one ledger entry as the API shows it.
type EntryView struct {
	Seq   uint64         `json:"seq"`
	Hash  string         `json:"hash"`  // lowercase hex leaf hash
	Entry jsontext.Value `json:"entry"` // the canonical entry bytes
}

// Query selects entries as "govledger log" does; all filters combine (AND).
type Query struct {
	Agent    string    // source or target
	Decision string    // accepted or rejected
	Code     string    // a reason code
	Format   string    // a format id
	Workflow string    // a workflow id
	Handoff  string    // a handoff id
	Kind     string    // an entry kind (handoff, snapshot, unblock, ...)
	Since    time.Time // entries at or after (zero: no bound)
	Until    time.Time // entries before (zero: no bound)
	Before   uint64    // cursor: only seq < Before; 0 starts at the head
	Limit    int       // at most this many entries (the server always sets it, > 0)
}

// Page is one page of entries, newest first.
type Page struct {
	Entries []EntryView `json:"entries"`
	// Next is the cursor (Query.Before) of the next, older page; 0 when
	// this is the last page.
	Next uint64 `json:"next,omitzero"`
}

// Block is an agent blocked now.
type Block struct {
	Agent     string `json:"agent"`
	Since     uint64 `json:"since"`     // seq of the entry that blocked it
	Submitter string `json:"submitter"` // who submitted that entry
	Code      string `json:"code"`      // the reason code that blocked it (HASH_MISMATCH)
	Message   string `json:"message"`
}

// Proof is an inclusion proof of one entry with the checkpoint it proves
// against: the server's latest (TreeSize is its size). A reader that holds
// an older tree asks for it (tree_size=K) and gets, besides, the
// consistency proof from K to TreeSize.
type Proof struct {
	Seq        uint64   `json:"seq"`
	TreeSize   uint64   `json:"tree_size"`
	LeafHash   string   `json:"leaf_hash"`
	RootHash   string   `json:"root_hash"`
	Hashes     []string `json:"hashes"`     // audit path, RFC 6962 order, lowercase hex
	Checkpoint string   `json:"checkpoint"` // signed note text ("" when the server has no key)
	// Consistency proves the tree of the size the reader asked for (From)
	// a prefix of this one (To == TreeSize); nil when none was asked for.
	Consistency *Consistency `json:"consistency,omitzero"`
}

// Consistency is an RFC 6962 consistency proof between two tree sizes.
type Consistency struct {
	From   uint64   `json:"from"`
	To     uint64   `json:"to"`
	Hashes []string `json:"hashes"` // lowercase hex
}
