package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/internal/fileperm"
)

// MaxKeyFileSize is the largest key file LoadSigner reads.
const MaxKeyFileSize = 64 << 10

// ValidKeyName reports whether name can name a note key: non-empty valid
// UTF-8 with no Unicode space and no '+'.
func ValidKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 &&
		!strings.Contains(name, "+") && strings.IndexFunc(name, unicode.IsControl) < 0
}

// GenerateKey returns a new Ed25519 note key pair named name, reading
// entropy from rand: the signer key "PRIVATE+KEY+name+hash+key" (secret)
// and the verifier key "name+hash+key". The C2SP checkpoint spec
// recommends naming the key after the ledger's origin.
func GenerateKey(rand io.Reader, name string) (signerKey, verifierKey string, err error) {
	if !ValidKeyName(name) {
		return "", "", fmt.Errorf("%w: key name %q must be non-empty, without spaces or '+'", ErrKeyFormat, name)
	}
	return note.GenerateKey(rand, name)
}

// LoadSigner reads a signer key file and returns its signer.
//
// The file must be a regular file that neither group nor others can read
// or write (mode 0600 or stricter), or LoadSigner fails with
// ErrKeyPermissions before reading it; the mode is taken from the open
// file, so it cannot change between the check and the read. The contents
// are parsed by ParseSigner; name is used for OpenSSH keys only.
func LoadSigner(path, name string) (note.Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := fileperm.Private(path, fi); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyPermissions, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxKeyFileSize {
		return nil, fmt.Errorf("%s: %w: file larger than %d bytes", path, ErrKeyFormat, MaxKeyFileSize)
	}
	s, err := ParseSigner(data, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSigner parses a signer key: a note signer key
// ("PRIVATE+KEY+name+hash+key", surrounding white space ignored) or an
// unencrypted OpenSSH ed25519 private key (PEM). An OpenSSH key has no
// note name, so name gives it one (required for OpenSSH keys; ignored for
// note keys, which carry their own). The same ed25519 key under another
// name is another note key: verifiers must use the same name.
func ParseSigner(data []byte, name string) (note.Signer, error) {
	text := strings.TrimSpace(string(data))
	if strings.HasPrefix(text, "PRIVATE+KEY+") {
		s, err := note.NewSigner(text)
		if err != nil {
			return nil, fmt.Errorf("%w: note signer key: %v", ErrKeyFormat, err)
		}
		// PRIVATE+KEY+name+hash+base64(0x01||seed): an Ed25519 key's
		// verifier key follows from its seed (note.NewSigner checked the
		// fields; other algorithms keep no verifier key here).
		f := strings.SplitN(text, "+", 5) // the key's base64 may hold '+'
		if k, err := base64.StdEncoding.DecodeString(f[len(f)-1]); err == nil && len(k) == 1+ed25519.SeedSize && k[0] == 1 {
			pub := ed25519.NewKeyFromSeed(k[1:]).Public().(ed25519.PublicKey)
			if vkey, err := note.NewEd25519VerifierKey(s.Name(), pub); err == nil {
				return keyedSigner{s, vkey}, nil
			}
		}
		return s, nil
	}
	if !strings.HasPrefix(text, "-----BEGIN ") {
		return nil, fmt.Errorf("%w: want a note signer key (PRIVATE+KEY+...) or an OpenSSH ed25519 private key", ErrKeyFormat)
	}
	raw, err := ssh.ParseRawPrivateKey(data)
	if err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, fmt.Errorf("%w: OpenSSH key is passphrase-protected; use an unencrypted copy kept mode 0600", ErrKeyFormat)
		}
		return nil, fmt.Errorf("%w: OpenSSH key: %v", ErrKeyFormat, err)
	}
	var priv ed25519.PrivateKey
	switch k := raw.(type) {
	case *ed25519.PrivateKey:
		priv = *k
	case ed25519.PrivateKey:
		priv = k
	default:
		return nil, fmt.Errorf("%w: OpenSSH key is %T, want ed25519", ErrKeyFormat, raw)
	}
	if !ValidKeyName(name) {
		return nil, fmt.Errorf("%w: an OpenSSH key needs a key name (no spaces or '+'), got %q", ErrKeyFormat, name)
	}
	return ed25519Signer(name, priv)
}

