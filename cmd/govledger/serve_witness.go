package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/time/rate"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/ledgerbackend"
	"github.com/govledger/govledger/witness"
)

// Witnessing modes (serve --witness-mode).
const (
	witnessFailOpen   = "fail-open"
	witnessFailClosed = "fail-closed"
)

// witnessStateFile is the state file's name in --witness-dir: the size
// each witness last cosigned, so a restart proves from it at once.
const witnessStateFile = "witness-state.json"

// maxWitnessBackoff bounds the wait between rounds while the quorum is not
// met (unless the declared rate asks for longer).
const maxWitnessBackoff = 15 * time.Second

// witnessConfig is what serve's flags say about witnessing.
type witnessConfig struct {
	policy     *checkpoint.Policy
	dir        string        // --witness-dir ("": nothing kept)
	timeout    time.Duration // each witness request
	closed     bool          // --witness-mode fail-closed
	qpd        int           // declared add-checkpoint requests per witness per day
	ackTimeout time.Duration // fail-closed: how long a write waits to be witnessed
}

// interval is the shortest time between two requests to one witness at
// the declared rate.
func (c witnessConfig) interval() time.Duration {
	return 24 * time.Hour / time.Duration(c.qpd)
}

// witnessing is serve --witness-policy: after start and after commits
// (coalesced, at most at the declared rate), it signs a checkpoint at the
// head, submits it to every witness of the policy, keeps the newest
// checkpoint whose cosignatures satisfy the policy (served at
// <prefix>/checkpoint, and written to dir when set), and raises the alarm
// when a witness saw another history. Fail-closed, Acknowledge holds each
// write's answer until a cosigned checkpoint covers it.
type witnessing struct {
	cfg      witnessConfig
	cosigned atomic.Pointer[[]byte]
	size     atomic.Uint64         // the size of cosigned
	why      atomic.Pointer[error] // why the last round did not meet the quorum
	alarm    atomic.Pointer[error]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when cosigned moves

	forks     prometheus.Counter
	cosigns   *prometheus.CounterVec
	requests  *prometheus.CounterVec
	sizes     *prometheus.GaugeVec
	quorum    prometheus.Gauge
	noQuorum  prometheus.Counter
	unwitnesd prometheus.Counter
}

// Checkpoint returns the newest cosigned checkpoint, or nil.
func (w *witnessing) Checkpoint() []byte {
	if p := w.cosigned.Load(); p != nil {
		return *p
	}
	return nil
}

// Degraded returns the fork alarm, if any: /readyz answers 503 with it.
func (w *witnessing) Degraded() error {
	if p := w.alarm.Load(); p != nil {
		return *p
	}
	return nil
}

// wake returns a channel closed when the cosigned checkpoint moves.
func (w *witnessing) wake() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// serve makes signed, cosigned at size, the served checkpoint and wakes
// the writes waiting for it.
func (w *witnessing) serve(signed []byte, size uint64) {
	w.cosigned.Store(&signed)
	w.size.Store(size)
	w.quorum.Set(float64(size))
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// Acknowledge is server.Config.Acknowledge in fail-closed mode: it returns
// once a cosigned checkpoint covers seq, or a *server.NotWitnessedError
// after the configured time (the entry stays; the next rounds witness it).
func (w *witnessing) Acknowledge(ctx context.Context, seq uint64) error {
	timer := time.NewTimer(w.cfg.ackTimeout)
	defer timer.Stop()
	for {
		ch := w.wake()
		if w.size.Load() >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-timer.C:
			w.unwitnesd.Inc()
			why := errors.New("no witness answered yet")
			if p := w.why.Load(); p != nil {
				why = *p
			}
			return &server.NotWitnessedError{Seq: seq, Err: fmt.Errorf("no checkpoint covering it was cosigned by the witness policy's quorum within %s (witnessed size %d; %v)",
				w.cfg.ackTimeout, w.size.Load(), why)}
		case <-ctx.Done():
			w.unwitnesd.Inc()
			return &server.NotWitnessedError{Seq: seq, Err: fmt.Errorf("the request ended before a checkpoint covering it was cosigned (witnessed size %d): %w", w.size.Load(), ctx.Err())}
		}
	}
}

