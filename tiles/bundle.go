package tiles

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrEntryTooLarge is wrapped by AppendEntry's error for an entry longer
// than MaxEntrySize bytes: tlog-tiles cannot carry it.
var ErrEntryTooLarge = errors.New("entry too large for a tlog-tiles entry bundle")

// ErrBundle is wrapped by SplitBundle's errors.
var ErrBundle = errors.New("malformed entry bundle")

// AppendEntry appends e to the entry bundle b: its length as a big-endian
// uint16, then its bytes.
func AppendEntry(b, e []byte) ([]byte, error) {
	if len(e) > MaxEntrySize {
		return b, fmt.Errorf("%w: %d bytes, at most %d", ErrEntryTooLarge, len(e), MaxEntrySize)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(e)))
	return append(b, e...), nil
}

// SplitBundle returns the entries of bundle b, which must be whole: every
// length prefix followed by as many bytes, nothing after the last. The
// entries alias b.
func SplitBundle(b []byte) ([][]byte, error) {
	var out [][]byte
	for off := 0; off < len(b); {
		if len(b)-off < 2 {
			return nil, fmt.Errorf("%w: entry %d: %d byte(s) where a 2-byte length is due", ErrBundle, len(out), len(b)-off)
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		off += 2
		if len(b)-off < n {
			return nil, fmt.Errorf("%w: entry %d: length %d, only %d bytes left", ErrBundle, len(out), n, len(b)-off)
		}
		out = append(out, b[off:off+n:off+n])
		off += n
	}
	return out, nil
}
