package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger"
)

func checkpointCommand(g *globals) *cli.Command {
	var keyFile, keyName, out string
	return &cli.Command{
		Name:  "checkpoint",
		Usage: "print or write a signed checkpoint (C2SP tlog-checkpoint) of the ledger",
		Description: `checkpoint signs the ledger's origin, size and Merkle root with the signer key
(--key: a file written by "govledger keygen", mode 0600, or an unencrypted
OpenSSH ed25519 private key named by --key-name, default the ledger origin).
It adds no entry. Keep the checkpoints OUTSIDE the ledger's host (a git repo,
CI artifacts, another machine): "govledger verify --checkpoint" then detects a
truncated, rewritten, rolled-back or replaced ledger.

It signs the Merkle root stored as the entries were appended and does not
replay the chain: run "govledger verify" first to know what you sign.

Examples:
  govledger checkpoint --key ledger.key --out checkpoints/latest.txt
  govledger checkpoint rotate --old-key old.pub --new-key new.pub --reason "yearly rotation"`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "signer key file (note PRIVATE+KEY or OpenSSH ed25519)", Destination: &keyFile},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for an OpenSSH key (default: the ledger origin)", Destination: &keyName},
			&cli.StringFlag{Name: "out", Usage: "write the checkpoint to this file (atomically) instead of stdout", Destination: &out},
		},
		Subcommands: []*cli.Command{rotateCommand(g)},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErr("checkpoint: unexpected argument %q", c.Args().First())
			}
			if keyFile == "" {
				return usageErr("checkpoint: --key SIGNER_KEY_FILE is required")
			}
			l, err := openLedgerRead(g)
			if err != nil {
				return err
			}
			defer l.Close()
			s, err := loadSigner(keyFile, keyName, l.Origin())
			if err != nil {
				return err
			}
			msg, err := checkpoint.Make(c.Context, l, s)
			if err != nil {
				return internalErr(err)
			}
			cp, err := checkpoint.Parse(msg)
			if err != nil {
				return internalErr(err)
			}
			if out != "" {
				if err := checkpoint.WriteFileAtomic(out, msg, 0o644); err != nil {
					return internalErr(err)
				}
			}
			res := checkpointResult{Schema: "govledger.checkpoint/v1", Origin: cp.Origin, Size: cp.Size,
				Root: base64.StdEncoding.EncodeToString(cp.Hash[:]), Signer: fmt.Sprintf("%s+%08x", s.Name(), s.KeyHash()),
				Checkpoint: string(msg), Out: out}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			if out == "" {
				_, err := g.stdout.Write(msg)
				return err
			}
			fmt.Fprintf(g.stdout, "wrote checkpoint of %s at size %d (root %s) to %s\n", res.Origin, res.Size, res.Root, out)
			return nil
		},
	}
}

type checkpointResult struct {
	Schema     string `json:"schema"`
	Origin     string `json:"origin"`
	Size       uint64 `json:"size"`
	Root       string `json:"root"`
	Signer     string `json:"signer"`
	Checkpoint string `json:"checkpoint"`
	Out        string `json:"out,omitzero"`
}

func rotateCommand(g *globals) *cli.Command {
	var oldKey, newKey, keyName, why string
	return &cli.Command{
		Name:  "rotate",
		Usage: "record a checkpoint key rotation as a ledger entry",
		Description: `rotate appends a key_rotation entry naming the old and new verifier keys, so
auditors can see in the ledger itself which key signs checkpoints from then on.
--old-key may be omitted for the first key. Keys are note verifier keys or
ssh-ed25519 public keys (named by --key-name, default the ledger origin).

Examples:
  govledger checkpoint rotate --new-key first.pub --reason "first signing key"
  govledger checkpoint rotate --old-key old.pub --new-key new.pub --reason "yearly rotation"`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "old-key", Usage: "verifier key (file or literal) being retired", Destination: &oldKey},
			&cli.StringFlag{Name: "new-key", Usage: "verifier key (file or literal) that signs from now on", Destination: &newKey},
			&cli.StringFlag{Name: "key-name", Usage: "note key name for ssh-ed25519 keys (default: the ledger origin)", Destination: &keyName},
			&cli.StringFlag{Name: "reason", Usage: "why the key changes (recorded in the entry)", Destination: &why},
			asFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErr("checkpoint rotate: unexpected argument %q", c.Args().First())
			}
			if newKey == "" || strings.TrimSpace(why) == "" {
				return usageErr("checkpoint rotate: --new-key and --reason are required")
			}
			l, err := openDB(c.Context, g, openExisting)
			if err != nil {
				return err
			}
			defer l.Close()
			name := keyName
			if name == "" {
				name = l.Origin()
			}
			parse := func(flag string) (string, error) {
				text, err := readVerifierKey(flag)
				if err != nil {
					return "", err
				}
				_, vkey, err := checkpoint.ParseVerifier([]byte(text), name)
				if err != nil {
					return "", inputErr(err)
				}
				return vkey, nil
			}
			newV, err := parse(newKey)
			if err != nil {
				return err
			}
			oldV := ""
			if oldKey != "" {
				if oldV, err = parse(oldKey); err != nil {
					return err
				}
				if oldV == newV {
					return usageErr("checkpoint rotate: old and new keys are the same")
				}
			}
			as, err := submitter(c, g)
			if err != nil {
				return err
			}
			a, err := govern.RotateKey(c.Context, l, oldV, newV, why, as)
			if errors.Is(err, govern.ErrKeyRotation) {
				return usageErr("checkpoint rotate: %s", strings.TrimPrefix(err.Error(), govern.ErrKeyRotation.Error()+": "))
			} else if err != nil {
				return internalErr(err)
			}
			out := rotateResult{Schema: "govledger.checkpoint-rotate/v1", Seq: a.Entry.Seq, Hash: a.Hash.String(), OldKey: oldV, NewKey: newV, Reason: why}
			if g.output == "json" {
				return writeJSON(g.stdout, out)
			}
			fmt.Fprintf(g.stdout, "recorded key rotation at seq %d (entry %s): new key %s\n", out.Seq, out.Hash, newV)
			return nil
		},
	}
}

type rotateResult struct {
	Schema string `json:"schema"`
	Seq    uint64 `json:"seq"`
	Hash   string `json:"hash"`
	OldKey string `json:"old_key,omitzero"`
	NewKey string `json:"new_key"`
	Reason string `json:"reason"`
}

// openLedgerRead opens the --db ledger read-only with a finite lock wait.
func openLedgerRead(g *globals) (*ledger.Ledger, error) {
	return openDB(context.Background(), g, openReadOnly)
}

// loadSigner loads a signer key file; OpenSSH keys are named keyName or,
// by default, the ledger's origin (the name verifiers will use).
func loadSigner(path, keyName, origin string) (note.Signer, error) {
	if keyName == "" {
		keyName = origin
	}
	s, err := checkpoint.LoadSigner(path, keyName)
	if err != nil {
		return nil, inputErr(err)
	}
	return s, nil
}
