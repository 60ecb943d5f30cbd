package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"
)

// Defaults of Config's zero fields.
const (
	DefaultMaxBody           = 4 << 20
	DefaultMaxBatchBody      = 32 << 20
	DefaultMaxBatchItems     = 1000
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultHeartbeat         = 15 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxInFlight       = 1024
	DefaultMaxStreams        = 256
	DefaultRetryAfter        = time.Second
)

// Config configures a Server. Zero fields take the defaults above; Backend
// and Tokens are required.
type Config struct {
	Backend Backend
	// Degraded, when set and returning an error, makes /readyz answer
	// 503 with it (e.g. a witness saw a fork of this log).
	Degraded func() error
	// Acknowledge, when set, is called before a write is answered as
	// done, with the seq of its last entry (replayed answers included):
	// an error answers instead (a *NotWitnessedError: 503 NOT_WITNESSED,
	// written "yes"). serve --witness-mode fail-closed waits in it for a
	// checkpoint covering seq that the witnesses cosigned. The entries
	// are stored either way.
	Acknowledge func(ctx context.Context, seq uint64) error
	// Tokens authenticates bearer tokens and client certificates (a
	// *TokenStore). A store with a Reload() error method is re-read by
	// POST /v1/reload and Server.Reload.
	Tokens Authenticator
	// Logger receives one JSON line per request and the server's errors;
	// nil discards them.
	Logger *slog.Logger
	// ClientIdentity is the rule naming a client certificate's principal:
	// IdentityCN (the default, ""), IdentityURI or IdentityDNS; see
	// CertificateIdentity.
	ClientIdentity string
	// Metrics are exposed on /metrics; nil creates them on a new registry.
	Metrics *Metrics
	// QueueDepth, when set, is exported as govledger_commit_queue_depth.
	QueueDepth func() int
	// Tiles, when set, serves the tlog-tiles read API (see TilesConfig);
	// the Backend must then be a TileBackend.
	Tiles *TilesConfig
	// UI, when set, is mounted under /ui/ (the audit viewer, package
	// server/ui); its session cookie then also authenticates GET requests
	// of the API.
	UI UI

	MaxBody       int64 // bytes of one document (POST /v1/handoffs, /v1/validate): 413 beyond
	MaxBatchBody  int64 // bytes of a POST /v1/handoffs:batch body: 413 beyond
	MaxBatchItems int   // documents in one batch: 413 beyond

	// Rate is each principal's sustained request rate (per second) and
	// Burst its bucket: 429 with Retry-After beyond. Rate 0 means no limit;
	// Burst 0 means max(1, Rate).
	Rate  rate.Limit
	Burst int

	// MaxInFlight caps the writes handled at once, and separately the
	// reads (streams excluded), so reads never queue behind writes: 503
	// beyond.
	MaxInFlight int
	MaxStreams  int // open event streams and exports: 503 beyond

	// Fair shares (fairshare.go). MaxInFlightPerPrincipal caps one
	// principal's writes, and separately its reads;
	// MaxStreamsPerPrincipal its streams (event streams, exports, the
	// viewer's evidence slices): 429 beyond, naming the cap. MaxPublic
	// caps the requests without a principal (the viewer's login and
	// static files; health, metrics and the OpenAPI document are not
	// counted): 503 beyond.
	MaxInFlightPerPrincipal int
	MaxStreamsPerPrincipal  int
	MaxPublic               int
	// MinBodyRate is the slowest a request body may arrive, in bytes per
	// second on average once BodyRateGrace has passed: 408 beyond, so a
	// slow sender cannot hold a write slot. Negative: no minimum.
	MinBodyRate   int64
	BodyRateGrace time.Duration
	// MaxConns caps the connections Serve holds open and MaxIdleConns the
	// idle ones among them (keep-alive connections between requests and
	// new ones before their first request): at a cap the oldest idle
	// connection is closed, one that never carried an authenticated
	// request first; with every connection busy a new one is refused.
	// Keep MaxConns below the process's file descriptor limit.
	MaxConns     int
	MaxIdleConns int
	// TokensFile, when set, is polled every TokensPoll (negative: never)
	// for a change of identity, size or modification time; a change
	// reloads the tokens, and open streams whose credential no longer
	// holds end.
	TokensFile string
	TokensPoll time.Duration

	ReadHeaderTimeout time.Duration // a client must send its headers within this
	ReadTimeout       time.Duration // ... and its whole request within this
	// WriteTimeout bounds every non-streaming answer (and is its handler's
	// context deadline); streams extend their write deadline by it for
	// each event they send instead.
	WriteTimeout    time.Duration
	IdleTimeout     time.Duration // keep-alive connections idle longer are closed
	ShutdownTimeout time.Duration // Serve's drain time once its context ends
	Heartbeat       time.Duration // SSE comment interval that keeps idle streams alive
	MaxHeaderBytes  int
	RetryAfter      time.Duration // Retry-After of 503 answers

	// Now is the clock of token expiry and rate limits (time.Now if nil).
	Now func() time.Time
}

