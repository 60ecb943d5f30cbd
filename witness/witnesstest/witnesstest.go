// Package witnesstest is a minimal C2SP tlog-witness
// (https://c2sp.org/tlog-witness) for tests, written from the spec: it
// knows one log key, keeps the last checkpoint it cosigned, answers
// add-checkpoint with 409 and its size when the request's old size is not
// its own, 422 when the consistency proof does not hold, 403 when the log
// signature does not verify, and cosigns otherwise.
package witnesstest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
)

// A Witness is an http.Handler serving POST /add-checkpoint.
type Witness struct {
	mu     sync.Mutex
	logV   note.Verifier
	cosign *checkpoint.Cosigner
	size   uint64
	root   tlog.Hash
	down   bool
	counts map[int]int // answers by status
}

// New returns a witness of the log whose key is logV, cosigning with c.
func New(logV note.Verifier, c *checkpoint.Cosigner) *Witness {
	return &Witness{logV: logV, cosign: c}
}

// Size returns the size of the last checkpoint it cosigned.
func (w *Witness) Size() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// SetDown makes the witness answer every request 503 (down true) or
// serve again (false): a witness out of reach.
func (w *Witness) SetDown(down bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = down
}

// Answers returns how many requests it answered with status.
func (w *Witness) Answers(status int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[status]
}

func (w *Witness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := &statusRecorder{ResponseWriter: rw, status: http.StatusOK}
	defer func() {
		if w.counts == nil {
			w.counts = map[int]int{}
		}
		w.counts[rec.status]++
	}()
	rw = rec
	if w.down {
		http.Error(rw, "down", http.StatusServiceUnavailable)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/add-checkpoint" {
		http.Error(rw, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	head, signed, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		http.Error(rw, "bad body", http.StatusBadRequest)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Scan()
	old, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "old "), 10, 64)
	if err != nil {
		http.Error(rw, "bad old size", http.StatusBadRequest)
		return
	}
	var proof tlog.TreeProof
	for sc.Scan() {
		h, err := base64.StdEncoding.DecodeString(sc.Text())
		if err != nil || len(h) != tlog.HashSize {
			http.Error(rw, "bad proof", http.StatusBadRequest)
			return
		}
		proof = append(proof, tlog.Hash(h))
	}
	cp, err := checkpoint.Open(signed, note.VerifierList(w.logV), "")
	if err != nil {
		http.Error(rw, err.Error(), http.StatusForbidden)
		return
	}
	if old > cp.Size {
		http.Error(rw, "old size after the checkpoint", http.StatusBadRequest)
		return
	}
	if old != w.size {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", w.size)
		return
	}
	if old > 0 {
		if old == cp.Size && cp.Hash != w.root || old < cp.Size && tlog.CheckTree(proof, int64(cp.Size), cp.Hash, int64(old), w.root) != nil {
			http.Error(rw, "consistency proof does not verify", http.StatusUnprocessableEntity)
			return
		}
	}
	text, _ := cp.Text()
	out, err := note.Sign(&note.Note{Text: string(text)}, w.cosign)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	w.size, w.root = cp.Size, cp.Hash
	_, sigs, _ := bytes.Cut(out, []byte("\n\n"))
	rw.Write(sigs)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
