package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"

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
	for _, f := range []string{"export", "checkpoint"} {
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
	var policyErr error // kept apart: the anchor check below sets anchorErr again
	if anchorErr == nil && policy != nil {
		policyErr = checkPolicy(policy, cpText, g.origin)
		anchorErr = policyErr
	}

	// Spool the export: it is read twice (replay, then the tree).
	f, err := os.CreateTemp("", "govledger-verify-*.jsonl")
	if err != nil {
		return internalErr(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	// The client's transport cuts the download after --idle-timeout
	// without a byte or beyond --max-download bytes.
	err = func() error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		body, err := cl.Export(ctx, 0)
		if err != nil {
			return err
		}
		defer body.Close()
		_, err = io.Copy(f, body)
		return err
	}()
	var pe *client.ProblemError
	switch {
	case errors.As(err, &pe), errors.Is(err, client.ErrTransport):
		return remoteErr(cl, err)
	case err != nil:
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

	// With --state, the server is pinned to the origin of the first
	// checkpoint verified from it: a checkpoint of another origin (a log
	// started afresh, whose empty state would hide a rollback) is refused.
	stateDir := c.String("state")
	var st *checkpoint.State
	if cp != nil && stateDir != "" {
		if st, err = checkpoint.OpenState(stateDir); err != nil {
			return internalErr(err)
		}
		if err := st.Check(cl.URL(), cp.Origin); errors.Is(err, checkpoint.ErrOriginChanged) {
			anchorErr, cp = err, nil
		} else if err != nil {
			return internalErr(err)
		}
	}
	if cp != nil {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return internalErr(err)
		}
		tr, err := exportTree(ctx, f, cp.Origin)
		if err != nil {
			anchorErr = err
			res.Anchor = &checkpoint.AnchorReport{Origin: cp.Origin, CheckpointSize: cp.Size,
				CheckpointRoot: base64.StdEncoding.EncodeToString(cp.Hash[:]), Signers: cp.Signers}
		} else {
			// The export against the checkpoint and, with --state, against
			// the newest checkpoint verified before: a smaller checkpoint
			// with an export cut to it is a rollback, an export whose
			// entries disagree with it a fork.
			res.Anchor, anchorErr = checkpoint.VerifyAnchorContext(ctx, tr, cpText, key, stateDir)
			if errors.Is(anchorErr, checkpoint.ErrKeyFormat) {
				return inputErr(fmt.Errorf("verify: --key: %w", anchorErr))
			}
			if anchorErr == nil {
				anchorErr = policyErr // a checkpoint the policy refuses verifies nothing
			}
			if anchorErr == nil && st != nil {
				_, anchorErr = st.Pin(ctx, checkpoint.Pin{Source: cl.URL(), Origin: cp.Origin, KeyName: keyName(key, cp.Origin)})
			}
			if anchorErr == nil && res.Anchor != nil {
				res.VerifiedThrough = max(res.Anchor.CheckpointSize, res.Anchor.StateSize)
				if n := uint64(len(tr.leaves)); n > res.VerifiedThrough {
					res.Unverified = n - res.VerifiedThrough
				}
			}
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

// keyName is the name of the verifier key (an OpenSSH key takes the
// checkpoint's origin), or "" when it does not parse.
func keyName(key, origin string) string {
	v, _, err := checkpoint.ParseVerifier([]byte(key), origin)
	if err != nil {
		return ""
	}
	return v.Name()
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

// exportTree reads an export into a checkpoint.TreeReader over its
// entries' leaf hashes (computed here from the entries' bytes).
func exportTree(ctx context.Context, r io.Reader, origin string) (*memTree, error) {
	t := &memTree{origin: origin}
	err := verify.ExportSource(r).Entries(ctx, func(seq uint64, raw []byte) error {
		n := uint64(len(t.leaves)) + 1
		if seq != n {
			return fmt.Errorf("export line %d holds seq %d, want %d", n, seq, n)
		}
		h := tlog.Hash(entry.LeafHash(raw))
		hs, err := tlog.StoredHashesForRecordHash(int64(n-1), h, t)
		if err != nil {
			return err
		}
		t.leaves = append(t.leaves, h)
		t.stored = append(t.stored, hs...)
		return nil
	})
	return t, err
}

// memTree is a Merkle tree held in memory: the tlog stored hashes of an
// export's leaves.
type memTree struct {
	origin string
	leaves []tlog.Hash
	stored []tlog.Hash
}

func (t *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x < 0 || x >= int64(len(t.stored)) {
			return nil, fmt.Errorf("tree hash %d not stored", x)
		}
		out[i] = t.stored[x]
	}
	return out, nil
}

func (t *memTree) Origin() string                           { return t.origin }
func (t *memTree) TreeSize(context.Context) (uint64, error) { return uint64(len(t.leaves)), nil }

func (t *memTree) TreeHash(_ context.Context, size uint64) (tlog.Hash, error) {
	if size > uint64(len(t.leaves)) {
		return tlog.Hash{}, fmt.Errorf("tree size %d beyond the export's %d entries", size, len(t.leaves))
	}
	return tlog.TreeHash(int64(size), t)
}

func (t *memTree) ProveConsistency(_ context.Context, oldSize, newSize uint64) (tlog.TreeProof, error) {
	if newSize > uint64(len(t.leaves)) || oldSize > newSize {
		return nil, fmt.Errorf("consistency %d..%d beyond the export's %d entries", oldSize, newSize, len(t.leaves))
	}
	return tlog.ProveTree(int64(newSize), int64(oldSize), t)
}
