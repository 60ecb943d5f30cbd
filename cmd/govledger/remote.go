package main

// The client side of the commands that can work through a running
// "govledger serve" (--server URL) instead of opening the ledger file:
// record, log, show, trace, blocks, export and verify. Each renders the
// same structs as its local path, so the two outputs are the same.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/internal/atomicfile"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/client"
)

// serverFlag is --server, the URL of a running govledger serve.
func serverFlag() cli.Flag {
	return &cli.StringFlag{Name: "server", Usage: "use the govledger serve at this URL instead of --db (default $GOVLEDGER_SERVER); " +
		"the bearer token is read from $GOVLEDGER_TOKEN only, never from a flag, which would land in shell history"}
}

// serverFlags are --server and the bounds of its downloads.
func serverFlags() []cli.Flag {
	return append([]cli.Flag{serverFlag()}, downloadFlags("with --server")...)
}

// remoteHelp is the paragraph the client commands add to their --help.
const remoteHelp = `
With --server URL (or GOVLEDGER_SERVER) the command goes through the HTTP API
of a running 'govledger serve' instead of opening --db, with the bearer token
from the GOVLEDGER_TOKEN environment variable (never a flag: it would land in
shell history). The output is the same. A refusal by the server exits 2
(401/403 with the server's reason), an unreachable or overloaded server 3.
Every answer is cut (exit 3) when the server sends nothing for --idle-timeout
(default 60s) or more than --max-download bytes (default 8 GiB).`

// remoteClient returns the client of --server (or GOVLEDGER_SERVER), or
// nil when neither is set.
func remoteClient(c *cli.Context, g *globals) (*client.Client, error) {
	u := c.String("server")
	if u == "" {
		u = g.getenv("GOVLEDGER_SERVER")
	}
	if u == "" {
		return nil, nil
	}
	hc, err := boundedClient(c, 0)
	if err != nil {
		return nil, err
	}
	cl, err := client.New(u, g.getenv("GOVLEDGER_TOKEN"), hc)
	if err != nil {
		return nil, usageErr("--server: %v", err)
	}
	return cl, nil
}

// remoteErr gives an error met talking to the server its exit code: a
// refusal (4xx: bad credentials, missing scope, bad request, not found)
// is 2, an unreachable, overloaded or failing server (429, 5xx, no
// answer, an unusable answer) is 3.
func remoteErr(cl *client.Client, err error) error {
	err = downloadHint(err)
	var pe *client.ProblemError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		s := pe.Status()
		code := exitUsage
		if s == http.StatusTooManyRequests || s >= 500 {
			code = exitInternal
		}
		msg := fmt.Errorf("server %s: %w", cl.URL(), err)
		if s == http.StatusUnauthorized {
			msg = fmt.Errorf("%w (set GOVLEDGER_TOKEN to a token of 'govledger token create')", msg)
		}
		return &exitError{code: code, err: msg}
	case errors.Is(err, client.ErrTransport), errors.Is(err, client.ErrAnswer):
		return internalErr(fmt.Errorf("server %s: %w", cl.URL(), err))
	}
	return classify(err)
}

// problemStatus returns the status of a *client.ProblemError, else 0.
func problemStatus(err error) int {
	var pe *client.ProblemError
	if errors.As(err, &pe) {
		return pe.Status()
	}
	return 0
}

// remoteEntry decodes an entry the server sent, refusing one whose hash
// is not the hash of its bytes.
func remoteEntry(v server.EntryView) (*entry.Entry, []byte, error) {
	raw := []byte(v.Entry)
	e, err := entry.Decode(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: entry seq %d: %w", client.ErrAnswer, v.Seq, err)
	}
	if e.Seq != v.Seq || entry.LeafHash(raw).String() != v.Hash {
		return nil, nil, fmt.Errorf("%w: entry seq %d: its seq or hash is not that of its bytes", client.ErrAnswer, v.Seq)
	}
	return e, raw, nil
}

// serverSettings are the decision flags that are the server's to set.
var serverSettings = []string{"strict", "max-age", "max-payload", "root", "as"}

