// Package witness submits a log's checkpoints to C2SP tlog-witness
// witnesses (https://c2sp.org/tlog-witness) and collects their
// cosignatures: the client side of "add-checkpoint".
//
// A witness cosigns a checkpoint only if it is consistent with the last
// one it cosigned for that log, so the request carries the size the log
// believes the witness is at and a consistency proof from it. A witness at
// another size answers 409 with its size: a smaller one is adopted (the
// log proves from it next time), a larger one than the log's own tree, or
// a 422 (the proof does not hold for the witness's tree), is evidence that
// the witness saw another history of this log: a fork or a rollback.
//
// The package never prints, exits, or reads flags or the environment.
package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
)

// Errors of AddCheckpoint.
var (
	// ErrFork: the witness refused the consistency proof (422), or knows
	// a larger tree than the log has: it saw another history.
	ErrFork = errors.New("witness saw another history of this log (fork or rollback)")
	// ErrUnknownLog: the witness does not know the log's origin (404) or
	// its key (403).
	ErrUnknownLog = errors.New("witness does not know this log or its key")
	// ErrBadCosignature: the answer is not a valid cosignature of the
	// checkpoint by the witness's key.
	ErrBadCosignature = errors.New("witness answer is not a valid cosignature")
	// ErrWitness: any other failure (network, 400, 5xx).
	ErrWitness = errors.New("witness request failed")
)

// A ConflictError is a 409 answer: the witness's latest cosigned size for
// the log is Size, not the old size the request gave.
type ConflictError struct{ Size uint64 }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("witness is at size %d (409 Conflict)", e.Size)
}

// MaxAnswer bounds a witness's answer.
const MaxAnswer = 64 << 10

// RequestBody returns the add-checkpoint body: "old N", the proof's hashes
// in base64, an empty line, then the signed checkpoint.
func RequestBody(oldSize uint64, proof tlog.TreeProof, signed []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	b.WriteString("\n")
	b.Write(signed)
	return b.Bytes()
}

// AddCheckpoint submits signed (a checkpoint of the log, signed by the log
// key) to the witness at url (its submission prefix; "/add-checkpoint" is
// appended) with the consistency proof from oldSize, and returns the
// witness's cosignature lines once they verify under v against the
// checkpoint's text. A 409 is a *ConflictError; 422 wraps ErrFork; 404 and
// 403 wrap ErrUnknownLog.
func AddCheckpoint(ctx context.Context, hc *http.Client, url string, v note.Verifier, oldSize uint64, proof tlog.TreeProof, signed []byte) ([]byte, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/add-checkpoint", bytes.NewReader(RequestBody(oldSize, proof, signed)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWitness, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWitness, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil || len(body) > MaxAnswer {
		return nil, fmt.Errorf("%w: reading the answer: %v", ErrWitness, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		s := strings.TrimSpace(string(body))
		n, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("%w: 409 without a size (%q)", ErrWitness, s)
		}
		return nil, &ConflictError{Size: n}
	case http.StatusUnprocessableEntity:
		return nil, fmt.Errorf("%w: 422: %s", ErrFork, firstLine(body))
	case http.StatusNotFound, http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s: %s", ErrUnknownLog, resp.Status, firstLine(body))
	default:
		return nil, fmt.Errorf("%w: %s: %s", ErrWitness, resp.Status, firstLine(body))
	}
	// The answer is signature lines; they must verify as v's signature of
	// the checkpoint's text.
	cp, err := checkpoint.Parse(signed)
	if err != nil {
		return nil, err
	}
	text, err := cp.Text()
	if err != nil {
		return nil, err
	}
	n, err := note.Open(append(append(text, '\n'), body...), note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCosignature, err)
	}
	var lines bytes.Buffer
	for _, s := range n.Sigs {
		if s.Name == v.Name() && s.Hash == v.KeyHash() {
			fmt.Fprintf(&lines, "\u2014 %s %s\n", s.Name, s.Base64)
		}
	}
	if lines.Len() == 0 {
		return nil, fmt.Errorf("%w: no signature of %s", ErrBadCosignature, v.Name())
	}
	return lines.Bytes(), nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// A Tree proves consistency between two sizes of the log.
type Tree interface {
	ProveConsistency(ctx context.Context, oldSize, newSize uint64) (tlog.TreeProof, error)
}

// A Submitter keeps, per witness of a policy, the size the witness last
// cosigned, and gets a checkpoint cosigned by all of them.
type Submitter struct {
	Policy *checkpoint.Policy
	Client *http.Client
	sizes  map[string]uint64 // witness name -> last cosigned size
}

// An Outcome is one witness's answer to one checkpoint.
type Outcome struct {
	Witness string
	Err     error  // nil: cosigned
	Size    uint64 // the witness's size after the request
}

// Submit sends signed (a checkpoint of tree at its size) to every witness
// of the policy that has a URL, adopting a 409's smaller size and
// retrying once. It returns signed with the cosignatures that verified
// appended, and each witness's outcome; an outcome wrapping ErrFork is an
// alarm.
func (s *Submitter) Submit(ctx context.Context, tree Tree, signed []byte) ([]byte, []Outcome) {
	if s.sizes == nil {
		s.sizes = map[string]uint64{}
	}
	cp, err := checkpoint.Parse(signed)
	if err != nil {
		return signed, []Outcome{{Err: err}}
	}
	out := signed
	var outcomes []Outcome
	for _, w := range s.Policy.Witnesses {
		if w.URL == "" {
			continue
		}
		o := Outcome{Witness: w.Name}
		for try := 0; try < 2; try++ {
			old := s.sizes[w.Name]
			if old > cp.Size {
				o.Err = fmt.Errorf("%w: witness %s is at size %d, the log at %d", ErrFork, w.Name, old, cp.Size)
				break
			}
			var proof tlog.TreeProof
			if old > 0 && old < cp.Size {
				if proof, err = tree.ProveConsistency(ctx, old, cp.Size); err != nil {
					o.Err = fmt.Errorf("%w: consistency proof %d..%d: %w", ErrWitness, old, cp.Size, err)
					break
				}
			}
			lines, err := AddCheckpoint(ctx, s.Client, w.URL, w.Verifier, old, proof, signed)
			var ce *ConflictError
			if errors.As(err, &ce) {
				s.sizes[w.Name] = ce.Size
				o.Err = err
				if ce.Size > cp.Size {
					o.Err = fmt.Errorf("%w: witness %s is at size %d, the log at %d", ErrFork, w.Name, ce.Size, cp.Size)
					break
				}
				continue
			}
			o.Err = err
			if err == nil {
				s.sizes[w.Name] = cp.Size
				out = checkpoint.AddSignatures(out, lines)
			}
			break
		}
		o.Size = s.sizes[w.Name]
		outcomes = append(outcomes, o)
	}
	return out, outcomes
}
