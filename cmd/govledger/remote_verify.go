package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/server/client"
	"github.com/govledger/govledger/verify"
)

// remoteVerify is verify --server: it fetches the server's signed
// checkpoint and then its export stream, and trusts neither. The
// checkpoint must verify under --key (the user's key, not one the server
// names); the export is replayed here as 'verify --export' does (chain,
// hashes, payloads, decisions re-evaluated); and the Merkle root over the
// first checkpoint-size entries of the export, computed here from the
// entries' bytes, must be the checkpoint's root. A server that edits,
// drops or reorders an entry fails one of the three.
func remoteVerify(c *cli.Context, g *globals, cl *client.Client) error {
	for _, f := range []string{"export", "checkpoint", "state"} {
		if c.String(f) != "" {
			return usageErr("verify: --%s does not apply with --server (the server's export is checked against its checkpoint and --key)", f)
		}
	}
	if c.String("key") == "" && c.String("policy") == "" {
		return usageErr("verify --server needs --key (or --policy): the verifier key the server's checkpoint must be signed with (trusting nothing the server says)")
	}
	var policy *checkpoint.Policy
	var key string
	var err error
	if c.String("policy") != "" {
		if policy, err = loadPolicy(c.String("policy")); err != nil {
			return err
		}
		key = policy.LogKey()
	}
	if c.String("key") != "" {
		if key, err = readKeyArg(c.String("key")); err != nil {
			return inputErr(err)
		}
	}
	ctx := c.Context
	res := &verifyResult{Schema: "govledger.verify/v1", Source: cl.URL() + "/v1/export", Findings: []verify.Finding{}}

	// The checkpoint first: the export then holds at least its entries.
	cpText, err := cl.Checkpoint(ctx)
	if err != nil {
		return remoteErr(cl, err)
	}
	cp, anchorErr := openCheckpoint(cpText, key, g.origin)
	if errors.Is(anchorErr, checkpoint.ErrKeyFormat) {
		return inputErr(fmt.Errorf("verify: --key: %w", anchorErr))
	}
	if anchorErr == nil && policy != nil {
		anchorErr = checkPolicy(policy, cpText, g.origin)
	}

	// Spool the export: it is read twice (replay, then the tree).
	f, err := os.CreateTemp("", "govledger-verify-*.jsonl")
	if err != nil {
		return internalErr(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	body, err := cl.Export(ctx, 0)
	if err != nil {
		return remoteErr(cl, err)
	}
	_, err = io.Copy(f, body)
	body.Close()
	if err != nil {
		return remoteErr(cl, fmt.Errorf("%w: export cut short: %w", client.ErrTransport, err))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return internalErr(err)
	}
	rep, err := verify.Replay(ctx, verify.ExportSource(f), verify.Options{})
	if err != nil {
		return internalErr(err)
	}
	res.Entries, res.Head, res.FirstBad, res.Redacted = rep.Entries, rep.Head.String(), rep.FirstBad, rep.Redacted
	res.Findings = append(res.Findings, rep.Findings...)

	if cp != nil {
		res.Anchor = &checkpoint.AnchorReport{Origin: cp.Origin, CheckpointSize: cp.Size,
			CheckpointRoot: base64.StdEncoding.EncodeToString(cp.Hash[:]), Signers: cp.Signers}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return internalErr(err)
		}
		n, root, err := exportRoot(ctx, f, cp.Size)
		res.Anchor.LedgerSize = n
		switch {
		case err != nil:
			anchorErr = err
		case n < cp.Size:
			anchorErr = &checkpoint.AnchorError{Kind: checkpoint.KindTruncated, Size: cp.Size,
				Want: strconv.FormatUint(cp.Size, 10), Got: strconv.FormatUint(n, 10)}
		case root != cp.Hash:
			anchorErr = &checkpoint.AnchorError{Kind: checkpoint.KindRewritten, Size: cp.Size,
				Want: base64.StdEncoding.EncodeToString(cp.Hash[:]), Got: base64.StdEncoding.EncodeToString(root[:])}
		default:
			res.Anchor.Consistent = true
		}
	}
	ok := anchorErr == nil
	res.AnchorOK = &ok
	if anchorErr != nil {
		res.AnchorErr = anchorErr.Error()
	}
	res.OK = rep.OK() && ok
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
}

// openCheckpoint verifies the signed checkpoint cpText under the verifier
// key (an OpenSSH key takes the checkpoint's origin as its name) and, when
// origin is set, that it names that origin. Every failure but a bad key
// is a finding about what the server sent.
func openCheckpoint(cpText []byte, key, origin string) (*checkpoint.Checkpoint, error) {
	name := ""
	if pc, err := checkpoint.Parse(cpText); err == nil {
		name = pc.Origin
	}
	v, _, err := checkpoint.ParseVerifier([]byte(key), name)
	if err != nil {
		return nil, err
	}
	cp, err := checkpoint.Open(cpText, note.VerifierList(v), origin)
	if err != nil {
		return nil, fmt.Errorf("the server's checkpoint: %w", err)
	}
	return cp, nil
}

// exportRoot reads an export and returns its number of entries and the
// RFC 6962 root over the first size of them, computed from their bytes.
func exportRoot(ctx context.Context, r io.Reader, size uint64) (uint64, tlog.Hash, error) {
	var leaves []tlog.Hash
	var n uint64
	err := verify.ExportSource(r).Entries(ctx, func(seq uint64, raw []byte) error {
		n++
		if seq != n {
			return fmt.Errorf("export line %d holds seq %d, want %d", n, seq, n)
		}
		if n <= size {
			leaves = append(leaves, tlog.Hash(entry.LeafHash(raw)))
		}
		return nil
	})
	if err != nil {
		return n, tlog.Hash{}, err
	}
	if n < size {
		return n, tlog.Hash{}, nil
	}
	root, err := checkpoint.RootFromLeaves(ctx, size, func(i uint64) (tlog.Hash, error) { return leaves[i], nil })
	return n, root, err
}
