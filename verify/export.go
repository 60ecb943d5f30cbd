package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/ledger"
)

// MaxExportLine is the longest export line ExportSource reads, in bytes,
// newline excluded. A payload of 16 MiB, base64-encoded, fits.
const MaxExportLine = 24 << 20

// ExportLine is one line of an export, the JSON Lines format written by
// WriteExport and read by ExportSource:
//
//	{"entry":<entry object>,"hash":"<64 hex>","payload_b64":"<base64>"}
//
// One line per entry, in seq order, each ended by "\n". The stored bytes
// of the entry are the RFC 8785 canonical form of the "entry" object (an
// exporter writes them verbatim, so they already are), and "hash" is
// SHA-256(0x00 || those bytes). "payload_b64" is the standard base64
// (RFC 4648 §4, padded) of the blob the entry names: the payload of a
// handoff entry, the content of a snapshot entry. It is absent for other
// kinds, for a redacted payload, and for a PAYLOAD_TOO_LARGE handoff (whose
// bytes were never stored). Members other than these three, duplicate
// members and trailing data make the line invalid.
type ExportLine struct {
	Entry      jsontext.Value `json:"entry"`
	Hash       entry.Hash     `json:"hash"`
	PayloadB64 *string        `json:"payload_b64,omitzero"`
}

// ExportSource returns a Source reading an export from r. It reads r once,
// line by line, holding one line at a time; its Blob answers only for the
// blob named by the entry Entries is delivering.
//
// Inside Replay, a line that is not a valid ExportLine becomes a finding of
// kind "export_line" and is skipped (the entry it held is then missing
// from the chain, so a "gap" follows); a "hash" member that differs from
// the recomputed hash is a finding of kind "hash". Used outside Replay,
// Entries returns a *LineError for the first such line instead. An
// ExportSource reads r once: it serves one Replay (or WriteExport).
func ExportSource(r io.Reader) Source { return &exportSource{r: r} }

type exportSource struct {
	r    io.Reader
	emit func(Finding) // set by Replay

	// the line being delivered
	blobSum entry.Hash
	blob    []byte
	hasBlob bool
}

// claims is the part of an entry the export source looks at: the blob it
// names. Decoding is lenient on purpose; Replay judges the entry.
type claims struct {
	Seq           uint64 `json:"seq"`
	PayloadSHA256 string `json:"payload_sha256"`
	ContentSHA256 string `json:"content_sha256"`
}

func (s *exportSource) setEmit(f func(Finding)) { s.emit = f }

func (s *exportSource) Blob(_ context.Context, sum entry.Hash) ([]byte, error) {
	if s.hasBlob && sum == s.blobSum {
		return bytes.Clone(s.blob), nil
	}
	return nil, fmt.Errorf("blob %s: %w", sum, ledger.ErrNotFound)
}

func (s *exportSource) lineBlob() (entry.Hash, []byte, bool) { return s.blobSum, s.blob, s.hasBlob }

func (s *exportSource) Entries(ctx context.Context, fn func(seq uint64, raw []byte) error) error {
	br := bufio.NewReaderSize(s.r, 64<<10)
	var (
		line    []byte
		lineNo  int
		lastSeq uint64
	)
	fail := func(seq uint64, msg string) error {
		le := &LineError{Line: lineNo, Seq: seq, Msg: msg, Err: ErrExportLine}
		if s.emit == nil {
			return le
		}
		s.emit(Finding{Seq: seq, Kind: KindExportLine, Message: fmt.Sprintf("line %d: %s", lineNo, msg)})
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			tooLong bool
			err     error
		)
		line, tooLong, err = readLine(br, line[:0])
		if err == io.EOF && len(line) == 0 && !tooLong {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: %w", ErrSource, err)
		}
		lineNo++
		eof := err == io.EOF
		if tooLong {
			if err := fail(lastSeq+1, fmt.Sprintf("longer than %d bytes", MaxExportLine)); err != nil {
				return err
			}
		} else if err := s.line(line, lineNo, &lastSeq, fn, fail); err != nil {
			return err
		}
		if eof {
			if len(line) > 0 || tooLong {
				return fail(lastSeq+1, "no newline at end of file")
			}
			return nil
		}
	}
}

