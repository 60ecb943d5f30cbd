package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/postgres"
	"github.com/govledger/govledger/reason"
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
	// SeedError is the rejection in the format's own words (swarm/2 error
	// response, skill/1 stop message) under --output seed-error.
	SeedError string `json:"-"`
}

type docReport struct {
	Schema    string      `json:"schema"`
	Accepted  int         `json:"accepted"`
	Rejected  int         `json:"rejected"`
	Unread    int         `json:"unreadable"`
	Documents []docResult `json:"documents"`
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
	if e := o.Entry(); e != nil {
		r.Seq, r.EntryHash = e.Entry.Seq, e.Hash.String()
		for _, s := range o.Appended[:len(o.Appended)-1] {
			r.Snapshots = append(r.Snapshots, s.Entry.Seq)
		}
	}
	return r
}

func (rep *docReport) add(r docResult) {
	switch {
	case r.Error != "":
		rep.Unread++
	case r.Decision == reason.Accepted:
		rep.Accepted++
	default:
		rep.Rejected++
	}
	rep.Documents = append(rep.Documents, r)
}

// exit is the report's exit status: unreadable input 2, any rejection 1.
func (rep *docReport) exit() error {
	switch {
	case rep.Unread > 0:
		return usageErr("%d of %d documents could not be read", rep.Unread, len(rep.Documents))
	case rep.Rejected > 0:
		return found()
	}
	return nil
}

func (rep *docReport) render(w io.Writer, output string) error {
	switch output {
	case "json":
		return writeJSON(w, rep)
	case "seed-error":
		// Each rejection in its format's own words: the swarm/2 spec's error
		// response as one YAML document per file, the skill/1 spec's stop message
		// under the file's name; other documents as text.
		for _, d := range rep.Documents {
			switch {
			case d.SeedError != "" && d.Format == string(handoff.Swarm):
				fmt.Fprintf(w, "--- # %s\n%s\n", d.File, strings.TrimRight(d.SeedError, "\n"))
			case d.SeedError != "":
				fmt.Fprintf(w, "%s:\n%s\n", d.File, strings.TrimRight(d.SeedError, "\n"))
			default:
				renderDocText(w, d)
			}
		}
		return nil
	}
	for _, d := range rep.Documents {
		renderDocText(w, d)
	}
	return nil
}

func renderDocText(w io.Writer, d docResult) {
	if d.Error != "" {
		fmt.Fprintf(w, "%s: unreadable: %s\n", d.File, d.Error)
		return
	}
	format := d.Format
	if format == "" {
		format = "unknown format"
	}
	fmt.Fprintf(w, "%s: %s (%s", d.File, strings.ToUpper(d.Decision), format)
	if d.Source != "" || d.Target != "" {
		fmt.Fprintf(w, ", %s -> %s", orDash(d.Source), orDash(d.Target))
	}
	fmt.Fprint(w, ")")
	if d.Seq != 0 {
		fmt.Fprintf(w, " seq %d entry %s", d.Seq, d.EntryHash)
	}
	fmt.Fprintln(w)
	for _, r := range d.Reasons {
		fmt.Fprintf(w, "  %-8s %s %s\n", r.Severity, r.Code, reasonText(r))
	}
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
fallback) and task/1 (YAML under "## Handoff" in a markdown task file).
vbw/1 and task/1 do not name their agents: give --from and --to.`

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
		ArgsUsage: "FILE... (or - for standard input)",
		Description: `Validates each document and appends the decision, accepted or rejected, with
its reasons, to the ledger (--db). Nothing is dropped: bytes that do not parse
are recorded as rejected UNPARSEABLE, and documents over --max-payload as
PAYLOAD_TOO_LARGE with their hash and size. Each append is fsync'd before it
is reported. Prints the decision, seq and entry hash per document.
Exit 0 when all are accepted, 1 when any is rejected, 2 when a file cannot be
read, 3 when the ledger cannot be written.
` + decisionHelp + `

Examples:
  govledger record handoff.json
  govledger --db audit.db record handoffs/*.json
  agent-runner | govledger record -`,
		Flags: decisionFlags(),
		Action: func(c *cli.Context) error {
			return decideFiles(c, g, true)
		},
	}
}

// validateWithState decides without recording. When the ledger exists,
// its state is consulted read-only, so validate reports REPLAY and
// AGENT_BLOCKED exactly as record would; without a ledger those checks
// have nothing to compare against.
func validateWithState(g *globals, cfg *govern.Config, name string, p *govern.Payload) (*govern.Outcome, error) {
	stateless := func() (*govern.Outcome, error) {
		o, err := govern.Validate(cfg, name, p, nil)
		if err != nil {
			return nil, inputErr(err)
		}
		return o, nil
	}
	if _, err := os.Stat(g.db); err != nil && !postgres.IsDSN(g.db) {
		return stateless()
	}
	l, err := openLedgerRO(g)
	if errors.Is(err, ledger.ErrNotExist) && postgres.IsDSN(g.db) {
		return stateless()
	}
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var o *govern.Outcome
	err = l.View(func(st ledger.State) error {
		var verr error
		o, verr = govern.Validate(cfg, name, p, st)
		return verr
	})
	if err != nil {
		if errors.Is(err, ledger.ErrCorrupt) {
			return nil, ledgerErr(g.dbName(), err)
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
	cfg, err := loadConfig(c, g)
	if err != nil {
		return err
	}
	cfg.Submitter = submitter(c, g)
	var l *ledger.Ledger
	if record {
		if l, err = openLedger(g); err != nil {
			return err
		}
		defer l.Close()
	}
	rep := &docReport{Schema: "govledger." + c.Command.Name + "/v1", Documents: []docResult{}}
	for _, name := range c.Args().Slice() {
		p, err := readInput(g, name, cfg.Params.MaxPayload)
		if err != nil {
			rep.add(docResult{File: name, Error: err.Error(), Reasons: []reason.Reason{}})
			continue
		}
		var o *govern.Outcome
		if record {
			o, err = govern.Record(c.Context, l, cfg, name, p)
			if err != nil {
				// Storage failure: what was recorded so far stands; this
				// document's outcome is unknown until verify.
				rep.render(g.stdout, g.output)
				return internalErr(fmt.Errorf("record %s: %w (outcome unknown: run 'govledger verify', then retry)", name, err))
			}
		} else {
			o, err = validateWithState(g, cfg, name, p)
			if err != nil {
				return err
			}
		}
		rep.add(newDocResult(o))
	}
	if err := rep.render(g.stdout, g.output); err != nil {
		return internalErr(err)
	}
	return rep.exit()
}
