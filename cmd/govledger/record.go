package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/stream"
)

// docResult is the rendering of one decision (validate and record).
type docResult struct {
	File          string          `json:"file"`
	Format        string          `json:"format"`
	Decision      string          `json:"decision"`
	Reasons       []reason.Reason `json:"reasons"`
	HandoffID     string          `json:"handoff_id,omitzero"`
	Source        string          `json:"source,omitzero"`
	Target        string          `json:"target,omitzero"`
	WorkflowID    string          `json:"workflow_id,omitzero"`
	PayloadSHA256 string          `json:"payload_sha256"`
	PayloadSize   int64           `json:"payload_size"`
	Seq           uint64          `json:"seq,omitzero"`
	EntryHash     string          `json:"entry_hash,omitzero"`
	Snapshots     []uint64        `json:"snapshot_seqs,omitzero"`
	Error         string          `json:"error,omitzero"` // the document could not be read
	// Line is the document's line in a stream on standard input (0
	// otherwise): its "---" line in a YAML stream.
	Line int `json:"line,omitzero"`
	// Replayed: the document's idempotency key was used before for the
	// same request; Seq and EntryHash are that first entry's, nothing was
	// appended now.
	Replayed bool `json:"replayed,omitzero"`
	// Refused: the idempotency key was used before for another request;
	// nothing was decided or appended.
	Refused string `json:"refused,omitzero"`
	// SeedError is the rejection in the format's own words (swarm/2 error
	// response, skill/1 stop message) under --output seed-error.
	SeedError string `json:"-"`
}

type docReport struct {
	Schema    string      `json:"schema"`
	Accepted  int         `json:"accepted"`
	Rejected  int         `json:"rejected"`
	Unread    int         `json:"unreadable"`
	Refused   int         `json:"refused,omitzero"`
	Documents []docResult `json:"documents"`
	refusal   string      // the first refusal's message
}

func newDocResult(o *govern.Outcome) docResult {
	d := o.Decision
	r := docResult{
		File: o.Name, Decision: d.Decision, Reasons: d.Reasons,
		PayloadSHA256: o.SHA256.String(), PayloadSize: o.Size,
	}
	if r.Reasons == nil {
		r.Reasons = []reason.Reason{}
	}
	if rec := d.Record; rec != nil {
		r.Format = string(rec.Format)
		r.HandoffID, r.Source, r.Target, r.WorkflowID = rec.HandoffID, rec.Source.ID, rec.Target.ID, rec.WorkflowID
		if d.Decision == reason.Rejected {
			switch rec.Format {
			case handoff.Swarm:
				if b, err := handoff.SeedError(rec, d.Reasons); err == nil {
					r.SeedError = string(b)
				}
			case handoff.Skill:
				r.SeedError = handoff.StopMessage(rec, d.Reasons)
			}
		}
	}
	r.Replayed = o.Replayed
	if e := o.Entry(); e != nil {
		r.Seq, r.EntryHash = e.Entry.Seq, e.Hash.String()
		for _, s := range o.Appended[:len(o.Appended)-1] {
			r.Snapshots = append(r.Snapshots, s.Entry.Seq)
		}
	}
	return r
}

func (rep *docReport) add(r docResult) {
	rep.count(r)
	rep.Documents = append(rep.Documents, r)
}

// count adds r to the totals (a stream keeps no documents).
func (rep *docReport) count(r docResult) {
	switch {
	case r.Error != "":
		rep.Unread++
	case r.Refused != "":
		rep.Refused++
		if rep.refusal == "" {
			rep.refusal = r.Refused
		}
	case r.Decision == reason.Accepted:
		rep.Accepted++
	default:
		rep.Rejected++
	}
}

func (rep *docReport) total() int { return rep.Accepted + rep.Rejected + rep.Unread + rep.Refused }

// exit is the report's exit status: unreadable input or a refused
// idempotency key 2, any rejection 1.
func (rep *docReport) exit() error {
	switch {
	case rep.Unread > 0:
		return usageErr("%d of %d documents could not be read", rep.Unread, rep.total())
	case rep.Refused > 0:
		return usageErr("%s", rep.refusal)
	case rep.Rejected > 0:
		return found()
	}
	return nil
}

func (rep *docReport) render(w io.Writer, output string) error {
	if output == "json" {
		return writeJSON(w, rep)
	}
	for _, d := range rep.Documents {
		if err := renderDoc(w, output, d); err != nil {
			return err
		}
	}
	return nil
}

