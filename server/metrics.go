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
	outcomes    *prometheus.CounterVec   // status
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
	limitHits   *prometheus.CounterVec // limit
	streams     prometheus.Gauge
	inFlight    prometheus.Gauge
}

// Names of the caps counted by govledger_limit_hits_total{limit=...}. A
// new cap gets a name here, is listed in KnownLimits (so its series exists
// at 0 from start-up) and calls Metrics.LimitHit when it refuses something.
const (
	LimitRate           = "rate"             // the per-principal request rate (429)
	LimitInFlightWrites = "in_flight_writes" // writes handled at once (503)
	LimitInFlightReads  = "in_flight_reads"  // reads handled at once (503)
	LimitStreams        = "streams"          // open event streams and exports (503)
	LimitCommitQueue    = "commit_queue"     // handoffs waiting for a commit (503)
	LimitBody           = "max_body"         // bytes of one request body (413)
	LimitBatchBody      = "max_batch_body"   // bytes of a batch body (413)
	LimitBatchItems     = "max_batch_items"  // documents in one batch (413)
)

// KnownLimits are the limit names whose govledger_limit_hits_total series
// NewMetrics creates at 0.
var KnownLimits = []string{LimitRate, LimitInFlightWrites, LimitInFlightReads, LimitStreams, LimitCommitQueue,
	LimitBody, LimitBatchBody, LimitBatchItems}

// Label values created at 0 by NewMetrics, so that an alert on
// increase(...) fires on the first event (a series that appears with its
// first event has no earlier sample to increase from).
var (
	storageErrKinds = []string{"outcome_unknown", "unavailable", "internal"}
	authFailReasons = []string{"missing", "malformed", "invalid", "expired", "certificate", "session", "scope", "source", "ui"}
)

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
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_outcomes_total",
		Help: "Outcome entries appended, by status."}, []string{"status"})
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
	m.limitHits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "govledger_limit_hits_total",
		Help: "Requests refused because a cap was reached, by the cap's name (see KnownLimits)."}, []string{"limit"})
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "govledger_http_panics_total",
		Help: "Handler panics recovered (answered 500)."})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_http_streams",
		Help: "Open event streams and exports."})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "govledger_http_in_flight",
		Help: "Requests being handled (streams excluded)."})
	for _, c := range []prometheus.Collector{m.appends, m.outcomes, m.reasons, m.commitBatch, m.fsync, m.requests, m.duration,
		m.authFail, m.rateLimited, m.overloaded, m.storageErrs, m.limitHits, m.panics, m.streams, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, k := range storageErrKinds {
		m.storageErrs.WithLabelValues(k)
	}
	for _, r := range authFailReasons {
		m.authFail.WithLabelValues(r)
	}
	for _, l := range KnownLimits {
		m.limitHits.WithLabelValues(l)
	}
	return m, nil
}

// LimitHit counts one request refused because the cap named limit was
// reached (govledger_limit_hits_total{limit=...}). Use the Limit*
// constants; a name not in KnownLimits gets its series on its first hit.
func (m *Metrics) LimitHit(limit string) {
	if m == nil {
		return
	}
	m.limitHits.WithLabelValues(limit).Inc()
}

// initRoutes creates the per-route alerting series at 0 for every route
// pattern: 429s and 503s can then be alerted on from the first one.
func (m *Metrics) initRoutes(routes []*route) {
	for _, rt := range routes {
		if len(rt.scopes) == 0 {
			continue // public routes are neither rate limited nor capped
		}
		m.rateLimited.WithLabelValues(rt.label())
		m.overloaded.WithLabelValues(rt.label())
	}
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

// ObserveOutcome counts one appended outcome entry with its status.
func (m *Metrics) ObserveOutcome(status string) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(status).Inc()
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
