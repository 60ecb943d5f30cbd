package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/checkpoint"
)

func keygenCommand(g *globals) *cli.Command {
	var out string
	return &cli.Command{
		Name:      "keygen",
		Usage:     "generate a checkpoint signing key pair (NAME.key, mode 0600, and NAME.pub)",
		ArgsUsage: "NAME",
		Description: `keygen makes an Ed25519 note key pair named NAME for signing checkpoints.
NAME should be the ledger's origin (the C2SP checkpoint spec recommends it).
It writes the signer key to PREFIX.key (mode 0600; never overwritten) and the
verifier key to PREFIX.pub, and prints the verifier key (NAME+hash+key).
PREFIX is --out, or NAME with "/" replaced by "_". Keep the .key file away from
the ledger's host and user; publish the .pub key to whoever verifies.

Examples:
  govledger keygen example.com/ledger                 # example.com_ledger.key and .pub
  govledger keygen --out keys/2027 example.com/ledger # keys/2027.key and .pub`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "file prefix for PREFIX.key and PREFIX.pub (default: NAME with / replaced by _)", Destination: &out},
		},
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErr("keygen: want exactly one NAME")
			}
			name := c.Args().First()
			skey, vkey, err := checkpoint.GenerateKey(rand.Reader, name)
			if err != nil {
				return inputErr(err)
			}
			prefix := out
			if prefix == "" {
				prefix = strings.ReplaceAll(name, "/", "_")
			}
			keyPath, pubPath := prefix+".key", prefix+".pub"
			if _, err := os.Lstat(pubPath); err == nil {
				return inputErr(fmt.Errorf("keygen: %s exists; refusing to overwrite", pubPath))
			}
			if err := writeExclusive(keyPath, []byte(skey+"\n"), 0o600); err != nil {
				return err
			}
			if err := writeExclusive(pubPath, []byte(vkey+"\n"), 0o644); err != nil {
				os.Remove(keyPath)
				return err
			}
			res := keygenResult{Schema: "govledger.keygen/v1", Name: name, VerifierKey: vkey, SignerFile: keyPath, VerifierFile: pubPath}
			if g.output == "json" {
				return writeJSON(g.stdout, res)
			}
			fmt.Fprintln(g.stdout, vkey)
			fmt.Fprintf(g.stderr, "wrote signer key %s (mode 0600) and verifier key %s\n", keyPath, pubPath)
			return nil
		},
	}
}

type keygenResult struct {
	Schema       string `json:"schema"`
	Name         string `json:"name"`
	VerifierKey  string `json:"verifier_key"`
	SignerFile   string `json:"signer_file"`
	VerifierFile string `json:"verifier_file"`
}

// writeExclusive creates path (refusing an existing file), writes data and
// syncs the file and its directory.
func writeExclusive(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return inputErr(fmt.Errorf("%s exists; refusing to overwrite", path))
	}
	if err != nil {
		return inputErr(err)
	}
	if err := f.Chmod(perm); err != nil { // umask may have narrowed or kept it; set exactly
		f.Close()
		return internalErr(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return internalErr(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return internalErr(err)
	}
	if err := f.Close(); err != nil {
		return internalErr(err)
	}
	// The name is durable once its folder is synced; an error there
	// means the key may be lost at a power cut, so it is reported.
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return internalErr(fmt.Errorf("sync directory of %s: %w", path, err))
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return internalErr(fmt.Errorf("sync directory of %s: %w", path, err))
	}
	return nil
}

// readVerifierKey returns the verifier key text named by a --key flag: the
// contents of the file if one exists at that path, else the flag's value
// itself (a literal "name+hash+key" or "ssh-ed25519 AAAA…").
func readVerifierKey(flag string) (string, error) {
	if flag == "" {
		return "", usageErr("--key is required")
	}
	data, err := os.ReadFile(flag)
	if err == nil {
		return string(data), nil
	}
	if errors.Is(err, fs.ErrNotExist) && (strings.Contains(flag, "+") || strings.HasPrefix(flag, "ssh-")) {
		return flag, nil
	}
	return "", inputErr(fmt.Errorf("verifier key: %w", err))
}
