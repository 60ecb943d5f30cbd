package handoff

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by Detect (wrapped in *DetectError) and NewRootEnv.
var (
	// ErrNotText is returned when the bytes are no text document at all:
	// empty, invalid UTF-8, or containing control characters other than
	// tab, CR and LF outside any recognizable carrier. Parse reports it as
	// UNPARSEABLE.
	ErrNotText = errors.New("not a text document")
	// ErrUnknownFormat is returned when no format matched. Parse reports it
	// as UNKNOWN_FORMAT.
	ErrUnknownFormat = errors.New("no handoff format matched")
	// ErrAmbiguous is returned when more than one format matched. Parse
	// reports it as UNKNOWN_FORMAT.
	ErrAmbiguous = errors.New("more than one handoff format matched")
	// ErrRoot is returned by NewRootEnv when the root is not a readable
	// directory.
	ErrRoot = errors.New("handoff: invalid root")
)

// DetectError explains why Detect could not name exactly one format.
type DetectError struct {
	Matched []Format // formats whose rule matched (two or more for ErrAmbiguous)
	Notes   []string // one line per format considered: why it did or did not match
	Err     error    // ErrNotText, ErrUnknownFormat or ErrAmbiguous
}

func (e *DetectError) Error() string {
	return fmt.Sprintf("%v (considered: %s)", e.Err, strings.Join(e.Notes, "; "))
}

func (e *DetectError) Unwrap() error { return e.Err }