// remoteRecord is record through POST /v1/handoffs.
func remoteRecord(c *cli.Context, g *globals, cl *client.Client) error {
	if err := noFlagsAfterArgs(c); err != nil {
		return err
	}
	if c.NArg() == 0 {
		return usageErr("record: name at least one FILE (or - for standard input)")
	}
	for _, f := range serverSettings {
		if c.IsSet(f) {
			return usageErr("record: --%s is the server's setting (the token's principal is the submitter); drop it with --server", f)
		}
	}
	rep := &docReport{Schema: "govledger.record/v1", Documents: []docResult{}}
	workflow, err := workflowFlag(c)
	if err != nil {
		return err
	}
	opts := client.SubmitOptions{Format: c.String("format"), From: c.String("from"), To: c.String("to"),
		IdempotencyKey: c.String("idempotency-key"), Workflow: workflow}
	if opts.IdempotencyKey != "" && c.NArg() != 1 {
		return usageErr("record: --idempotency-key names the retry key of one document; got %d", c.NArg())
	}
	for _, name := range c.Args().Slice() {
		p, err := readInput(g, name, client.MaxAnswer)
		if err == nil && p.Data == nil && p.Size > 0 {
			err = fmt.Errorf("%d bytes: over the %d bytes a request may carry", p.Size, client.MaxAnswer)
		}
		if err != nil {
			rep.add(docResult{File: name, Error: err.Error(), Reasons: []reason.Reason{}})
			continue
		}
		res, err := cl.Submit(c.Context, p.Data, opts)
		if err != nil {
			rep.render(g.stdout, g.output)
			if problemStatus(err) == 0 || problemStatus(err) >= 500 {
				err = fmt.Errorf("record %s: %w (outcome unknown: check 'govledger log --server', then retry)", name, err)
			} else {
				err = fmt.Errorf("record %s: %w", name, err)
			}
			return remoteErr(cl, err)
		}
		sum := sha256.Sum256(p.Data)
		r := docResult{File: name, Format: res.Format, Decision: res.Decision, Reasons: res.Reasons,
			HandoffID: res.HandoffID, Source: res.Source, Target: res.Target, WorkflowID: res.WorkflowID,
			PayloadSHA256: entry.Hash(sum).String(), PayloadSize: p.Size, Seq: res.Seq, EntryHash: res.EntryHash,
			Replayed: res.Replayed}
		if r.Reasons == nil {
			r.Reasons = []reason.Reason{}
		}
		rep.add(r)
	}
	if err := rep.render(g.stdout, g.output); err != nil {
		return internalErr(err)
	}
	return rep.exit()
}

