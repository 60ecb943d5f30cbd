package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/checkpoint/bundle"
	"github.com/govledger/govledger/entry"
)

func verifyProofCommand(g *globals) *cli.Command {
	var keys cli.StringSlice
	var keyName, policyFile string
	return &cli.Command{
		Name:      "verify-proof",
		Usage:     "check a proof bundle offline, without the database",
		ArgsUsage: "BUNDLE (or - for stdin)",
		Description: `verify-proof checks a bundle written by "govledger prove" against trusted verifier
keys only: the checkpoint's signature, the entry hash SHA-256(0x00||entry), the
payload's SHA-256 against the entry's payload_sha256 (unless redacted), and the
inclusion proof against the checkpoint root (or, for a consistency bundle, the
consistency proof between the two checkpoints).

It also reads a c2sp.org/tlog-proof@v1 (prove --format tlog-proof): the entry in
its extra line must be at its index of the checkpoint's tree.

--policy FILE (tlog-policy: log, witness, group, quorum lines; see
docs/witnessing.md) trusts the policy's log keys besides --key, and refuses a
checkpoint whose witness cosignatures do not satisfy its quorum.

Exit codes: 0 the proof holds; 1 invalid proof or bad/unknown signature;
2 unreadable bundle or key, or usage error.

Examples:
  govledger verify-proof --key ledger.pub entry42.proof.json
  govledger verify-proof --key old.pub --key new.pub grew.proof.json   # during a key rotation
  govledger verify-proof --policy witnessed.policy 42.tlog-proof`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "key", Usage: "trusted verifier key: a .pub file or a literal note key / ssh-ed25519 key (repeatable)", Destination: &keys},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for ssh-ed25519 keys (default: the bundle's origin)", Destination: &keyName},
			&cli.StringFlag{Name: "policy", Usage: "tlog-policy file: trusted log keys, witnesses and the quorum of cosignatures required", Destination: &policyFile},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("verify-proof: want exactly one BUNDLE")
			}
			if len(keys.Value()) == 0 && policyFile == "" {
				return usageErr("verify-proof: --key VERIFIER or --policy FILE is required")
			}
			var policy *checkpoint.Policy
			if policyFile != "" {
				var err error
				if policy, err = loadPolicy(policyFile); err != nil {
					return err
				}
			}
			path := c.Args().First()
			var data []byte
			var err error
			if path == "-" {
				data, err = io.ReadAll(io.LimitReader(g.stdin, bundle.MaxBundleSize+1))
			} else {
				data, err = os.ReadFile(path)
			}
			if err != nil {
				return inputErr(err)
			}
			name := keyName
			if name == "" {
				name = bundleOrigin(data)
			}
			var vs []note.Verifier
			for _, k := range keys.Value() {
				text, err := readVerifierKey(k)
				if err != nil {
					return err
				}
				v, _, err := checkpoint.ParseVerifier([]byte(text), name)
				if err != nil {
					return inputErr(err)
				}
				vs = append(vs, v)
			}
			res := verifyProofResult{Schema: "govledger.verify-proof/v1", File: path}
			var r *bundle.Result
			if checkpoint.IsProof(data) {
				r, res.Cosigners, err = verifyTLogProof(data, withKeys(policy, vs))
			} else {
				if policy != nil {
					vs = append(vs, policyVerifiers(policy)...)
				}
				r, err = bundle.Verify(data, note.VerifierList(vs...))
				if err == nil && policy != nil {
					_, res.Cosigners, err = policy.Open([]byte(bundleCheckpoint(data)), "")
				}
			}
			if r != nil {
				res.Result = *r
			}
			if errors.Is(err, bundle.ErrUnreadable) {
				return inputErr(fmt.Errorf("%s: %w", path, err))
			}
			res.OK = err == nil
			if err != nil {
				res.Error = err.Error()
			}
			if g.output == "json" {
				if werr := writeJSON(g.stdout, res); werr != nil {
					return werr
				}
			} else {
				printVerifyProof(g, &res)
			}
			if err != nil {
				return found()
			}
			return nil
		},
	}
}

type verifyProofResult struct {
	Schema string `json:"schema"`
	File   string `json:"file"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitzero"`
	// Cosigners are the policy's witnesses that cosigned the checkpoint.
	Cosigners []string `json:"cosigners,omitzero"`
	bundle.Result
}

