package checkpoint

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Signature types of C2SP signed notes (https://c2sp.org/signed-note): the
// first byte of a verifier key's key material.
const (
	AlgEd25519     = 0x01 // a log's (or any) Ed25519 note signature
	AlgCosignature = 0x04 // a witness's timestamped Ed25519 cosignature (c2sp.org/tlog-cosignature)
)

// ErrUnknownAlgorithm is returned by NewVerifier for a verifier key of a
// signature type this package does not verify. A note's signature lines of
// such types are ignored when it is opened, as the signed-note spec says.
var ErrUnknownAlgorithm = errors.New("unknown verifier algorithm")

// NewVerifier parses a note verifier key "name+hash+base64(type||key)" of
// type 0x01 (Ed25519, as note.NewVerifier) or 0x04 (a timestamped Ed25519
// cosignature, c2sp.org/tlog-cosignature). Another type fails with an
// error wrapping ErrUnknownAlgorithm; a malformed key with ErrKeyFormat.
func NewVerifier(vkey string) (note.Verifier, error) {
	name, hash, key, err := splitVerifierKey(vkey)
	if err != nil {
		return nil, err
	}
	switch key[0] {
	case AlgEd25519:
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrKeyFormat, err)
		}
		return v, nil
	case AlgCosignature:
		if len(key) != 1+ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: cosignature key is %d bytes, want %d", ErrKeyFormat, len(key)-1, ed25519.PublicKeySize)
		}
		if keyHash(name, key) != hash {
			return nil, fmt.Errorf("%w: key hash %08x does not match the key (want %08x)", ErrKeyFormat, hash, keyHash(name, key))
		}
		return &cosignatureVerifier{name: name, hash: hash, key: ed25519.PublicKey(key[1:])}, nil
	}
	return nil, fmt.Errorf("%w: type 0x%02x in key %q", ErrUnknownAlgorithm, key[0], name)
}

func splitVerifierKey(vkey string) (name string, hash uint32, key []byte, err error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	h16, k64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || !ValidKeyName(name) || len(h16) != 8 {
		return "", 0, nil, fmt.Errorf("%w: verifier key %q is not name+hash+key", ErrKeyFormat, vkey)
	}
	h, err1 := strconv.ParseUint(h16, 16, 32)
	key, err2 := base64.StdEncoding.Strict().DecodeString(k64)
	if err1 != nil || err2 != nil || len(key) == 0 {
		return "", 0, nil, fmt.Errorf("%w: verifier key %q: bad hash or key encoding", ErrKeyFormat, name)
	}
	return name, uint32(h), key, nil
}

// keyHash is the signed-note key ID: the first 4 bytes of
// SHA-256(name || "\n" || type || key).
func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// cosignatureMessage is what a witness signs for checkpoint text at Unix
// time t: "cosignature/v1\ntime T\n" followed by the checkpoint's text.
func cosignatureMessage(t uint64, text []byte) ([]byte, error) {
	if _, err := ParseText(text); err != nil {
		return nil, fmt.Errorf("cosigned message is not a checkpoint: %w", err)
	}
	m := fmt.Appendf(nil, "cosignature/v1\ntime %d\n", t)
	return append(m, text...), nil
}

type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }

// Verify checks sig = timestamp (8 bytes, big-endian) || Ed25519 signature
// over the cosigned message of msg at that time.
func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > math.MaxInt64 {
		return false
	}
	m, err := cosignatureMessage(t, msg)
	if err != nil {
		return false
	}
	return ed25519.Verify(v.key, m, sig[8:])
}

// A Cosigner makes timestamped Ed25519 cosignatures (type 0x04) of
// checkpoints, as a C2SP witness does. It implements note.Signer.
type Cosigner struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
	// Now gives the cosignature's time; time.Now when nil.
	Now func() time.Time
}

// NewCosigner returns a cosigner named name for priv.
func NewCosigner(name string, priv ed25519.PrivateKey) (*Cosigner, error) {
	if !ValidKeyName(name) {
		return nil, fmt.Errorf("%w: key name %q", ErrKeyFormat, name)
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: Ed25519 private key is %d bytes", ErrKeyFormat, len(priv))
	}
	key := append([]byte{AlgCosignature}, priv.Public().(ed25519.PublicKey)...)
	return &Cosigner{name: name, hash: keyHash(name, key), priv: priv}, nil
}

// Name returns the cosigner's key name.
func (c *Cosigner) Name() string { return c.name }

// KeyHash returns the cosigner's key ID.
func (c *Cosigner) KeyHash() uint32 { return c.hash }

// VerifierKey returns the cosigner's verifier key, name+hash+base64(0x04||pub).
func (c *Cosigner) VerifierKey() string {
	key := append([]byte{AlgCosignature}, c.priv.Public().(ed25519.PublicKey)...)
	return fmt.Sprintf("%s+%08x+%s", c.name, c.hash, base64.StdEncoding.EncodeToString(key))
}

// Sign cosigns the checkpoint text msg at c.Now().
func (c *Cosigner) Sign(msg []byte) ([]byte, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	t := now().Unix()
	if t < 0 {
		return nil, errors.New("cosigner: time before 1970")
	}
	m, err := cosignatureMessage(uint64(t), msg)
	if err != nil {
		return nil, err
	}
	sig := binary.BigEndian.AppendUint64(make([]byte, 0, 8+ed25519.SignatureSize), uint64(t))
	return append(sig, ed25519.Sign(c.priv, m)...), nil
}

// AddSignatures returns the signed note msg with the signature lines of
// extra (another signed note of the same text, e.g. a witness's answer of
// cosignature lines) appended, dropping lines msg already has.
func AddSignatures(msg []byte, lines []byte) []byte {
	out := append([]byte(nil), msg...)
	have := map[string]bool{}
	for _, l := range strings.Split(string(msg), "\n") {
		have[l] = true
	}
	for _, l := range strings.Split(string(lines), "\n") {
		if strings.HasPrefix(l, "\u2014 ") && !have[l] {
			out = append(out, l...)
			out = append(out, '\n')
			have[l] = true
		}
	}
	return out
}
