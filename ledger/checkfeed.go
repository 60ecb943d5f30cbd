package ledger

import (
	"context"

	"github.com/govledger/govledger/entry"
)

// Prepared is what a replay running beside a store check (verify.Replay
// with Options.Structural) computed for one stored entry, handed to the
// check so that each entry is hashed and decoded once.
type Prepared struct {
	Seq   uint64
	Raw   []byte       // the stored bytes the replay read (never modified)
	Hash  entry.Hash   // entry.LeafHash(Raw)
	Entry *entry.Entry // entry.Decode(Raw); nil when Err is set
	Err   error        // entry.Decode's error
	// Blob, if not nil, is the blob the replay read under Seq and found
	// to hash to Entry.Blob().
	Blob []byte
}

// A CheckFeed hands a store check the entries a replay prepared. A check
// that takes it (a Checker whose store no writer can change while it
// runs: a read-only file) asks for every entry it walks; others ignore it.
type CheckFeed interface {
	// Prepared returns what the replay computed for the entry stored as
	// seq whose bytes are raw, or nil when the replay has nothing for
	// exactly those bytes (the check then computes it). It may wait for
	// the replay to reach seq, never past ctx or the replay's end. The
	// value is the caller's to read, not to change.
	Prepared(ctx context.Context, seq uint64, raw []byte) *Prepared
}

type checkFeedKey struct{}

// WithCheckFeed returns ctx carrying f for the store check called with it
// (see CheckFeed). A check without a use for it ignores it.
func WithCheckFeed(ctx context.Context, f CheckFeed) context.Context {
	return context.WithValue(ctx, checkFeedKey{}, f)
}

// CheckFeedFrom returns the CheckFeed ctx carries, nil when none.
func CheckFeedFrom(ctx context.Context) CheckFeed {
	f, _ := ctx.Value(checkFeedKey{}).(CheckFeed)
	return f
}
