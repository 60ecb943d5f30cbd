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
}

func newEntryView(e *entry.Entry, raw []byte) entryView {
	v := entryView{
		Seq: e.Seq, Hash: entry.LeafHash(raw).String(), Time: e.Time.UTC().Format(time.RFC3339Nano),
		Kind: e.Kind, Decision: e.Decision, Format: e.Format.String(), HandoffID: e.HandoffID.String(),
		Source: e.Source.String(), Target: e.Target.String(), WorkflowID: e.WorkflowID.String(),
		Blocks: e.Blocks, What: e.What, Agent: e.Agent, Redacted: e.RedactedSeq, Note: e.Note,
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

func reasonsOf(e *entry.Entry) []reason.Reason {
	if e.Reasons == nil {
		return nil
	}
	return *e.Reasons
}

func b64std(p []byte) string { return base64.StdEncoding.EncodeToString(p) }
