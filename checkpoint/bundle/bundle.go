package bundle

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/ledger"
)

// Schemas of the two bundle kinds.
const (
	SchemaInclusion   = "govledger.proof/v1"
	SchemaConsistency = "govledger.consistency/v1"
)

// MaxBundleSize is the largest bundle Verify reads: a 1 MiB payload in
// base64 plus the entry, proof and checkpoint, with room to spare.
const MaxBundleSize = 4 << 20

// A Source is a ledger that can prove its entries; *ledger.Ledger is one.
type Source interface {
	checkpoint.TreeReader
	// Get returns entry seq and its canonical bytes.
	Get(ctx context.Context, seq uint64) (*entry.Entry, []byte, error)
	// Blob returns the stored bytes whose SHA-256 is sum, or an error
	// wrapping ledger.ErrRedacted (removed by a redaction) or
	// ledger.ErrNotFound (never stored, e.g. too large).
	Blob(ctx context.Context, sum entry.Hash) ([]byte, error)
	// ProveInclusion returns the audit path of entry seq (leaf seq-1) in the
	// tree of size entries.
	ProveInclusion(ctx context.Context, seq, size uint64) (tlog.RecordProof, error)
}

var _ Source = (*ledger.Ledger)(nil)

// Inclusion is an inclusion bundle; see the package doc for its JSON.
type Inclusion struct {
	Schema         string       `json:"schema"`
	Origin         string       `json:"origin"`
	Seq            uint64       `json:"seq"`
	LeafIndex      uint64       `json:"leaf_index"`
	TreeSize       uint64       `json:"tree_size"`
	Entry          string       `json:"entry"`
	EntryHash      entry.Hash   `json:"entry_hash"`
	PayloadB64     *string      `json:"payload_b64,omitzero"`
	Redacted       bool         `json:"redacted,omitzero"`
	InclusionProof []entry.Hash `json:"inclusion_proof"`
	Checkpoint     string       `json:"checkpoint"`
}

// Consistency is a consistency bundle; see the package doc for its JSON.
type Consistency struct {
	Schema           string       `json:"schema"`
	Origin           string       `json:"origin"`
	OldSize          uint64       `json:"old_size"`
	NewSize          uint64       `json:"new_size"`
	OldCheckpoint    string       `json:"old_checkpoint"`
	NewCheckpoint    string       `json:"new_checkpoint"`
	ConsistencyProof []entry.Hash `json:"consistency_proof"`
}

// Options say which checkpoint a proof is made against.
type Options struct {
	// Signer, when set, signs a new checkpoint of the source at its current
	// size (checkpoint.Make; no entry is added).
	Signer note.Signer
	// Checkpoint, when Signer is nil, is an existing signed checkpoint of
	// the source to prove against; the source must extend it. Its
	// signature is not checked here (the bundle's verifier checks it).
	Checkpoint []byte
}

func (o *Options) checkpoint(ctx context.Context, src Source) (*checkpoint.Checkpoint, error) {
	var signed []byte
	switch {
	case o == nil || o.Signer == nil && o.Checkpoint == nil:
		return nil, errors.New("bundle: need a signer key or an existing checkpoint")
	case o.Signer != nil:
		b, err := checkpoint.Make(ctx, src, o.Signer)
		if err != nil {
			return nil, err
		}
		signed = b
	default:
		signed = o.Checkpoint
	}
	cp, err := checkpoint.Parse(signed)
	if err != nil {
		return nil, err
	}
	if err := checkpoint.CheckLedger(ctx, src, cp); err != nil {
		return nil, err
	}
	return cp, nil
}

// ErrSeqRange is returned by Prove for a seq outside 1..checkpoint size.
var ErrSeqRange = errors.New("bundle: seq outside the checkpoint's tree")

