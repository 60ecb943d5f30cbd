package checkpoint

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// MaxCheckpointSize is the largest signed checkpoint Open and Parse accept,
// in bytes. It leaves room for origins, extension lines and 16+ signatures.
const MaxCheckpointSize = 64 << 10

// A Checkpoint is a commitment to the first Size entries of the ledger
// named Origin: Hash is the RFC 6962 root of their leaf hashes.
type Checkpoint struct {
	Origin     string
	Size       uint64
	Hash       tlog.Hash
	Extensions []string // extension lines, without their newlines; usually none

	// Signed is the signed note this checkpoint was read from (Open, Parse)
	// or made as (Make); nil for a Checkpoint built in memory.
	Signed []byte
	// Signers lists the "name+hash" of the signatures that verified (Open)
	// or that were made (Make); for Parse, every signature, unverified.
	Signers []string
}

// Text returns the checkpoint's note text (the body that is signed):
// origin, size and base64 root, each followed by a newline, then the
// extension lines. It fails with ErrMalformed if a field cannot be written
// unambiguously (empty origin, a newline in a line, an empty extension).
func (c *Checkpoint) Text() ([]byte, error) {
	if err := checkLine(c.Origin); err != nil {
		return nil, fmt.Errorf("%w: origin: %v", ErrMalformed, err)
	}
	if c.Size > math.MaxInt64 {
		return nil, fmt.Errorf("%w: size %d out of range", ErrMalformed, c.Size)
	}
	var b bytes.Buffer
	b.WriteString(c.Origin)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatUint(c.Size, 10))
	b.WriteByte('\n')
	b.WriteString(base64.StdEncoding.EncodeToString(c.Hash[:]))
	b.WriteByte('\n')
	for _, x := range c.Extensions {
		if err := checkLine(x); err != nil {
			return nil, fmt.Errorf("%w: extension line: %v", ErrMalformed, err)
		}
		b.WriteString(x)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func checkLine(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if !utf8.ValidString(s) {
		return errors.New("invalid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("control character %U", r)
		}
	}
	return nil
}

// ParseText parses a checkpoint's note text strictly: at least three
// non-empty lines; a non-empty origin without control characters; the
// size in canonical decimal (ErrNonCanonicalSize otherwise: "010", "+1")
// no larger than 2⁶³-1; the root as canonical padded standard base64 of
// exactly 32 bytes; extension lines non-empty. Every failure wraps
// ErrMalformed.
func ParseText(text []byte) (*Checkpoint, error) {
	if len(text) > MaxCheckpointSize {
		return nil, ErrTooLarge
	}
	if !utf8.Valid(text) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrMalformed)
	}
	s := string(text)
	if !strings.HasSuffix(s, "\n") {
		return nil, fmt.Errorf("%w: text does not end in a newline", ErrMalformed)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 3 {
		return nil, fmt.Errorf("%w: %d lines, want at least 3 (origin, size, root)", ErrMalformed, len(lines))
	}
	c := &Checkpoint{Origin: lines[0]}
	if err := checkLine(c.Origin); err != nil {
		return nil, fmt.Errorf("%w: line 1 (origin): %v", ErrMalformed, err)
	}
	n, err := strconv.ParseUint(lines[1], 10, 63)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%w: line 2 (size) %q out of range", ErrMalformed, lines[1])
		}
		return nil, fmt.Errorf("%w: line 2 (size) %q", ErrMalformed, lines[1])
	}
	if strconv.FormatUint(n, 10) != lines[1] {
		return nil, fmt.Errorf("%w: line 2 %q", ErrNonCanonicalSize, lines[1])
	}
	c.Size = n
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return nil, fmt.Errorf("%w: line 3 (root) %q is not base64 of 32 bytes", ErrMalformed, lines[2])
	}
	copy(c.Hash[:], root)
	for i, x := range lines[3:] {
		if err := checkLine(x); err != nil {
			return nil, fmt.Errorf("%w: line %d (extension): %v", ErrMalformed, i+4, err)
		}
		c.Extensions = append(c.Extensions, x)
	}
	return c, nil
}