// renderDoc writes one result as text, or under --output seed-error each
// rejection in its format's own words: the swarm/2 spec's error response
// as one YAML document per file, the skill/1 spec's stop message under the
// file's name; other documents as text.
func renderDoc(w io.Writer, output string, d docResult) error {
	var err error
	switch {
	case output == "seed-error" && d.SeedError != "" && d.Format == string(handoff.Swarm):
		_, err = fmt.Fprintf(w, "--- # %s\n%s\n", d.name(), strings.TrimRight(d.SeedError, "\n"))
	case output == "seed-error" && d.SeedError != "":
		_, err = fmt.Fprintf(w, "%s:\n%s\n", d.name(), strings.TrimRight(d.SeedError, "\n"))
	default:
		err = renderDocText(w, d)
	}
	return err
}

// name is the document's file name, with its line in a stream ("-:3").
func (d docResult) name() string {
	if d.Line > 0 {
		return fmt.Sprintf("%s:%d", d.File, d.Line)
	}
	return d.File
}

func renderDocText(w io.Writer, d docResult) error {
	var b strings.Builder
	switch {
	case d.Error != "":
		fmt.Fprintf(&b, "%s: unreadable: %s\n", d.name(), d.Error)
	case d.Refused != "":
		fmt.Fprintf(&b, "%s: REFUSED: %s\n", d.name(), d.Refused)
	default:
		format := d.Format
		if format == "" {
			format = "unknown format"
		}
		fmt.Fprintf(&b, "%s: %s (%s", d.name(), strings.ToUpper(d.Decision), format)
		if d.Source != "" || d.Target != "" {
			fmt.Fprintf(&b, ", %s -> %s", orDash(d.Source), orDash(d.Target))
		}
		b.WriteString(")")
		if d.Seq != 0 {
			fmt.Fprintf(&b, " seq %d entry %s", d.Seq, d.EntryHash)
		}
		if n := len(d.Snapshots); n > 0 {
			// The seqs before this one: say what they are.
			seqs := fmt.Sprint(d.Snapshots[0])
			if n > 1 {
				seqs = fmt.Sprintf("%d-%d", d.Snapshots[0], d.Snapshots[n-1])
			}
			fmt.Fprintf(&b, " (seq %s: snapshots of the registry and lock it was decided under, recorded first)", seqs)
		}
		if d.Replayed {
			fmt.Fprintf(&b, " (retry of seq %d: nothing appended)", d.Seq)
		}
		b.WriteString("\n")
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, "  %-8s %s %s\n", r.Severity, r.Code, reasonText(r))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// reasonText is "field: message", without repeating a field the message
// already names.
func reasonText(r reason.Reason) string {
	if r.Field == "" || strings.HasPrefix(r.Message, r.Field+":") {
		return r.Message
	}
	return r.Field + ": " + r.Message
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const decisionHelp = `
Formats are detected from the content (--format overrides): governed/1 (JSON),
swarm/2 and skill/1 (YAML), vbw/1 (typed JSON messages, markdown
fallback), task/1 (YAML under "## Handoff" in a markdown task file) and
a2a/1 (an A2A 0.3.0 Message or message/send request, JSON).
vbw/1 and task/1 do not name their agents: give --from and --to; an a2a/1
message names them in metadata.govledger.source/target, or give them.`

func validateCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "decide on handoff documents without recording them",
		ArgsUsage: "FILE... (or - for standard input)",
		Description: `Validates each document against the registry and the lock and prints the
decision with its reasons. Nothing is written. Exit 0 when every document is
accepted, 1 when any is rejected, 2 when one cannot be read.
` + decisionHelp + `

Examples:
  govledger validate handoff.json
  govledger validate --from domain-02-analysis --to domain-05-product qa.json
  cat handoff.json | govledger --output json validate -`,
		Flags: decisionFlags(),
		Action: func(c *cli.Context) error {
			return decideFiles(c, g, false)
		},
	}
}

func recordCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "record",
		Usage:     "validate handoff documents and append each decision to the ledger",
		ArgsUsage: "FILE... (or - for a stream on standard input)",
		Description: `Validates each document and appends the decision, accepted or rejected, with
its reasons, to the ledger (--db). Nothing is dropped: bytes that do not parse
are recorded as rejected UNPARSEABLE, and documents over --max-payload as
PAYLOAD_TOO_LARGE with their hash and size. Each append is fsync'd before it
is reported. Prints the decision, seq and entry hash per document.
Exit 0 when all are accepted, 1 when any is rejected, 2 when a file cannot be
read or an idempotency key was used for another request, 3 when the ledger
cannot be written (busy: nothing was written; or outcome unknown).
` + decisionHelp + `

--workflow ID records the documents under workflow ID (what 'govledger
trace ID' and 'log --workflow ID' list) when they carry no workflow id of
their own: governed/1 never does, and is recorded unchanged. A document whose
own workflow id differs is refused (exit 2) and nothing is appended.

--idempotency-key K makes a retry safe: the same key with the same document,
submitter, --format, --from and --to prints the first decision again
("retry of seq N") and appends nothing; the same key with anything else is
refused (exit 2) and appends nothing.

"record -" reads standard input as a stream, framed by its first line: one
JSON object per line (NDJSON; a line {"document": "...", "idempotency_key":
"...", "format": "...", "from": "...", "to": "...", "workflow": "..."} carries
any document), or
YAML documents each starting with a "---" line; any other input is one
document. It prints one decision per line as each is durable (JSON Lines with
--output json) and holds the ledger only while it appends what has arrived.

--wait (GOVLEDGER_WAIT) is how long to wait for a ledger another process
holds (default 30s, long enough for many writers to take turns); past it, "ledger busy — nothing was written", exit 3.

Examples:
  govledger record handoff.json
  govledger --db audit.db record handoffs/*.json
  govledger record --idempotency-key run-42/step-3 handoff.json
  govledger record --workflow run-42 handoff.json
  agent-runner | govledger record --wait 1m -
  GOVLEDGER_TOKEN=... govledger record --server http://127.0.0.1:8080 handoff.json
` + remoteHelp + `
With --server, the decision settings (--strict, --max-age, --max-payload,
--root) are the server's and the submitter is the token's principal.`,
		Flags: append(append(decisionFlags(),
			&cli.StringFlag{Name: "idempotency-key", Usage: "retry key of the one document: a retry returns the first decision and appends nothing"},
			&cli.StringFlag{Name: "workflow", Usage: "record documents that carry no workflow id under this one (1-256 bytes of UTF-8)"},
			&cli.DurationFlag{Name: "wait", Usage: "wait this long for a ledger another process holds (default: $GOVLEDGER_WAIT, else 30s)"},
		), serverFlags()...),
		Action: func(c *cli.Context) error {
			if cl, err := remoteClient(c, g); cl != nil || err != nil {
				if err != nil {
					return err
				}
				return remoteRecord(c, g, cl)
			}
			return decideFiles(c, g, true)
		},
	}
}

// workflowFlag returns --workflow ("" when not set), checked.
func workflowFlag(c *cli.Context) (string, error) {
	if !c.IsSet("workflow") {
		return "", nil
	}
	w := c.String("workflow")
	if err := govern.CheckWorkflowID(w); err != nil {
		return "", usageErr("--workflow: %v", err)
	}
	return w, nil
}

// maxIdempotencyKey is the longest idempotency key, as the server's.
const maxIdempotencyKey = 255

// checkIdempotencyKey accepts 1 to 255 visible ASCII characters, the
// server's Idempotency-Key rule.
func checkIdempotencyKey(from, k string) error {
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return fmt.Errorf("%s: %d characters, want 1 to %d", from, len(k), maxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("%s: byte %d is not a visible ASCII character (want 1 to %d of them)", from, i+1, maxIdempotencyKey)
		}
	}
	return nil
}

// recordWaitDefault is how long record waits for a ledger another
// process holds: long enough that 16 concurrent record processes all take
// their turn (each holds the ledger for one commit).
const recordWaitDefault = 30 * time.Second

// recordWait is --wait, else GOVLEDGER_WAIT, else recordWaitDefault (or
// the shorter wait a test sets for every open).
func recordWait(c *cli.Context, g *globals) (time.Duration, error) {
	if c.IsSet("wait") {
		d := c.Duration("wait")
		if d < 0 {
			return 0, usageErr("--wait %s: must not be negative", d)
		}
		return d, nil
	}
	if s := strings.TrimSpace(g.getenv("GOVLEDGER_WAIT")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, usageErr("GOVLEDGER_WAIT %q: want a duration such as 30s or 2m", s)
		}
		return d, nil
	}
	if d := g.openTimeout(); d != ledgerWait {
		return d, nil
	}
	return recordWaitDefault, nil
}

