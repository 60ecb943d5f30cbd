package main

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/reason"
)

type showResult struct {
	Schema     string          `json:"schema"`
	Seq        uint64          `json:"seq"`
	Hash       string          `json:"hash"`
	Entry      jsontext.Value  `json:"entry"`
	Reasons    []reason.Reason `json:"reasons,omitzero"`
	Payload    *string         `json:"payload,omitzero"`     // the document, when it is valid UTF-8
	PayloadB64 *string         `json:"payload_b64,omitzero"` // the document otherwise
	Redacted   bool            `json:"redacted,omitzero"`
	NotStored  bool            `json:"payload_not_stored,omitzero"` // PAYLOAD_TOO_LARGE
	Others     []uint64        `json:"other_seqs,omitzero"`         // other entries with the same handoff_id
}

// setPayload shows p as text when it is UTF-8, else as standard base64.
func (r *showResult) setPayload(p []byte) {
	s := string(p)
	if utf8.Valid(p) {
		r.Payload = &s
		return
	}
	s = b64std(p)
	r.PayloadB64 = &s
}

func showCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one entry with its payload and reasons",
		ArgsUsage: "SEQ|HANDOFF_ID",
		Description: `Shows the entry with that seq, or the entries recorded for a handoff id
(the first one in full, the others by seq).

Examples:
  govledger show 12
  govledger show 550e8400-e29b-41d4-a716-446655440000
  govledger --output json show 12 | jq -r .payload
  govledger show --server http://127.0.0.1:8080 12
` + remoteHelp + ` The token needs ledger:read and payload:read.`,
		Flags: serverFlags(),
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("show takes exactly one SEQ or HANDOFF_ID")
			}
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				return remoteShow(c, g, cl, c.Args().First())
			}
			l, err := openLedgerRO(g)
			if err != nil {
				return err
			}
			defer l.Close()
			arg := c.Args().First()
			var seqs []uint64
			if n, perr := strconv.ParseUint(arg, 10, 64); perr == nil && n > 0 {
				seqs = []uint64{n}
			} else {
				if seqs, err = l.Find(c.Context, ledger.Query{HandoffID: arg}); err != nil {
					return ledgerReadErr(0, err)
				}
			}
			if len(seqs) == 0 {
				return usageErr("show: no entry %q", arg)
			}
			e, raw, err := l.Get(c.Context, seqs[0])
			if errors.Is(err, ledger.ErrNotFound) {
				return usageErr("show: no entry with seq %d", seqs[0])
			} else if err != nil {
				return ledgerReadErr(seqs[0], err)
			}
			res := &showResult{Schema: "govledger.show/v1", Seq: e.Seq, Hash: entry.LeafHash(raw).String(),
				Entry: jsontext.Value(raw), Reasons: reasonsOf(e), Others: seqs[1:]}
			if sum := e.Blob(); sum != nil {
				p, err := l.EntryBlob(c.Context, e.Seq, *sum)
				switch {
				case errors.Is(err, ledger.ErrRedacted):
					res.Redacted = true
				case errors.Is(err, ledger.ErrNotFound) && hasCode(e, string(reason.PayloadTooLarge)):
					res.NotStored = true
				case err != nil:
					return ledgerReadErr(e.Seq, err)
				default:
					res.setPayload(p)
				}
			}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			renderShow(g, e, raw, res)
			return nil
		},
	}
}

func renderShow(g *globals, e *entry.Entry, raw []byte, r *showResult) {
	w := g.stdout
	renderEntryLine(w, newEntryView(e, raw))
	fmt.Fprintf(w, "hash:  %s\nentry: %s\n", r.Hash, raw)
	for _, rs := range r.Reasons {
		fmt.Fprintf(w, "  %-8s %s %s\n", rs.Severity, rs.Code, reasonText(rs))
	}
	switch {
	case r.Redacted:
		fmt.Fprintln(w, "payload: redacted (its hash stays in the entry)")
	case r.NotStored:
		fmt.Fprintln(w, "payload: not stored (over --max-payload; hash and size only)")
	case r.Payload != nil:
		fmt.Fprintf(w, "payload:\n%s\n", *r.Payload)
	case r.PayloadB64 != nil:
		fmt.Fprintf(w, "payload (base64, not UTF-8):\n%s\n", *r.PayloadB64)
	}
	if len(r.Others) > 0 {
		fmt.Fprintf(w, "other entries with this handoff id: %v\n", r.Others)
	}
}
