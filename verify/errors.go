package verify

import (
	"errors"
	"fmt"
)

// Errors returned by Replay and the sources. Findings are not errors: an
// error means the replay could not be completed. Test with errors.Is.
var (
	// ErrSource is returned (wrapped) when a Source fails for a reason other
	// than corruption, such as an I/O error: the replay is incomplete.
	ErrSource = errors.New("verify: source unreadable")
	// ErrExportLine is returned (wrapped in *LineError) by an ExportSource
	// used outside Replay when a line is not a valid export line. Inside
	// Replay such lines are findings of kind "export_line" instead.
	ErrExportLine = errors.New("invalid export line")
)

// LineError is a problem with one line of an export.
type LineError struct {
	Line int    // 1-based line number
	Seq  uint64 // the entry's seq if it could be read, else the seq expected there
	Msg  string
	Err  error // ErrExportLine
}

func (e *LineError) Error() string {
	return fmt.Sprintf("export line %d (seq %d): %s", e.Line, e.Seq, e.Msg)
}

// Unwrap returns ErrExportLine.
func (e *LineError) Unwrap() error { return e.Err }
