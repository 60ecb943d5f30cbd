package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/cmd/govledger/internal/gcbudget"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/verify"
)

type verifyResult struct {
	Schema    string                   `json:"schema"`
	Source    string                   `json:"source"`
	OK        bool                     `json:"ok"`
	Entries   uint64                   `json:"entries"`
	Head      string                   `json:"head"`
	FirstBad  uint64                   `json:"first_bad_seq,omitzero"`
	Findings  []verify.Finding         `json:"findings"`
	Redacted  []uint64                 `json:"redacted,omitzero"`
	Anchor    *checkpoint.AnchorReport `json:"anchor,omitzero"`
	AnchorOK  *bool                    `json:"anchor_ok,omitzero"`
	AnchorErr string                   `json:"anchor_error,omitzero"`
	// verify --server: the entries a verified checkpoint covers (the
	// server's, or a newer one kept in --state), and those past it, which
	// nothing signed vouches for.
	VerifiedThrough uint64 `json:"verified_through,omitzero"`
	Unverified      uint64 `json:"unverified_entries,omitzero"`
}

func verifyCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "replay the ledger's hash chain and prove nothing was changed",
		Description: `Replays every entry: seq gapless from 1, every prev link, every entry re-hashed
and re-canonicalized from its stored bytes, every payload and snapshot
re-hashed, every index and the meta head checked, and every decision
re-evaluated from the stored payload and snapshots. Reports all findings and
names the first bad seq. Opens the ledger read-only and never writes it.

A hash chain alone cannot see a cut-off tail or a history rewritten and
re-hashed by someone with write access: give a signed checkpoint kept outside
the ledger (--checkpoint, --key) to prove the ledger extends it, and --state to
refuse ever going backwards.

Exit 0 verified, 1 tampering or corruption found, 2 unreadable input.

Examples:
  govledger verify
  govledger --db audit.db --output json verify
  govledger verify --export audit.jsonl
  govledger verify --checkpoint cp/latest --key ledger.pub --state ~/.govledger-state
  govledger verify --server http://127.0.0.1:8080 --key ledger.pub --state ~/.govledger-state
  govledger verify --server http://127.0.0.1:8080 --key ledger.pub --idle-timeout 30s --max-download 1073741824
` + remoteHelp + `
verify --server fetches the server's signed checkpoint and its export and
trusts neither: the checkpoint must be signed by --key, the export is replayed
here as --export does, and the tree root over the checkpoint's entries,
computed here, must be the checkpoint's. The token needs ledger:read and
payload:read. Only the entries a verified checkpoint covers are verified;
entries past it are reported as unverified. With --state, the newest
checkpoint verified is kept (written atomically after a successful verify)
and the server must extend it: an older checkpoint with an export cut to it
is a rollback, an export that disagrees with it a fork (exit 1, saying
which). The download is cut after --idle-timeout without a byte, or beyond
--max-download bytes.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "export", Usage: "verify a JSON Lines export instead of the database"},
			&cli.StringFlag{Name: "checkpoint", Usage: "signed checkpoint the ledger must extend"},
			&cli.StringFlag{Name: "key", Usage: "verifier key (note format NAME+hash+key, or an OpenSSH ed25519 public key file) for --checkpoint"},
			&cli.StringFlag{Name: "state", Usage: "folder keeping the newest checkpoint seen; refuses to go backwards"},
			&cli.StringFlag{Name: "policy", Usage: "tlog-policy file: the checkpoint must be signed by its log key and cosigned by its quorum of witnesses (replaces or adds to --key)"},
		}, serverFlags()...),
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("verify takes no arguments (use --db or --export)")
			}
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				return remoteVerify(c, g, cl)
			}
			if c.String("checkpoint") == "" && (c.String("key") != "" || c.String("policy") != "") ||
				c.String("checkpoint") != "" && c.String("key") == "" && c.String("policy") == "" {
				return usageErr("verify: --checkpoint goes with --key or --policy")
			}
			res := &verifyResult{Schema: "govledger.verify/v1", Findings: []verify.Finding{}}
			var rep *verify.Report
			var err error
			if path := c.String("export"); path != "" {
				if c.String("checkpoint") != "" {
					return usageErr("verify: --checkpoint applies to a ledger, not an export")
				}
				f, ferr := os.Open(path)
				if ferr != nil {
					return inputErr(ferr)
				}
				defer f.Close()
				res.Source = path
				rep, err = verify.Replay(c.Context, verify.ExportSource(f), verify.Options{})
			} else {
				l, lerr := openLedgerAll(g)
				if lerr != nil {
					return lerr
				}
				defer l.Close()
				res.Source = g.dbName()
				head, _, _ := l.Head(c.Context)
				if g.getenv("GOGC") == "" && g.getenv("GOMEMLIMIT") == "" {
					// Fewer collections under a memory limit that grows
					// with the ledger (a user's own settings stay).
					defer gcbudget.Verify(head)()
				}
				prog, done := progress(g, head, "verify")
				rep, err = verify.Replay(c.Context, verify.LedgerSource(l), verify.Options{
					Progress: prog, Structural: l.Check, Head: l.Head,
				})
				done()
				if err == nil && c.String("checkpoint") != "" {
					if aerr := anchor(c, l, res); aerr != nil {
						return aerr
					}
				}
			}
			if err != nil {
				if errors.Is(err, ledger.ErrCorrupt) {
					return &exitError{code: exitFound, err: err}
				}
				return internalErr(err)
			}
			res.OK = rep.OK() && (res.AnchorOK == nil || *res.AnchorOK)
			res.Entries, res.Head, res.FirstBad, res.Redacted = rep.Entries, rep.Head.String(), rep.FirstBad, rep.Redacted
			res.Findings = append(res.Findings, rep.Findings...)
			if g.output == "json" {
				if err := writeJSON(g.stdout, res); err != nil {
					return err
				}
			} else {
				renderVerify(g.stdout, res)
			}
			if !res.OK {
				return found()
			}
			return nil
		},
	}
}

func anchor(c *cli.Context, l *ledger.Ledger, res *verifyResult) error {
	cp, err := os.ReadFile(c.String("checkpoint"))
	if err != nil {
		return inputErr(err)
	}
	var policy *checkpoint.Policy
	if c.String("policy") != "" {
		if policy, err = loadPolicy(c.String("policy")); err != nil {
			return err
		}
	}
	key := ""
	if c.String("key") != "" {
		if key, err = readKeyArg(c.String("key")); err != nil {
			return inputErr(err)
		}
	} else {
		key = policy.LogKey()
	}
	if policy != nil {
		if perr := checkPolicy(policy, cp, ""); perr != nil {
			ok := false
			res.AnchorOK, res.AnchorErr = &ok, perr.Error()
			return nil
		}
	}
	ar, err := checkpoint.VerifyAnchor(l, cp, key, c.String("state"))
	ok := err == nil && ar != nil && ar.Consistent
	res.Anchor, res.AnchorOK = ar, &ok
	if err != nil {
		var ae *checkpoint.AnchorError
		// A checkpoint that does not verify under the trusted key is a
		// finding (someone re-signed history), not bad input.
		if !errors.As(err, &ae) && !errors.Is(err, checkpoint.ErrRollback) && !errors.Is(err, checkpoint.ErrFork) &&
			!errors.Is(err, checkpoint.ErrUnknownKey) && !errors.Is(err, checkpoint.ErrBadSignature) {
			return inputErr(fmt.Errorf("checkpoint: %w", err))
		}
		res.AnchorErr = err.Error()
	}
	return nil
}

// checkPolicy opens the signed checkpoint cp under policy: nil when it is
// signed by a log of the policy and cosigned by its quorum; otherwise the
// finding, naming the witnesses that did cosign.
func checkPolicy(policy *checkpoint.Policy, cp []byte, origin string) error {
	_, _, err := policy.Open(cp, origin)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

// readKeyArg accepts a verifier key itself or a file holding one.
func readKeyArg(s string) (string, error) {
	if b, err := os.ReadFile(s); err == nil {
		return string(b), nil
	}
	return s, nil
}

func renderVerify(w io.Writer, r *verifyResult) {
	for _, f := range r.Findings {
		fmt.Fprintf(w, "seq %d: %s: %s", f.Seq, f.Kind, f.Message)
		if f.Want != "" || f.Got != "" {
			fmt.Fprintf(w, " (want %s, got %s)", f.Want, f.Got)
		}
		fmt.Fprintln(w)
	}
	for _, s := range r.Redacted {
		fmt.Fprintf(w, "seq %d: payload redacted (hash kept)\n", s)
	}
	if r.Anchor != nil || r.AnchorErr != "" {
		if r.AnchorErr != "" {
			fmt.Fprintf(w, "checkpoint: FAILED: %s\n", r.AnchorErr)
		} else {
			fmt.Fprintf(w, "checkpoint: ledger of %d entries extends the signed checkpoint of size %d (origin %s)\n",
				r.Anchor.LedgerSize, r.Anchor.CheckpointSize, r.Anchor.Origin)
		}
	}
	if r.OK && r.VerifiedThrough > 0 {
		fmt.Fprintf(w, "OK: %s: entries 1 to %d verified against a signed checkpoint", r.Source, r.VerifiedThrough)
		if r.Unverified > 0 {
			fmt.Fprintf(w, "; %d entries past it are UNVERIFIED (no signed checkpoint covers them yet)", r.Unverified)
		}
		fmt.Fprintln(w)
		return
	}
	if r.OK {
		fmt.Fprintf(w, "OK: %s: %s verified, head %s\n", r.Source, count(r.Entries, "entry"), r.Head)
		return
	}
	if r.FirstBad != 0 {
		fmt.Fprintf(w, "FAILED: %s: %s, first bad entry seq %d\n", r.Source, count(len(r.Findings), "finding"), r.FirstBad)
		return
	}
	fmt.Fprintf(w, "FAILED: %s: %s\n", r.Source, count(len(r.Findings), "finding"))
}