// readLine appends the next line (without "\n") to buf. It reports tooLong,
// having discarded the rest of the line, when the line exceeds
// MaxExportLine. At the end of input it returns io.EOF with whatever was
// read after the last newline.
func readLine(br *bufio.Reader, buf []byte) ([]byte, bool, error) {
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > MaxExportLine+1 {
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, frag...)
			}
		}
		switch err {
		case nil:
			if !tooLong {
				buf = buf[:len(buf)-1]
			}
			return buf, tooLong, nil
		case bufio.ErrBufferFull:
			continue
		default:
			return buf, tooLong, err
		}
	}
}

func (s *exportSource) line(line []byte, lineNo int, lastSeq *uint64, fn func(uint64, []byte) error, fail func(uint64, string) error) error {
	s.hasBlob, s.blob = false, nil
	seq := *lastSeq + 1
	var l struct {
		Entry      jsontext.Value `json:"entry"`
		Hash       *string        `json:"hash"`
		PayloadB64 *string        `json:"payload_b64"`
	}
	if err := strictjson.Unmarshal("", line, &l); err != nil {
		return fail(seq, err.Error())
	}
	if l.Entry == nil || l.Entry.Kind() != '{' {
		return fail(seq, "entry: missing or not an object")
	}
	var c claims
	// Lenient: a wrong type here is judged by Replay on the entry itself.
	_ = json.Unmarshal(l.Entry, &c, json.RejectUnknownMembers(false))
	if c.Seq != 0 {
		seq = c.Seq
	}
	if l.Hash == nil {
		return fail(seq, "hash: missing")
	}
	given, err := entry.ParseHash(*l.Hash)
	if err != nil {
		return fail(seq, fmt.Sprintf("hash: %v", err))
	}
	var blob []byte
	if l.PayloadB64 != nil {
		blob, err = base64.StdEncoding.Strict().DecodeString(*l.PayloadB64)
		if err != nil {
			return fail(seq, fmt.Sprintf("payload_b64: %v", err))
		}
		named := c.PayloadSHA256
		if named == "" {
			named = c.ContentSHA256
		}
		sum, err := entry.ParseHash(named)
		if err != nil {
			return fail(seq, "payload_b64 on an entry that names no payload or content")
		}
		s.blobSum, s.blob, s.hasBlob = sum, blob, true
	}
	stored, err := strictjson.CanonicalizeBytes(l.Entry)
	if err != nil {
		stored = l.Entry // not canonicalizable: Replay reports it as malformed
	}
	if h := entry.LeafHash(stored); h != given {
		if s.emit == nil {
			return &LineError{Line: lineNo, Seq: seq, Msg: "hash differs from the entry's recomputed hash", Err: ErrExportLine}
		}
		s.emit(Finding{Seq: seq, Kind: KindHash, Want: h.String(), Got: given.String(),
			Message: fmt.Sprintf("line %d: the line's hash is not the hash of its entry", lineNo)})
	}
	*lastSeq = seq
	err = fn(seq, stored)
	s.hasBlob, s.blob = false, nil
	return err
}

// WriteExport writes every entry of src to w as ExportLines, in stored
// order, with the blob each entry names when src has it. It copies what is
// stored, judging nothing: run Replay to verify. It fails when an entry is
// not JSON (an export line must hold a JSON object) and on write errors.
func WriteExport(ctx context.Context, w io.Writer, src Source) error {
	bw := bufio.NewWriter(w)
	err := src.Entries(ctx, func(seq uint64, raw []byte) error {
		if err := strictjson.Check("", raw); err != nil || jsontext.Value(raw).Kind() != '{' {
			return fmt.Errorf("export seq %d: stored bytes are not a JSON object", seq)
		}
		var c claims
		_ = json.Unmarshal(raw, &c, json.RejectUnknownMembers(false))
		line := ExportLine{Entry: jsontext.Value(raw), Hash: entry.LeafHash(raw)}
		named := c.PayloadSHA256
		if named == "" {
			named = c.ContentSHA256
		}
		if sum, err := entry.ParseHash(named); err == nil {
			b, err := blobOf(ctx, src, seq, sum)
			switch {
			case err == nil:
				enc := base64.StdEncoding.EncodeToString(b)
				line.PayloadB64 = &enc
			case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrRedacted):
			default:
				return fmt.Errorf("export seq %d: %w", seq, err)
			}
		}
		b, err := json.Marshal(line, jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false))
		if err != nil {
			return fmt.Errorf("export seq %d: %w", seq, err)
		}
		b = append(b, '\n')
		_, err = bw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}