func (c *Config) setDefaults() {
	def := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxBatchBody == 0 {
		c.MaxBatchBody = DefaultMaxBatchBody
	}
	if c.MaxBatchItems == 0 {
		c.MaxBatchItems = DefaultMaxBatchItems
	}
	if c.Rate == 0 {
		c.Rate = rate.Inf
	}
	if c.Burst == 0 {
		c.Burst = max(1, int(c.Rate))
		if c.Rate == rate.Inf {
			c.Burst = 1
		}
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	if c.MaxInFlightPerPrincipal == 0 {
		c.MaxInFlightPerPrincipal = min(DefaultMaxInFlightPerPrincipal, c.MaxInFlight)
	}
	if c.MaxStreamsPerPrincipal == 0 {
		c.MaxStreamsPerPrincipal = min(DefaultMaxStreamsPerPrincipal, c.MaxStreams)
	}
	if c.MaxPublic == 0 {
		c.MaxPublic = DefaultMaxPublic
	}
	if c.MinBodyRate == 0 {
		c.MinBodyRate = DefaultMinBodyRate
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxIdleConns == 0 {
		c.MaxIdleConns = min(DefaultMaxIdleConns, c.MaxConns)
	}
	def(&c.BodyRateGrace, DefaultBodyRateGrace)
	def(&c.TokensPoll, DefaultTokensPoll)
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.Heartbeat, DefaultHeartbeat)
	def(&c.RetryAfter, DefaultRetryAfter)
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c *Config) valid() error {
	switch {
	case c.Backend == nil:
		return errors.New("server: Config.Backend is required")
	case c.Tokens == nil:
		return errors.New("server: Config.Tokens is required")
	case c.ClientIdentity != "" && !slices.Contains(IdentityRules, c.ClientIdentity):
		return fmt.Errorf("server: ClientIdentity %q: want %s", c.ClientIdentity, strings.Join(IdentityRules, ", "))
	case c.MaxBody < 0 || c.MaxBatchBody < 0 || c.MaxBatchItems < 0 || c.MaxInFlight < 0 || c.MaxStreams < 0 || c.Burst < 0 || c.Rate < 0 ||
		c.MaxInFlightPerPrincipal < 0 || c.MaxStreamsPerPrincipal < 0 || c.MaxPublic < 0 || c.MaxConns < 0 || c.MaxIdleConns < 0:
		return errors.New("server: negative limit in Config")
	case c.MaxInFlightPerPrincipal > c.MaxInFlight || c.MaxStreamsPerPrincipal > c.MaxStreams:
		return fmt.Errorf("server: a principal's share (in flight %d, streams %d) is above the server's cap (%d, %d)",
			c.MaxInFlightPerPrincipal, c.MaxStreamsPerPrincipal, c.MaxInFlight, c.MaxStreams)
	case c.MaxIdleConns > c.MaxConns:
		return fmt.Errorf("server: MaxIdleConns %d is above MaxConns %d", c.MaxIdleConns, c.MaxConns)
	case c.BodyRateGrace < 0:
		return errors.New("server: negative BodyRateGrace")
	case c.MaxBatchBody < c.MaxBody:
		return fmt.Errorf("server: MaxBatchBody %d is below MaxBody %d", c.MaxBatchBody, c.MaxBody)
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 || c.ShutdownTimeout < 0 || c.Heartbeat < 0:
		return errors.New("server: negative timeout in Config")
	case c.MaxHeaderBytes < 0 || c.MaxHeaderBytes >= 1<<20:
		return fmt.Errorf("server: MaxHeaderBytes %d: want below 1 MiB", c.MaxHeaderBytes)
	}
	return c.Tiles.valid(c.Backend)
}

// String describes the configuration's limits and timeouts, for a log line.
func (c Config) String() string {
	return fmt.Sprintf("max_body=%d max_batch_body=%d max_batch_items=%d rate=%v burst=%d max_in_flight=%d max_streams=%d "+
		"max_in_flight_per_principal=%d max_streams_per_principal=%d max_public=%d min_body_rate=%d body_rate_grace=%s "+
		"max_conns=%d max_idle_conns=%d tokens_poll=%s "+
		"read_header_timeout=%s read_timeout=%s write_timeout=%s idle_timeout=%s shutdown_timeout=%s heartbeat=%s max_header_bytes=%d",
		c.MaxBody, c.MaxBatchBody, c.MaxBatchItems, c.Rate, c.Burst, c.MaxInFlight, c.MaxStreams,
		c.MaxInFlightPerPrincipal, c.MaxStreamsPerPrincipal, c.MaxPublic, c.MinBodyRate, c.BodyRateGrace,
		c.MaxConns, c.MaxIdleConns, c.TokensPoll,
		c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout, c.ShutdownTimeout, c.Heartbeat, c.MaxHeaderBytes)
}

// Server is the HTTP API. Create it with New; serve it with Serve or
// ServeTLS (once), or mount Handler in a server of your own.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metrics *Metrics
	mux     *http.ServeMux
	routes  []*route
	// fair shares (fairshare.go), connections (conns.go), authority.go
	readSlots, writeSlots, streamSlots, publicSlots *slots
	limits                                          *limitHits
	conns                                           *connLimiter
	authority                                       *authority

	metricsHandler http.Handler

	limMu    sync.Mutex
	limiters map[string]*rate.Limiter

	stopCtx  context.Context // ends when shutdown begins: streams close
	stop     context.CancelFunc
	stopping atomic.Bool
	served   atomic.Bool
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.valid(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:         cfg,
		log:         cfg.Logger,
		metrics:     cfg.Metrics,
		readSlots:   newSlots(slotRead, cfg.MaxInFlight, cfg.MaxInFlightPerPrincipal),
		writeSlots:  newSlots(slotWrite, cfg.MaxInFlight, cfg.MaxInFlightPerPrincipal),
		streamSlots: newSlots(slotStream, cfg.MaxStreams, cfg.MaxStreamsPerPrincipal),
		publicSlots: newSlots(slotPublic, cfg.MaxPublic, 0),
		authority:   newAuthority(),
		limiters:    map[string]*rate.Limiter{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	s.limits = newLimitHits(s.metrics.limitHits)
	if cfg.QueueDepth != nil {
		if err := s.metrics.registerQueueDepth(cfg.QueueDepth); err != nil {
			return nil, fmt.Errorf("server: queue depth gauge: %w", err)
		}
	}
	if s.metrics.gatherer != nil {
		s.metricsHandler = promhttp.HandlerFor(s.metrics.gatherer, promhttp.HandlerOpts{EnableOpenMetrics: true}) // OpenMetrics when the scraper asks (Accept)
	}
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	for _, rt := range s.tileRoutes() {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	s.metrics.initRoutes(s.routes)
	if cfg.UI != nil {
		s.mux.Handle("/ui/", s.mountUI(cfg.UI))
		s.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	}
	return s, nil
}

// UI is a web interface the server mounts under /ui/. It answers its own
// requests (authenticating them by its session cookie, answering errors
// with ServeError) and authenticates the API's GET requests that carry no
// Authorization header.
type UI interface {
	http.Handler
	// Session returns the principal of the request's session cookie: nil
	// and no error when it carries none, an error wrapping
	// ErrUnauthenticated for an unknown or expired session.
	Session(r *http.Request) (*Principal, error)
}

// mountUI wraps the UI: its requests are logged and counted under the
// route "/ui/", with their session's principal.
func (s *Server) mountUI(ui UI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		info.route = "/ui/"
		class, name := slotPublic, ""
		if p, err := ui.Session(r); err == nil && p != nil {
			info.principal, name, class = p.Name, p.Name, slotRead
			markAuthenticated(r)
		}
		st, ok := ui.(interface{ Streams(*http.Request) bool })
		stream := ok && name != "" && st.Streams(r)
		if stream {
			class = slotStream
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		release, err := s.admit(class, name)
		if err != nil {
			s.answerError(w, r, info, err)
			return
		}
		defer release()
		if stream {
			// A long answer (an evidence slice): it ends when the session
			// does (logout, a revoked or expired token).
			s.metrics.streams.Inc()
			defer s.metrics.streams.Dec()
			ctx, cancel := context.WithCancelCause(r.Context())
			defer cancel(nil)
			stop := s.guard(ctx, cancel, name, func() error {
				p, err := ui.Session(r)
				if err == nil && p == nil {
					err = fmt.Errorf("%w: the session ended", ErrUnauthenticated)
				}
				if err != nil {
					return err
				}
				return stillGrants(p, name, nil)
			})
			defer stop()
			r = r.WithContext(ctx)
		}
		ui.ServeHTTP(w, r)
	})
}

// ServeError answers err as the API answers errors, with a problem
// (application/problem+json) whose status follows the sentinels of
// errors.go; for handlers mounted in the server, such as the UI.
func ServeError(w http.ResponseWriter, r *http.Request, err error) {
	info := infoFrom(r.Context())
	if info.s == nil {
		status, code, detail, _ := classify(err, false)
		p := newProblem(status, code, detail)
		p.Instance = r.URL.Path
		writeProblem(w, p)
		return
	}
	var he *httpError
	switch {
	case errors.Is(err, ErrUnauthenticated):
		info.s.metrics.authFail.WithLabelValues("ui").Inc()
	case errors.As(err, &he) && he.code == CodeForbiddenScope:
		info.s.metrics.authFail.WithLabelValues("scope").Inc()
	}
	info.s.answerError(w, r, info, err)
}

// HTTPError returns an error that ServeError answers with status and code
// (one of the Code constants) and detail.
func HTTPError(status int, code, detail string) error {
	return &httpError{status: status, code: code, detail: detail}
}

// Handler returns the server's http.Handler (every route, with request
// ids, logging, metrics and panic recovery).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Serve answers HTTP on ln until ctx ends, then shuts down gracefully: it
// stops accepting, closes event streams and exports, lets requests in
// flight finish (up to ShutdownTimeout) and returns. It returns early with
// the error of a failing listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, nil)
}

// ServeTLS is Serve over TLS with tc (see TLSConfig for mutual TLS).
func (s *Server) ServeTLS(ctx context.Context, ln net.Listener, tc *tls.Config) error {
	if tc == nil {
		return errors.New("server: ServeTLS needs a tls.Config")
	}
	return s.serve(ctx, ln, tc)
}

func (s *Server) serve(ctx context.Context, ln net.Listener, tc *tls.Config) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("server: Serve called twice")
	}
	s.conns = newConnLimiter(ln, s.cfg.MaxConns, s.cfg.MaxIdleConns, tc == nil, s.cfg.RetryAfter, s.limits)
	ln = s.conns
	hs := &http.Server{
		ConnState:         s.conns.state,
		ConnContext:       s.conns.connContext,
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		TLSConfig:         tc,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(s.beginShutdown)
	go s.watchTokens(s.stopCtx)
	errc := make(chan error, 1)
	go func() {
		if tc != nil {
			errc <- hs.ServeTLS(ln, "", "")
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		s.beginShutdown()
		return err
	case <-ctx.Done():
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "shutting down", slog.Duration("drain", s.cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	if err != nil {
		hs.Close()
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}

func (s *Server) beginShutdown() {
	s.stopping.Store(true)
	s.stop()
}

// TLSConfig returns a TLS configuration serving cert. With clientCAs, the
// server asks for a client certificate and verifies one when given
// (mutual TLS: the name Config.ClientIdentity picks names the principal,
// through the tokens file's mtls_subject; see CertificateIdentity); clients without one may still use bearer
// tokens. now is the clock certificates are verified against (time.Now if
// nil).
func TLSConfig(cert tls.Certificate, clientCAs *x509.CertPool, now func() time.Time) *tls.Config {
	tc := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		Time:         now,
	}
	if clientCAs != nil {
		tc.ClientCAs = clientCAs
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return tc
}

// Reload re-reads the tokens file (when Config.Tokens can reload) and then
// asks the backend to reload the manifest and lock, recording operator as
// the snapshot entries' submitter. If the tokens file is invalid, nothing
// is reloaded and the old tokens stay in force. SIGHUP and POST /v1/reload
// both call it.
func (s *Server) Reload(ctx context.Context, operator string) ([]EntryView, error) {
	if err := s.ReloadTokens(); err != nil {
		return nil, fmt.Errorf("tokens file not reloaded, the previous tokens stay in force: %w: %w", ErrUnprocessable, err)
	}
	return s.cfg.Backend.Reload(ctx, operator)
}

// reqInfo is what the outer handler learns about a request from the route
// that handles it.
type reqInfo struct {
	id        string
	route     string // the route label (method and documented path); "" when the mux answered itself
	write     bool
	principal string
	err       error // the error answered, for the log
	panicked  bool
	s         *Server
}

type infoKey struct{}

func infoFrom(ctx context.Context) *reqInfo {
	if ri, ok := ctx.Value(infoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// statusWriter records the status and size of an answer, and turns the
// mux's own plain-text 404 and 405 answers into problems.
type statusWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	info    *reqInfo
	status  int
	bytes   int64
	swallow bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if w.info.route == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.swallow = true
		p := newProblem(code, CodeNotFound, "no such route: "+w.r.URL.Path)
		if code == http.StatusMethodNotAllowed {
			p = newProblem(code, CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed here (Allow: %s)", w.r.Method, w.Header().Get("Allow")))
		}
		p.Instance, p.RequestID = w.r.URL.Path, w.info.id
		w.status = code
		writeProblem(w.ResponseWriter, p)
		return
	}
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (Flush,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveHTTP is the outermost handler: request id, recovery, log, metrics.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &reqInfo{id: requestID(r), s: s}
	w.Header().Set("X-Request-Id", info.id)
	sw := &statusWriter{ResponseWriter: w, s: s, r: r, info: info}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value
				s.finish(sw, r, start)
				panic(v)
			}
			info.panicked = true
			s.metrics.panics.Inc()
			s.log.LogAttrs(r.Context(), slog.LevelError, "panic", slog.String("request_id", info.id),
				slog.String("route", info.route), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			if sw.status == 0 {
				s.answerError(sw, r, info, fmt.Errorf("panic in handler"))
			} else {
				s.finish(sw, r, start)
				panic(http.ErrAbortHandler) // the answer was under way: cut the connection
			}
		}
		s.finish(sw, r, start)
	}()
	ctx := context.WithValue(r.Context(), infoKey{}, info)
	s.mux.ServeHTTP(sw, r.WithContext(ctx))
}

// finish logs the request and counts it.
func (s *Server) finish(sw *statusWriter, r *http.Request, start time.Time) {
	info := sw.info
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	route := info.route
	if route == "" {
		route = "unmatched"
	}
	d := time.Since(start)
	s.metrics.observeRequest(route, status, d)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("request_id", info.id), slog.String("method", r.Method), slog.String("route", route),
		slog.String("path", r.URL.Path), slog.Int("status", status), slog.Int64("bytes", sw.bytes),
		slog.Duration("duration", d), slog.String("remote", r.RemoteAddr),
	}
	if info.principal != "" {
		attrs = append(attrs, slog.String("principal", info.principal))
	}
	if info.err != nil {
		attrs = append(attrs, slog.String("error", info.err.Error()))
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// requestID returns the request's X-Request-Id when it is 1 to 128
// characters of [A-Za-z0-9._:-], else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && strings.Trim(id,
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-") == "" {
		return id
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// route is one entry of the API.
type route struct {
	method string
	path   string // ServeMux pattern path
	doc    string // OpenAPI path template, when it differs from path
	scopes []Scope
	write  bool // appends to the ledger: problems say whether anything was written
	body   bool // takes a request body: Content-Encoding refused
	stream bool // long-lived answer: no handler deadline, the stream cap applies
	capped bool // a public route under the read cap all the same (the tile API)
	h      func(w http.ResponseWriter, r *http.Request, p *Principal) error
}

// label is the route's name in logs and metrics: the method and the
// documented path template ("POST /v1/blocks/{agent}:unblock").
func (rt *route) label() string { return rt.method + " " + rt.docPath() }

func (rt *route) docPath() string {
	if rt.doc != "" {
		return rt.doc
	}
	return rt.path
}

// wrap applies authentication, rate limit, caps and deadlines to a route.
func (s *Server) wrap(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r.Context())
		info.route, info.write = rt.label(), rt.write
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// refuse answers err before the body is read: the connection then
		// closes, so the server does not wait to discard a body sent
		// slowly (at the sender's pace, up to ReadTimeout).
		refuse := func(err error) {
			if rt.body {
				w.Header().Set("Connection", "close")
			}
			s.answerError(w, r, info, err)
		}
		var p *Principal
		if len(rt.scopes) > 0 {
			var err error
			if p, err = s.authenticate(w, r); err != nil {
				refuse(err)
				return
			}
			info.principal = p.Name
			markAuthenticated(r)
			if err := s.allow(p.Name); err != nil {
				s.metrics.rateLimited.WithLabelValues(info.route).Inc()
				refuse(err)
				return
			}
			for _, sc := range rt.scopes {
				if !p.Has(sc) {
					s.metrics.authFail.WithLabelValues("scope").Inc()
					refuse(&httpError{status: http.StatusForbidden, code: CodeForbiddenScope,
						detail: fmt.Sprintf("principal %q lacks scope %s (this route needs %s)", p.Name, sc, scopeNames(rt.scopes))})
					return
				}
			}
		}
		var slow *bodyRate
		if rt.body {
			for _, ce := range r.Header.Values("Content-Encoding") {
				if !strings.EqualFold(strings.TrimSpace(ce), "identity") {
					refuse(unsupportedMedia("Content-Encoding %q refused: send the body uncompressed", ce))
					return
				}
			}
		}
		if len(rt.scopes) > 0 || rt.capped { // health, metrics and the OpenAPI document answer under any load
			class := slotRead
			switch {
			case rt.stream:
				class = slotStream
			case rt.body:
				class = slotWrite
			}
			who := "" // a public route (tiles): every anonymous reader shares one share
			if p != nil {
				who = p.Name
			}
			release, err := s.admit(class, who)
			if err != nil {
				refuse(err)
				return
			}
			defer release()
			if rt.body {
				slow = s.rateBody(w, r)
			}
		}
		ctx := r.Context()
		if rt.stream {
			s.metrics.streams.Inc()
			defer s.metrics.streams.Dec()
			// Authority on every event: the stream ends when its
			// credential no longer holds (revoked, expired, logged out).
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			defer s.guard(ctx, cancel, p.Name, s.bearerCheck(r, p.Name, rt.scopes))()
		} else {
			s.metrics.inFlight.Inc()
			defer s.metrics.inFlight.Dec()
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.cfg.WriteTimeout)
			defer cancel()
		}
		if err := rt.h(w, r.WithContext(ctx), p); err != nil {
			if slow != nil && slow.slow {
				s.limits.hit("body_rate")
				err = slow.slowError()
			}
			if re := revokedCause(ctx); re != nil {
				err = re
			}
			s.answerError(w, r, info, err)
		}
	})
}

func scopeNames(sc []Scope) string {
	var b strings.Builder
	for i, x := range sc {
		if i > 0 {
			b.WriteString(" and ")
		}
		b.WriteString(string(x))
	}
	return b.String()
}

// authenticate finds the request's principal: a bearer token, else a
// verified client certificate.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*Principal, error) {
	fail := func(reason string, presented bool, err error) (*Principal, error) {
		s.metrics.authFail.WithLabelValues(reason).Inc()
		challenge := `Bearer realm="govledger"`
		if presented {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		return nil, err
	}
	switch authz := r.Header.Values("Authorization"); len(authz) {
	case 0:
		// A UI session authenticates reads only: its cookie (SameSite
		// Strict) must never be enough to write.
		if s.cfg.UI != nil && r.Method == http.MethodGet {
			p, err := s.cfg.UI.Session(r)
			if err != nil {
				return fail("session", false, err)
			}
			if p != nil {
				return p, nil
			}
		}
	case 1:
		scheme, token, ok := strings.Cut(authz[0], " ")
		token = strings.TrimSpace(token)
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return fail("malformed", true, fmt.Errorf("%w: want \"Authorization: Bearer TOKEN\"", ErrUnauthenticated))
		}
		p, err := s.cfg.Tokens.Bearer(token)
		if err != nil {
			reason := "invalid"
			if errors.Is(err, ErrExpired) {
				reason = "expired"
			}
			return fail(reason, true, err)
		}
		return p, nil
	default:
		return fail("malformed", true, fmt.Errorf("%w: more than one Authorization header", ErrUnauthenticated))
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		id, err := CertificateIdentity(r.TLS.VerifiedChains[0][0], s.cfg.ClientIdentity)
		if err != nil {
			return fail("certificate", false, err)
		}
		p, err := s.cfg.Tokens.Certificate(id)
		if err != nil {
			reason := "certificate"
			if errors.Is(err, ErrExpired) {
				reason = "expired"
			}
			return fail(reason, false, err)
		}
		return p, nil
	}
	return fail("missing", false, fmt.Errorf("%w: no bearer token or client certificate", ErrUnauthenticated))
}

