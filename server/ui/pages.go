package ui

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govledger/govledger/checkpoint"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
)

// Overview.

type overviewPage struct {
	base
	Stats      summary
	Blocks     []server.Block
	Checkpoint *checkpointView
	Verify     *VerifyResult
	Recent     []row
}

type checkpointView struct {
	Origin string
	Size   uint64
	Root   string
	Signed string
	Err    string
}

func (u *UI) getOverview(w http.ResponseWriter, r *http.Request, v *visitor) error {
	if err := noQuery(r); err != nil {
		return err
	}
	ctx := r.Context()
	if err := u.stats.update(ctx, u.cfg.Backend); err != nil {
		return err
	}
	p := &overviewPage{base: base{Title: "Overview", Nav: "overview", Visitor: v}, Stats: u.stats.summary()}
	var err error
	if p.Blocks, err = u.cfg.Backend.Blocks(ctx); err != nil {
		return err
	}
	p.Checkpoint = u.latestCheckpoint(ctx)
	if u.cfg.LastVerify != nil {
		p.Verify = u.cfg.LastVerify()
	}
	recent, err := u.cfg.Backend.Entries(ctx, server.Query{Limit: 10})
	if err != nil {
		return err
	}
	p.Recent = rows(recent.Entries)
	u.render(w, r, "overview", p)
	return nil
}

func (u *UI) latestCheckpoint(ctx context.Context) *checkpointView {
	b, err := u.cfg.Backend.Checkpoint(ctx)
	if err != nil {
		return &checkpointView{Err: err.Error()}
	}
	cv := &checkpointView{Signed: strings.ToValidUTF8(string(b), "\uFFFD")}
	cp, err := checkpoint.Parse(b)
	if err != nil {
		cv.Err = err.Error()
		return cv
	}
	cv.Origin, cv.Size, cv.Root = cp.Origin, cp.Size, hex.EncodeToString(cp.Hash[:])
	return cv
}

// Timeline.

// filter is the timeline's (and the evidence slice's) query, as the page's
// URL carries it.
type filter struct {
	Agent, Decision, Format, Code, Workflow, Kind, Since, Until string
	Before                                                      uint64
}

