package ui

import (
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/server"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Defaults of Config's zero fields.
const (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerPrincipal is MaxSessionsPerPrincipal's default.
	DefaultMaxSessionsPerPrincipal = 16
	DefaultPageSize                = 50
	DefaultMaxSlice                = 10000
)

// ContentSecurityPolicy is sent with every answer of the UI: scripts,
// styles and fetches from the server itself only, no inline script or
// style, no framing, forms posting only to the server.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Config configures a UI. Backend and Tokens are required.
type Config struct {
	Backend server.Backend
	// Tokens authenticates the bearer tokens exchanged at login (the
	// server's own).
	Tokens server.Authenticator
	// VerifierKey is the checkpoint verifier key (note format,
	// "name+hash+base64", or an OpenSSH ed25519 public key with
	// VerifierName) the browser checks signed checkpoints against; ""
	// leaves the entry pages' proof check saying that no key is configured.
	VerifierKey  string
	VerifierName string
	// LastVerify, when set, reports the last verification of the ledger,
	// shown on the overview.
	LastVerify func() *VerifyResult

	SessionTTL  time.Duration // a session ends this long after login
	MaxSessions int           // sessions at once; a login beyond ends the oldest session of the principal holding the most
	// MaxSessionsPerPrincipal caps one principal's sessions; a login
	// beyond ends that principal's oldest session (and no other's).
	MaxSessionsPerPrincipal int
	PageSize                int // timeline and agent history rows per page
	MaxSlice                int // entries in one evidence slice: 422 beyond

	Now  func() time.Time // time.Now if nil
	Rand io.Reader        // crypto/rand if nil: session ids and CSRF tokens
}

// VerifyResult is the outcome of a verification of the whole ledger.
type VerifyResult struct {
	Time    time.Time
	OK      bool
	Entries uint64
	Detail  string // the first finding, or a summary
}

// UI is the audit viewer. It is safe for concurrent use.
type UI struct {
	cfg      Config
	key      string // note verifier key text, "" when none
	keyName  string
	mux      *http.ServeMux
	pages    map[string]*template.Template
	static   fs.FS
	sessions *sessions
	stats    stats
}

// New checks cfg and returns a UI.
func New(cfg Config) (*UI, error) {
	if cfg.Backend == nil || cfg.Tokens == nil {
		return nil, errors.New("ui: Config.Backend and Config.Tokens are required")
	}
	if cfg.SessionTTL < 0 || cfg.MaxSessions < 0 || cfg.MaxSessionsPerPrincipal < 0 || cfg.PageSize < 0 || cfg.MaxSlice < 0 {
		return nil, errors.New("ui: negative limit in Config")
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxSessionsPerPrincipal == 0 {
		cfg.MaxSessionsPerPrincipal = min(DefaultMaxSessionsPerPrincipal, cfg.MaxSessions)
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageSize > 1000 {
		return nil, fmt.Errorf("ui: PageSize %d: want at most 1000", cfg.PageSize)
	}
	if cfg.MaxSlice == 0 {
		cfg.MaxSlice = DefaultMaxSlice
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	u := &UI{cfg: cfg, mux: http.NewServeMux(), pages: map[string]*template.Template{}}
	if cfg.VerifierKey != "" {
		v, text, err := checkpoint.ParseVerifier([]byte(cfg.VerifierKey), cfg.VerifierName)
		if err != nil {
			return nil, fmt.Errorf("ui: verifier key: %w", err)
		}
		u.key, u.keyName = text, v.Name()
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	u.static = static
	for _, name := range []string{"login", "overview", "timeline", "entry", "workflow", "agent", "evidence"} {
		t, err := template.New("base.html").Funcs(funcs).ParseFS(assets, "templates/base.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		u.pages[name] = t
	}
	u.sessions = newSessions(cfg)
	u.routes()
	return u, nil
}

func (u *UI) routes() {
	page := func(pattern string, h pageFunc) { u.mux.Handle(pattern, u.authed(h, false)) }
	op := func(pattern string, h pageFunc) { u.mux.Handle(pattern, u.authed(h, true)) }
	u.mux.HandleFunc("GET /ui/login", u.getLogin)
	u.mux.HandleFunc("POST /ui/login", u.postLogin)
	op("POST /ui/logout", u.postLogout)
	page("GET /ui/{$}", u.getOverview)
	page("GET /ui/timeline", u.getTimeline)
	page("GET /ui/entries/{seq}", u.getEntry)
	op("POST /ui/entries/{seq}/redact", u.postRedact)
	page("GET /ui/workflows/{id}", u.getWorkflow)
	page("GET /ui/agents/{id}", u.getAgent)
	op("POST /ui/agents/{id}/unblock", u.postUnblock)
	page("GET /ui/evidence", u.getEvidence)
	page("GET /ui/evidence/bundle", u.getBundle)
	page("GET /ui/evidence/slice", u.getSlice)
	u.mux.HandleFunc("GET /ui/static/{file}", u.getStatic)
	u.mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		server.ServeError(w, r, fmt.Errorf("%w: no page %s %s", server.ErrNotFound, r.Method, r.URL.Path))
	})
}

// ServeHTTP answers a request under /ui/.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	u.mux.ServeHTTP(w, r)
}

// pageFunc handles a request of a logged-in principal.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *visitor) error

// visitor is the principal of a request and its session.
type visitor struct {
	*server.Principal
	sess *session
}

func (v *visitor) PayloadRead() bool { return v.Has(server.ScopePayloadRead) }
func (v *visitor) Operator() bool    { return v.Has(server.ScopeOperator) }
func (v *visitor) CSRF() string      { return v.sess.csrf }

// authed authenticates a page's request by its session: a GET without
// one is sent to the login page; anything else is refused. Pages need
// ledger:read; form posts (write) need the session's CSRF token.
func (u *UI) authed(h pageFunc, write bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, p, err := u.sessions.lookup(r)
		if err != nil || sess == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/ui/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			if err == nil {
				err = fmt.Errorf("%w: log in at /ui/login first", server.ErrUnauthenticated)
			}
			server.ServeError(w, r, err)
			return
		}
		v := &visitor{Principal: p, sess: sess}
		if write {
			if err := u.checkForm(r, sess); err != nil {
				server.ServeError(w, r, err)
				return
			}
		}
		if r.URL.Path != "/ui/logout" && !p.Has(server.ScopeLedgerRead) {
			server.ServeError(w, r, server.HTTPError(http.StatusForbidden, server.CodeForbiddenScope,
				fmt.Sprintf("principal %q lacks scope ledger:read (the viewer needs it)", p.Name)))
			return
		}
		if err := h(w, r, v); err != nil {
			server.ServeError(w, r, err)
		}
	})
}

