package ui

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/checkpoint/bundle"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/server"
)

type evidencePage struct {
	base
	Filter   filter
	Seq      string
	MaxSlice int
	Formats  []string
	Kinds    []string
}

func (u *UI) getEvidence(w http.ResponseWriter, r *http.Request, v *visitor) error {
	f, _, q, err := parseFilter(r, "seq")
	if err != nil {
		return err
	}
	u.render(w, r, "evidence", &evidencePage{base: base{Title: "Evidence", Nav: "evidence", Visitor: v}, Filter: f,
		Seq: q.Get("seq"), MaxSlice: u.cfg.MaxSlice, Formats: formatChoices, Kinds: kindChoices})
	return nil
}

// getBundle answers a govledger.proof/v1 inclusion bundle of entry seq
// against the current signed checkpoint (what "govledger prove" writes;
// "govledger verify-proof" checks it). The payload is included for a
// principal with payload:read.
func (u *UI) getBundle(w http.ResponseWriter, r *http.Request, v *visitor) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q) != 1 || len(q["seq"]) != 1 {
		return fmt.Errorf("%w: want ?seq=N and nothing else", server.ErrBadInput)
	}
	s := q.Get("seq")
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != s {
		return fmt.Errorf("%w: seq %q: want a seq, 1 or more", server.ErrBadInput, s)
	}
	ctx := r.Context()
	ev, err := u.cfg.Backend.Entry(ctx, seq)
	if err != nil {
		return err
	}
	signed, err := u.cfg.Backend.Checkpoint(ctx)
	if err != nil {
		return err
	}
	pf, err := server.LatestProof(ctx, u.cfg.Backend, signed, seq, 0)
	if err != nil {
		return err
	}
	cp, err := checkpoint.Parse([]byte(pf.Checkpoint))
	if err != nil {
		return fmt.Errorf("the backend's checkpoint: %w", err)
	}
	leaf, err := entry.ParseHash(ev.Hash)
	if err != nil {
		return fmt.Errorf("entry %d hash: %w", seq, err)
	}
	b := &bundle.Inclusion{Schema: bundle.SchemaInclusion, Origin: cp.Origin, Seq: seq, LeafIndex: seq - 1, TreeSize: cp.Size,
		Entry: string(ev.Entry), EntryHash: leaf, InclusionProof: []entry.Hash{}, Checkpoint: pf.Checkpoint}
	for i, h := range pf.Hashes {
		x, err := entry.ParseHash(h)
		if err != nil {
			return fmt.Errorf("proof of entry %d, hash %d: %w", seq, i, err)
		}
		b.InclusionProof = append(b.InclusionProof, x)
	}
	if v.PayloadRead() && newRow(*ev).HasPayload {
		data, err := u.cfg.Backend.Payload(ctx, seq)
		switch {
		case errors.Is(err, server.ErrRedacted):
			b.Redacted = true
		case errors.Is(err, server.ErrNotFound):
		case err != nil:
			return err
		default:
			s := base64.StdEncoding.EncodeToString(data)
			b.PayloadB64 = &s
		}
	}
	out, err := bundle.Marshal(b)
	if err != nil {
		return err
	}
	attach(w, fmt.Sprintf("entry-%d.proof.json", seq), "application/json", out)
	return nil
}

// sliceLine is one line of an evidence slice: an export line ("govledger
// export"), the payload only for a principal with payload:read.
type sliceLine struct {
	Entry      jsontext.Value `json:"entry"`
	Hash       string         `json:"hash"`
	PayloadB64 string         `json:"payload_b64,omitzero"`
}

// getSlice answers the entries matching the filter as JSON Lines, in seq
// order, at most MaxSlice of them (422 beyond: narrow the filter). The
// answer is streamed: one entry and its payload in memory at a time,
// the write deadline extended for each line; a failure once the answer
// is under way cuts the connection, so a short slice never looks whole.
// The server counts it as a stream (Streams): it ends when the session
// does.
func (u *UI) getSlice(w http.ResponseWriter, r *http.Request, v *visitor) error {
	_, qu, _, err := parseFilter(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	var seqs []uint64
	for {
		qu.Limit = min(1000, u.cfg.MaxSlice+1-len(seqs))
		page, err := u.cfg.Backend.Entries(ctx, qu)
		if err != nil {
			return err
		}
		for _, ev := range page.Entries {
			seqs = append(seqs, ev.Seq)
		}
		if len(seqs) > u.cfg.MaxSlice {
			return fmt.Errorf("%w: more than %d entries match: narrow the filter (a time range, an agent)", server.ErrUnprocessable, u.cfg.MaxSlice)
		}
		if page.Next == 0 || len(page.Entries) == 0 {
			break
		}
		qu.Before = page.Next
	}
	slices.Reverse(seqs)
	h := w.Header()
	h.Set("Content-Type", "application/jsonl")
	h.Set("Content-Disposition", `attachment; filename="govledger-slice.jsonl"`)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 64<<10)
	started := false
	fail := func(err error) error {
		if started {
			panic(http.ErrAbortHandler)
		}
		return err
	}
	for _, seq := range seqs {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		ev, err := u.cfg.Backend.Entry(ctx, seq)
		if err != nil {
			return fail(err)
		}
		line := sliceLine{Entry: ev.Entry, Hash: ev.Hash}
		if v.PayloadRead() && newRow(*ev).HasPayload {
			data, err := u.cfg.Backend.Payload(ctx, ev.Seq)
			switch {
			case err == nil:
				line.PayloadB64 = base64.StdEncoding.EncodeToString(data)
			case errors.Is(err, server.ErrRedacted), errors.Is(err, server.ErrNotFound):
			default:
				return fail(err)
			}
		}
		b, err := json.Marshal(line, jsontext.EscapeForHTML(false), json.Deterministic(true))
		if err != nil {
			return fail(err)
		}
		rc.SetWriteDeadline(time.Now().Add(sliceWriteTimeout))
		if !started {
			started = true
			w.WriteHeader(http.StatusOK)
		}
		if _, err := bw.Write(append(b, '\n')); err != nil {
			return fail(err)
		}
	}
	rc.SetWriteDeadline(time.Now().Add(sliceWriteTimeout))
	if !started {
		w.WriteHeader(http.StatusOK)
	}
	if err := bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// sliceWriteTimeout is how long a client reading an evidence slice may
// take for each line's bytes.
const sliceWriteTimeout = 30 * time.Second

// Streams reports whether r asks for a long answer (an evidence slice):
// the server counts it among its principal's streams, and ends it when
// the session ends.
func (u *UI) Streams(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/ui/evidence/slice"
}

// attach answers data as a download.
func attach(w http.ResponseWriter, name, ctype string, data []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}