// errBusy is the exit-3 refusal of a ledger another process held for
// longer than --wait. Nothing of the document at hand was written.
func errBusy(g *globals, wait time.Duration, written string) error {
	return &exitError{code: exitInternal, err: fmt.Errorf("ledger %s busy: held by another process for %s — nothing was written%s (wait longer with --wait or GOVLEDGER_WAIT): %w",
		g.db, wait, written, ledger.ErrLocked)}
}

// openLedgerWait opens the ledger for record, waiting up to wait for
// another process to release it.
func openLedgerWait(g *globals, wait time.Duration, written string) (*ledger.Ledger, error) {
	if postgres.IsDSN(g.db) {
		return openDB(context.Background(), g, openCreate) // no file lock to wait for
	}
	timeout := wait
	held := liveSidecar(g.db) // a running serve holds it: say so at once
	if held != nil {
		timeout = min(heldProbe, timeout)
	}
	if timeout == 0 {
		timeout = time.Nanosecond // one try; 0 would mean the default
	}
	l, err := bolt.Open(g.db, &bolt.Options{Timeout: timeout, Origin: g.origin, Now: g.clock()})
	if held != nil && errors.Is(err, ledger.ErrLocked) {
		return nil, heldError(g.db, held)
	}
	if errors.Is(err, ledger.ErrLocked) {
		return nil, errBusy(g, wait, written)
	}
	if err != nil {
		return nil, ledgerErr(g.db, err)
	}
	if err := checkOrigin(g, l); err != nil {
		return nil, err
	}
	return l, nil
}

// validate decides without recording. When the ledger exists, its state
// is consulted read-only, so validate reports REPLAY and AGENT_BLOCKED
// exactly as record would; without a ledger those checks have nothing to
// compare against. The ledger stays open for the next document (the
// stream closes it between groups).
func (d *decider) validate(cfg *govern.Config, name string, p *govern.Payload) (*govern.Outcome, error) {
	if d.l == nil {
		stateless := func() (*govern.Outcome, error) {
			o, err := govern.Validate(cfg, name, p, nil)
			if err != nil {
				return nil, inputErr(err)
			}
			return o, nil
		}
		if _, err := os.Stat(d.g.db); err != nil && !postgres.IsDSN(d.g.db) {
			return stateless()
		}
		l, err := openLedgerRO(d.g)
		if errors.Is(err, ledger.ErrNotExist) && postgres.IsDSN(d.g.db) {
			return stateless() // a database holding no ledger yet
		}
		if err != nil {
			return nil, err
		}
		d.l = l
	}
	var o *govern.Outcome
	err := d.l.View(d.c.Context, func(st ledger.State) error {
		var verr error
		o, verr = govern.Validate(cfg, name, p, st)
		return verr
	})
	if err != nil {
		if errors.Is(err, ledger.ErrCorrupt) {
			return nil, ledgerErr(d.g.dbName(), err)
		}
		return nil, inputErr(err)
	}
	return o, nil
}

func decideFiles(c *cli.Context, g *globals, record bool) error {
	if err := noFlagsAfterArgs(c); err != nil {
		return err
	}
	if c.NArg() == 0 {
		return usageErr("%s: name at least one FILE (or - for standard input)", c.Command.Name)
	}
	args := c.Args().Slice()
	if len(args) > 1 && slices.Contains(args, "-") {
		return usageErr("%s: - (standard input) must be the only argument", c.Command.Name)
	}
	as, err := submitter(c, g)
	if err != nil {
		return err
	}
	var wait time.Duration
	var key string
	if record {
		if c.IsSet("idempotency-key") {
			key = c.String("idempotency-key")
			if err := checkIdempotencyKey("--idempotency-key", key); err != nil {
				return inputErr(err)
			}
			if len(args) != 1 {
				return usageErr("--idempotency-key is the key of one document: name exactly one FILE (or -)")
			}
		}
		if wait, err = recordWait(c, g); err != nil {
			return err
		}
	}
	workflow, err := workflowFlag(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c, g)
	if err != nil {
		return err
	}
	cfg.Submitter, cfg.IdempotencyKey, cfg.WorkflowID = as, key, workflow
	d := &decider{c: c, g: g, cfg: cfg, record: record, wait: wait}
	defer d.close()
	if args[0] == "-" && key == "" {
		return d.stream()
	}
	return d.documents(args, g.stdin)
}

