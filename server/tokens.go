package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/govledger/govledger/internal/atomicfile"
	"github.com/govledger/govledger/internal/fileperm"
	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/manifest"
)

// Scope is a permission a principal holds.
type Scope string

// Scopes. A route needs all of the scopes listed for it in the OpenAPI
// document; none implies another.
const (
	// ScopeHandoffWrite allows submitting and validating handoffs whose
	// source is one of the principal's agents.
	ScopeHandoffWrite Scope = "handoff:write"
	// ScopeLedgerRead allows reading entries, proofs, blocks, checkpoints
	// and the event stream.
	ScopeLedgerRead Scope = "ledger:read"
	// ScopePayloadRead allows reading the submitted documents' bytes
	// (payloads, and with ledger:read the export).
	ScopePayloadRead Scope = "payload:read"
	// ScopeOperator allows unblock, redact and reload.
	ScopeOperator Scope = "operator"
)

// Scopes lists every scope, in documentation order.
var Scopes = []Scope{ScopeHandoffWrite, ScopeLedgerRead, ScopePayloadRead, ScopeOperator}

func knownScope(s Scope) bool { return slices.Contains(Scopes, s) }

// AnyAgent in a token's agents list lets it submit for every source agent.
const AnyAgent = "*"

// Principal is an authenticated caller.
type Principal struct {
	Name   string  // the token's name, stored as the entry's submitter
	Scopes []Scope // what it may do
	// Agents are the source agents it may submit handoffs for; nil means
	// any (a token issued with --agents '*').
	Agents []string
}

// Has reports whether p holds scope s.
func (p *Principal) Has(s Scope) bool { return p != nil && slices.Contains(p.Scopes, s) }

// MaySubmitFor reports whether p may submit a handoff whose source is agent.
func (p *Principal) MaySubmitFor(agent string) bool {
	return p.Has(ScopeHandoffWrite) && (p.Agents == nil || slices.Contains(p.Agents, agent))
}

// Authenticator turns credentials into principals. Both methods return an
// error wrapping ErrUnauthenticated (or ErrExpired) for an unknown
// credential. TokenStore is the implementation.
type Authenticator interface {
	// Bearer authenticates a bearer token.
	Bearer(token string) (*Principal, error)
	// Certificate authenticates a verified client certificate by its
	// subject common name.
	Certificate(subject string) (*Principal, error)
}

// The tokens file.
const (
	// TokensVersion is the only tokens_version this package reads and writes.
	TokensVersion = 1
	// TokenPrefix starts every token this package issues.
	TokenPrefix = "glt_"
	// MaxTokensFileSize is the largest tokens file read, in bytes.
	MaxTokensFileSize = 8 << 20
	// maxNameLength bounds token names and mTLS subjects.
	maxNameLength = 128
)

// ErrTokensFile is wrapped by every error about the tokens file's content.
var ErrTokensFile = errors.New("invalid tokens file")

// ErrFilePermissions is wrapped by the errors of ReadTokensFile and
// EditTokensFile for a tokens file (or its lock file) that group or others
// may read or write, or whose folder they may write: another local user
// could then read the hashes or add an operator token.
var ErrFilePermissions = fileperm.ErrTooOpen

// TokensFile is the content of a tokens file (govledger-tokens.json):
//
//	{
//	  "tokens_version": 1,
//	  "tokens": [
//	    {"name": "ci-product", "hash": "sha256:…", "scopes": ["handoff:write"],
//	     "agents": ["domain-05-product"], "created": "2026-11-24T10:00:00Z"},
//	    {"name": "gateway", "mtls_subject": "gateway.internal", "scopes": ["handoff:write"],
//	     "agents": ["*"], "created": "2026-11-24T10:00:00Z", "expires": "2027-11-24T10:00:00Z"}
//	  ]
//	}
//
// Only the SHA-256 of a token is stored. An entry has a hash (a bearer
// token), an mtls_subject (a client certificate's subject common name), or
// both.
type TokensFile struct {
	Version int          `json:"tokens_version"`
	Tokens  []TokenEntry `json:"tokens"`
}

// TokenEntry is one principal in a tokens file.
type TokenEntry struct {
	Name        string    `json:"name"`
	Hash        string    `json:"hash,omitzero"`         // "sha256:" + 64 lowercase hex digits
	MTLSSubject string    `json:"mtls_subject,omitzero"` // client certificate subject CN
	Scopes      []Scope   `json:"scopes"`
	Agents      []string  `json:"agents,omitzero"` // required with handoff:write; ["*"] for any
	Created     time.Time `json:"created"`
	Expires     time.Time `json:"expires,omitzero"` // zero: never
}

