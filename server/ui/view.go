package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/policy"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

// base is what every page's layout reads.
type base struct {
	Title   string
	Nav     string // the navigation item to mark current
	Visitor *visitor
}

// row is one entry as the pages show it.
type row struct {
	Seq         uint64
	Hash        string
	Prev        string
	Time        string
	Kind        string
	Decision    string
	Format      string
	HandoffID   string
	Source      string
	Target      string
	Workflow    string
	Submitter   string
	Codes       []string
	Reasons     []reason.Reason
	Blocks      []string
	Lifts       []string
	Agent       string
	Note        string
	What        string
	RedactedSeq uint64
	PayloadSHA  string
	PayloadSize int64
	HasPayload  bool
	Manifest    string
	Lock        string
	TraceParent string
	Idempotency string
	NewKey      string
	// An outcome's fields.
	DecisionSeq uint64
	Status      string
	DurationMS  *int64
	Rules       int    // the rules version the decision was taken by (0: before versions)
	Malformed   string // why the stored bytes did not decode ("" when they did)
	Raw         string // the canonical bytes when they did not decode
}

func newRow(v server.EntryView) row {
	r := row{Seq: v.Seq, Hash: v.Hash}
	e, err := entry.Decode(v.Entry)
	if err != nil {
		r.Malformed, r.Raw = err.Error(), strings.ToValidUTF8(string(v.Entry), "\uFFFD")
		return r
	}
	r.Prev, r.Time, r.Kind, r.Decision = e.Prev.String(), e.Time.UTC().Format(time.RFC3339Nano), e.Kind, e.Decision
	r.Format, r.HandoffID, r.Source, r.Target = e.Format.String(), e.HandoffID.String(), e.Source.String(), e.Target.String()
	r.Workflow, r.Submitter, r.Blocks, r.Agent, r.Note, r.What = e.WorkflowID.String(), e.Submitter, e.Blocks, e.Agent, e.Note, e.What
	r.RedactedSeq, r.TraceParent, r.Idempotency, r.NewKey = e.RedactedSeq, e.TraceParent, e.IdempotencyKey, e.NewKey
	r.DecisionSeq, r.Status, r.DurationMS = e.DecisionSeq, e.Status, e.DurationMS
	if e.Lifts != nil {
		r.Lifts = *e.Lifts
	}
	if e.Reasons != nil {
		r.Reasons = *e.Reasons
		for _, x := range r.Reasons {
			r.Codes = append(r.Codes, string(x.Code))
		}
	}
	if e.PayloadSHA256 != nil {
		r.PayloadSHA, r.HasPayload = e.PayloadSHA256.String(), true
	}
	if e.Inputs != nil {
		if in, err := policy.ParseInputs(e.Inputs); err == nil {
			r.Rules = in.Rules
		}
	}
	if e.ContentSHA256 != nil {
		r.PayloadSHA, r.HasPayload = e.ContentSHA256.String(), true
	}
	if e.PayloadSize != nil {
		r.PayloadSize = *e.PayloadSize
	}
	if e.Size != nil {
		r.PayloadSize = *e.Size
	}
	if e.ManifestSHA256 != nil {
		r.Manifest = e.ManifestSHA256.String()
	}
	if e.LockSHA256 != nil {
		r.Lock = e.LockSHA256.String()
	}
	return r
}

func rows(vs []server.EntryView) []row {
	out := make([]row, len(vs))
	for i, v := range vs {
		out[i] = newRow(v)
	}
	return out
}

// Summary is a one-line description of a non-handoff entry.
func (r row) Summary() string {
	switch r.Kind {
	case entry.KindSnapshot:
		s := r.What + " snapshot in force"
		if len(r.Lifts) > 0 {
			s += "; lifts " + strings.Join(r.Lifts, ", ")
		}
		return s
	case entry.KindUnblock:
		return "unblock " + r.Agent + ": " + r.Note
	case entry.KindRedaction:
		return fmt.Sprintf("redaction of entry %d: %s", r.RedactedSeq, r.Note)
	case entry.KindKeyRotation:
		return "checkpoint key rotation: " + r.Note
	case entry.KindOutcome:
		s := fmt.Sprintf("outcome of entry %d: %s %s", r.DecisionSeq, r.Agent, r.Status)
		if r.DurationMS != nil {
			s += fmt.Sprintf(" after %d ms", *r.DurationMS)
		}
		return s
	}
	return r.Kind
}

var funcs = template.FuncMap{
	// seg escapes one path segment of a link.
	"seg":  func(v any) string { return url.PathEscape(fmt.Sprint(v)) },
	"join": strings.Join,
	"query": func(base string, kv ...string) string {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				q.Set(kv[i], kv[i+1])
			}
		}
		if len(q) == 0 {
			return base
		}
		return base + "?" + q.Encode()
	},
}

// render executes page name with data as a complete HTML answer.
func (u *UI) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var buf bytes.Buffer
	if err := u.pages[name].Execute(&buf, data); err != nil {
		server.ServeError(w, r, fmt.Errorf("rendering %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

func (u *UI) getStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := readStatic(u, name)
	if err != nil {
		server.ServeError(w, r, fmt.Errorf("%w: no static file %q", server.ErrNotFound, name))
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

func readStatic(u *UI, name string) ([]byte, error) {
	if strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("bad name")
	}
	f, err := u.static.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// payloadText is how the entry page shows stored bytes: as text when they
// are UTF-8, as a hex dump otherwise; at most maxShown bytes.
type payloadText struct {
	Text      string
	Binary    bool
	Truncated bool
	Size      int
}

const maxShown = 256 << 10

func showPayload(b []byte) payloadText {
	p := payloadText{Size: len(b)}
	if len(b) > maxShown {
		b, p.Truncated = b[:maxShown], true
	}
	text := b
	for i := 0; p.Truncated && i < 3 && !utf8.Valid(text) && len(text) > 0; i++ {
		text = text[:len(text)-1] // a character cut by the truncation
	}
	if utf8.Valid(text) {
		p.Text = string(text)
		return p
	}
	p.Binary = true
	var sb strings.Builder
	for i := 0; i < len(b) && i < 4096; i += 16 {
		fmt.Fprintf(&sb, "%08x  % x\n", i, b[i:min(i+16, len(b))])
	}
	p.Text = sb.String()
	return p
}