// Prove returns the inclusion bundle of entry seq against the checkpoint
// chosen by opts. It checks its own proof before returning it (a ledger
// whose stored tree disagrees with its entries fails here, not at the
// verifier). The payload is included when the source still has it;
// Redacted is set when Blob reports ledger.ErrRedacted.
func Prove(ctx context.Context, src Source, seq uint64, opts *Options) (*Inclusion, error) {
	cp, err := opts.checkpoint(ctx, src)
	if err != nil {
		return nil, err
	}
	if seq == 0 || seq > cp.Size {
		return nil, fmt.Errorf("%w: seq %d, checkpoint size %d", ErrSeqRange, seq, cp.Size)
	}
	e, canon, err := src.Get(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("bundle: entry %d: %w", seq, err)
	}
	leaf := tlog.RecordHash(canon)
	p, err := src.ProveInclusion(ctx, seq, cp.Size)
	if err != nil {
		return nil, fmt.Errorf("bundle: inclusion proof of %d in %d: %w", seq, cp.Size, err)
	}
	if err := tlog.CheckRecord(p, int64(cp.Size), cp.Hash, int64(seq-1), leaf); err != nil {
		return nil, fmt.Errorf("bundle: ledger's own proof of entry %d fails (%v): %w", seq, err, ErrInclusionProof)
	}
	b := &Inclusion{Schema: SchemaInclusion, Origin: cp.Origin, Seq: seq, LeafIndex: seq - 1, TreeSize: cp.Size,
		Entry: string(canon), EntryHash: entry.Hash(leaf), InclusionProof: hashes(p), Checkpoint: string(cp.Signed)}
	if sum := e.Blob(); sum != nil {
		var data []byte
		if es, ok := src.(interface {
			EntryBlob(seq uint64, sum entry.Hash) ([]byte, error)
		}); ok {
			data, err = es.EntryBlob(seq, *sum) // per entry: a redaction stays
		} else {
			data, err = src.Blob(ctx, *sum)
		}
		switch {
		case err == nil:
			s := base64.StdEncoding.EncodeToString(data)
			b.PayloadB64 = &s
		case errors.Is(err, ledger.ErrRedacted):
			b.Redacted = true
		case errors.Is(err, ledger.ErrNotFound):
		default:
			return nil, fmt.Errorf("bundle: payload of entry %d: %w", seq, err)
		}
	}
	return b, nil
}

// ProveConsistency returns the consistency bundle from oldCheckpoint (a
// signed checkpoint of src, not verified here) to the checkpoint chosen by
// opts. src must extend both.
func ProveConsistency(ctx context.Context, src Source, oldCheckpoint []byte, opts *Options) (*Consistency, error) {
	old, err := checkpoint.Parse(oldCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("bundle: old checkpoint: %w", err)
	}
	if err := checkpoint.CheckLedger(ctx, src, old); err != nil {
		return nil, fmt.Errorf("bundle: old checkpoint: %w", err)
	}
	cp, err := opts.checkpoint(ctx, src)
	if err != nil {
		return nil, err
	}
	if old.Size > cp.Size {
		return nil, fmt.Errorf("bundle: old checkpoint size %d is newer than the new one (%d)", old.Size, cp.Size)
	}
	var p tlog.TreeProof
	if old.Size > 0 && old.Size < cp.Size {
		p, err = src.ProveConsistency(ctx, old.Size, cp.Size)
		if err != nil {
			return nil, fmt.Errorf("bundle: consistency proof %d..%d: %w", old.Size, cp.Size, err)
		}
	}
	b := &Consistency{Schema: SchemaConsistency, Origin: cp.Origin, OldSize: old.Size, NewSize: cp.Size,
		OldCheckpoint: string(old.Signed), NewCheckpoint: string(cp.Signed), ConsistencyProof: hashes(p)}
	if err := checkConsistency(old, cp, p); err != nil {
		return nil, fmt.Errorf("bundle: ledger's own consistency proof fails: %w", err)
	}
	return b, nil
}

func hashes[T ~[]tlog.Hash](p T) []entry.Hash {
	out := make([]entry.Hash, len(p))
	for i, h := range p {
		out[i] = entry.Hash(h)
	}
	return out
}

func tlogHashes(p []entry.Hash) []tlog.Hash {
	out := make([]tlog.Hash, len(p))
	for i, h := range p {
		out[i] = tlog.Hash(h)
	}
	return out
}

func payloadSize(e *entry.Entry) *int64 {
	switch e.Kind {
	case entry.KindHandoff:
		return e.PayloadSize
	case entry.KindSnapshot:
		return e.Size
	}
	return nil
}