// remoteLog is log through GET /v1/entries, paged and ordered as log pages
// the local ledger.
func remoteLog(c *cli.Context, g *globals, cl *client.Client) error {
	q := client.Query{Agent: c.String("agent"), Decision: c.String("decision"), Code: c.String("code"),
		Workflow: c.String("workflow"), Kind: c.String("kind"), Before: c.Uint64("before")}
	if t := c.Timestamp("since"); t != nil {
		q.Since = *t
	}
	if t := c.Timestamp("until"); t != nil {
		q.Until = *t
	}
	limit, after, newest := c.Int("limit"), c.Uint64("after"), !c.Bool("reverse")
	// The API pages newest first: newest first, one match beyond the
	// limit tells whether another page follows; oldest first needs every
	// match above --after.
	errEnough := errors.New("enough")
	var views []server.EntryView
	err := cl.AllEntries(c.Context, q, func(v server.EntryView) error {
		if v.Seq <= after {
			return errEnough
		}
		views = append(views, v)
		if newest && limit > 0 && len(views) > limit {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return remoteErr(cl, err)
	}
	if !newest {
		slices.Reverse(views)
	}
	more := limit > 0 && len(views) > limit
	if more {
		views = views[:limit]
	}
	var last uint64
	for _, sv := range views {
		e, raw, err := remoteEntry(sv)
		if err != nil {
			return remoteErr(cl, err)
		}
		v := newEntryView(e, raw)
		if g.output == "json" {
			v.Schema = "govledger.log/v1"
			if err := writeJSONLine(g.stdout, v); err != nil {
				return err
			}
		} else {
			renderEntryLine(g.stdout, v)
		}
		last = e.Seq
	}
	if len(views) == 0 && g.output != "json" {
		fmt.Fprintln(g.stderr, "no entries match")
	}
	if !more {
		return nil
	}
	return writeLogCursor(g, newest, last)
}

// remoteShow is show through GET /v1/entries/{seq} and its payload.
func remoteShow(c *cli.Context, g *globals, cl *client.Client, arg string) error {
	ctx := c.Context
	var seqs []uint64
	if n, perr := strconv.ParseUint(arg, 10, 64); perr == nil && n > 0 {
		seqs = []uint64{n}
	} else {
		err := cl.AllEntries(ctx, client.Query{Kind: entry.KindHandoff, Handoff: arg}, func(v server.EntryView) error {
			e, _, err := remoteEntry(v)
			if err != nil {
				return err
			}
			if e.HandoffID.String() == arg { // the server's filter, checked
				seqs = append(seqs, e.Seq)
			}
			return nil
		})
		if err != nil {
			return remoteErr(cl, err)
		}
		slices.Sort(seqs)
	}
	if len(seqs) == 0 {
		return usageErr("show: no entry %q", arg)
	}
	sv, err := cl.Entry(ctx, seqs[0])
	if problemStatus(err) == http.StatusNotFound {
		return usageErr("show: no entry with seq %d", seqs[0])
	} else if err != nil {
		return remoteErr(cl, err)
	}
	e, raw, err := remoteEntry(*sv)
	if err != nil {
		return remoteErr(cl, err)
	}
	res := &showResult{Schema: "govledger.show/v1", Seq: e.Seq, Hash: entry.LeafHash(raw).String(),
		Entry: jsontext.Value(raw), Reasons: reasonsOf(e), Others: seqs[1:]}
	if sum := e.Blob(); sum != nil {
		p, err := cl.Payload(ctx, e.Seq)
		switch st := problemStatus(err); {
		case st == http.StatusGone:
			res.Redacted = true
		case st == http.StatusNotFound && hasCode(e, string(reason.PayloadTooLarge)):
			res.NotStored = true
		case err != nil:
			return remoteErr(cl, err)
		case sha256.Sum256(p) != [32]byte(*sum):
			return remoteErr(cl, fmt.Errorf("%w: the payload of entry seq %d does not have the hash the entry names", client.ErrAnswer, e.Seq))
		default:
			res.setPayload(p)
		}
	}
	if g.output == "json" {
		return writeJSON(g.stdout, res)
	}
	renderShow(g, e, raw, res)
	return nil
}

// remoteTrace is trace through GET /v1/workflows/{id}.
func remoteTrace(c *cli.Context, cl *client.Client, wf string) (*traceResult, error) {
	svs, err := cl.Workflow(c.Context, wf)
	if problemStatus(err) == http.StatusNotFound {
		svs, err = nil, nil
	}
	if err != nil {
		return nil, remoteErr(cl, err)
	}
	res := &traceResult{Schema: "govledger.trace/v1", WorkflowID: wf, Steps: []entryView{}}
	for _, sv := range svs {
		e, raw, err := remoteEntry(sv)
		if err != nil {
			return nil, remoteErr(cl, err)
		}
		res.Steps = append(res.Steps, newEntryView(e, raw))
	}
	pairOutcomes(res)
	return res, nil
}

// remoteBlocks is blocks through GET /v1/blocks, each block rendered from
// the entry that caused it (read with GET /v1/entries/{seq}).
func remoteBlocks(c *cli.Context, cl *client.Client) (*blocksReport, error) {
	bs, err := cl.Blocks(c.Context)
	if err != nil {
		return nil, remoteErr(cl, err)
	}
	rep := &blocksReport{Schema: "govledger.blocks/v1", Blocks: []blockView{}}
	for _, b := range bs {
		sv, err := cl.Entry(c.Context, b.Since)
		if err != nil {
			return nil, remoteErr(cl, err)
		}
		e, _, err := remoteEntry(*sv)
		if err != nil {
			return nil, remoteErr(cl, err)
		}
		rep.Blocks = append(rep.Blocks, newBlockView(b.Agent, b.Since, e))
	}
	return rep, nil
}

// remoteExport is export through GET /v1/export, copied as it streams.
func remoteExport(c *cli.Context, g *globals, cl *client.Client) error {
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	body, err := cl.Export(ctx, 0)
	if err != nil {
		return remoteErr(cl, err)
	}
	defer body.Close()
	copyLines := func(w io.Writer) (n uint64, err error) {
		br := bufio.NewReaderSize(body, 64<<10)
		for {
			line, rerr := br.ReadSlice('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				n++
			}
			if _, werr := w.Write(line); werr != nil {
				return n, &exitError{code: exitInternal, err: fmt.Errorf("export: %w", werr)}
			}
			switch {
			case errors.Is(rerr, io.EOF):
				if len(line) > 0 { // a stream must end with a whole line
					return n, remoteErr(cl, fmt.Errorf("%w: export: the stream ends inside a line", client.ErrAnswer))
				}
				return n, nil
			case errors.Is(rerr, bufio.ErrBufferFull):
			case rerr != nil:
				return n, remoteErr(cl, fmt.Errorf("%w: export cut short after %d lines: %w", client.ErrTransport, n, rerr))
			}
		}
	}
	if out := c.String("out"); out != "" {
		var n uint64
		err := atomicfile.Write(out, 0o644, func(f *os.File) error {
			var err error
			n, err = copyLines(f)
			return err
		})
		if err != nil {
			var ec interface{ ExitCode() int }
			if errors.As(err, &ec) {
				return err
			}
			return classify(fmt.Errorf("export: %w", err))
		}
		fmt.Fprintf(g.stderr, "exported %d entries to %s\n", n, out)
		return nil
	}
	w := bufio.NewWriter(g.stdout)
	if _, err := copyLines(w); err != nil {
		w.Flush()
		return err
	}
	return w.Flush()
}