func startWitnessing(ctx context.Context, log *slog.Logger, reg prometheus.Registerer, l *ledger.Ledger, be *ledgerbackend.Backend,
	signer note.Signer, wc witnessConfig) (*witnessing, func(), error) {
	w := &witnessing{cfg: wc, changed: make(chan struct{}),
		forks: prometheus.NewCounter(prometheus.CounterOpts{Name: "govledger_witness_fork_alarms_total",
			Help: "Witness answers that show another history of this log: a 422, or a 409 with a size larger than the log's."}),
		cosigns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_witness_submissions_total",
			Help: "Checkpoints submitted to witnesses, by witness and result (cosigned, conflict, fork, error)."}, []string{"witness", "result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_witness_requests_total",
			Help: "add-checkpoint requests sent, by witness (the rate the witnesses see; compare with govledger_witness_declared_qpd)."}, []string{"witness"}),
		sizes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "govledger_witness_cosigned_size",
			Help: "The size of the last checkpoint each witness cosigned (or said it was at)."}, []string{"witness"}),
		quorum: prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_witness_quorum_size",
			Help: "The size of the served checkpoint, cosigned by the policy's quorum (0: none yet)."}),
		noQuorum: prometheus.NewCounter(prometheus.CounterOpts{Name: "govledger_witness_quorum_failures_total",
			Help: "Rounds whose checkpoint the policy's quorum did not cosign."}),
		unwitnesd: prometheus.NewCounter(prometheus.CounterOpts{Name: "govledger_witness_unwitnessed_writes_total",
			Help: "Writes answered 503 NOT_WITNESSED (fail-closed): stored, not covered by a cosigned checkpoint in time."}),
	}
	qpd := prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_witness_declared_qpd",
		Help: "The declared add-checkpoint rate: requests per witness per day (serve --witness-qpd)."})
	qpd.Set(float64(wc.qpd))
	for _, c := range []prometheus.Collector{w.forks, w.cosigns, w.requests, w.sizes, w.quorum, w.noQuorum, w.unwitnesd, qpd} {
		if err := reg.Register(c); err != nil {
			return nil, nil, internalErr(err)
		}
	}
	policy := wc.policy
	names := map[string]string{} // witness key -> policy name
	for _, k := range policy.Witnesses {
		names[k.Key] = k.Name
	}
	sub := &witness.Submitter{Policy: policy, Client: &http.Client{Timeout: wc.timeout}, Rate: rate.Every(wc.interval()),
		OnRequest: func(name string, _ error) { w.requests.WithLabelValues(name).Inc() }}
	statePath := ""
	if wc.dir != "" {
		if err := os.MkdirAll(wc.dir, 0o700); err != nil {
			return nil, nil, internalErr(fmt.Errorf("serve: --witness-dir: %w", err))
		}
		statePath = filepath.Join(wc.dir, witnessStateFile)
		sizes, err := witness.LoadState(statePath, l.Origin())
		if err != nil {
			return nil, nil, inputErr(fmt.Errorf("serve: --witness-dir: %w", err))
		}
		sub.SetSizes(sizes)
		for k, n := range sizes {
			if name, ok := names[k]; ok {
				w.sizes.WithLabelValues(name).Set(float64(n))
			}
		}
		if cp, signed := lastKept(l, policy, wc.dir); cp != nil {
			w.serve(signed, cp.Size)
			log.Info("serving the last cosigned checkpoint kept", "size", cp.Size, "dir", wc.dir)
		}
	}
	saved := sub.Sizes()
	var wg sync.WaitGroup
	poke := commitPokes(ctx, &wg, l, be)
	rounds := rate.NewLimiter(rate.Every(wc.interval()), 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var retry <-chan time.Time
		backoff := wc.interval()
		for {
			select {
			case <-ctx.Done():
				return
			case <-poke:
			case <-retry:
			}
			retry = nil
			// The declared rate: at most one round per interval, the
			// checkpoint signed after the wait so it covers the commits
			// made meanwhile.
			if err := rounds.Wait(ctx); err != nil {
				return
			}
			signed, err := checkpoint.Make(ctx, l, signer)
			if err != nil {
				log.Error("witnessing: signing a checkpoint failed", "error", err.Error())
				retry = time.After(backoff)
				continue
			}
			cosigned, outcomes := sub.Submit(ctx, l, signed)
			if statePath != "" {
				if now := sub.Sizes(); !maps.Equal(now, saved) {
					if err := witness.SaveState(statePath, l.Origin(), now, names); err != nil {
						log.Error("witnessing: keeping the witnesses' sizes failed (a restart will learn them from a 409)", "file", statePath, "error", err.Error())
					} else {
						saved = now
					}
				}
			}
			var errs []string
			for _, o := range outcomes {
				w.sizes.WithLabelValues(o.Witness).Set(float64(o.Size))
				var ce *witness.ConflictError
				switch {
				case o.Err == nil:
					w.cosigns.WithLabelValues(o.Witness, "cosigned").Inc()
				case errors.Is(o.Err, witness.ErrFork):
					w.cosigns.WithLabelValues(o.Witness, "fork").Inc()
					w.forks.Inc()
					err := fmt.Errorf("witness %s: %w", o.Witness, o.Err)
					w.alarm.Store(&err)
					log.Error("WITNESS ALARM: a witness saw another history of this log (fork or rollback); investigate before anything else",
						"witness", o.Witness, "witness_size", o.Size, "error", o.Err.Error())
				case errors.As(o.Err, &ce):
					w.cosigns.WithLabelValues(o.Witness, "conflict").Inc()
					log.Warn("witness is at another size", "witness", o.Witness, "witness_size", ce.Size)
				default:
					w.cosigns.WithLabelValues(o.Witness, "error").Inc()
					if ctx.Err() == nil {
						log.Warn("witness did not cosign", "witness", o.Witness, "error", o.Err.Error())
					}
				}
				if o.Err != nil {
					errs = append(errs, fmt.Sprintf("witness %s: %v", o.Witness, o.Err))
				}
			}
			cp, who, err := policy.Open(cosigned, l.Origin())
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				w.noQuorum.Inc()
				why := fmt.Errorf("%v (%s)", err, strings.Join(errs, "; "))
				w.why.Store(&why)
				log.Warn("checkpoint not cosigned by the policy's quorum; serving the last cosigned one; retrying", "error", why.Error(), "retry_in", backoff.String())
				// Retried without a new commit: fail-closed writes wait
				// for it.
				retry = time.After(backoff)
				backoff = min(2*backoff, max(wc.interval(), maxWitnessBackoff))
				continue
			}
			backoff = wc.interval()
			// Kept first, then served: a cosigned checkpoint a reader saw
			// is one the folder holds.
			if wc.dir != "" && cp.Size != w.size.Load() {
				if err := checkpoint.WriteFileAtomic(filepath.Join(wc.dir, fmt.Sprintf("%020d.checkpoint", cp.Size)), cosigned, 0o644); err != nil {
					log.Error("witnessing: keeping the cosigned checkpoint failed", "dir", wc.dir, "error", err.Error())
				}
			}
			if cp.Size >= w.size.Load() {
				w.serve(cosigned, cp.Size)
			}
			log.Info("checkpoint cosigned", "size", cp.Size, "witnesses", who)
		}
	}()
	return w, wg.Wait, nil
}