// decider decides documents for validate and record. It opens the ledger
// when it has a document to decide (read-only for validate), and the
// stream closes it whenever it has decided all that has arrived.
type decider struct {
	c      *cli.Context
	g      *globals
	cfg    *govern.Config
	record bool
	wait   time.Duration
	l      *ledger.Ledger // open while deciding, nil between stream groups
}

func (d *decider) close() {
	if d.l != nil {
		d.l.Close()
		d.l = nil
	}
}

// decide takes the decision on p (recording it for record). A refusal of
// the idempotency key comes back as a result with Refused set; any other
// error ends the command.
func (d *decider) decide(cfg *govern.Config, name string, line int, p *govern.Payload, written string) (docResult, error) {
	if !d.record {
		o, err := d.validate(cfg, name, p)
		if err != nil {
			return docResult{}, err
		}
		r := newDocResult(o)
		r.Line = line
		return r, nil
	}
	if d.l == nil {
		l, err := openLedgerWait(d.g, d.wait, written)
		if err != nil {
			return docResult{}, err
		}
		d.l = l
	}
	o, err := govern.Record(d.c.Context, d.l, cfg, name, p)
	if used := (*govern.KeyUsedError)(nil); errors.As(err, &used) {
		o, err = cfg.Replay(d.c.Context, d.l, name, p, used)
	}
	if errors.Is(err, govern.ErrIdempotencyConflict) || errors.Is(err, govern.ErrWorkflowMismatch) {
		return docResult{File: name, Line: line, Reasons: []reason.Reason{},
			Refused: err.Error() + ": nothing was appended"}, nil
	}
	if err != nil {
		// Storage failure: what was recorded so far stands; this
		// document's outcome is unknown until verify, unless the store
		// was found damaged before anything was written.
		at := name
		if line > 0 {
			at = fmt.Sprintf("%s line %d", name, line)
		}
		if errors.Is(err, ledger.ErrNothingStored) {
			// The store was found damaged before anything was written.
			return docResult{}, internalErr(fmt.Errorf("record %s: %w: run 'govledger verify' to see the damage", at, err))
		}
		retry := "retry"
		if cfg.IdempotencyKey != "" {
			retry = "retry with the same idempotency key"
		}
		return docResult{}, internalErr(fmt.Errorf("record %s: %w (outcome unknown: run 'govledger verify', then %s)", at, err, retry))
	}
	r := newDocResult(o)
	r.Line = line
	return r, nil
}

// documents decides the named files in order ("-": stdin, one document).
func (d *decider) documents(names []string, stdin io.Reader) error {
	g := d.g
	rep := &docReport{Schema: "govledger." + d.c.Command.Name + "/v1", Documents: []docResult{}}
	for i, name := range names {
		var p *govern.Payload
		var err error
		if name == "-" {
			p, err = govern.ReadPayload(stdin, d.cfg.Params.MaxPayload)
		} else {
			p, err = readInput(g, name, d.cfg.Params.MaxPayload)
		}
		if err != nil {
			rep.add(docResult{File: name, Error: err.Error(), Reasons: []reason.Reason{}})
			continue
		}
		written := ""
		if i > 0 {
			written = fmt.Sprintf(" for %s and the files after it (those before it are recorded, as printed)", name)
		}
		r, err := d.decide(d.cfg, name, 0, p, written)
		if err != nil {
			rep.render(g.stdout, g.output)
			return err
		}
		rep.add(r)
	}
	if err := rep.render(g.stdout, g.output); err != nil {
		return internalErr(err)
	}
	return rep.exit()
}

// streamRead is one read of a stream: an item, or the end (io.EOF) or a
// read error.
type streamRead struct {
	it  stream.Item
	err error
}

// maxGroup bounds the documents appended in one opening of the ledger.
const maxGroup = 256