// Sign returns c's text signed by signers, as a signed note. The C2SP spec
// recommends that the key name match the origin; Sign does not require it.
func Sign(c *Checkpoint, signers ...note.Signer) ([]byte, error) {
	if len(signers) == 0 {
		return nil, errors.New("checkpoint: no signer")
	}
	text, err := c.Text()
	if err != nil {
		return nil, err
	}
	return note.Sign(&note.Note{Text: string(text)}, signers...)
}

// A TreeReader reads a ledger's Merkle tree. *ledger.Ledger implements it.
// Its reads honour ctx's cancellation.
// Leaf i of the tree is the hash of entry seq i+1.
type TreeReader interface {
	// Origin returns the ledger's identity, the checkpoint origin line.
	Origin() string
	// TreeSize returns the number of entries.
	TreeSize(ctx context.Context) (uint64, error)
	// TreeHash returns the RFC 6962 root over the first size entries.
	TreeHash(ctx context.Context, size uint64) (tlog.Hash, error)
	// ProveConsistency returns the RFC 6962 consistency proof from the
	// tree of oldSize entries to the tree of newSize entries
	// (0 < oldSize <= newSize <= TreeSize).
	ProveConsistency(ctx context.Context, oldSize, newSize uint64) (tlog.TreeProof, error)
}

// Make returns a signed checkpoint of l at its current size: l's origin,
// size and root, signed by signer. It only reads l: no entry is added.
func Make(ctx context.Context, l TreeReader, signer note.Signer) ([]byte, error) {
	n, err := l.TreeSize(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: tree size: %w", err)
	}
	h, err := l.TreeHash(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: tree hash at %d: %w", n, err)
	}
	return Sign(&Checkpoint{Origin: l.Origin(), Size: n, Hash: h}, signer)
}

// Open verifies the signed checkpoint msg and parses its text.
//
// At least one signature must be from a key in verifiers (ErrUnknownKey
// otherwise); a signature from a known key that does not verify fails with
// ErrBadSignature; signatures from unknown keys are ignored, as the signed
// note spec requires. When origin is not empty, the checkpoint's origin must
// equal it (ErrOrigin). The text is parsed by ParseText. Input larger than
// MaxCheckpointSize fails with ErrTooLarge.
func Open(msg []byte, verifiers note.Verifiers, origin string) (*Checkpoint, error) {
	if len(msg) > MaxCheckpointSize {
		return nil, ErrTooLarge
	}
	if verifiers == nil {
		verifiers = note.VerifierList()
	}
	n, err := note.Open(msg, verifiers)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return nil, fmt.Errorf("%w (signed by %s)", ErrUnknownKey, sigNames(unverified.Note.UnverifiedSigs))
		case errors.As(err, &invalid):
			return nil, fmt.Errorf("%w: key %s+%08x", ErrBadSignature, invalid.Name, invalid.Hash)
		}
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c, err := ParseText([]byte(n.Text))
	if err != nil {
		return nil, err
	}
	if origin != "" && c.Origin != origin {
		return nil, fmt.Errorf("%w: checkpoint is for %q, want %q", ErrOrigin, c.Origin, origin)
	}
	c.Signed = bytes.Clone(msg)
	for _, s := range n.Sigs {
		c.Signers = append(c.Signers, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	return c, nil
}

// Parse parses a signed checkpoint WITHOUT verifying any signature: use it
// only where no trust decision depends on the result (a prover choosing
// which size to prove against, or reading back the caller's own state).
// The note envelope and text are checked as strictly as by Open.
func Parse(msg []byte) (*Checkpoint, error) {
	if len(msg) > MaxCheckpointSize {
		return nil, ErrTooLarge
	}
	_, err := note.Open(msg, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c, err := ParseText([]byte(unverified.Note.Text))
	if err != nil {
		return nil, err
	}
	c.Signed = bytes.Clone(msg)
	for _, s := range unverified.Note.UnverifiedSigs {
		c.Signers = append(c.Signers, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	return c, nil
}

func sigNames(sigs []note.Signature) string {
	if len(sigs) == 0 {
		return "no key"
	}
	var names []string
	for _, s := range sigs {
		names = append(names, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	return strings.Join(names, ", ")
}