// Marshal encodes a bundle as indented JSON with a final newline, its
// schema first.
func Marshal(b any) ([]byte, error) {
	out, err := json.Marshal(b, jsontext.EscapeForHTML(false), jsontext.WithIndent("  "), json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Payload statuses in a Result.
const (
	PayloadVerified = "verified"     // included, and its hash and size match the entry
	PayloadRedacted = "redacted"     // removed by a redaction; the entry still commits to its hash
	PayloadAbsent   = "not_included" // the entry has a payload hash but the bundle has no bytes
	PayloadNone     = "none"         // the entry kind has no payload
)

// A Result says what Verify established.
type Result struct {
	Kind      string   `json:"kind"` // "inclusion" or "consistency"
	Origin    string   `json:"origin"`
	Signers   []string `json:"signers"` // "name+hash" of verified checkpoint signatures
	Seq       uint64   `json:"seq,omitzero"`
	TreeSize  uint64   `json:"tree_size,omitzero"`
	EntryHash string   `json:"entry_hash,omitzero"`
	EntryKind string   `json:"entry_kind,omitzero"`
	Payload   string   `json:"payload,omitzero"`
	OldSize   uint64   `json:"old_size,omitzero"`
	NewSize   uint64   `json:"new_size,omitzero"`
}

// Verify checks a bundle (either kind) without the ledger, trusting only
// verifiers. For an inclusion bundle it checks, in order: the checkpoint's
// signature (ErrCheckpoint wrapping the checkpoint error) and that it is the
// bundle's origin (ErrOrigin) and tree size (ErrMismatch); leaf_index =
// seq-1 <= size (ErrMismatch); entry_hash = SHA-256(0x00||entry)
// (ErrEntryHash); that the entry is a canonical ledger entry (ErrEntry)
// with the bundle's seq (ErrMismatch); the inclusion proof of leaf seq-1
// against the checkpoint's root (ErrInclusionProof); and the payload's
// SHA-256 and size against the entry (ErrPayloadHash) unless redacted or
// absent. For a
// consistency bundle: both checkpoints' signatures and origin, their sizes
// against the bundle, and the consistency proof between their roots
// (ErrConsistencyProof). Every failure of a well-formed bundle wraps
// ErrInvalid; a document that is not a bundle fails with ErrUnreadable.
func Verify(data []byte, verifiers note.Verifiers) (*Result, error) {
	if len(data) > MaxBundleSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrUnreadable, MaxBundleSize)
	}
	if err := strictjson.Check("", data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	switch probe.Schema {
	case SchemaInclusion:
		var b Inclusion
		if err := strictjson.Unmarshal("", data, &b); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		return b.Verify(verifiers)
	case SchemaConsistency:
		var b Consistency
		if err := strictjson.Unmarshal("", data, &b); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		return b.Verify(verifiers)
	}
	return nil, fmt.Errorf("%w: schema %q, want %q or %q", ErrUnreadable, probe.Schema, SchemaInclusion, SchemaConsistency)
}

func openCheckpoint(which, signed string, verifiers note.Verifiers, origin string) (*checkpoint.Checkpoint, error) {
	if signed == "" {
		return nil, fmt.Errorf("%w: %s missing", ErrUnreadable, which)
	}
	cp, err := checkpoint.Open([]byte(signed), verifiers, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", which, ErrCheckpoint, err)
	}
	if cp.Origin != origin {
		return nil, fmt.Errorf("%s: %w: checkpoint origin %q, bundle origin %q", which, ErrOrigin, cp.Origin, origin)
	}
	return cp, nil
}

// Verify checks an inclusion bundle; see the package function Verify.
func (b *Inclusion) Verify(verifiers note.Verifiers) (*Result, error) {
	if b.Schema != SchemaInclusion {
		return nil, fmt.Errorf("%w: schema %q", ErrUnreadable, b.Schema)
	}
	if b.Entry == "" || b.Origin == "" || b.Seq == 0 {
		return nil, fmt.Errorf("%w: origin, seq and entry are required", ErrUnreadable)
	}
	cp, err := openCheckpoint("checkpoint", b.Checkpoint, verifiers, b.Origin)
	if err != nil {
		return nil, err
	}
	r := &Result{Kind: "inclusion", Origin: cp.Origin, Signers: cp.Signers, Seq: b.Seq, TreeSize: cp.Size}
	if b.TreeSize != cp.Size {
		return r, fmt.Errorf("%w: tree_size %d, checkpoint size %d", ErrMismatch, b.TreeSize, cp.Size)
	}
	if b.LeafIndex != b.Seq-1 {
		return r, fmt.Errorf("%w: leaf_index %d for seq %d, want %d", ErrMismatch, b.LeafIndex, b.Seq, b.Seq-1)
	}
	if b.Seq > cp.Size {
		return r, fmt.Errorf("%w: seq %d beyond checkpoint size %d", ErrMismatch, b.Seq, cp.Size)
	}
	canon := []byte(b.Entry)
	leaf := entry.LeafHash(canon)
	if leaf != b.EntryHash {
		return r, fmt.Errorf("%w: entry hashes to %s, bundle says %s", ErrEntryHash, leaf, b.EntryHash)
	}
	r.EntryHash = leaf.String()
	e, err := entry.Decode(canon)
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrEntry, err)
	}
	r.EntryKind = e.Kind
	if e.Seq != b.Seq {
		return r, fmt.Errorf("%w: entry has seq %d, bundle says %d", ErrMismatch, e.Seq, b.Seq)
	}
	if err := tlog.CheckRecord(tlogHashes(b.InclusionProof), int64(cp.Size), cp.Hash, int64(b.LeafIndex), tlog.Hash(leaf)); err != nil {
		return r, fmt.Errorf("%w: entry %d in tree of %d: %v", ErrInclusionProof, b.Seq, cp.Size, err)
	}
	sum := e.Blob()
	switch {
	case sum == nil:
		if b.PayloadB64 != nil || b.Redacted {
			return r, fmt.Errorf("%w: a %s entry has no payload", ErrMismatch, e.Kind)
		}
		r.Payload = PayloadNone
	case b.Redacted:
		if b.PayloadB64 != nil {
			return r, fmt.Errorf("%w: redacted bundle carries a payload", ErrMismatch)
		}
		r.Payload = PayloadRedacted
	case b.PayloadB64 == nil:
		r.Payload = PayloadAbsent
	default:
		data, err := base64.StdEncoding.Strict().DecodeString(*b.PayloadB64)
		if err != nil {
			return r, fmt.Errorf("%w: payload_b64: %v", ErrUnreadable, err)
		}
		if got := entry.Sum256(data); got != *sum {
			return r, fmt.Errorf("%w: payload SHA-256 %s, entry says %s", ErrPayloadHash, got, sum)
		}
		if n := payloadSize(e); n != nil && *n != int64(len(data)) {
			return r, fmt.Errorf("%w: payload is %d bytes, entry says %d", ErrPayloadHash, len(data), *n)
		}
		r.Payload = PayloadVerified
	}
	return r, nil
}

