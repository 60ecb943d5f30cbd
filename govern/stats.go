package govern

import (
	"context"
	"fmt"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
)

// Counts are a ledger's entries counted by kind, decision, format, reason
// code and blocked agent, with its head.
type Counts struct {
	Origin    string         `json:"origin"`
	Entries   uint64         `json:"entries"`
	Head      string         `json:"head"`
	Kinds     map[string]int `json:"kinds"`
	Decisions map[string]int `json:"decisions"`
	Formats   map[string]int `json:"formats"` // "unknown" for a document of no format
	Codes     map[string]int `json:"codes"`
	Blocked   map[string]int `json:"blocked_by_agent"` // blocks applied, by agent
}

// DamagedError is returned by Count for an entry that does not decode.
type DamagedError struct {
	Seq uint64
	Err error
}

func (e *DamagedError) Error() string { return fmt.Sprintf("entry seq %d: %v", e.Seq, e.Err) }
func (e *DamagedError) Unwrap() error { return e.Err }

// Count reads every entry of l once and counts it.
func Count(ctx context.Context, l *ledger.Ledger) (*Counts, error) {
	c := &Counts{Origin: l.Origin(), Head: entry.ZeroHash.String(),
		Kinds: map[string]int{}, Decisions: map[string]int{}, Formats: map[string]int{}, Codes: map[string]int{}, Blocked: map[string]int{}}
	err := l.Scan(ctx, 1, func(seq uint64, raw []byte) error {
		e, err := entry.Decode(raw)
		if err != nil {
			return &DamagedError{Seq: seq, Err: err}
		}
		c.Entries++
		c.Head = entry.LeafHash(raw).String()
		c.Kinds[e.Kind]++
		if e.Kind != entry.KindHandoff {
			return nil
		}
		c.Decisions[e.Decision]++
		f := e.Format.String()
		if f == "" {
			f = "unknown"
		}
		c.Formats[f]++
		if e.Reasons != nil {
			for _, r := range *e.Reasons {
				c.Codes[string(r.Code)]++
			}
		}
		for _, a := range e.Blocks {
			c.Blocked[a]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