// lastKept returns the newest checkpoint kept in dir that satisfies the
// policy and that l's tree has (same root at its size), or nil: what a
// restarted serve serves before its first round.
func lastKept(l *ledger.Ledger, policy *checkpoint.Policy, dir string) (*checkpoint.Checkpoint, []byte) {
	names, err := filepath.Glob(filepath.Join(dir, "*.checkpoint"))
	if err != nil {
		return nil, nil
	}
	slices.Sort(names) // 20-digit sizes: the newest last
	size, err := l.TreeSize(context.Background())
	if err != nil {
		return nil, nil
	}
	for i := len(names) - 1; i >= 0; i-- {
		b, err := os.ReadFile(names[i])
		if err != nil {
			continue
		}
		cp, _, err := policy.Open(b, l.Origin())
		if err != nil || cp.Size > size {
			continue
		}
		if h, err := l.TreeHash(context.Background(), cp.Size); err == nil && h == cp.Hash {
			return cp, b
		}
	}
	return nil, nil
}

// witnessFlags reads and checks serve's witnessing flags; writeTimeout is
// the server's, which bounds how long a write may wait to be witnessed.
func witnessFlags(c interface {
	String(string) string
	Int(string) int
	Duration(string) time.Duration
}, policy *checkpoint.Policy, writeTimeout time.Duration) (witnessConfig, error) {
	wc := witnessConfig{policy: policy, dir: c.String("witness-dir"), timeout: c.Duration("witness-timeout"),
		qpd: c.Int("witness-qpd"), ackTimeout: c.Duration("witness-ack-timeout")}
	switch m := c.String("witness-mode"); m {
	case witnessFailOpen:
	case witnessFailClosed:
		wc.closed = true
	default:
		return wc, usageErr("serve: --witness-mode %q: want %s or %s", m, witnessFailOpen, witnessFailClosed)
	}
	switch {
	case wc.qpd < 1 || wc.qpd > 864000:
		return wc, usageErr("serve: --witness-qpd %d: want 1 to 864000 add-checkpoint requests per witness per day", wc.qpd)
	case wc.timeout <= 0:
		return wc, usageErr("serve: --witness-timeout %s: want a positive duration", wc.timeout)
	case wc.closed && wc.ackTimeout <= 0:
		return wc, usageErr("serve: --witness-ack-timeout %s: want a positive duration", wc.ackTimeout)
	case wc.closed && writeTimeout > 0 && wc.ackTimeout >= writeTimeout:
		return wc, usageErr("serve: --witness-ack-timeout %s must be less than --write-timeout %s (the answer must still be written)", wc.ackTimeout, writeTimeout)
	case wc.closed && wc.interval() >= wc.ackTimeout:
		return wc, usageErr("serve: --witness-mode fail-closed with --witness-qpd %d submits at most every %s: writes could not be witnessed within --witness-ack-timeout %s (raise the rate or the timeout)",
			wc.qpd, wc.interval(), wc.ackTimeout)
	}
	hasURL := false
	for _, w := range policy.Witnesses {
		hasURL = hasURL || w.URL != ""
	}
	if wc.closed && !hasURL && policy.Quorum != "" && policy.Quorum != "none" {
		return wc, usageErr("serve: --witness-mode fail-closed: no witness of the policy has a URL, so no write could ever be witnessed")
	}
	return wc, nil
}