// NewToken returns a fresh token (TokenPrefix and 43 base64url characters
// from 32 bytes of rand) and the hash a tokens file stores for it.
func NewToken(rand io.Reader) (token, hash string, err error) {
	var b [32]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", "", fmt.Errorf("new token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, TokenHash(token), nil
}

// TokenHash is the hash a tokens file stores for token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseTokensFile reads a tokens file strictly: one JSON object, no unknown
// or duplicate members, and every rule of TokenEntry checked. Errors name
// file, line, column and field (JSON Pointer); all rule violations are
// reported, joined. file is used only in messages.
func ParseTokensFile(file string, data []byte) (*TokensFile, error) {
	if len(data) > MaxTokensFileSize {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", file, ErrTokensFile, MaxTokensFileSize)
	}
	var f TokensFile
	if err := strictjson.Unmarshal(file, data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokensFile, err)
	}
	pos := strictjson.NewPositions(data)
	var errs []error
	bad := func(ptr, format string, args ...any) {
		line, col := pos.At(ptr)
		errs = append(errs, &strictjson.Error{File: file, Line: line, Column: col, Pointer: ptr,
			Msg: fmt.Sprintf(format, args...), Err: ErrTokensFile})
	}
	if f.Version != TokensVersion {
		bad("/tokens_version", "tokens_version %d: want %d", f.Version, TokensVersion)
	}
	if f.Tokens == nil {
		bad("/tokens", "missing")
	}
	names, hashes, subjects := map[string]int{}, map[string]int{}, map[string]int{}
	for i, e := range f.Tokens {
		at := func(field string) string { return fmt.Sprintf("/tokens/%d/%s", i, field) }
		for _, p := range checkEntry(e) {
			bad(at(p.field), "%s", p.msg)
		}
		if j, dup := names[e.Name]; dup && e.Name != "" {
			bad(at("name"), "name %q also at /tokens/%d", e.Name, j)
		}
		names[e.Name] = i
		if j, dup := hashes[e.Hash]; dup && e.Hash != "" {
			bad(at("hash"), "hash also at /tokens/%d", j)
		}
		hashes[e.Hash] = i
		if j, dup := subjects[e.MTLSSubject]; dup && e.MTLSSubject != "" {
			bad(at("mtls_subject"), "mtls_subject %q also at /tokens/%d", e.MTLSSubject, j)
		}
		subjects[e.MTLSSubject] = i
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &f, nil
}

type entryProblem struct{ field, msg string }

// checkEntry returns every rule e breaks.
func checkEntry(e TokenEntry) []entryProblem {
	var ps []entryProblem
	add := func(field, format string, args ...any) {
		ps = append(ps, entryProblem{field, fmt.Sprintf(format, args...)})
	}
	if err := checkName(e.Name); err != nil {
		add("name", "%v", err)
	}
	if e.Hash == "" && e.MTLSSubject == "" {
		add("name", "neither hash nor mtls_subject: the entry authenticates nobody")
	}
	if e.Hash != "" && !validHash(e.Hash) {
		add("hash", "want \"sha256:\" and 64 lowercase hex digits")
	}
	if e.MTLSSubject != "" && !printable(e.MTLSSubject) {
		add("mtls_subject", "want 1 to %d printable characters", maxNameLength)
	}
	if len(e.Scopes) == 0 {
		add("scopes", "empty: want one or more of %s", scopeList())
	}
	for i, s := range e.Scopes {
		if !knownScope(s) {
			add(fmt.Sprintf("scopes/%d", i), "unknown scope %q: want one of %s", s, scopeList())
		} else if slices.Index(e.Scopes, s) != i {
			add(fmt.Sprintf("scopes/%d", i), "scope %q listed twice", s)
		}
	}
	write := slices.Contains(e.Scopes, ScopeHandoffWrite)
	switch {
	case write && len(e.Agents) == 0:
		add("agents", "required with handoff:write: the source agents it may submit for, or [\"*\"]")
	case !write && len(e.Agents) > 0:
		add("agents", "only meaningful with handoff:write")
	}
	for i, a := range e.Agents {
		switch {
		case a == AnyAgent && len(e.Agents) > 1:
			add(fmt.Sprintf("agents/%d", i), "\"*\" must be the only agent")
		case a == AnyAgent:
		case manifest.CheckAgentID(a) != nil:
			add(fmt.Sprintf("agents/%d", i), "%v", manifest.CheckAgentID(a))
		case slices.Index(e.Agents, a) != i:
			add(fmt.Sprintf("agents/%d", i), "agent %q listed twice", a)
		}
	}
	if e.Created.IsZero() {
		add("created", "missing")
	}
	if !e.Expires.IsZero() && !e.Expires.After(e.Created) {
		add("expires", "not after created")
	}
	return ps
}

