package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Authority on every event: a long answer (an event stream, an export, an
// evidence slice) re-checks its principal's credential whenever the
// tokens change and every authorityInterval (expiry, a viewer logout),
// and ends once the credential no longer holds or no longer grants the
// route's scopes.

// authorityInterval is how often an open stream re-checks its credential
// without a tokens change.
const authorityInterval = 500 * time.Millisecond

// authority broadcasts tokens changes to the open streams.
type authority struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

func newAuthority() *authority { return &authority{changed: make(chan struct{})} }

// wait returns a channel closed by the next change.
func (a *authority) wait() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// changedNow wakes every stream to re-check its credential.
func (a *authority) changedNow() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.changed)
	a.changed = make(chan struct{})
}

// revokedError ends a stream whose credential no longer holds.
type revokedError struct {
	principal string
	err       error
}

func (e *revokedError) Error() string {
	return fmt.Sprintf("the credential of principal %q no longer holds: %v", e.principal, e.err)
}

func (e *revokedError) Unwrap() error { return e.err }

// guard re-checks the credential of a stream by check until ctx ends;
// when it fails, it cancels the stream with a *revokedError cause. The
// returned function stops the guard.
func (s *Server) guard(ctx context.Context, cancel context.CancelCauseFunc, principal string, check func() error) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(authorityInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-t.C:
			case <-s.authority.wait():
			}
			if err := check(); err != nil {
				s.log.LogAttrs(context.Background(), slog.LevelInfo, "stream ended: credential no longer holds",
					slog.String("principal", principal), slog.String("error", err.Error()))
				cancel(&revokedError{principal: principal, err: err})
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// bearerCheck re-authenticates r as authenticate did and checks that the
// principal is still name with every scope of scopes.
func (s *Server) bearerCheck(r *http.Request, name string, scopes []Scope) func() error {
	return func() error {
		p, err := s.authenticate(discardHeader{}, r)
		if err != nil {
			return err
		}
		return stillGrants(p, name, scopes)
	}
}

func stillGrants(p *Principal, name string, scopes []Scope) error {
	if p == nil || p.Name != name {
		return fmt.Errorf("%w: the credential names another principal now", ErrUnauthenticated)
	}
	for _, sc := range scopes {
		if !p.Has(sc) {
			return fmt.Errorf("%w: principal %q lacks scope %s now", ErrUnauthenticated, name, sc)
		}
	}
	return nil
}

// discardHeader is a ResponseWriter whose headers go nowhere: a re-check
// answers nothing.
type discardHeader struct{}

func (discardHeader) Header() http.Header         { return http.Header{} }
func (discardHeader) Write(b []byte) (int, error) { return len(b), nil }
func (discardHeader) WriteHeader(int)             {}

// revokedCause returns the revocation that ended ctx, if any.
func revokedCause(ctx context.Context) *revokedError {
	var re *revokedError
	if errors.As(context.Cause(ctx), &re) {
		return re
	}
	return nil
}

// ReloadTokens re-reads the tokens file (when Config.Tokens can reload)
// and makes every open stream re-check its credential. On error the
// previous tokens stay in force.
func (s *Server) ReloadTokens() error {
	if r, ok := s.cfg.Tokens.(interface{ Reload() error }); ok {
		if err := r.Reload(); err != nil {
			return err
		}
	}
	s.authority.changedNow()
	return nil
}

// watchTokens polls Config.TokensFile every TokensPoll and reloads the
// tokens when its identity (inode), size or modification time changed,
// until ctx ends.
func (s *Server) watchTokens(ctx context.Context) {
	path := s.cfg.TokensFile
	if path == "" || s.cfg.TokensPoll <= 0 {
		return
	}
	prev, _ := os.Stat(path)
	// A change between the first read and now is picked up here.
	if err := s.ReloadTokens(); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "tokens file invalid; the previous tokens stay in force",
			slog.String("tokens", path), slog.String("error", err.Error()))
	}
	t := time.NewTicker(s.cfg.TokensPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, err := os.Stat(path)
		if err != nil || (prev != nil && os.SameFile(prev, cur) && prev.Size() == cur.Size() && prev.ModTime().Equal(cur.ModTime())) {
			continue // unchanged, or missing while being replaced: the tokens in force stay
		}
		prev = cur
		if err := s.ReloadTokens(); err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "tokens file changed but is invalid; the previous tokens stay in force",
				slog.String("tokens", path), slog.String("error", err.Error()))
			continue
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "tokens file changed: tokens reloaded", slog.String("tokens", path))
	}
}
