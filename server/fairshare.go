package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Fair shares: every principal gets at most its share of each kind of
// slot, so one principal cannot take the slots the others need, and the
// server as a whole has a cap on each.

// Defaults of the fair-share fields of Config.
const (
	DefaultMaxStreamsPerPrincipal  = 8
	DefaultMaxInFlightPerPrincipal = 64
	DefaultMaxPublic               = 64
	DefaultMinBodyRate             = 8 << 10
	DefaultBodyRateGrace           = 5 * time.Second
	DefaultMaxConns                = 4096
	DefaultMaxIdleConns            = 1024
	DefaultTokensPoll              = 500 * time.Millisecond
)

// slotClass is a kind of slot a request holds while it is handled.
type slotClass int

const (
	slotRead   slotClass = iota // a read (streams excluded)
	slotWrite                   // a request with a body
	slotStream                  // an event stream, an export, an evidence slice
	slotPublic                  // a request without a principal (viewer login, static files)
)

var slotNames = [...]struct{ what, limit string }{
	slotRead:   {"reads in flight", "reads"},
	slotWrite:  {"writes in flight", "writes"},
	slotStream: {"event streams and exports open", "streams"},
	slotPublic: {"unauthenticated requests in flight", "public"},
}

// slots counts the requests of one class, in all and per principal.
type slots struct {
	class     slotClass
	mu        sync.Mutex
	total     int
	max       int
	perMax    int // 0: no per-principal cap
	principal map[string]int
}

func newSlots(class slotClass, max, perMax int) *slots {
	return &slots{class: class, max: max, perMax: perMax, principal: map[string]int{}}
}

// acquire takes a slot for principal (""; none), or returns the error
// that says which cap is full: a per-principal cap is the principal's
// own doing (429), the server-wide one is not (503).
func (sl *slots) acquire(principal string) (release func(), err error) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	n := sl.principal[principal]
	switch {
	case principal != "" && sl.perMax > 0 && sl.perMax < sl.max && n >= sl.perMax: // a share as big as the whole is no share
		return nil, &limitError{class: sl.class, principal: principal, limit: sl.perMax}
	case sl.total >= sl.max:
		return nil, &limitError{class: sl.class, limit: sl.max}
	}
	sl.total++
	if principal != "" {
		sl.principal[principal] = n + 1
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			sl.mu.Lock()
			defer sl.mu.Unlock()
			sl.total--
			if principal != "" {
				if sl.principal[principal] <= 1 {
					delete(sl.principal, principal)
				} else {
					sl.principal[principal]--
				}
			}
		})
	}, nil
}

// limitError is a full cap: a principal's share (principal set: 429) or
// the server's (503).
type limitError struct {
	class     slotClass
	principal string
	limit     int
}

func (e *limitError) Error() string {
	what := slotNames[e.class].what
	if e.principal != "" {
		return fmt.Sprintf("principal %q has %d %s, its share (limit %d per principal): wait for one to end", e.principal, e.limit, what, e.limit)
	}
	return fmt.Sprintf("the server has %d %s, its limit for all principals together: retry later", e.limit, what)
}

// metricName is the limit label of govledger_limit_hits_total.
func (e *limitError) metricName() string {
	if e.principal != "" {
		return slotNames[e.class].limit + "_per_principal"
	}
	return slotNames[e.class].limit
}

// problem answers e: 429 RATE_LIMITED for a principal's share, 503
// OVERLOADED for the server's cap, both with Retry-After.
func (e *limitError) problem(retry time.Duration) *Problem {
	p := newProblem(http.StatusServiceUnavailable, CodeOverloaded, e.Error())
	if e.principal != "" {
		p = newProblem(http.StatusTooManyRequests, CodeRateLimited, e.Error())
	}
	p.RetryAfter = retrySeconds(retry)
	return p
}

