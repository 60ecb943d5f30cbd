// Package export writes a ledger as JSON Lines, the form an auditor checks
// without govledger (see the README's "Verify an export independently").
//
// Each line is one entry, in seq order:
//
//	{"entry": <the entry's canonical JSON>, "hash": "<hex SHA-256(0x00 || entry bytes)>", "payload_b64": "<base64>"}
//
// payload_b64 holds the handoff document for handoff entries and the
// registry or lock bytes for snapshot entries; it is absent where the ledger
// holds no bytes (redacted payloads, PAYLOAD_TOO_LARGE documents) and for
// the other kinds. The entry object is written exactly as stored, so the
// canonical bytes an auditor hashes are the bytes between `{"entry":` and
// `,"hash"` on each line.
package export

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/govledger/govledger/ledger"
)

// Line is one exported entry.
type Line struct {
	Entry   []byte // canonical entry bytes
	Hash    ledger.Hash
	Payload []byte // nil when absent; written base64-encoded
}

// Reader is what Write needs from a ledger.
type Reader interface {
	Scan(ctx context.Context, from uint64, fn func(seq uint64, raw []byte) error) error
	Blob(sum ledger.Hash) ([]byte, error)
}

// Write streams every entry of r to w as JSON Lines. progress, if not nil,
// is called with each seq written. It returns the number of lines.
func Write(ctx context.Context, r Reader, w io.Writer, progress func(seq uint64)) (uint64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var n uint64
	err := r.Scan(ctx, 1, func(seq uint64, raw []byte) error {
		e, err := ledger.DecodeEntry(raw)
		if err != nil {
			return fmt.Errorf("seq %d: %w", seq, err)
		}
		var sum *ledger.Hash
		switch e.Kind {
		case ledger.KindHandoff:
			sum = e.PayloadSHA256
		case ledger.KindSnapshot:
			sum = e.ContentSHA256
		}
		var payload []byte
		if sum != nil {
			payload, err = r.Blob(*sum)
			if err != nil && !errors.Is(err, ledger.ErrNotFound) && !errors.Is(err, ledger.ErrRedacted) {
				return fmt.Errorf("seq %d: payload: %w", seq, err)
			}
		}
		if err := WriteLine(bw, Line{Entry: raw, Hash: ledger.LeafHash(raw), Payload: payload}); err != nil {
			return err
		}
		n++
		if progress != nil {
			progress(seq)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// WriteLine writes one line. The entry bytes are written verbatim.
func WriteLine(w io.Writer, l Line) error {
	var b []byte
	b = append(b, `{"entry":`...)
	b = append(b, l.Entry...)
	b = append(b, `,"hash":"`...)
	b = append(b, l.Hash.String()...)
	b = append(b, '"')
	if l.Payload != nil {
		b = append(b, `,"payload_b64":"`...)
		b = base64.StdEncoding.AppendEncode(b, l.Payload)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	_, err := w.Write(b)
	return err
}