func printVerifyProof(g *globals, r *verifyProofResult) {
	if !r.OK {
		fmt.Fprintf(g.stdout, "INVALID %s: %s\n", r.File, r.Error)
		return
	}
	switch r.Kind {
	case "inclusion":
		fmt.Fprintf(g.stdout, "OK %s: entry %d (%s, hash %s) is in %s at size %d; payload %s; checkpoint signed by %s\n",
			r.File, r.Seq, r.EntryKind, r.EntryHash, r.Origin, r.TreeSize, r.Payload, strings.Join(r.Signers, ", "))
		if len(r.Cosigners) > 0 {
			fmt.Fprintf(g.stdout, "cosigned by the policy's witnesses %s\n", strings.Join(r.Cosigners, ", "))
		}
	case "consistency":
		fmt.Fprintf(g.stdout, "OK %s: %s at size %d extends its checkpoint at size %d (append-only); signed by %s\n",
			r.File, r.Origin, r.NewSize, r.OldSize, strings.Join(r.Signers, ", "))
	}
}

// bundleOrigin returns the "origin" member of a bundle, or "" (used only to
// name an ssh-ed25519 key; the signature check decides).
func bundleOrigin(data []byte) string {
	var b struct {
		Origin string `json:"origin"`
	}
	if err := jsonUnmarshalLax(data, &b); err != nil {
		return ""
	}
	return b.Origin
}

// bundleCheckpoint returns the newest checkpoint of a bundle: "checkpoint"
// of an inclusion bundle, "new_checkpoint" of a consistency bundle.
func bundleCheckpoint(data []byte) string {
	var b struct {
		Checkpoint    string `json:"checkpoint"`
		NewCheckpoint string `json:"new_checkpoint"`
	}
	if err := jsonUnmarshalLax(data, &b); err != nil {
		return ""
	}
	if b.NewCheckpoint != "" {
		return b.NewCheckpoint
	}
	return b.Checkpoint
}

// loadPolicy reads a tlog-policy file; a bad one is a usage error (2).
func loadPolicy(path string) (*checkpoint.Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErr(err)
	}
	p, err := checkpoint.ParsePolicy(data)
	if err != nil {
		return nil, inputErr(fmt.Errorf("%s: %w", path, err))
	}
	return p, nil
}

func policyVerifiers(p *checkpoint.Policy) []note.Verifier {
	var vs []note.Verifier
	for _, k := range p.Logs {
		vs = append(vs, k.Verifier)
	}
	for _, k := range p.Witnesses {
		vs = append(vs, k.Verifier)
	}
	return vs
}

// withKeys returns policy (or a policy needing no witness when nil) with
// the verifiers vs trusted as log keys too.
func withKeys(policy *checkpoint.Policy, vs []note.Verifier) *checkpoint.Policy {
	p := &checkpoint.Policy{}
	if policy != nil {
		c := *policy
		p = &c
		p.Logs = append([]checkpoint.PolicyKey(nil), policy.Logs...)
	}
	for _, v := range vs {
		p.Logs = append(p.Logs, checkpoint.PolicyKey{Name: v.Name(), Verifier: v})
	}
	return p
}

// verifyTLogProof checks a c2sp.org/tlog-proof whose extra line is a
// canonical ledger entry: the checkpoint against policy, the entry's seq
// against the index, the inclusion proof.
func verifyTLogProof(data []byte, policy *checkpoint.Policy) (*bundle.Result, []string, error) {
	p, err := checkpoint.ParseProof(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", bundle.ErrUnreadable, err)
	}
	cp, cosigners, err := p.Verify(policy, "")
	r := &bundle.Result{Kind: "inclusion", Seq: p.Index + 1, Payload: bundle.PayloadAbsent}
	if cp != nil {
		r.Origin, r.Signers, r.TreeSize = cp.Origin, cp.Signers, cp.Size
	}
	if err != nil {
		return r, cosigners, fmt.Errorf("%w: %w", bundle.ErrInvalid, err)
	}
	r.EntryHash = entry.LeafHash(p.Extra).String()
	e, err := entry.Decode(p.Extra)
	if err != nil {
		return r, cosigners, fmt.Errorf("%w: %w", bundle.ErrEntry, err)
	}
	r.EntryKind = e.Kind
	if e.Seq != p.Index+1 {
		return r, cosigners, fmt.Errorf("%w: entry has seq %d at index %d", bundle.ErrMismatch, e.Seq, p.Index)
	}
	return r, cosigners, nil
}

func jsonUnmarshalLax(data []byte, v any) error { return json.Unmarshal(data, v) }