// stream decides the documents of standard input as they arrive, printing
// one result per line. A reader goroutine parses the input; the decider
// takes what has arrived (at least one item, waiting for it with the
// ledger closed), opens the ledger, appends those documents one by one,
// printing each once durable, and closes the ledger before it waits again.
// So a writer that pauses never keeps the ledger from other processes.
func (d *decider) stream() error {
	g := d.g
	maxLine := int(max(stream.DefaultMaxLine, min(2*d.cfg.Params.MaxPayload+4096, 1<<30)))
	framing, r, err := stream.Sniff(g.stdin, maxLine)
	if err != nil {
		return inputErr(fmt.Errorf("read standard input: %w", err))
	}
	var next func() (stream.Item, error)
	switch framing {
	case stream.Single:
		return d.documents([]string{"-"}, r)
	case stream.NDJSON:
		next = stream.NewReader(r, maxLine).Next
	case stream.YAML:
		next = stream.NewDocReader(r, maxLine).Next
	}
	reads := make(chan streamRead, maxGroup)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(reads)
		for {
			it, err := next()
			select {
			case reads <- streamRead{it, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	rep := &docReport{}
	for {
		first, ok := <-reads
		if !ok {
			break
		}
		group := []streamRead{first}
	fill:
		for len(group) < maxGroup && group[len(group)-1].err == nil {
			select {
			case x, ok := <-reads:
				if !ok {
					break fill
				}
				group = append(group, x)
			default:
				break fill
			}
		}
		end, err := d.group(group, rep)
		d.close()
		if err != nil {
			return err
		}
		if end {
			break
		}
	}
	return rep.exit()
}

// group decides one group of a stream and reports whether the stream ended.
func (d *decider) group(group []streamRead, rep *docReport) (bool, error) {
	for _, x := range group {
		if errors.Is(x.err, io.EOF) {
			return true, nil
		}
		if x.err != nil {
			return true, inputErr(fmt.Errorf("read standard input: %w", x.err))
		}
		var r docResult
		if cfg, p, err := d.item(x.it); err != nil {
			r = docResult{File: "-", Line: x.it.Line, Error: err.Error(), Reasons: []reason.Reason{}}
		} else {
			written := fmt.Sprintf(" for line %d and after", x.it.Line)
			if rep.total() > 0 {
				written += " (the lines before it are recorded, as printed)"
			}
			if r, err = d.decide(cfg, "-", x.it.Line, p, written); err != nil {
				return true, err
			}
		}
		rep.count(r)
		if err := d.renderLine(r); err != nil {
			return true, err
		}
	}
	return false, nil
}

// item is the configuration and payload of one stream item: an envelope's
// format, from, to and idempotency key replace the flags'.
func (d *decider) item(it stream.Item) (*govern.Config, *govern.Payload, error) {
	if it.Err != nil {
		return nil, nil, it.Err
	}
	cfg := *d.cfg
	if it.Format != "" {
		if !knownFormat(handoff.Format(it.Format)) {
			return nil, nil, fmt.Errorf("line %d: format %q: want one of governed/1, swarm/2, skill/1, vbw/1, task/1, a2a/1", it.Line, it.Format)
		}
		cfg.Params.Format = handoff.Format(it.Format)
	}
	cfg.Params.From = cmp.Or(it.From, cfg.Params.From)
	cfg.Params.To = cmp.Or(it.To, cfg.Params.To)
	if it.IdempotencyKey != "" && d.record {
		if err := checkIdempotencyKey(fmt.Sprintf("line %d: idempotency_key", it.Line), it.IdempotencyKey); err != nil {
			return nil, nil, err
		}
		cfg.IdempotencyKey = it.IdempotencyKey
	}
	if it.Workflow != "" {
		if err := govern.CheckWorkflowID(it.Workflow); err != nil {
			return nil, nil, fmt.Errorf("line %d: workflow: %w", it.Line, err)
		}
		cfg.WorkflowID = it.Workflow
	}
	p, err := govern.ReadPayload(bytes.NewReader(it.Doc), cfg.Params.MaxPayload)
	if err != nil {
		return nil, nil, err
	}
	return &cfg, p, nil
}

// streamLine is one line of a stream's JSON output.
type streamLine struct {
	Schema string `json:"schema"`
	docResult
}

func (d *decider) renderLine(r docResult) error {
	g := d.g
	var err error
	switch g.output {
	case "json":
		err = writeJSONLine(g.stdout, streamLine{Schema: "govledger." + d.c.Command.Name + ".line/v1", docResult: r})
	default:
		err = renderDoc(g.stdout, g.output, r)
	}
	if err != nil {
		return internalErr(err)
	}
	return nil
}
