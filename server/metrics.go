package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of a server and its backend. The
// backend calls ObserveAppend and ObserveCommit; the server records the
// HTTP-level series itself. All names start with "govledger_".
type Metrics struct {
	reg      prometheus.Registerer
	gatherer prometheus.Gatherer

	appends     *prometheus.CounterVec   // decision
	reasons     *prometheus.CounterVec   // code
	commitBatch prometheus.Histogram     // entries per commit
	fsync       prometheus.Histogram     // seconds
	requests    *prometheus.CounterVec   // route, status
	duration    *prometheus.HistogramVec // route
	authFail    *prometheus.CounterVec   // reason
	rateLimited *prometheus.CounterVec   // route
	overloaded  *prometheus.CounterVec   // route
	storageErrs *prometheus.CounterVec   // kind
	panics      prometheus.Counter
	streams     prometheus.Gauge
	inFlight    prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (a new
// registry when reg is nil). GET /metrics serves reg when it is also a
// prometheus.Gatherer (as a *prometheus.Registry is); register process and
// Go collectors on it as you wish.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{reg: reg}
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	m.appends = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_appends_total",
		Help: "Handoff entries appended, by decision."}, []string{"decision"})
	m.reasons = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_append_reasons_total",
		Help: "Reasons of appended handoff entries, by reason code."}, []string{"code"})
	m.commitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "govledger_commit_batch_entries",
		Help: "Entries per storage commit (group commit).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}})
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "govledger_commit_fsync_seconds",
		Help:    "Time the storage took to make a commit durable.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_http_requests_total",
		Help: "HTTP requests answered, by route pattern and status."}, []string{"route", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "govledger_http_request_seconds",
		Help: "HTTP request duration by route pattern (streams: until they end).", Buckets: prometheus.DefBuckets}, []string{"route"})
	m.authFail = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_auth_failures_total",
		Help: "Refused requests: missing, invalid or expired credentials (401), missing scope or agent (403)."}, []string{"reason"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_rate_limited_total",
		Help: "Requests refused with 429 by the per-principal rate limit."}, []string{"route"})
	m.overloaded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_overloaded_total",
		Help: "Requests refused with 503 because the commit queue, the in-flight cap or the stream cap was full."}, []string{"route"})
	m.storageErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_storage_errors_total",
		Help: "Backend failures answered 5xx: outcome_unknown, unavailable, internal."}, []string{"kind"})
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "govledger_http_panics_total",
		Help: "Handler panics recovered (answered 500)."})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_http_streams",
		Help: "Open event streams and exports."})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_http_in_flight",
		Help: "Requests being handled (streams excluded)."})
	for _, c := range []prometheus.Collector{m.appends, m.reasons, m.commitBatch, m.fsync, m.requests, m.duration,
		m.authFail, m.rateLimited, m.overloaded, m.storageErrs, m.panics, m.streams, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveAppend counts one appended handoff entry with its decision and
// the codes of its reasons.
func (m *Metrics) ObserveAppend(decision string, codes []string) {
	if m == nil {
		return
	}
	m.appends.WithLabelValues(decision).Inc()
	for _, c := range codes {
		m.reasons.WithLabelValues(c).Inc()
	}
}

// ObserveCommit records one storage commit of batch entries whose fsync
// (making it durable) took fsync.
func (m *Metrics) ObserveCommit(batch int, fsync time.Duration) {
	if m == nil {
		return
	}
	m.commitBatch.Observe(float64(batch))
	m.fsync.Observe(fsync.Seconds())
}

// registerQueueDepth exports depth as the govledger_commit_queue_depth gauge.
func (m *Metrics) registerQueueDepth(depth func() int) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "govledger_commit_queue_depth",
		Help: "Handoffs waiting for a commit."}, func() float64 { return float64(depth()) }))
}

func (m *Metrics) observeRequest(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