// Params returns the filter's URL parameters (without the cursor).
func (f filter) Params() url.Values {
	q := url.Values{}
	for _, kv := range [][2]string{{"agent", f.Agent}, {"decision", f.Decision}, {"format", f.Format}, {"code", f.Code},
		{"workflow", f.Workflow}, {"kind", f.Kind}, {"since", f.Since}, {"until", f.Until}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	return q
}

// URL returns the timeline URL of the filter with cursor before (0: the newest page).
func (f filter) URL(path string, before uint64) string {
	q := f.Params()
	if before != 0 {
		q.Set("before", strconv.FormatUint(before, 10))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func (f filter) Active() bool { return len(f.Params()) > 0 }

// Formats and kinds offered by the filter form.
var (
	formatChoices = func() []string {
		var out []string
		for _, f := range handoff.Formats {
			out = append(out, string(f))
		}
		return out
	}()
	kindChoices = []string{"handoff", "snapshot", "unblock", "redaction", "key_rotation", "outcome"}
)

// parseFilter reads and checks a filter from the query; extra names the
// other parameters allowed.
func parseFilter(r *http.Request, extra ...string) (filter, server.Query, url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return filter{}, server.Query{}, nil, fmt.Errorf("%w: malformed query string: %v", server.ErrBadInput, err)
	}
	allowed := append([]string{"agent", "decision", "format", "code", "workflow", "kind", "since", "until", "before"}, extra...)
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			return filter{}, server.Query{}, nil, fmt.Errorf("%w: unknown query parameter %q: want %s", server.ErrBadInput, k, strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return filter{}, server.Query{}, nil, fmt.Errorf("%w: query parameter %q given %d times", server.ErrBadInput, k, len(v))
		}
		if !utf8.ValidString(v[0]) {
			return filter{}, server.Query{}, nil, fmt.Errorf("%w: query parameter %q is not valid UTF-8", server.ErrBadInput, k)
		}
	}
	f := filter{Agent: q.Get("agent"), Decision: q.Get("decision"), Format: q.Get("format"), Code: q.Get("code"),
		Workflow: q.Get("workflow"), Kind: q.Get("kind"), Since: q.Get("since"), Until: q.Get("until")}
	qu := server.Query{Agent: f.Agent, Decision: f.Decision, Format: f.Format, Code: f.Code, Workflow: f.Workflow, Kind: f.Kind}
	var errs []error
	if f.Agent != "" {
		if err := manifest.CheckAgentID(f.Agent); err != nil {
			errs = append(errs, fmt.Errorf("agent: %v", err))
		}
	}
	if f.Decision != "" && f.Decision != reason.Accepted && f.Decision != reason.Rejected {
		errs = append(errs, fmt.Errorf("decision %q: want accepted or rejected", f.Decision))
	}
	if f.Format != "" && !slices.Contains(formatChoices, f.Format) {
		errs = append(errs, fmt.Errorf("format %q: want one of %s", f.Format, strings.Join(formatChoices, ", ")))
	}
	if f.Code != "" && (len(f.Code) > 64 || strings.Trim(f.Code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "") {
		errs = append(errs, fmt.Errorf("code %q: want a reason code such as HASH_MISMATCH", f.Code))
	}
	if f.Kind != "" && !slices.Contains(kindChoices, f.Kind) {
		errs = append(errs, fmt.Errorf("kind %q: want one of %s", f.Kind, strings.Join(kindChoices, ", ")))
	}
	if len(f.Workflow) > 256 {
		errs = append(errs, errors.New("workflow: longer than 256 bytes"))
	}
	if qu.Since, err = parseWhen("since", f.Since); err != nil {
		errs = append(errs, err)
	}
	if qu.Until, err = parseWhen("until", f.Until); err != nil {
		errs = append(errs, err)
	}
	if !qu.Since.IsZero() && !qu.Until.IsZero() && qu.Until.Before(qu.Since) {
		errs = append(errs, fmt.Errorf("until %s is before since %s", f.Until, f.Since))
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseUint(b, 10, 64)
		if err != nil || n == 0 || strconv.FormatUint(n, 10) != b {
			errs = append(errs, fmt.Errorf("before %q: want a seq, 1 or more", b))
		}
		f.Before, qu.Before = n, n
	}
	if err := errors.Join(errs...); err != nil {
		return f, qu, q, fmt.Errorf("%w: %v", server.ErrBadInput, err)
	}
	return f, qu, q, nil
}

// parseWhen reads a time as the filter form sends it (datetime-local,
// read as UTC) or as RFC 3339.
func parseWhen(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: want a time such as 2026-11-24T10:00 (UTC) or 2026-11-24T10:00:00Z", name, v)
}

type timelinePage struct {
	base
	Filter  filter
	Rows    []row
	Next    string // URL of the next, older page ("" on the last)
	Newest  string // URL of the first page ("" on it)
	Head    uint64 // the ledger's head seq, where the live tail starts
	Live    bool
	Formats []string
	Kinds   []string
}

func (u *UI) getTimeline(w http.ResponseWriter, r *http.Request, v *visitor) error {
	f, qu, _, err := parseFilter(r)
	if err != nil {
		return err
	}
	qu.Limit = u.cfg.PageSize
	page, err := u.cfg.Backend.Entries(r.Context(), qu)
	if err != nil {
		return err
	}
	p := &timelinePage{base: base{Title: "Timeline", Nav: "timeline", Visitor: v}, Filter: f, Rows: rows(page.Entries),
		Formats: formatChoices, Kinds: kindChoices}
	if page.Next != 0 {
		p.Next = f.URL("/ui/timeline", page.Next)
	}
	if f.Before != 0 {
		p.Newest = f.URL("/ui/timeline", 0)
	} else {
		// Only the newest page tails the ledger: older pages stay put.
		p.Live = f.Until == ""
		if p.Head, err = headSeq(r.Context(), u.cfg.Backend); err != nil {
			return err
		}
	}
	u.render(w, r, "timeline", p)
	return nil
}

// Entry.

type entryPage struct {
	base
	Row         row
	Payload     *payloadText
	PayloadNote string // why no payload is shown
	// PayloadLink is the download of a payload too large to render ("" for none).
	PayloadLink string
	Agents      []agentRef
	Prev, Next  uint64
	Key         string
	KeyName     string
	Redactable  bool
}

type agentRef struct {
	Role       string
	ID         string
	Type       string
	Version    string
	PromptHash string
}

func pathSeq(r *http.Request) (uint64, error) {
	s := r.PathValue("seq")
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("%w: seq %q: want a seq, 1 or more", server.ErrBadInput, s)
	}
	return n, nil
}

func noQuery(r *http.Request) error {
	if r.URL.RawQuery != "" {
		return fmt.Errorf("%w: this page takes no query parameters", server.ErrBadInput)
	}
	return nil
}

func (u *UI) getEntry(w http.ResponseWriter, r *http.Request, v *visitor) error {
	if err := noQuery(r); err != nil {
		return err
	}
	seq, err := pathSeq(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	ev, err := u.cfg.Backend.Entry(ctx, seq)
	if err != nil {
		return err
	}
	p := &entryPage{base: base{Title: fmt.Sprintf("Entry %d", seq), Nav: "timeline", Visitor: v}, Row: newRow(*ev),
		Key: u.key, KeyName: u.keyName}
	head, err := headSeq(ctx, u.cfg.Backend)
	if err != nil {
		return err
	}
	if seq > 1 {
		p.Prev = seq - 1
	}
	if seq < head {
		p.Next = seq + 1
	}
	if p.Row.HasPayload {
		data, err := u.cfg.Backend.Payload(ctx, seq)
		switch {
		case errors.Is(err, server.ErrRedacted):
			p.PayloadNote = "redacted"
		case errors.Is(err, server.ErrNotFound):
			p.PayloadNote = "not stored (over the size limit when recorded)"
		case err != nil:
			return err
		default:
			if p.Row.Kind == "handoff" {
				var over string
				if p.Agents, over = agentsOf(data, p.Row); over != "" {
					// Over the parse caps: not read, not shown.
					p.PayloadNote = fmt.Sprintf("payload too large to render (%d bytes: %s); download it", len(data), over)
					if v.PayloadRead() {
						p.PayloadLink = fmt.Sprintf("/v1/entries/%d/payload", seq)
					}
					p.Redactable = v.Operator()
					break
				}
			}
			if v.PayloadRead() {
				pt := showPayload(data)
				p.Payload = &pt
			} else {
				p.PayloadNote = "hidden: viewing payloads needs the payload:read scope"
			}
			p.Redactable = v.Operator()
		}
	}
	if len(p.Agents) == 0 && p.Row.Kind == "handoff" {
		for _, a := range []agentRef{{Role: "source", ID: p.Row.Source}, {Role: "target", ID: p.Row.Target}} {
			if a.ID != "" {
				p.Agents = append(p.Agents, a)
			}
		}
	}
	u.render(w, r, "entry", p)
	return nil
}

// agentsOf reads the agents (and, for governed/1, their prompt hashes)
// that a handoff's document names, under the parse caps of the rules its
// decision was taken by, and never fewer than those of RulesBounded: a
// decision of rules 1 (no caps) is not re-read uncapped to be shown. A
// document over a cap is not read: over says which cap ("" when none).
func agentsOf(data []byte, rw row) (out []agentRef, over string) {
	rules := max(rw.Rules, handoff.RulesBounded)
	rec := handoff.Parse(data, handoff.Options{Format: handoff.Format(rw.Format), From: rw.Source, To: rw.Target, Rules: rules})
	for _, f := range rec.Findings {
		if f.Code == reason.ParseLimit {
			return nil, f.Message
		}
	}
	for _, a := range []struct {
		role string
		ref  handoff.AgentRef
	}{{"source", rec.Source}, {"target", rec.Target}} {
		id := a.ref.ID
		if id == "" {
			id = map[string]string{"source": rw.Source, "target": rw.Target}[a.role]
		}
		if id == "" {
			continue
		}
		out = append(out, agentRef{Role: a.role, ID: id, Type: a.ref.Type, Version: a.ref.Version, PromptHash: a.ref.PromptHash})
	}
	return out, ""
}

// Workflow.

type workflowPage struct {
	base
	ID    string
	Rows  []row
	Graph graph
	Next  string // URL of the next page ("" on the last)
	First string // URL of the first page ("" on it)
}

// workflowPageSize is the most entries one workflow page shows (and
// graphs).
const workflowPageSize = 500

func (u *UI) getWorkflow(w http.ResponseWriter, r *http.Request, v *visitor) error {
	id := r.PathValue("id")
	if id == "" || len(id) > 256 || !utf8.ValidString(id) {
		return fmt.Errorf("%w: workflow id: want 1 to 256 bytes of UTF-8", server.ErrBadInput)
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("%w: malformed query string: %v", server.ErrBadInput, err)
	}
	var after uint64
	for k, vals := range q {
		if k != "after" || len(vals) != 1 {
			return fmt.Errorf("%w: query parameter %q: this page takes only after=SEQ", server.ErrBadInput, k)
		}
		if after, err = strconv.ParseUint(vals[0], 10, 64); err != nil || strconv.FormatUint(after, 10) != vals[0] {
			return fmt.Errorf("%w: after %q: want a seq", server.ErrBadInput, vals[0])
		}
	}
	page, err := u.cfg.Backend.Workflow(r.Context(), id, after, workflowPageSize)
	if err != nil {
		return err
	}
	rs := rows(page.Entries)
	p := &workflowPage{base: base{Title: "Workflow " + id, Nav: "timeline", Visitor: v}, ID: id, Rows: rs, Graph: layoutGraph(rs)}
	if page.Next != 0 {
		p.Next = fmt.Sprintf("/ui/workflows/%s?after=%d", url.PathEscape(id), page.Next)
	}
	if after != 0 {
		p.First = "/ui/workflows/" + url.PathEscape(id)
	}
	u.render(w, r, "workflow", p)
	return nil
}

// Agent.

type agentPage struct {
	base
	ID      string
	Block   *server.Block
	Rows    []row
	Next    string
	Newest  string
	Hashes  []promptHash
	Events  []row // blocks, unblocks and lifts of this agent
	Unblock bool
}

type promptHash struct {
	Hash     string
	Role     string
	FirstSeq uint64
	LastSeq  uint64
	First    string
	Last     string
}

const maxAgentEvents = 1000

// maxHashScan is the largest document the agent page reads for prompt
// hashes (a page reads at most PageSize of them).
const maxHashScan = 1 << 20

func (u *UI) getAgent(w http.ResponseWriter, r *http.Request, v *visitor) error {
	id := r.PathValue("id")
	if err := manifest.CheckAgentID(id); err != nil {
		return fmt.Errorf("%w: agent: %v", server.ErrBadInput, err)
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("%w: malformed query string: %v", server.ErrBadInput, err)
	}
	var before uint64
	for k, vals := range q {
		if k != "before" || len(vals) != 1 {
			return fmt.Errorf("%w: query parameter %q: this page takes only before=SEQ", server.ErrBadInput, k)
		}
		if before, err = strconv.ParseUint(vals[0], 10, 64); err != nil || before == 0 || strconv.FormatUint(before, 10) != vals[0] {
			return fmt.Errorf("%w: before %q: want a seq, 1 or more", server.ErrBadInput, vals[0])
		}
	}
	ctx := r.Context()
	p := &agentPage{base: base{Title: "Agent " + id, Nav: "timeline", Visitor: v}, ID: id}
	page, err := u.cfg.Backend.Entries(ctx, server.Query{Agent: id, Before: before, Limit: u.cfg.PageSize})
	if err != nil {
		return err
	}
	p.Rows = rows(page.Entries)
	if page.Next != 0 {
		p.Next = fmt.Sprintf("/ui/agents/%s?before=%d", url.PathEscape(id), page.Next)
	}
	if before != 0 {
		p.Newest = "/ui/agents/" + url.PathEscape(id)
	}
	blocks, err := u.cfg.Backend.Blocks(ctx)
	if err != nil {
		return err
	}
	for i := range blocks {
		if blocks[i].Agent == id {
			p.Block = &blocks[i]
		}
	}
	p.Unblock = p.Block != nil && v.Operator()
	// Prompt hashes over time, oldest first, from the documents of this page.
	for i := len(p.Rows) - 1; i >= 0; i-- {
		rw := p.Rows[i]
		if rw.Kind != "handoff" || !rw.HasPayload || rw.PayloadSize > maxHashScan {
			continue
		}
		data, err := u.cfg.Backend.Payload(ctx, rw.Seq)
		if err != nil {
			continue // redacted or not stored: no hash to show
		}
		agents, _ := agentsOf(data, rw) // none over the parse caps
		for _, a := range agents {
			if a.ID != id || a.PromptHash == "" {
				continue
			}
			if n := len(p.Hashes); n > 0 && p.Hashes[n-1].Hash == a.PromptHash {
				p.Hashes[n-1].LastSeq, p.Hashes[n-1].Last = rw.Seq, rw.Time
				continue
			}
			p.Hashes = append(p.Hashes, promptHash{Hash: a.PromptHash, Role: a.Role, FirstSeq: rw.Seq, LastSeq: rw.Seq, First: rw.Time, Last: rw.Time})
		}
	}
	// Blocks (handoffs listing the agent in blocks: it was their source
	// or target), unblocks and lock snapshots lifting it, newest first,
	// among the latest of each kind. Each query reads through indexes (the
	// agent's, and the backend's of codes and kinds): no ledger scan.
	var events []row
	for _, qu := range []server.Query{{Agent: id, Code: string(reason.HashMismatch), Limit: maxAgentEvents},
		{Agent: id, Kind: "unblock", Limit: maxAgentEvents}, {Kind: "snapshot", Limit: maxAgentEvents}} {
		page, err := u.cfg.Backend.Entries(ctx, qu)
		if err != nil {
			return err
		}
		for _, rw := range rows(page.Entries) {
			if slices.Contains(rw.Blocks, id) || rw.Kind == "unblock" && rw.Agent == id || slices.Contains(rw.Lifts, id) {
				events = append(events, rw)
			}
		}
	}
	slices.SortFunc(events, func(a, b row) int { return cmpSeq(b.Seq, a.Seq) })
	p.Events = events
	u.render(w, r, "agent", p)
	return nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Operator actions.

const maxReason = 4096

// operatorForm reads the typed reason and confirmation of an operator
// form; want is what the confirmation must repeat.
func operatorForm(r *http.Request, want string) (string, error) {
	why := strings.TrimSpace(r.PostForm.Get("reason"))
	if why == "" || len(why) > maxReason || !utf8.ValidString(why) {
		return "", fmt.Errorf("%w: reason: want 1 to %d bytes saying why", server.ErrUnprocessable, maxReason)
	}
	if strings.TrimSpace(r.PostForm.Get("confirm")) != want {
		return "", fmt.Errorf("%w: confirmation: type %q to confirm", server.ErrUnprocessable, want)
	}
	return why, nil
}

func (u *UI) needOperator(v *visitor) error {
	if !v.Operator() {
		return server.HTTPError(http.StatusForbidden, server.CodeForbiddenScope,
			fmt.Sprintf("principal %q lacks scope operator (this action needs it)", v.Name))
	}
	return nil
}

func (u *UI) postUnblock(w http.ResponseWriter, r *http.Request, v *visitor) error {
	if err := u.needOperator(v); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := manifest.CheckAgentID(id); err != nil {
		return fmt.Errorf("%w: agent: %v", server.ErrBadInput, err)
	}
	why, err := operatorForm(r, id)
	if err != nil {
		return err
	}
	ev, err := u.cfg.Backend.Unblock(r.Context(), id, why, v.Name)
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/ui/entries/%d", ev.Seq), http.StatusSeeOther)
	return nil
}

func (u *UI) postRedact(w http.ResponseWriter, r *http.Request, v *visitor) error {
	if err := u.needOperator(v); err != nil {
		return err
	}
	seq, err := pathSeq(r)
	if err != nil {
		return err
	}
	why, err := operatorForm(r, strconv.FormatUint(seq, 10))
	if err != nil {
		return err
	}
	ev, err := u.cfg.Backend.Redact(r.Context(), seq, why, v.Name)
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/ui/entries/%d", ev.Seq), http.StatusSeeOther)
	return nil
}
