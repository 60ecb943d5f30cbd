package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/server/ledgerbackend"
	"github.com/govledger/govledger/witness"
)

// witnessing is serve --witness-policy: after start and after commits
// (coalesced), it signs a checkpoint at the head, submits it to every
// witness of the policy, keeps the newest checkpoint whose cosignatures
// satisfy the policy (served at <prefix>/checkpoint, and written to dir
// when set), and raises the alarm when a witness saw another history.
type witnessing struct {
	cosigned atomic.Pointer[[]byte]
	alarm    atomic.Pointer[error]
	forks    prometheus.Counter
	cosigns  *prometheus.CounterVec
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

func startWitnessing(ctx context.Context, log *slog.Logger, reg prometheus.Registerer, l *ledger.Ledger, be *ledgerbackend.Backend,
	signer note.Signer, policy *checkpoint.Policy, dir string, timeout time.Duration) (*witnessing, func(), error) {
	w := &witnessing{
		forks: prometheus.NewCounter(prometheus.CounterOpts{Name: "govledger_witness_fork_alarms_total",
			Help: "Witness answers that show another history of this log: a 422, or a 409 with a size larger than the log's."}),
		cosigns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_witness_submissions_total",
			Help: "Checkpoints submitted to witnesses, by witness and result (cosigned, conflict, fork, error)."}, []string{"witness", "result"}),
	}
	for _, c := range []prometheus.Collector{w.forks, w.cosigns} {
		if err := reg.Register(c); err != nil {
			return nil, nil, err
		}
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, err
		}
	}
	sub := &witness.Submitter{Policy: policy, Client: &http.Client{Timeout: timeout}}
	var wg sync.WaitGroup
	poke := commitPokes(ctx, &wg, l, be)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last uint64
		for {
			select {
			case <-ctx.Done():
				return
			case <-poke:
			}
			signed, err := checkpoint.Make(ctx, l, signer)
			if err != nil {
				log.Error("witnessing: signing a checkpoint failed", "error", err.Error())
				continue
			}
			cosigned, outcomes := sub.Submit(ctx, l, signed)
			for _, o := range outcomes {
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
			}
			cp, who, err := policy.Open(cosigned, l.Origin())
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("checkpoint not cosigned by the policy's quorum; serving the last cosigned one", "error", err.Error())
				}
				continue
			}
			// Kept first, then served: a cosigned checkpoint a reader saw
			// is one the folder holds.
			if dir != "" && cp.Size != last {
				if err := checkpoint.WriteFileAtomic(filepath.Join(dir, fmt.Sprintf("%020d.checkpoint", cp.Size)), cosigned, 0o644); err != nil {
					log.Error("witnessing: keeping the cosigned checkpoint failed", "dir", dir, "error", err.Error())
				}
			}
			w.cosigned.Store(&cosigned)
			last = cp.Size
			log.Info("checkpoint cosigned", "size", cp.Size, "witnesses", who)
		}
	}()
	return w, wg.Wait, nil
}