// allow takes one token from the principal's rate limiter, or returns the
// 429 error with the wait before the next one.
func (s *Server) allow(name string) error {
	if s.cfg.Rate == rate.Inf {
		return nil
	}
	s.limMu.Lock()
	lim, ok := s.limiters[name]
	if !ok {
		lim = rate.NewLimiter(s.cfg.Rate, s.cfg.Burst)
		s.limiters[name] = lim
	}
	s.limMu.Unlock()
	now := s.cfg.Now()
	res := lim.ReserveN(now, 1)
	wait := s.cfg.RetryAfter
	if res.OK() {
		wait = res.DelayFrom(now)
		if wait <= 0 {
			return nil
		}
		res.CancelAt(now)
	}
	return &rateLimitError{wait: wait, name: name}
}

type rateLimitError struct {
	wait time.Duration
	name string
}

func (e *rateLimitError) Error() string {
	return fmt.Sprintf("rate limit of principal %q exceeded; retry in %s", e.name, e.wait.Round(time.Millisecond))
}

// answerError answers err as a problem (or, when the answer is already
// under way, logs it and cuts the connection so the client cannot mistake
// a truncated answer for a whole one).
func (s *Server) answerError(w http.ResponseWriter, r *http.Request, info *reqInfo, err error) {
	info.err = err
	if sw := unwrapStatus(w); sw != nil && sw.status != 0 {
		panic(http.ErrAbortHandler)
	}
	s.countLimit(info, err)
	var p *Problem
	var rl *rateLimitError
	var le *limitError
	if errors.As(err, &rl) {
		p = newProblem(http.StatusTooManyRequests, CodeRateLimited, rl.Error())
		p.RetryAfter = retrySeconds(rl.wait)
	} else if errors.As(err, &le) {
		p = le.problem(s.cfg.RetryAfter)
		if le.principal != "" {
			s.metrics.rateLimited.WithLabelValues(routeLabel(info)).Inc()
		} else {
			s.metrics.overloaded.WithLabelValues(routeLabel(info)).Inc()
		}
	} else {
		status, code, detail, internal := classify(err, info.write)
		p = newProblem(status, code, detail)
		if internal {
			kind := "internal"
			switch code {
			case CodeOutcomeUnknown:
				kind = "outcome_unknown"
			case CodeUnavailable:
				kind = "unavailable"
			}
			if !info.panicked {
				s.metrics.storageErrs.WithLabelValues(kind).Inc()
			}
		}
		if code == CodeOverloaded {
			s.metrics.overloaded.WithLabelValues(routeLabel(info)).Inc()
		}
		if code == CodeForbiddenSource {
			s.metrics.authFail.WithLabelValues("source").Inc()
		}
		if status == http.StatusServiceUnavailable {
			p.RetryAfter = retrySeconds(s.cfg.RetryAfter)
		}
	}
	if info.write {
		p.markWritten(err)
		if p.Seq != 0 {
			w.Header().Set("Location", fmt.Sprintf("/v1/entries/%d", p.Seq))
		}
	}
	p.Instance, p.RequestID = r.URL.Path, info.id
	writeProblem(w, p)
}

