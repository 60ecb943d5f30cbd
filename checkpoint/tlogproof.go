package checkpoint

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// ProofHeader is the first line of a C2SP tlog-proof (c2sp.org/tlog-proof).
const ProofHeader = "c2sp.org/tlog-proof@v1"

// ErrProofFormat is returned (wrapped) by ParseProof for text that is not
// a well-formed tlog-proof.
var ErrProofFormat = errors.New("malformed tlog-proof")

// A Proof is a c2sp.org/tlog-proof@v1: the index of an entry, its
// inclusion proof, and a (cosigned) checkpoint of the tree the proof is
// for, with optional opaque extra data. govledger puts the entry's
// canonical bytes in Extra, so the proof carries what it proves.
type Proof struct {
	Extra      []byte
	Index      uint64
	Hashes     []tlog.Hash
	Checkpoint []byte // the signed note, with its cosignatures
}

// Format returns the proof's text:
//
//	c2sp.org/tlog-proof@v1
//	[extra <base64>]
//	index <decimal>
//	<base64 hash>...
//	<empty line>
//	<signed checkpoint>
func (p *Proof) Format() []byte {
	var b bytes.Buffer
	b.WriteString(ProofHeader + "\n")
	if len(p.Extra) > 0 {
		b.WriteString("extra " + base64.StdEncoding.EncodeToString(p.Extra) + "\n")
	}
	b.WriteString("index " + strconv.FormatUint(p.Index, 10) + "\n")
	for _, h := range p.Hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

// IsProof reports whether data starts as a tlog-proof.
func IsProof(data []byte) bool { return bytes.HasPrefix(data, []byte(ProofHeader+"\n")) }

// ParseProof parses a tlog-proof strictly (canonical decimal index,
// canonical base64, at most 63 hashes). The checkpoint is not verified:
// see Proof.Verify.
func ParseProof(data []byte) (*Proof, error) {
	if len(data) > MaxCheckpointSize+(1<<17) {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrProofFormat, MaxCheckpointSize+(1<<17))
	}
	head, cp, ok := strings.Cut(string(data), "\n\n")
	if !ok || !IsProof(data) {
		return nil, fmt.Errorf("%w: want %q, the proof lines, an empty line and a checkpoint", ErrProofFormat, ProofHeader)
	}
	lines := strings.Split(head, "\n")[1:]
	p := &Proof{Checkpoint: []byte(cp)}
	if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
		x, err := base64.StdEncoding.Strict().DecodeString(strings.TrimPrefix(lines[0], "extra "))
		if err != nil || len(x) == 0 {
			return nil, fmt.Errorf("%w: line 2: extra is not base64", ErrProofFormat)
		}
		p.Extra = x
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "index ") {
		return nil, fmt.Errorf("%w: no index line", ErrProofFormat)
	}
	s := strings.TrimPrefix(lines[0], "index ")
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil || strconv.FormatUint(n, 10) != s {
		return nil, fmt.Errorf("%w: index %q is not a canonical decimal", ErrProofFormat, s)
	}
	p.Index = n
	if len(lines)-1 > 63 {
		return nil, fmt.Errorf("%w: %d hashes, at most 63", ErrProofFormat, len(lines)-1)
	}
	for i, l := range lines[1:] {
		h, err := base64.StdEncoding.Strict().DecodeString(l)
		if err != nil || len(h) != tlog.HashSize {
			return nil, fmt.Errorf("%w: hash %d %q is not base64 of 32 bytes", ErrProofFormat, i+1, l)
		}
		p.Hashes = append(p.Hashes, tlog.Hash(h))
	}
	return p, nil
}

// Verify checks the proof against policy: the checkpoint satisfies it
// (Policy.Open: log signature and witness quorum), origin (when set) is
// the checkpoint's, and the leaf hash of Extra is at Index of the
// checkpoint's tree. It returns the checkpoint and the cosigning
// witnesses. A proof without Extra fails: govledger's proofs carry the
// entry.
func (p *Proof) Verify(policy *Policy, origin string) (*Checkpoint, []string, error) {
	cp, cosigners, err := policy.Open(p.Checkpoint, origin)
	if err != nil {
		return cp, cosigners, err
	}
	if len(p.Extra) == 0 {
		return cp, cosigners, fmt.Errorf("%w: no extra line holding the entry", ErrProofFormat)
	}
	if p.Index >= cp.Size {
		return cp, cosigners, fmt.Errorf("inclusion proof: index %d beyond checkpoint size %d", p.Index, cp.Size)
	}
	leaf := tlog.RecordHash(p.Extra)
	if err := tlog.CheckRecord(p.Hashes, int64(cp.Size), cp.Hash, int64(p.Index), leaf); err != nil {
		return cp, cosigners, fmt.Errorf("inclusion proof: entry at index %d in tree of %d: %w", p.Index, cp.Size, err)
	}
	return cp, cosigners, nil
}
