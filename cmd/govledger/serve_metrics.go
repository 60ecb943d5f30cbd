package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
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