// ed25519Signer builds the note signer key for priv under name.
func ed25519Signer(name string, priv ed25519.PrivateKey) (note.Signer, error) {
	vkey, err := note.NewEd25519VerifierKey(name, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyFormat, err)
	}
	// vkey is name+hash+base64(0x01||pub); the signer key is
	// PRIVATE+KEY+name+hash+base64(0x01||seed).
	hash := strings.Split(strings.TrimPrefix(vkey, name+"+"), "+")[0]
	skey := "PRIVATE+KEY+" + name + "+" + hash + "+" +
		base64.StdEncoding.EncodeToString(append([]byte{1}, priv.Seed()...))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyFormat, err)
	}
	return keyedSigner{s, vkey}, nil
}

// keyedSigner is a signer that knows its verifier key.
type keyedSigner struct {
	note.Signer
	vkey string
}

// VerifierKeyOf returns the note verifier key ("name+hash+key") of a
// signer ParseSigner or LoadSigner returned for an Ed25519 key, so a
// server holding only its signer key can tell verifiers what to trust;
// ok is false for any other signer.
func VerifierKeyOf(s note.Signer) (vkey string, ok bool) {
	k, ok := s.(keyedSigner)
	return k.vkey, ok
}

// ParseVerifier parses a verifier key: a note verifier key
// ("name+hash+key") or an OpenSSH ed25519 public key ("ssh-ed25519 AAAA…
// [comment]", as in a .pub or authorized_keys file), which is converted to
// a note verifier key named name (required for OpenSSH keys, ignored for
// note keys). It returns the verifier and its note verifier key text.
// Surrounding white space is ignored; anything else fails with ErrKeyFormat.
func ParseVerifier(data []byte, name string) (note.Verifier, string, error) {
	text := strings.TrimSpace(string(data))
	if strings.HasPrefix(text, "ssh-") || strings.HasPrefix(text, "sk-") || strings.HasPrefix(text, "ecdsa-") {
		pub, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(text))
		if err != nil {
			return nil, "", fmt.Errorf("%w: OpenSSH public key: %v", ErrKeyFormat, err)
		}
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, "", fmt.Errorf("%w: more than one OpenSSH public key", ErrKeyFormat)
		}
		if pub.Type() != ssh.KeyAlgoED25519 {
			return nil, "", fmt.Errorf("%w: OpenSSH key type %s, want ssh-ed25519", ErrKeyFormat, pub.Type())
		}
		cpk, ok := pub.(ssh.CryptoPublicKey)
		if !ok {
			return nil, "", fmt.Errorf("%w: OpenSSH key has no public key", ErrKeyFormat)
		}
		edpub, ok := cpk.CryptoPublicKey().(ed25519.PublicKey)
		if !ok {
			return nil, "", fmt.Errorf("%w: OpenSSH key is not ed25519", ErrKeyFormat)
		}
		if !ValidKeyName(name) {
			return nil, "", fmt.Errorf("%w: an OpenSSH key needs a key name (no spaces or '+'), got %q", ErrKeyFormat, name)
		}
		vkey, err := note.NewEd25519VerifierKey(name, edpub)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrKeyFormat, err)
		}
		text = vkey
	}
	if strings.HasPrefix(text, "PRIVATE+") {
		return nil, "", fmt.Errorf("%w: this is a signer (private) key; give the verifier (.pub) key", ErrKeyFormat)
	}
	v, err := NewVerifier(text)
	if err != nil {
		return nil, "", fmt.Errorf("%w: want a note verifier key (name+hash+key, type 0x01 or a 0x04 witness key) or an ssh-ed25519 public key: %v", ErrKeyFormat, err)
	}
	return v, text, nil
}