// CheckTokenName reports whether name may name a principal: 1 to 128
// bytes of [a-z0-9._-], starting with a letter or digit.
func CheckTokenName(name string) error { return checkName(name) }

func checkName(name string) error {
	if name == "" || len(name) > maxNameLength {
		return fmt.Errorf("name %q: want 1 to %d characters", name, maxNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '.' || c == '_') && i > 0:
		default:
			return fmt.Errorf("name %q: want lowercase [a-z0-9][a-z0-9._-]*", name)
		}
	}
	return nil
}

// CheckTokenEntry reports the first rule e breaks (as ParseTokensFile
// would), for callers building entries.
func CheckTokenEntry(e TokenEntry) error {
	if ps := checkEntry(e); len(ps) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrTokensFile, ps[0].field, ps[0].msg)
	}
	return nil
}

func validHash(h string) bool {
	hexPart, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	if s == "" || len(s) > maxNameLength || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

func scopeList() string {
	var b strings.Builder
	for i, s := range Scopes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
}

// Marshal returns the file's bytes: entries sorted by name, two-space
// indent, trailing newline, so rewriting an unchanged file changes nothing.
func (f *TokensFile) Marshal() ([]byte, error) {
	c := TokensFile{Version: f.Version, Tokens: slices.Clone(f.Tokens)}
	if c.Tokens == nil {
		c.Tokens = []TokenEntry{}
	}
	slices.SortFunc(c.Tokens, func(a, b TokenEntry) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(&c, jsontext.EscapeForHTML(false), jsontext.WithIndent("  "), json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Add appends e, refusing an entry that breaks a rule or whose name, hash
// or mtls_subject is taken.
func (f *TokensFile) Add(e TokenEntry) error {
	if err := CheckTokenEntry(e); err != nil {
		return err
	}
	for _, o := range f.Tokens {
		switch {
		case o.Name == e.Name:
			return fmt.Errorf("%w: a token named %q exists (revoke it first)", ErrTokensFile, e.Name)
		case e.Hash != "" && o.Hash == e.Hash:
			return fmt.Errorf("%w: hash already used by %q", ErrTokensFile, o.Name)
		case e.MTLSSubject != "" && o.MTLSSubject == e.MTLSSubject:
			return fmt.Errorf("%w: mtls_subject %q already used by %q", ErrTokensFile, e.MTLSSubject, o.Name)
		}
	}
	f.Tokens = append(f.Tokens, e)
	return nil
}

// Remove deletes the entry named name; it reports whether there was one.
func (f *TokensFile) Remove(name string) bool {
	n := len(f.Tokens)
	f.Tokens = slices.DeleteFunc(f.Tokens, func(e TokenEntry) bool { return e.Name == name })
	return len(f.Tokens) != n
}

// ReadTokensFile reads and parses the tokens file at path. A missing file
// gives an error wrapping fs.ErrNotExist; a file that group or others may
// read or write, or in a folder they may write, one wrapping
// ErrFilePermissions (the mode is taken from the open file).
func ReadTokensFile(path string) (*TokensFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := fileperm.Private(path, fi); err != nil {
		return nil, err
	}
	if err := fileperm.Dir(path); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxTokensFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ParseTokensFile(path, data)
}

// WriteTokensFile replaces the file at path with f, atomically (a reader
// sees the old file or the new, never a part), mode 0600.
func WriteTokensFile(path string, f *TokensFile) error {
	data, err := f.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, data, 0o600)
}

// EditTokensFile changes the tokens file at path under an exclusive lock,
// so that concurrent edits (token create and revoke run at once) each see
// the others' result and none is lost: it locks path+".lock" (flock,
// created 0600), reads the file (a missing one is empty when create is
// set, else the error wraps fs.ErrNotExist), calls edit, and when edit
// returns nil writes the result with WriteTokensFile (temporary file,
// fsync, rename, folder fsync). It waits for the lock until ctx is done.
func EditTokensFile(ctx context.Context, path string, create bool, edit func(*TokensFile) error) error {
	if err := fileperm.Dir(path); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if fi, err := lock.Stat(); err != nil {
		return err
	} else if err := fileperm.Private(path+".lock", fi); err != nil {
		return err
	}
	if err := flock(ctx, lock); err != nil {
		return fmt.Errorf("%s: locking: %w", path+".lock", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	f, err := ReadTokensFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		f, err = &TokensFile{Version: TokensVersion, Tokens: []TokenEntry{}}, nil
	}
	if err != nil {
		return err
	}
	if err := edit(f); err != nil {
		return err
	}
	return WriteTokensFile(path, f)
}

// flock takes an exclusive lock on f, trying again until ctx is done.
func flock(ctx context.Context, f *os.File) error {
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// TokenStore authenticates against a tokens file. It is safe for
// concurrent use; Reload swaps the file in atomically.
type TokenStore struct {
	path string
	now  func() time.Time
	mu   sync.Mutex // serializes Reload
	set  atomic.Pointer[tokenSet]
}

type tokenSet struct {
	entries []TokenEntry
	hashes  [][]byte // decoded Hash of entries[i]; nil without one
}

// NewTokenStore returns a store of f's entries. now is the clock expiry is
// judged by (time.Now when nil).
func NewTokenStore(f *TokensFile, now func() time.Time) *TokenStore {
	if now == nil {
		now = time.Now
	}
	s := &TokenStore{now: now}
	s.set.Store(newTokenSet(f))
	return s
}

// OpenTokenStore reads the tokens file at path into a store that Reload
// re-reads.
func OpenTokenStore(path string, now func() time.Time) (*TokenStore, error) {
	f, err := ReadTokensFile(path)
	if err != nil {
		return nil, err
	}
	s := NewTokenStore(f, now)
	s.path = path
	return s, nil
}

// Reload re-reads the store's file. On error the store keeps serving the
// entries it had. A store not opened from a file has nothing to reload.
func (s *TokenStore) Reload() error {
	if s.path == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := ReadTokensFile(s.path)
	if err != nil {
		return err
	}
	s.set.Store(newTokenSet(f))
	return nil
}

func newTokenSet(f *TokensFile) *tokenSet {
	ts := &tokenSet{}
	if f == nil {
		return ts
	}
	for _, e := range f.Tokens {
		var h []byte
		if hx, ok := strings.CutPrefix(e.Hash, "sha256:"); ok {
			h, _ = hex.DecodeString(hx)
		}
		ts.entries = append(ts.entries, e)
		ts.hashes = append(ts.hashes, h)
	}
	return ts
}

// Bearer authenticates token by comparing its SHA-256 with every stored
// hash in constant time.
func (s *TokenStore) Bearer(token string) (*Principal, error) {
	ts := s.set.Load()
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i, h := range ts.hashes {
		if len(h) == sha256.Size && subtle.ConstantTimeCompare(sum[:], h) == 1 {
			found = i
		}
	}
	if found < 0 || !strings.HasPrefix(token, TokenPrefix) {
		return nil, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
	}
	return s.principal(ts.entries[found])
}

// Certificate authenticates a verified client certificate's subject CN.
func (s *TokenStore) Certificate(subject string) (*Principal, error) {
	ts := s.set.Load()
	for _, e := range ts.entries {
		if e.MTLSSubject != "" && e.MTLSSubject == subject {
			return s.principal(e)
		}
	}
	return nil, fmt.Errorf("%w: no tokens file entry for certificate subject %q", ErrUnauthenticated, subject)
}

func (s *TokenStore) principal(e TokenEntry) (*Principal, error) {
	if !e.Expires.IsZero() && !s.now().Before(e.Expires) {
		return nil, fmt.Errorf("%w: %q expired at %s", ErrExpired, e.Name, e.Expires.Format(time.RFC3339))
	}
	p := &Principal{Name: e.Name, Scopes: slices.Clone(e.Scopes)}
	if !slices.Equal(e.Agents, []string{AnyAgent}) {
		p.Agents = slices.Clone(e.Agents)
		if p.Agents == nil {
			p.Agents = []string{}
		}
	}
	return p, nil
}
