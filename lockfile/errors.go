package lockfile

import (
	"errors"
	"fmt"
)

// Errors returned by Parse (wrapped in *manifest.Error inside a
// manifest.ErrorList), ParseDigest, Generate and Check. Test with errors.Is.
var (
	// ErrSyntax is returned when a lock file is not strict JSON or does not
	// have the lock's shape (unknown or mistyped fields, duplicate names,
	// trailing data, invalid UTF-8, a byte order mark).
	ErrSyntax = errors.New("syntax")
	// ErrTooLarge is returned for a lock file over MaxLockSize, or a prompt
	// file over MaxPromptSize.
	ErrTooLarge = errors.New("too large")
	// ErrVersion is returned when lock_version is missing or not 1.
	ErrVersion = errors.New("unsupported lock_version")
	// ErrEntry is returned for a lock entry with a bad agent id,
	// agent_version or prompt_path, or a missing field.
	ErrEntry = errors.New("invalid lock entry")
	// ErrDigest is returned for a prompt hash that is not 64 lowercase
	// hexadecimal digits (with the "sha256:" tag where one is required).
	ErrDigest = errors.New("malformed digest")
	// ErrDigestAlgorithm is returned for a digest tagged with an algorithm
	// other than sha256 ("sha512:...", "SHA256:...").
	ErrDigestAlgorithm = errors.New("unsupported digest algorithm")
	// ErrNotRegular is returned by the openers for a prompt path that is
	// not a regular file.
	ErrNotRegular = errors.New("not a regular file")
)

// FileError is a prompt file that could not be read.
type FileError struct {
	Path string // slash-separated, relative to the registry folder
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("prompt %s: %v", e.Path, e.Err) }

// Unwrap returns the read error (fs.ErrNotExist, ErrTooLarge, ...).
func (e *FileError) Unwrap() error { return e.Err }
