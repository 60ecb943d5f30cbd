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
)

func verifyProofCommand(g *globals) *cli.Command {
	var keys cli.StringSlice
	var keyName string
	return &cli.Command{
		Name:      "verify-proof",
		Usage:     "check a proof bundle offline, without the database",
		ArgsUsage: "BUNDLE (or - for stdin)",
		Description: `verify-proof checks a bundle written by "govledger prove" against trusted verifier
keys only: the checkpoint's signature, the entry hash SHA-256(0x00||entry), the
payload's SHA-256 against the entry's payload_sha256 (unless redacted), and the
inclusion proof against the checkpoint root (or, for a consistency bundle, the
consistency proof between the two checkpoints).

Exit codes: 0 the proof holds; 1 invalid proof or bad/unknown signature;
2 unreadable bundle or key, or usage error.

Examples:
  govledger verify-proof --key ledger.pub entry42.proof.json
  govledger verify-proof --key old.pub --key new.pub grew.proof.json   # during a key rotation`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "key", Usage: "trusted verifier key: a .pub file or a literal note key / ssh-ed25519 key (repeatable)", Destination: &keys},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for ssh-ed25519 keys (default: the bundle's origin)", Destination: &keyName},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("verify-proof: want exactly one BUNDLE")
			}
			if len(keys.Value()) == 0 {
				return usageErr("verify-proof: --key VERIFIER is required")
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
			r, err := bundle.Verify(data, note.VerifierList(vs...))
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

func jsonUnmarshalLax(data []byte, v any) error { return json.Unmarshal(data, v) }