// Verify checks a consistency bundle; see the package function Verify.
func (b *Consistency) Verify(verifiers note.Verifiers) (*Result, error) {
	if b.Schema != SchemaConsistency {
		return nil, fmt.Errorf("%w: schema %q", ErrUnreadable, b.Schema)
	}
	if b.Origin == "" {
		return nil, fmt.Errorf("%w: origin is required", ErrUnreadable)
	}
	old, err := openCheckpoint("old_checkpoint", b.OldCheckpoint, verifiers, b.Origin)
	if err != nil {
		return nil, err
	}
	cp, err := openCheckpoint("new_checkpoint", b.NewCheckpoint, verifiers, b.Origin)
	if err != nil {
		return nil, err
	}
	r := &Result{Kind: "consistency", Origin: cp.Origin, Signers: cp.Signers, OldSize: old.Size, NewSize: cp.Size}
	if b.OldSize != old.Size || b.NewSize != cp.Size {
		return r, fmt.Errorf("%w: sizes %d..%d, checkpoints %d..%d", ErrMismatch, b.OldSize, b.NewSize, old.Size, cp.Size)
	}
	if err := checkConsistency(old, cp, tlogHashes(b.ConsistencyProof)); err != nil {
		return r, err
	}
	return r, nil
}

// emptyRoot is the RFC 6962 root of the empty tree, SHA-256("").
var emptyRoot = tlog.Hash(entry.Sum256(nil))

func checkConsistency(old, cp *checkpoint.Checkpoint, p tlog.TreeProof) error {
	switch {
	case old.Size > cp.Size:
		return fmt.Errorf("%w: old size %d > new size %d", ErrConsistencyProof, old.Size, cp.Size)
	case old.Size == 0:
		if old.Hash != emptyRoot || len(p) != 0 {
			return fmt.Errorf("%w: empty old tree needs the empty root and no proof", ErrConsistencyProof)
		}
	case old.Size == cp.Size:
		if old.Hash != cp.Hash || len(p) != 0 {
			return fmt.Errorf("%w: same size %d, roots differ or proof not empty", ErrConsistencyProof, old.Size)
		}
	default:
		if err := tlog.CheckTree(p, int64(cp.Size), cp.Hash, int64(old.Size), old.Hash); err != nil {
			return fmt.Errorf("%w: %d..%d: %v", ErrConsistencyProof, old.Size, cp.Size, err)
		}
	}
	return nil
}
