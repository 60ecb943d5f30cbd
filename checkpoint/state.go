package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sys/unix"

	"github.com/govledger/govledger/internal/atomicfile"
)

// ErrNoState is returned by State.Latest when no checkpoint is stored for
// the origin.
var ErrNoState = errors.New("no checkpoint stored for this origin")

// A State keeps, in a directory, the newest verified checkpoint of each
// origin, like the Go checksum database client's "latest" file: a
// verifier that keeps one detects a ledger or checkpoint that goes
// backwards (rollback) or sideways (fork) relative to what it saw before.
//
// Files: <dir>/<hex SHA-256 of the origin>.checkpoint holds the signed
// checkpoint exactly as verified; <dir>/<hex SHA-256 of a source>.pin (JSON)
// the origin and verifier key name a source (a server URL) showed first
// (Pin); <dir>/.lock is locked (flock) around every read-check-write, so
// concurrent processes update it as a compare-and-swap.
// The directory is the verifier's own trusted storage: checkpoints read back
// from it are not re-verified against a key (keys may rotate).
type State struct {
	dir string
}

// OpenState opens (creating with mode 0700 if needed) the state directory.
func OpenState(dir string) (*State, error) {
	if dir == "" {
		return nil, errors.New("checkpoint: empty state directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: state: %w", err)
	}
	return &State{dir: dir}, nil
}

func (s *State) path(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".checkpoint")
}

// Latest returns the stored checkpoint for origin, or ErrNoState.
func (s *State) Latest(origin string) (*Checkpoint, error) {
	data, err := os.ReadFile(s.path(origin))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoState
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: state: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: state file %s: %w", s.path(origin), err)
	}
	if c.Origin != origin {
		return nil, fmt.Errorf("checkpoint: state file %s: %w: holds origin %q, want %q", s.path(origin), ErrMalformed, c.Origin, origin)
	}
	return c, nil
}

// Update makes cp, a checkpoint the caller has verified (Open), the newest
// one stored for its origin, if it is consistent with the stored one:
//
//   - nothing stored: cp is stored;
//   - same size: the roots must be equal (else ErrFork); nothing changes;
//   - cp larger: prove(stored.Size, cp.Size) must return a consistency
//     proof that tlog.CheckTree accepts against both roots (else ErrFork,
//     with the proof as evidence); then cp is stored;
//   - cp smaller: ErrRollback (the state never goes backwards).
//
// Errors for rollback and fork are *StateError carrying both checkpoints.
// It reports whether cp was stored. The read, check and write happen under
// an exclusive lock on <dir>/.lock, waited for until ctx is done; the new
// file is written to a temporary file, synced, renamed into place and the
// directory synced, so a crash leaves the old or the new checkpoint.
func (s *State) Update(ctx context.Context, cp *Checkpoint, prove func(oldSize, newSize uint64) (tlog.TreeProof, error)) (updated bool, err error) {
	if len(cp.Signed) == 0 {
		return false, errors.New("checkpoint: State.Update needs a signed checkpoint (from Open)")
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()

	stored, err := s.Latest(cp.Origin)
	switch {
	case errors.Is(err, ErrNoState):
	case err != nil:
		return false, err
	case cp.Size < stored.Size:
		return false, &StateError{Err: ErrRollback, Stored: stored, Offered: cp}
	case cp.Size == stored.Size:
		if cp.Hash != stored.Hash {
			return false, &StateError{Err: ErrFork, Stored: stored, Offered: cp, Detail: "same size, different root"}
		}
		return false, nil
	case stored.Size > 0:
		p, err := prove(stored.Size, cp.Size)
		if err != nil {
			return false, fmt.Errorf("checkpoint: consistency proof %d..%d: %w", stored.Size, cp.Size, err)
		}
		if err := tlog.CheckTree(p, int64(cp.Size), cp.Hash, int64(stored.Size), stored.Hash); err != nil {
			return false, &StateError{Err: ErrFork, Stored: stored, Offered: cp, Proof: p, Detail: err.Error()}
		}
	}
	if err := writeFileAtomic(s.path(cp.Origin), cp.Signed, 0o600); err != nil {
		return false, fmt.Errorf("checkpoint: state: %w", err)
	}
	return true, nil
}

// A Pin is what a State remembers of a source (a server URL, say): the
// origin of the checkpoints it showed and the name of the verifier key
// that verified them.
type Pin struct {
	Source  string `json:"source"`
	Origin  string `json:"origin"`
	KeyName string `json:"key_name"`
}

func (s *State) pinPath(source string) string {
	sum := sha256.Sum256([]byte(source))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".pin")
}

// Pinned returns the pin of source, or nil when it has none.
func (s *State) Pinned(source string) (*Pin, error) {
	path := s.pinPath(source)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: state: %w", err)
	}
	var p Pin
	if err := json.Unmarshal(data, &p); err != nil || p.Source != source || p.Origin == "" {
		return nil, fmt.Errorf("checkpoint: state pin file %s: %w: not the pin of %q", path, ErrMalformed, source)
	}
	return &p, nil
}

// Check returns an *OriginError when source is pinned to another origin
// than origin; nil when it is pinned to origin or not pinned.
func (s *State) Check(source, origin string) error {
	p, err := s.Pinned(source)
	if err != nil || p == nil || p.Origin == origin {
		return err
	}
	return &OriginError{Pinned: *p, Offered: origin, File: s.pinPath(source)}
}

// Pin remembers p.Origin and p.KeyName for p.Source, the first time; later
// it fails with an *OriginError (wrapping ErrOriginChanged) when p.Origin
// is not the remembered origin, and changes nothing. A pin is never
// moved: removing its file (named in the error) is the way to pin a
// source anew. It reports whether p was stored. The read, check and write
// happen under the state's lock, waited for until ctx is done.
func (s *State) Pin(ctx context.Context, p Pin) (created bool, err error) {
	if p.Source == "" || p.Origin == "" {
		return false, errors.New("checkpoint: State.Pin needs a source and an origin")
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	old, err := s.Pinned(p.Source)
	switch {
	case err != nil:
		return false, err
	case old != nil && old.Origin != p.Origin:
		return false, &OriginError{Pinned: *old, Offered: p.Origin, File: s.pinPath(p.Source)}
	case old != nil:
		return false, nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	if err := writeFileAtomic(s.pinPath(p.Source), append(data, '\n'), 0o600); err != nil {
		return false, fmt.Errorf("checkpoint: state: %w", err)
	}
	return true, nil
}

// lock takes an exclusive flock on <dir>/.lock, polling until ctx is done.
func (s *State) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: state lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("checkpoint: state lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("checkpoint: state lock: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory: write, fsync, rename over path, fsync the directory. Readers
// see the old or the new contents, never a mix, even after a crash.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(path, data, perm)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteBytes(path, data, perm)
}
