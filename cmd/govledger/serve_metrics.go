package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/server/forward"
)

// registerCommitMetrics adds the commit counters of a ledger whose store
// other writers share (several serve replicas on one PostgreSQL
// database): the retries of its commits by reason, the commits built
// holding the head (after a conflict, and the ledger.ContendedCommits
// after it), and the commits whose answer the database connection
// lost.
func registerCommitMetrics(reg prometheus.Registerer, l *ledger.Ledger) error {
	cs := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "govledger_commit_retries_total",
			Help:        "Commits built again, by reason: conflict (another writer of the database moved the head first).",
			ConstLabels: prometheus.Labels{"reason": "conflict"}},
			func() float64 { return float64(l.Stats().Conflicts) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "govledger_commit_locked_total",
			Help: "Commits built holding the head: the retry after a conflict, which cannot lose, and the commits just after one."},
			func() float64 { return float64(l.Stats().Locked) }),
	}
	if d, ok := l.Driver().(*postgres.Driver); ok {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "govledger_commit_answers_lost_total",
			Help: "Commits whose answer the database connection lost (a broken connection, a server restarting); the head was read to learn the outcome."},
			func() float64 { return float64(d.Stats().Unknown) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// registerForwardMetrics adds the counters of a replica's forwarding
// (serve --forward-addr): the submissions it forwarded to the writer, decided
// itself (holding the role, or none held it) or decided itself after a
// forward failed, and whether it holds the writer role.
func registerForwardMetrics(reg prometheus.Registerer, fb *forward.Backend, role *postgres.Role) error {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "govledger_writer_role",
			Help: "1 while this replica holds the writer role (the other replicas forward their submissions to it), else 0."},
			func() float64 {
				if role.Held() {
					return 1
				}
				return 0
			}),
	}
	for _, x := range []struct {
		result string
		n      func(forward.Stats) uint64
	}{
		{"forwarded", func(s forward.Stats) uint64 { return s.Forwarded }},
		{"local", func(s forward.Stats) uint64 { return s.Local }},
		{"fallback", func(s forward.Stats) uint64 { return s.Fallback }},
		{"lost", func(s forward.Stats) uint64 { return s.Lost }},
	} {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "govledger_forward_submissions_total",
			Help:        "Submissions by where they were decided: forwarded (by the writer), local (this replica held the role, or none did), fallback (here, after a forward that did not reach the writer or lost its answer), lost (the answer lost without an idempotency key: 503 outcome unknown).",
			ConstLabels: prometheus.Labels{"result": x.result}},
			func() float64 { return float64(x.n(fb.Stats())) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
