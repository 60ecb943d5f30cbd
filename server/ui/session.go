package ui

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/govledger/govledger/server"
)

// Cookies of the UI.
const (
	// SessionCookie holds the session id (HttpOnly, SameSite=Strict, Path=/
	// so the pages' scripts can read the API with it).
	SessionCookie = "govledger_session"
	// loginCookie holds the login form's CSRF token until the login.
	loginCookie = "govledger_login"
	maxToken    = 512
)

type session struct {
	id        string
	principal string // whose session: the per-principal cap counts by it
	token     string // re-authenticated on every request: revocation applies at once
	csrf      string
	created   time.Time
	expires   time.Time
}

// sessions is the server-side session map.
type sessions struct {
	mu     sync.Mutex
	m      map[string]*session
	tokens server.Authenticator
	ttl    time.Duration
	max    int
	per    int // sessions of one principal at once
	now    func() time.Time
	rand   io.Reader
}

func newSessions(cfg Config) *sessions {
	return &sessions{m: map[string]*session{}, tokens: cfg.Tokens, ttl: cfg.SessionTTL, max: cfg.MaxSessions,
		per: cfg.MaxSessionsPerPrincipal, now: cfg.Now, rand: cfg.Rand}
}

func (ss *sessions) random() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(ss.rand, b[:]); err != nil {
		return "", fmt.Errorf("session: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// create starts a session of principal for token. Beyond the principal's
// cap its own oldest session ends; beyond the cap of all sessions, the
// oldest session of the principal holding the most ends: a login never
// ends the session of a principal holding fewer than the one logging in
// would after it, so no principal can log everyone else out.
func (ss *sessions) create(principal, token string) (*session, error) {
	id, err := ss.random()
	if err != nil {
		return nil, err
	}
	csrf, err := ss.random()
	if err != nil {
		return nil, err
	}
	now := ss.now()
	s := &session{id: id, principal: principal, token: token, csrf: csrf, created: now, expires: now.Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, o := range ss.m {
		if !now.Before(o.expires) {
			delete(ss.m, k)
		}
	}
	held := map[string]int{}
	for _, o := range ss.m {
		held[o.principal]++
	}
	for held[principal] >= ss.per || len(ss.m) >= ss.max {
		victims := map[string]bool{principal: true}
		if held[principal] < ss.per {
			// The table is full: take from the biggest holders, counting
			// the new session of the one logging in.
			most := held[principal] + 1
			clear(victims)
			for p, n := range held {
				if n > most {
					most = n
					clear(victims)
				}
				if n == most {
					victims[p] = true
				}
			}
			if len(victims) == 0 {
				victims[principal] = true
			}
		}
		var oldest *session
		for _, o := range ss.m {
			if victims[o.principal] && (oldest == nil || o.created.Before(oldest.created)) {
				oldest = o
			}
		}
		if oldest == nil {
			break // cannot happen: a full table has a holder
		}
		delete(ss.m, oldest.id)
		held[oldest.principal]--
	}
	ss.m[id] = s
	return s, nil
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

// lookup returns the session of r's cookie and its principal: nil, nil,
// nil without a cookie; an error wrapping server.ErrUnauthenticated for an
// unknown or expired session or a token no longer valid.
func (ss *sessions) lookup(r *http.Request) (*session, *server.Principal, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil, nil
	}
	ss.mu.Lock()
	s, ok := ss.m[c.Value]
	if ok && !ss.now().Before(s.expires) {
		delete(ss.m, s.id)
		ok = false
	}
	ss.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%w: session unknown or expired: log in again at /ui/login", server.ErrUnauthenticated)
	}
	p, err := ss.tokens.Bearer(s.token)
	if err != nil {
		ss.remove(s.id)
		return nil, nil, fmt.Errorf("session's token no longer valid: %w", err)
	}
	return s, p, nil
}

func equalSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// safeNext returns next when it is a path of the UI, else "/ui/": the login
// never redirects off the viewer.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(next, "/ui//") {
		return "/ui/"
	}
	return next
}

type loginPage struct {
	base
	CSRF string
	Next string
}

func (u *UI) getLogin(w http.ResponseWriter, r *http.Request) {
	if sess, _, err := u.sessions.lookup(r); err == nil && sess != nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		server.ServeError(w, r, fmt.Errorf("%w: query: %v", server.ErrBadInput, err))
		return
	}
	csrf, err := u.sessions.random()
	if err != nil {
		server.ServeError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: csrf, Path: "/ui/login", MaxAge: 900,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	u.render(w, r, "login", &loginPage{base: base{Title: "Log in"}, CSRF: csrf, Next: safeNext(q.Get("next"))})
}

func (u *UI) postLogin(w http.ResponseWriter, r *http.Request) {
	if err := sameOrigin(r); err != nil {
		server.ServeError(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		server.ServeError(w, r, fmt.Errorf("%w: form: %v", server.ErrBadInput, err))
		return
	}
	c, err := r.Cookie(loginCookie)
	if err != nil || !equalSecret(r.PostForm.Get("csrf"), c.Value) {
		server.ServeError(w, r, server.HTTPError(http.StatusForbidden, server.CodeForbiddenCSRF,
			"the login form's CSRF token is missing or stale: open /ui/login and log in again"))
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	token = strings.TrimPrefix(token, "Bearer ")
	if token == "" || len(token) > maxToken {
		server.ServeError(w, r, fmt.Errorf("%w: paste a bearer token (glt_…)", server.ErrUnauthenticated))
		return
	}
	p, err := u.cfg.Tokens.Bearer(token)
	if err != nil {
		server.ServeError(w, r, err)
		return
	}
	if !p.Has(server.ScopeLedgerRead) {
		server.ServeError(w, r, server.HTTPError(http.StatusForbidden, server.CodeForbiddenScope,
			fmt.Sprintf("principal %q lacks scope ledger:read (the viewer needs it)", p.Name)))
		return
	}
	s, err := u.sessions.create(p.Name, token)
	if err != nil {
		server.ServeError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/ui/login", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.id, Path: "/", Expires: s.expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, safeNext(r.PostForm.Get("next")), http.StatusSeeOther)
}

func (u *UI) postLogout(w http.ResponseWriter, r *http.Request, v *visitor) error {
	u.sessions.remove(v.sess.id)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}