// maxForm bounds a form post's body.
const maxForm = 16 << 10

// checkForm parses a form post and checks its origin and CSRF token.
func (u *UI) checkForm(r *http.Request, sess *session) error {
	if err := sameOrigin(r); err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: form: %v", server.ErrBadInput, err)
	}
	if !equalSecret(r.PostForm.Get("csrf"), sess.csrf) {
		return server.HTTPError(http.StatusForbidden, server.CodeForbiddenCSRF,
			"the form's CSRF token is missing or not this session's: reload the page and submit it again")
	}
	return nil
}

// sameOrigin refuses a form post that the browser says came from another
// site (Sec-Fetch-Site) or whose Origin is not this server's; the CSRF
// token is the defence that does not depend on the browser.
func sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return server.HTTPError(http.StatusForbidden, server.CodeForbiddenCSRF, "form posted from another site (Sec-Fetch-Site: "+site+")")
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return nil
	}
	// The host only: behind a proxy that ends TLS the request arrives as
	// http while the browser says https.
	u, err := url.Parse(o)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return server.HTTPError(http.StatusForbidden, server.CodeForbiddenCSRF, "form posted from another origin")
	}
	return nil
}

// Session authenticates r by its session cookie (server.UI): nil, nil
// without one.
func (u *UI) Session(r *http.Request) (*server.Principal, error) {
	_, p, err := u.sessions.lookup(r)
	return p, err
}

var _ server.UI = (*UI)(nil)

// VerifierKey returns the note verifier key the entry pages check
// checkpoints against ("" when none is configured).
func (u *UI) VerifierKey() string { return u.key }
