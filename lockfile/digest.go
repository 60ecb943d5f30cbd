package lockfile

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// DigestPrefix is the algorithm tag of every digest in a lock file.
const DigestPrefix = "sha256:"

// ParseDigest parses a prompt digest as handoffs carry it: 64 lowercase
// hexadecimal digits, bare (seed 003) or tagged "sha256:" (seeds 000,
// 002). Both spellings of one hash decode to the same bytes, so compare the
// results, never the strings. Upper case, other lengths, white space and
// other algorithm tags are refused (ErrDigest, ErrDigestAlgorithm).
func ParseDigest(s string) ([32]byte, error) {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		if s[:i+1] != DigestPrefix {
			return [32]byte{}, fmt.Errorf("%w: %s (want sha256)", ErrDigestAlgorithm, short(s[:i]))
		}
		s = s[i+1:]
	}
	return parseHex(s)
}

// parseTagged parses the lock file's form: "sha256:" and 64 lowercase hex.
func parseTagged(s string) ([32]byte, error) {
	i := strings.IndexByte(s, ':')
	switch {
	case i < 0:
		return [32]byte{}, fmt.Errorf(`%w: %s: want "sha256:" and 64 lowercase hex digits`, ErrDigest, short(s))
	case s[:i+1] != DigestPrefix:
		return [32]byte{}, fmt.Errorf("%w: %s (want sha256)", ErrDigestAlgorithm, short(s[:i]))
	}
	return parseHex(s[i+1:])
}

func parseHex(h string) ([32]byte, error) {
	var d [32]byte
	if len(h) != 64 {
		return d, fmt.Errorf("%w: %d hex digits, want 64", ErrDigest, len(h))
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return d, fmt.Errorf("%w: %q at %d is not a lowercase hex digit", ErrDigest, c, i)
		}
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("%w: %v", ErrDigest, err)
	}
	return d, nil
}

// FormatDigest returns d as the lock file writes it: "sha256:" and 64
// lowercase hex digits.
func FormatDigest(d [32]byte) string {
	return DigestPrefix + hex.EncodeToString(d[:])
}

func short(s string) string {
	if len(s) > 20 {
		s = s[:20] + "..."
	}
	return fmt.Sprintf("%q", s)
}
