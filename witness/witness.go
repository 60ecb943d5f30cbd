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
// The sizes a Submitter learnt are kept between runs in a state file
// (SaveState, LoadState), so a restarted log proves from them at once
// instead of learning them from a 409. A Submitter's Rate bounds the
// requests each witness gets: the rate a log declares to the witnesses it
// joins.
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
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/time/rate"

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
// cosigned, and gets a checkpoint cosigned by all of them. It is safe for
// concurrent use, but one Submit at a time is what a log needs: a second
// one would race the first for the witnesses' sizes.
type Submitter struct {
	Policy *checkpoint.Policy
	Client *http.Client
	// Rate bounds the add-checkpoint requests sent to each witness, the
	// retry after a 409 included: at most one every 1/Rate seconds (the
	// rate a log declares to the witnesses it joins, e.g. as "qpd",
	// requests per day, in a witness network's log list). 0: no bound.
	Rate rate.Limit
	// OnRequest, when set, is called after every add-checkpoint request
	// with the witness's name and the request's error (nil: cosigned);
	// the witnesses are asked at once, so it is called concurrently.
	OnRequest func(witness string, err error)

	mu     sync.Mutex
	sizes  map[string]uint64        // witness verifier key -> last cosigned size
	limits map[string]*rate.Limiter // witness verifier key -> its request budget
}

// SetSizes sets the size each witness last cosigned, by the witness's
// verifier key (the policy's PolicyKey.Key), e.g. from LoadState: the
// next Submit proves from those sizes. Keys of no witness of the policy
// are kept and ignored.
func (s *Submitter) SetSizes(sizes map[string]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = maps.Clone(sizes)
	if s.sizes == nil {
		s.sizes = map[string]uint64{}
	}
}

// Sizes returns the size each witness last cosigned (or said it was at,
// in a 409), by the witness's verifier key: what SaveState keeps.
func (s *Submitter) Sizes() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sizes)
}

func (s *Submitter) size(key string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sizes[key]
}

func (s *Submitter) setSize(key string, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes[key] = n
}

// wait takes one request from the witness's budget (Rate).
func (s *Submitter) wait(ctx context.Context, key string) error {
	if s.Rate <= 0 || s.Rate == rate.Inf {
		return nil
	}
	s.mu.Lock()
	l := s.limits[key]
	if l == nil {
		l = rate.NewLimiter(s.Rate, 1)
		s.limits[key] = l
	}
	s.mu.Unlock()
	return l.Wait(ctx)
}

// An Outcome is one witness's answer to one checkpoint.
type Outcome struct {
	Witness string // its name in the policy
	Key     string // its verifier key
	Err     error  // nil: cosigned
	Size    uint64 // the witness's size after the request
}

// Submit sends signed (a checkpoint of tree at its size) to every witness
// of the policy that has a URL, all at once, adopting a 409's smaller size
// and retrying once. It returns signed with the cosignatures that verified
// appended (in the policy's order), and each witness's outcome; an outcome
// wrapping ErrFork is an alarm.
func (s *Submitter) Submit(ctx context.Context, tree Tree, signed []byte) ([]byte, []Outcome) {
	s.mu.Lock()
	if s.sizes == nil {
		s.sizes = map[string]uint64{}
	}
	if s.limits == nil {
		s.limits = map[string]*rate.Limiter{}
	}
	s.mu.Unlock()
	cp, err := checkpoint.Parse(signed)
	if err != nil {
		return signed, []Outcome{{Err: err}}
	}
	var ws []checkpoint.PolicyKey
	for _, w := range s.Policy.Witnesses {
		if w.URL != "" {
			ws = append(ws, w)
		}
	}
	outcomes := make([]Outcome, len(ws))
	lines := make([][]byte, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { outcomes[i], lines[i] = s.submitOne(ctx, tree, w, cp, signed) })
	}
	wg.Wait()
	out := signed
	for _, l := range lines {
		if l != nil {
			out = checkpoint.AddSignatures(out, l)
		}
	}
	return out, outcomes
}

// submitOne gets signed cosigned by w, and returns its outcome and, when
// it cosigned, its signature lines.
func (s *Submitter) submitOne(ctx context.Context, tree Tree, w checkpoint.PolicyKey, cp *checkpoint.Checkpoint, signed []byte) (Outcome, []byte) {
	o := Outcome{Witness: w.Name, Key: w.Key}
	var out []byte
	for try := 0; try < 2; try++ {
		old := s.size(w.Key)
		if old > cp.Size {
			o.Err = fmt.Errorf("%w: witness %s is at size %d, the log at %d", ErrFork, w.Name, old, cp.Size)
			break
		}
		var proof tlog.TreeProof
		if old > 0 && old < cp.Size {
			var err error
			if proof, err = tree.ProveConsistency(ctx, old, cp.Size); err != nil {
				o.Err = fmt.Errorf("%w: consistency proof %d..%d: %w", ErrWitness, old, cp.Size, err)
				break
			}
		}
		if err := s.wait(ctx, w.Key); err != nil {
			o.Err = fmt.Errorf("%w: waiting for the declared rate: %w", ErrWitness, err)
			break
		}
		lines, err := AddCheckpoint(ctx, s.Client, w.URL, w.Verifier, old, proof, signed)
		if s.OnRequest != nil {
			s.OnRequest(w.Name, err)
		}
		var ce *ConflictError
		if errors.As(err, &ce) {
			s.setSize(w.Key, ce.Size)
			o.Err = err
			if ce.Size > cp.Size {
				o.Err = fmt.Errorf("%w: witness %s is at size %d, the log at %d", ErrFork, w.Name, ce.Size, cp.Size)
				break
			}
			continue
		}
		o.Err = err
		if err == nil {
			s.setSize(w.Key, cp.Size)
			out = lines
		}
		break
	}
	o.Size = s.size(w.Key)
	return o, out
}