// capError is a refusal because the cap named limit (a Limit* name) was
// reached; answerError counts it in govledger_limit_hits_total. (The fair
// shares' slots refuse with a *limitError, counted where they refuse.)
type capError struct {
	limit string
	err   error
}

func (e *capError) Error() string { return e.err.Error() }
func (e *capError) Unwrap() error { return e.err }

// hitLimit marks err as a refusal by the cap named limit.
func hitLimit(limit string, err error) error { return &capError{limit: limit, err: err} }

// countLimit counts err in govledger_limit_hits_total when a cap refused
// the request: a capError names its cap; a 429 is the rate limit, a body
// over its size the body cap of its route, and an ErrOverloaded from the
// backend its commit queue. A slot's *limitError was counted by admit.
func (s *Server) countLimit(info *reqInfo, err error) {
	var ce *capError
	var le *limitError
	var rl *rateLimitError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &le):
		// counted by admit, by its slot's name
	case errors.As(err, &ce):
		s.metrics.LimitHit(ce.limit)
	case errors.As(err, &rl):
		s.metrics.LimitHit(LimitRate)
	case errors.As(err, &mbe):
		if strings.HasSuffix(info.route, ":batch") {
			s.metrics.LimitHit(LimitBatchBody)
		} else {
			s.metrics.LimitHit(LimitBody)
		}
	case errors.Is(err, ErrOverloaded):
		s.metrics.LimitHit(LimitCommitQueue)
	}
}

// unwrapStatus finds the statusWriter under w, if any.
func unwrapStatus(w http.ResponseWriter) *statusWriter {
	for range 8 {
		if sw, ok := w.(*statusWriter); ok {
			return sw
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

func routeLabel(info *reqInfo) string {
	if info.route == "" {
		return "unmatched"
	}
	return info.route
}

// RouteInfo describes one route of the API.
type RouteInfo struct {
	Method string
	Path   string  // OpenAPI path template, e.g. "/v1/blocks/{agent}:unblock"
	Scopes []Scope // all needed; none for public routes
}

// Routes lists the API's routes in registration order.
func (s *Server) Routes() []RouteInfo {
	out := make([]RouteInfo, 0, len(s.routes))
	for _, rt := range s.routes {
		out = append(out, RouteInfo{Method: rt.method, Path: rt.docPath(), Scopes: slices.Clone(rt.scopes)})
	}
	return out
}
