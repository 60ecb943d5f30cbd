package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/reason"
)

// entryView is one entry as log, trace and show render it.
type entryView struct {
	Schema     string   `json:"schema,omitzero"`
	Seq        uint64   `json:"seq"`
	Hash       string   `json:"hash"`
	Time       string   `json:"time"`
	Kind       string   `json:"kind"`
	Decision   string   `json:"decision,omitzero"`
	Format     string   `json:"format,omitzero"`
	HandoffID  string   `json:"handoff_id,omitzero"`
	Source     string   `json:"source,omitzero"`
	Target     string   `json:"target,omitzero"`
	WorkflowID string   `json:"workflow_id,omitzero"`
	Codes      []string `json:"codes,omitzero"`
	Blocks     []string `json:"blocks,omitzero"`
	What       string   `json:"what,omitzero"`
	Agent      string   `json:"agent,omitzero"`
	Redacted   uint64   `json:"redacted_seq,omitzero"`
	Note       string   `json:"note,omitzero"`
	// An outcome's fields; on a handoff in trace, its outcome.
	DecisionSeq  uint64       `json:"decision_seq,omitzero"`
	Status       string       `json:"status,omitzero"`
	OutputSHA256 string       `json:"output_sha256,omitzero"`
	DurationMS   *int64       `json:"duration_ms,omitzero"`
	Outcome      *outcomeView `json:"outcome,omitzero"`
}

// outcomeView is the outcome of a handoff, shown beside it by trace.
type outcomeView struct {
	Seq          uint64 `json:"seq"`
	Status       string `json:"status"`
	OutputSHA256 string `json:"output_sha256,omitzero"`
	DurationMS   *int64 `json:"duration_ms,omitzero"`
}

func newEntryView(e *entry.Entry, raw []byte) entryView {
	v := entryView{
		Seq: e.Seq, Hash: entry.LeafHash(raw).String(), Time: e.Time.UTC().Format(time.RFC3339Nano),
		Kind: e.Kind, Decision: e.Decision, Format: e.Format.String(), HandoffID: e.HandoffID.String(),
		Source: e.Source.String(), Target: e.Target.String(), WorkflowID: e.WorkflowID.String(),
		Blocks: e.Blocks, What: e.What, Agent: e.Agent, Redacted: e.RedactedSeq, Note: e.Note,
		DecisionSeq: e.DecisionSeq, Status: e.Status, DurationMS: e.DurationMS,
	}
	if e.OutputSHA256 != nil {
		v.OutputSHA256 = e.OutputSHA256.String()
	}
	if e.Reasons != nil {
		for _, r := range *e.Reasons {
			v.Codes = append(v.Codes, string(r.Code))
		}
	}
	return v
}

func hasCode(e *entry.Entry, code string) bool {
	if e.Reasons == nil {
		return false
	}
	for _, r := range *e.Reasons {
		if string(r.Code) == code {
			return true
		}
	}
	return false
}

// renderEntryLine writes one text line for an entry.
func renderEntryLine(w io.Writer, v entryView) {
	fmt.Fprintf(w, "%6d  %s  ", v.Seq, v.Time)
	switch v.Kind {
	case entry.KindHandoff:
		fmt.Fprintf(w, "%-8s %-10s %s -> %s", v.Decision, orDash(v.Format), orDash(v.Source), orDash(v.Target))
		if v.HandoffID != "" {
			fmt.Fprintf(w, "  id=%s", v.HandoffID)
		}
		if v.WorkflowID != "" {
			fmt.Fprintf(w, "  workflow=%s", v.WorkflowID) // what 'govledger trace' takes
		}
		if len(v.Codes) > 0 {
			fmt.Fprintf(w, "  [%s]", strings.Join(v.Codes, " "))
		}
		if len(v.Blocks) > 0 {
			fmt.Fprintf(w, "  blocks=%s", strings.Join(v.Blocks, ","))
		}
		if o := v.Outcome; o != nil {
			fmt.Fprintf(w, "  => %s (seq %d%s)", o.Status, o.Seq, outcomeDetail(o.DurationMS, o.OutputSHA256))
		}
	case entry.KindOutcome:
		fmt.Fprintf(w, "%-8s %-10s %s finished seq %d%s", v.Status, "outcome", v.Agent, v.DecisionSeq, outcomeDetail(v.DurationMS, v.OutputSHA256))
		if v.WorkflowID != "" {
			fmt.Fprintf(w, "  workflow=%s", v.WorkflowID)
		}
	case entry.KindSnapshot:
		fmt.Fprintf(w, "snapshot %s in force", v.What)
	case entry.KindUnblock:
		fmt.Fprintf(w, "unblock  %s: %s", v.Agent, v.Note)
	case entry.KindRedaction:
		fmt.Fprintf(w, "redact   seq %d: %s", v.Redacted, v.Note)
	default:
		fmt.Fprintf(w, "%s  %s", v.Kind, v.Note)
	}
	fmt.Fprintln(w)
}

// outcomeDetail is ", 1234 ms, output 3f2a…" (each part when known).
func outcomeDetail(durationMS *int64, output string) string {
	var b strings.Builder
	if durationMS != nil {
		fmt.Fprintf(&b, ", %d ms", *durationMS)
	}
	if output != "" {
		fmt.Fprintf(&b, ", output %s…", output[:min(12, len(output))])
	}
	return b.String()
}

func reasonsOf(e *entry.Entry) []reason.Reason {
	if e.Reasons == nil {
		return nil
	}
	return *e.Reasons
}

func b64std(p []byte) string { return base64.StdEncoding.EncodeToString(p) }
