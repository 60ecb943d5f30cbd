package main

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server/ui"
	"github.com/govledger/govledger/verify"
)

// serveVerifier runs verify over the ledger serve holds — the whole
// replay and the store check, as 'govledger verify' runs them — at
// start-up and then every interval, and keeps the last result for the
// viewer's overview, the log and the metrics. While serve holds the file,
// 'govledger verify' cannot open it; this is how its operators see it
// verified.
type serveVerifier struct {
	l   *ledger.Ledger
	log *slog.Logger

	mu   sync.Mutex
	last *ui.VerifyResult

	ok, when, findings prometheus.Gauge
}

func newServeVerifier(l *ledger.Ledger, log *slog.Logger, reg prometheus.Registerer) (*serveVerifier, error) {
	v := &serveVerifier{l: l, log: log,
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_verify_last_ok",
			Help: "1 when the last verification serve ran passed, 0 when it found something or could not finish (or none ran yet)."}),
		when: prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_verify_last_run_timestamp_seconds",
			Help: "When the last verification serve ran ended (Unix seconds; 0: none yet). Alert when it is older than twice --verify-every."}),
		findings: prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_verify_last_findings",
			Help: "How many findings the last verification serve ran reported."}),
	}
	for _, c := range []prometheus.Collector{v.ok, v.when, v.findings} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Last is the last result, or nil before the first run ended.
func (v *serveVerifier) Last() *ui.VerifyResult {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.last
}

// run verifies at once and then every interval until ctx ends.
func (v *serveVerifier) run(ctx context.Context, every time.Duration) {
	for {
		v.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// once runs one verification of the live ledger. Entries appended while it
// runs are not findings: the stored head is anchored at the last entry the
// replay read, by the prev of the entry that follows it.
func (v *serveVerifier) once(ctx context.Context) {
	start := time.Now()
	var last atomic.Uint64
	rep, err := verify.Replay(ctx, verify.LedgerSource(v.l), verify.Options{
		Progress:   func(seq uint64) { last.Store(seq) },
		Structural: v.l.Check,
		Head: func(ctx context.Context) (uint64, entry.Hash, error) {
			hs, hh, err := v.l.Head(ctx)
			if err != nil || hs <= last.Load() {
				return hs, hh, err
			}
			next, _, err := v.l.Get(ctx, last.Load()+1)
			if err != nil {
				return 0, entry.Hash{}, err
			}
			return last.Load(), next.Prev, nil
		},
	})
	if ctx.Err() != nil {
		return // shutting down: not a result
	}
	res := &ui.VerifyResult{Time: time.Now().UTC()}
	switch {
	case err != nil:
		res.Detail = "the verification could not finish: " + err.Error()
	case rep.OK():
		res.OK, res.Entries = true, rep.Entries
	default:
		res.Entries = rep.Entries
		f := rep.Findings[0]
		res.Detail = count(len(rep.Findings), "finding") + "; first at seq " + strconv.FormatUint(f.Seq, 10) + ": " + string(f.Kind) + ": " + f.Message
	}
	v.mu.Lock()
	v.last = res
	v.mu.Unlock()
	v.when.Set(float64(res.Time.Unix()))
	if res.OK {
		v.ok.Set(1)
		v.findings.Set(0)
		v.log.Info("verified", "ok", true, "entries", res.Entries, "duration", time.Since(start).String())
		return
	}
	v.ok.Set(0)
	if rep != nil {
		v.findings.Set(float64(len(rep.Findings)))
	}
	v.log.Error("verify found the ledger damaged, or could not finish: run 'govledger verify --server' for the findings",
		"ok", false, "entries", res.Entries, "detail", res.Detail, "duration", time.Since(start).String())
}