// limitHits counts the caps of the fair shares that were hit, by limit, in
// govledger_limit_hits_total (Metrics' one counter of caps):
// govledger_limit_hits_total{limit="streams_per_principal"}.
type limitHits struct{ c *prometheus.CounterVec }

// limitLabels are the fair shares' limit label values, present from
// start-up at 0 beside KnownLimits.
var limitLabels = []string{"reads", "reads_per_principal", "writes", "writes_per_principal", "streams",
	"streams_per_principal", "public", "body_rate", "connections", "idle_connections"}

func newLimitHits(c *prometheus.CounterVec) *limitHits {
	for _, l := range limitLabels {
		c.WithLabelValues(l)
	}
	return &limitHits{c: c}
}

// hit counts one refusal by the cap named limit.
func (h *limitHits) hit(limit string) {
	if h != nil {
		h.c.WithLabelValues(limit).Inc()
	}
}

// slotsFor returns the slots of class.
func (s *Server) slotsFor(c slotClass) *slots {
	switch c {
	case slotWrite:
		return s.writeSlots
	case slotStream:
		return s.streamSlots
	case slotPublic:
		return s.publicSlots
	}
	return s.readSlots
}

// admit takes a slot of class for principal, counting a refusal.
func (s *Server) admit(c slotClass, principal string) (func(), error) {
	release, err := s.slotsFor(c).acquire(principal)
	var le *limitError
	if errors.As(err, &le) {
		s.limits.hit(le.metricName())
	}
	return release, err
}

// bodyRate makes a request body arrive at a minimum rate: after a grace
// period, the body must have come at MinBodyRate bytes per second on
// average, or the next read times out. Each read extends the connection's
// read deadline accordingly (never beyond ReadTimeout after the start), so
// a slow sender cannot hold a write slot for long.
type bodyRate struct {
	io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	end   time.Time // start + ReadTimeout
	rate  int64
	grace time.Duration
	got   int64
	slow  bool
}

func (s *Server) rateBody(w http.ResponseWriter, r *http.Request) *bodyRate {
	if s.cfg.MinBodyRate <= 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	now := time.Now()
	b := &bodyRate{ReadCloser: r.Body, rc: http.NewResponseController(w), start: now, end: now.Add(s.cfg.ReadTimeout),
		rate: s.cfg.MinBodyRate, grace: s.cfg.BodyRateGrace}
	if b.extend() != nil {
		return nil // no connection to set deadlines on (a recorder): nothing to enforce
	}
	r.Body = b
	return b
}

// extend sets the read deadline the bytes received so far earn.
func (b *bodyRate) extend() error {
	d := b.start.Add(b.grace + time.Duration(float64(b.got)/float64(b.rate)*float64(time.Second)))
	if d.After(b.end) {
		d = b.end
	}
	return b.rc.SetReadDeadline(d)
}

func (b *bodyRate) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.got += int64(n)
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			b.slow = true
		}
		if errors.Is(err, io.EOF) {
			// The body is read: back to the request's own deadline, which
			// the server's background read (that notices a client gone)
			// must not hit early, or it would cancel the handler.
			b.rc.SetReadDeadline(b.end)
		}
		return n, err
	}
	b.extend()
	return n, nil
}

// slowError is the answer to a body that came too slowly: 408, nothing
// written.
func (b *bodyRate) slowError() error {
	if !time.Now().Before(b.end) {
		return &httpError{status: http.StatusRequestTimeout, code: CodeRequestTimeout,
			detail: fmt.Sprintf("request body not received within the read timeout (%d bytes in %s)",
				b.got, time.Since(b.start).Round(time.Millisecond))}
	}
	return &httpError{status: http.StatusRequestTimeout, code: CodeRequestTimeout,
		detail: fmt.Sprintf("request body too slow: %d bytes in %s, below the minimum of %d bytes per second (after %s)",
			b.got, time.Since(b.start).Round(time.Millisecond), b.rate, b.grace)}
}
