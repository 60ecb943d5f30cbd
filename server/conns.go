package server

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter caps the connections Serve holds open (MaxConns) and those
// of them that are idle (MaxIdleConns: keep-alive connections between
// requests, and new ones that have not sent a request yet). At either cap
// the oldest idle connection is closed, one that never carried an
// authenticated request first: connections nobody authenticated on
// cannot crowd out the principals'. When every connection is busy, a new
// one is refused (over plain HTTP with a 503 problem).
type connLimiter struct {
	net.Listener
	max, maxIdle int
	plain        bool // HTTP without TLS: a refusal can be answered
	retry        time.Duration
	hits         *limitHits

	mu    sync.Mutex
	conns map[*trackedConn]struct{}
	idle  int
}

type trackedConn struct {
	net.Conn
	l      *connLimiter
	authed atomic.Bool // carried an authenticated request
	closed sync.Once

	// under l.mu
	idle  bool
	since time.Time // when it became idle
	gone  bool      // evicted or closed: no longer counted
}

func newConnLimiter(ln net.Listener, max, maxIdle int, plain bool, retry time.Duration, hits *limitHits) *connLimiter {
	return &connLimiter{Listener: ln, max: max, maxIdle: maxIdle, plain: plain, retry: retry, hits: hits,
		conns: map[*trackedConn]struct{}{}}
}

// Accept returns the next connection admitted under the caps.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, l: l, idle: true, since: time.Now()}
		l.mu.Lock()
		var victim *trackedConn
		if len(l.conns) >= l.max {
			victim = l.oldestIdleLocked()
			if victim != nil {
				l.dropLocked(victim)
			}
		}
		admitted := len(l.conns) < l.max
		if admitted {
			l.conns[tc] = struct{}{}
			l.idle++
		}
		l.mu.Unlock()
		if victim != nil {
			l.hits.hit("connections")
			victim.Conn.Close()
		}
		if admitted {
			return tc, nil
		}
		l.hits.hit("connections")
		go l.refuse(c)
	}
}

// refuse answers a connection over the cap and closes it.
func (l *connLimiter) refuse(c net.Conn) {
	defer c.Close()
	if !l.plain {
		return
	}
	p := newProblem(http.StatusServiceUnavailable, CodeOverloaded,
		"the server has "+strconv.Itoa(l.max)+" connections open, all busy, its limit: retry later")
	p.RetryAfter = retrySeconds(l.retry)
	b, err := marshal(p)
	if err != nil {
		return
	}
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: " +
		strconv.Itoa(p.RetryAfter) + "\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(b)+1) + "\r\n\r\n"))
	c.Write(append(b, '\n'))
}

// oldestIdleLocked returns the idle connection to close first: the
// oldest of those that never authenticated, else the oldest.
func (l *connLimiter) oldestIdleLocked() *trackedConn {
	var anon, any *trackedConn
	for c := range l.conns {
		if !c.idle {
			continue
		}
		if any == nil || c.since.Before(any.since) {
			any = c
		}
		if !c.authed.Load() && (anon == nil || c.since.Before(anon.since)) {
			anon = c
		}
	}
	if anon != nil {
		return anon
	}
	return any
}

func (l *connLimiter) dropLocked(c *trackedConn) {
	if c.gone {
		return
	}
	c.gone = true
	if c.idle {
		l.idle--
	}
	delete(l.conns, c)
}

func (c *trackedConn) Close() error {
	c.closed.Do(func() {
		c.l.mu.Lock()
		c.l.dropLocked(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// state is the http.Server's ConnState hook: it keeps the idle count and
// closes the oldest idle connection beyond MaxIdleConns.
func (l *connLimiter) state(nc net.Conn, st http.ConnState) {
	c := trackedOf(nc)
	if c == nil {
		return
	}
	idle := st == http.StateNew || st == http.StateIdle
	var victim *trackedConn
	l.mu.Lock()
	if !c.gone {
		switch {
		case idle && !c.idle:
			l.idle++
		case !idle && c.idle:
			l.idle--
		}
		c.idle = idle
		if idle {
			c.since = time.Now()
		}
		if st == http.StateClosed || st == http.StateHijacked {
			l.dropLocked(c)
		}
		if l.idle > l.maxIdle {
			if victim = l.oldestIdleLocked(); victim != nil {
				l.dropLocked(victim)
			}
		}
	}
	l.mu.Unlock()
	if victim != nil {
		l.hits.hit("idle_connections")
		victim.Conn.Close()
	}
}

// trackedOf finds the trackedConn under nc (a *tls.Conn wraps it).
func trackedOf(nc net.Conn) *trackedConn {
	for range 4 {
		switch c := nc.(type) {
		case *trackedConn:
			return c
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}

type connKey struct{}

// connContext is the http.Server's ConnContext hook: requests can mark
// their connection as authenticated.
func (l *connLimiter) connContext(ctx context.Context, nc net.Conn) context.Context {
	if c := trackedOf(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// markAuthenticated notes that r's connection carried an authenticated
// request: it is closed after the anonymous ones when a cap is full.
func markAuthenticated(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*trackedConn); ok {
		c.authed.Store(true)
	}
}
