package main

// govledger hook claude-code: Claude Code's hook protocol on standard input
// and output (docs/claude-code.md). A PreToolUse call on the Agent (or
// Task) tool is a handoff from the calling agent, or the main session, to
// the subagent; on SendMessage a message from sender to recipient. Each is
// decided and recorded (local ledger or --server), and the answer is the
// hook's JSON: allow, or deny with the reasons. Any error denies.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/handoff"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/server"
	"github.com/govledger/govledger/server/client"
)

// maxHookInput caps the hook input read from standard input.
const maxHookInput = 4 << 20

// maxTranscript caps how much of a session transcript the hook reads to
// date a tool call.
const maxTranscript = 512 << 20

// hookInput is the part of Claude Code's hook input the hook reads (its
// hooks reference: common fields, then the event's own).
type hookInput struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      jsontext.Value `json:"tool_input"`
	ToolUseID      string         `json:"tool_use_id"`
	// AgentID and AgentType are set when the hook fires inside a subagent
	// (and on SubagentStop): the agent making the call.
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
	// SubagentStop: the subagent's transcript and its last message.
	AgentTranscriptPath  string `json:"agent_transcript_path"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// agentToolInput is the Agent (Task) tool's input.
type agentToolInput struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
}

// sendMessageInput is the SendMessage tool's input: to (recipient in
// older versions) and message, a string or a structured object.
type sendMessageInput struct {
	To        string         `json:"to"`
	Recipient string         `json:"recipient"`
	Message   jsontext.Value `json:"message"`
}

// hookOutput is the PreToolUse answer.
type hookOutput struct {
	HookSpecificOutput hookDecision `json:"hookSpecificOutput"`
}

type hookDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// defaultSubagent is the subagent Claude Code runs when the Agent tool
// names none.
const defaultSubagent = "general-purpose"

func hookCommand(g *globals) *cli.Command {
	var flags []cli.Flag
	for _, f := range decisionFlags() {
		if n := f.Names()[0]; n != "format" && n != "from" && n != "to" {
			flags = append(flags, f)
		}
	}
	flags = append(flags,
		&cli.StringFlag{Name: "main", Value: "main", Usage: "the registered agent that stands for the main session (the caller of a subagent outside any subagent)"},
		&cli.DurationFlag{Name: "timeout", Value: 20 * time.Second, Usage: "deny when no decision is had within this long (keep it below the hook's timeout in settings.json)"},
		&cli.DurationFlag{Name: "wait", Usage: "wait this long for a ledger another process holds (default: $GOVLEDGER_WAIT, else 30s, capped by --timeout)"},
		serverFlag(),
	)
	return &cli.Command{
		Name:  "hook",
		Usage: "gate agent handoffs inside an agent framework (claude-code)",
		Description: `A hook is run by an agent framework before a handoff and answers in the
framework's own protocol: the handoff is decided and recorded, and the
framework is told to let it run or to stop it. One subcommand per framework.

Examples:
  govledger --manifest .claude/agents hook claude-code`,
		Action: func(c *cli.Context) error {
			return usageErr("hook: name the framework: claude-code")
		},
		Subcommands: []*cli.Command{{
			Name:  "claude-code",
			Usage: "Claude Code hook: decide and record Agent/Task and SendMessage calls (PreToolUse)",
			Description: `Reads one Claude Code hook input (JSON) on standard input and answers on
standard output as Claude Code's hook protocol asks.

PreToolUse on the Agent (or Task) tool is a handoff from the calling agent
(agent_type of the input, or --main outside any subagent) to subagent_type:
the hook builds a governed/1 document carrying the prompt hash of each
agent's file as it is now, decides and records it, and answers
permissionDecision "allow" or "deny" with the reasons. On SendMessage a
message of one of seed 001's types is a vbw/1 message from sender to
recipient ("main" is --main); prose is vbw/1 markdown.

The document is the same bytes for the same hook input: its handoff_id is
derived from session_id, tool_use_id and the agents, its timestamp is the
time Claude Code wrote the tool call into the session transcript, and it is
sent with the idempotency key claude-code/SESSION/TOOL_USE_ID, so a repeated
call is answered with the first decision.

Fails closed: unreadable input, a registry or lock that cannot be loaded, a
transcript without the tool call, an unreachable ledger or server, or no
decision within --timeout each deny (exit 2, the reason on standard error).

SubagentStop records the outcome of the subagent's handoff: status
succeeded, the SHA-256 of its last message as output_sha256, and the time
between the first and last lines of its transcript as duration_ms, linked to
the accepted handoff the subagent ran under (the Agent call the main
transcript ties to agent_id; else the oldest handoff of this session to
agent_type without an outcome). It is answered with nothing, so the subagent
stops; a failure to record is reported on standard error with exit 1, which
Claude Code shows but does not act on (exit 2 would keep the subagent
running). Other events and tools are not the hook's: no opinion.

Examples:
  govledger --manifest .claude/agents --db .govledger/ledger.db hook claude-code
  GOVLEDGER_TOKEN=... govledger --manifest .claude/agents hook claude-code --server https://ledger.internal
` + remoteHelp,
			Flags: flags,
			Action: func(c *cli.Context) error {
				if c.NArg() > 0 {
					return hookDeny(g, fmt.Errorf("hook claude-code takes no arguments (the hook input is read from standard input)"))
				}
				ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
				defer cancel()
				c.Context = ctx
				type result struct {
					out *hookOutput
					err error
				}
				done := make(chan result, 1)
				go func() {
					out, err := claudeCodeHook(c, g)
					done <- result{out, err}
				}()
				var r result
				select {
				case r = <-done:
				case <-ctx.Done():
					r.err = fmt.Errorf("no decision within --timeout %s: denied (the ledger may still record a decision; a retry of the call is answered with it)", c.Duration("timeout"))
				}
				var stop *stopError
				if errors.As(r.err, &stop) {
					// SubagentStop: exit 2 would keep the subagent running.
					return &exitError{code: exitFound, err: fmt.Errorf("outcome not recorded: %w", stop.err)}
				}
				if r.err != nil {
					return hookDeny(g, r.err)
				}
				if r.out == nil {
					return nil // not ours: no opinion
				}
				b, err := json.Marshal(r.out)
				if err != nil {
					return hookDeny(g, err)
				}
				if _, err := g.stdout.Write(append(b, '\n')); err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				return nil
			},
		}},
	}
}

// hookDeny answers an error with a denial: the deny JSON on standard
// output and exit status 2, which Claude Code reads as "block" (with the
// reason, printed on standard error, shown to the model) even if it cannot
// read the JSON.
func hookDeny(g *globals, err error) error {
	out := hookOutput{hookDecision{HookEventName: "PreToolUse", PermissionDecision: "deny",
		PermissionDecisionReason: "govledger: " + err.Error()}}
	if b, merr := json.Marshal(out); merr == nil {
		g.stdout.Write(append(b, '\n'))
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("denied: %w", err)}
}

// claudeCodeHook decides one hook input. A nil output means no opinion.
func claudeCodeHook(c *cli.Context, g *globals) (*hookOutput, error) {
	data, err := io.ReadAll(io.LimitReader(g.stdin, maxHookInput+1))
	if err != nil {
		return nil, fmt.Errorf("read the hook input: %w", err)
	}
	if len(data) > maxHookInput {
		return nil, fmt.Errorf("the hook input is over %d bytes", maxHookInput)
	}
	var in hookInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("the hook input is not Claude Code's hook JSON: %w", err)
	}
	switch {
	case in.HookEventName == "SubagentStop":
		return nil, hookSubagentStop(c, g, &in)
	case in.HookEventName != "PreToolUse":
		return nil, nil
	}
	if in.SessionID == "" || in.ToolUseID == "" {
		return nil, errors.New("the hook input has no session_id or tool_use_id")
	}
	key := "claude-code/" + in.SessionID + "/" + in.ToolUseID
	if checkIdempotencyKey("key", key) != nil {
		sum := sha256.Sum256([]byte(in.SessionID + "\x00" + in.ToolUseID))
		key = "claude-code/" + hex.EncodeToString(sum[:16])
	}
	switch in.ToolName {
	case "Agent", "Task":
		return hookAgent(c, g, &in, key)
	case "SendMessage":
		return hookSendMessage(c, g, &in, key)
	}
	return nil, nil
}

// caller is the agent making the call: the subagent the hook fires in,
// else the main session's agent (--main).
func caller(c *cli.Context, in *hookInput) string {
	if in.AgentType != "" {
		return in.AgentType
	}
	return c.String("main")
}

// governedAgent is one agent block of a governed/1 document.
type governedAgent struct {
	AgentType    string `json:"agent_type"`
	AgentID      string `json:"agent_id"`
	AgentVersion string `json:"agent_version"`
	PromptHash   string `json:"prompt_hash"`
}

// agentBlock describes id as the registry has it, with the hash of its
// prompt file as it is now: the prompt Claude Code will run. An agent the
// registry does not know gets placeholders, so that the policy says
// UNKNOWN_AGENT rather than the format rejecting the document.
func agentBlock(reg *manifest.Registry, id string) (governedAgent, error) {
	a, ok := reg.Agent(id)
	if !ok {
		return governedAgent{AgentType: manifest.TypeDomain, AgentID: id, AgentVersion: manifest.DefaultSkillVersion,
			PromptHash: lockfile.FormatDigest([32]byte{})}, nil
	}
	root, err := os.OpenRoot(reg.Dir)
	if err != nil {
		return governedAgent{}, fmt.Errorf("registry folder: %w", err)
	}
	defer root.Close()
	b, err := root.ReadFile(filepath.FromSlash(a.PromptPath))
	if err != nil {
		return governedAgent{}, fmt.Errorf("prompt of agent %s: %w", id, err)
	}
	return governedAgent{AgentType: a.Type, AgentID: a.ID, AgentVersion: a.Version,
		PromptHash: lockfile.FormatDigest(sha256.Sum256(b))}, nil
}

// hookAgent decides an Agent (Task) tool call: a governed/1 handoff.
func hookAgent(c *cli.Context, g *globals, in *hookInput, key string) (*hookOutput, error) {
	var ti agentToolInput
	if err := json.Unmarshal(in.ToolInput, &ti, json.RejectUnknownMembers(false)); err != nil {
		return nil, fmt.Errorf("tool_input of %s: %w", in.ToolName, err)
	}
	src, dst := caller(c, in), cmpOr(ti.SubagentType, defaultSubagent)
	cfg, err := loadConfig(c, g)
	if err != nil {
		return nil, err
	}
	when, err := toolUseTime(in)
	if err != nil {
		return nil, err
	}
	doc, err := governedDoc(cfg.Registry, in, src, dst, ti, when)
	if err != nil {
		return nil, err
	}
	// The session is the workflow: trace SESSION_ID lists its handoffs
	// and their outcomes (governed/1 carries no workflow id of its own).
	cfg.WorkflowID = in.SessionID
	return hookDecide(c, g, cfg, doc, "", "", "", key, src, dst)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// hookHandoffID derives a UUID version 4 (RFC 4122 variant) from the hook
// input's identity, so the same call always has the same handoff_id.
func hookHandoffID(in *hookInput, src, dst string) string {
	h := sha256.Sum256([]byte("govledger hook claude-code\x00" + in.SessionID + "\x00" + in.ToolUseID + "\x00" + src + "\x00" + dst))
	u := h[:16]
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u)
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// governedDoc is the governed/1 document of an Agent call: byte-identical
// for the same hook input, registry and prompt files.
func governedDoc(reg *manifest.Registry, in *hookInput, src, dst string, ti agentToolInput, when time.Time) ([]byte, error) {
	s, err := agentBlock(reg, src)
	if err != nil {
		return nil, err
	}
	d, err := agentBlock(reg, dst)
	if err != nil {
		return nil, err
	}
	type request struct {
		Type           string   `json:"type"`
		Description    string   `json:"description"`
		InputData      string   `json:"input_data"`
		Constraints    []string `json:"constraints"`
		ExpectedOutput string   `json:"expected_output"`
	}
	type state struct {
		ConversationHistory []any             `json:"conversation_history"`
		AccumulatedContext  map[string]string `json:"accumulated_context"`
		DecisionsMade       []any             `json:"decisions_made"`
	}
	doc := struct {
		HandoffID       string        `json:"handoff_id"`
		Timestamp       string        `json:"timestamp"`
		ProtocolVersion string        `json:"protocol_version"`
		SourceAgent     governedAgent `json:"source_agent"`
		TargetAgent     governedAgent `json:"target_agent"`
		Context         struct {
			Request request `json:"request"`
			State   state   `json:"state"`
		} `json:"context"`
		Governance struct {
			SourceVerified      bool   `json:"source_agent_verified"`
			TargetVerified      bool   `json:"target_agent_verified"`
			CompositionValid    bool   `json:"composition_valid"`
			BoundariesRespected bool   `json:"boundaries_respected"`
			AuditTrail          string `json:"audit_trail"`
		} `json:"governance"`
	}{
		HandoffID: hookHandoffID(in, src, dst), Timestamp: when.UTC().Format(time.RFC3339Nano),
		ProtocolVersion: "1.0.0", SourceAgent: s, TargetAgent: d,
	}
	doc.Context.Request = request{Type: "task", Description: ti.Description, InputData: ti.Prompt,
		Constraints: []string{}, ExpectedOutput: "the result of subagent " + dst}
	doc.Context.State = state{ConversationHistory: []any{}, DecisionsMade: []any{},
		AccumulatedContext: map[string]string{"claude_code_session_id": in.SessionID, "claude_code_tool_use_id": in.ToolUseID}}
	// The hook claims what the ledger is asked to check; a refuted claim
	// adds ATTESTATION_MISMATCH to the reasons of a denial.
	doc.Governance.SourceVerified, doc.Governance.TargetVerified = true, true
	doc.Governance.CompositionValid, doc.Governance.BoundariesRespected = true, true
	doc.Governance.AuditTrail = "claude-code:" + in.SessionID + "/" + in.ToolUseID
	return json.Marshal(doc, json.Deterministic(true))
}

// toolUseTime is when Claude Code wrote the tool call into the session
// transcript: the timestamp of the transcript line whose message holds the
// tool_use with the input's tool_use_id. It is the same on every retry of
// the call, which makes the document byte-identical. A call inside a
// subagent is looked for in that subagent's transcript too.
// transcriptWait is how long the hook waits for the tool call's line to
// reach the transcript: Claude Code 2.1.332 on a loaded machine was seen
// writing it more than 3 s after the hook ran (the npm adapter's tests);
// it stays well under the hook's default --timeout (20 s).
const transcriptWait = 10 * time.Second

func toolUseTime(in *hookInput) (time.Time, error) {
	paths := []string{in.TranscriptPath}
	if in.AgentID != "" && in.TranscriptPath != "" {
		dir := strings.TrimSuffix(in.TranscriptPath, ".jsonl")
		paths = append(paths, filepath.Join(dir, "subagents", "agent-"+in.AgentID+".jsonl"))
	}
	var errs []error
	// Claude Code writes the tool call's transcript line around the time
	// it runs the hook, not always before: look again for a moment.
	for deadline := time.Now().Add(transcriptWait); ; time.Sleep(25 * time.Millisecond) {
		errs = errs[:0]
		for _, p := range paths {
			if p == "" {
				continue
			}
			t, err := transcriptTime(p, in.ToolUseID)
			if err == nil {
				return t, nil
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(errs) == 0 {
		return time.Time{}, errors.New("the hook input names no transcript_path, so the tool call cannot be dated (the handoff would not be reproducible)")
	}
	return time.Time{}, fmt.Errorf("cannot date the tool call (session persistence off?): %w", errors.Join(errs...))
}

// transcriptTime scans a JSON Lines transcript for the tool_use id.
func transcriptTime(path, id string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	needle, _ := json.Marshal(id)
	br := bufio.NewReaderSize(io.LimitReader(f, maxTranscript), 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if bytes.Contains(line, needle) {
			var rec struct {
				Timestamp string `json:"timestamp"`
				Message   struct {
					Content []struct {
						Type string `json:"type"`
						ID   string `json:"id"`
					} `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(bytes.TrimSpace(line), &rec) == nil &&
				slices.ContainsFunc(rec.Message.Content, func(b struct {
					Type string `json:"type"`
					ID   string `json:"id"`
				}) bool {
					return b.Type == "tool_use" && b.ID == id
				}) {
				t, err := time.Parse(time.RFC3339Nano, rec.Timestamp)
				if err != nil {
					return time.Time{}, fmt.Errorf("transcript %s: the tool call's timestamp: %w", path, err)
				}
				return t, nil
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return time.Time{}, fmt.Errorf("transcript %s has no tool_use %s", path, id)
			}
			return time.Time{}, fmt.Errorf("transcript: %w", rerr)
		}
	}
}

// hookSendMessage decides a SendMessage call: a vbw/1 message of seed
// 001's types, or prose (vbw/1 markdown). Claude Code's own structured
// protocol messages (shutdown and plan approval) are not handoffs: no
// opinion.
func hookSendMessage(c *cli.Context, g *globals, in *hookInput, key string) (*hookOutput, error) {
	var ti sendMessageInput
	if err := json.Unmarshal(in.ToolInput, &ti, json.RejectUnknownMembers(false)); err != nil {
		return nil, fmt.Errorf("tool_input of SendMessage: %w", err)
	}
	to := cmpOr(ti.To, ti.Recipient)
	switch to {
	case "":
		return nil, errors.New("SendMessage names no recipient (to)")
	case "*":
		return nil, errors.New("a broadcast (to: \"*\") has no one recipient to check: send to each agent by name")
	case "main":
		to = c.String("main")
	}
	var doc []byte
	switch ti.Message.Kind() {
	case '"':
		var s string
		if err := json.Unmarshal(ti.Message, &s); err != nil {
			return nil, fmt.Errorf("SendMessage message: %w", err)
		}
		doc = []byte(s)
	case '{':
		var peek struct {
			Type string `json:"type"`
		}
		json.Unmarshal(ti.Message, &peek, json.RejectUnknownMembers(false))
		if _, ok := handoff.VBWSenders[peek.Type]; !ok {
			fmt.Fprintf(g.stderr, "govledger: SendMessage of a %q protocol message is not a handoff: no opinion\n", peek.Type)
			return nil, nil
		}
		doc = slices.Clone(ti.Message)
	default:
		return nil, errors.New("SendMessage message is neither text nor an object")
	}
	cfg, err := loadConfig(c, g)
	if err != nil {
		return nil, err
	}
	from := caller(c, in)
	return hookDecide(c, g, cfg, doc, string(handoff.VBW), from, to, key, from, to)
}

// hookDecide records doc (locally or through --server) and turns the
// decision into the hook's answer.
func hookDecide(c *cli.Context, g *globals, cfg *govern.Config, doc []byte, format, from, to, key, src, dst string) (*hookOutput, error) {
	var (
		decision string
		reasons  []reason.Reason
		seq      uint64
		replayed bool
	)
	cl, err := remoteClient(c, g)
	if err != nil {
		return nil, err
	}
	if cl != nil {
		res, err := cl.Submit(c.Context, doc, client.SubmitOptions{Format: format, From: from, To: to, IdempotencyKey: key, Workflow: cfg.WorkflowID})
		if err != nil {
			return nil, remoteErr(cl, err)
		}
		decision, reasons, seq, replayed = res.Decision, res.Reasons, res.Seq, res.Replayed
	} else {
		as, err := submitter(c, g)
		if err != nil {
			return nil, err
		}
		wait, err := recordWait(c, g)
		if err != nil {
			return nil, err
		}
		if dl, ok := c.Context.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		cfg.Submitter, cfg.IdempotencyKey = as, key
		cfg.Params.Format, cfg.Params.From, cfg.Params.To = handoff.Format(format), from, to
		p, err := govern.ReadPayload(bytes.NewReader(doc), cfg.Params.MaxPayload)
		if err != nil {
			return nil, err
		}
		d := &decider{c: c, g: g, cfg: cfg, record: true, wait: wait}
		defer d.close()
		r, err := d.decide(cfg, "hook", 0, p, "")
		if err != nil {
			return nil, err
		}
		if r.Refused != "" {
			return nil, errors.New(r.Refused)
		}
		decision, reasons, seq, replayed = r.Decision, r.Reasons, r.Seq, r.Replayed
	}
	what := fmt.Sprintf("handoff %s -> %s", src, dst)
	if format == string(handoff.VBW) {
		what = fmt.Sprintf("message %s -> %s", src, dst)
	}
	at := fmt.Sprintf("ledger seq %d", seq)
	if replayed {
		at += ", a repeated call answered with its first decision"
	}
	out := &hookOutput{hookDecision{HookEventName: "PreToolUse"}}
	if decision == reason.Accepted {
		out.HookSpecificOutput.PermissionDecision = "allow"
		out.HookSpecificOutput.PermissionDecisionReason = fmt.Sprintf("govledger: %s accepted (%s)", what, at)
		return out, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "govledger: %s rejected (%s):", what, at)
	for _, r := range reasons {
		fmt.Fprintf(&b, "\n- %s %s", r.Code, reasonText(r))
	}
	out.HookSpecificOutput.PermissionDecision = "deny"
	out.HookSpecificOutput.PermissionDecisionReason = b.String()
	return out, nil
}

// stopError is a failure to record a SubagentStop's outcome: reported,
// never a denial (the subagent has finished; exit 2 would keep it running).
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// hookSubagentStop records the outcome of the handoff the stopping
// subagent ran under.
func hookSubagentStop(c *cli.Context, g *globals, in *hookInput) error {
	if in.SessionID == "" || in.AgentType == "" {
		return &stopError{errors.New("the SubagentStop input has no session_id or agent_type")}
	}
	// The Agent call the subagent ran for: its key names the decision.
	toolUse := agentToolUse(in.TranscriptPath, in.AgentID)
	req := server.OutcomeRequest{Status: entry.StatusSucceeded}
	if in.LastAssistantMessage != "" {
		sum := sha256.Sum256([]byte(in.LastAssistantMessage))
		req.OutputSHA256 = hex.EncodeToString(sum[:])
	}
	if d, ok := transcriptSpan(in.AgentTranscriptPath); ok {
		req.DurationMS = &d
	}
	key := "claude-code/" + in.SessionID + "/" + cmpOr(in.AgentID, in.AgentType) + "/stop"
	if checkIdempotencyKey("key", key) != nil {
		sum := sha256.Sum256([]byte(in.SessionID + "\x00" + in.AgentID + "\x00stop"))
		key = "claude-code/" + hex.EncodeToString(sum[:16]) + "/stop"
	}
	cl, err := remoteClient(c, g)
	if err != nil {
		return &stopError{err}
	}
	var src decisionSource
	if cl != nil {
		src = remoteDecisions{c: c, cl: cl}
	} else {
		wait, err := recordWait(c, g)
		if err != nil {
			return &stopError{err}
		}
		if dl, ok := c.Context.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		l, err := openLedgerWait(g, wait, "")
		if err != nil {
			return &stopError{err}
		}
		defer l.Close()
		src = localDecisions{l: l}
		seq, err := findDecision(src, in, toolUse)
		if err != nil {
			return &stopError{err}
		}
		as, err := submitter(c, g)
		if err != nil {
			return &stopError{err}
		}
		r := govern.OutcomeRequest{DecisionSeq: seq, Status: req.Status, DurationMS: req.DurationMS, Submitter: as, IdempotencyKey: key}
		if req.OutputSHA256 != "" {
			h, _ := entry.ParseHash(req.OutputSHA256)
			r.OutputSHA256 = &h
		}
		res, err := govern.RecordOutcome(c.Context, l, r)
		if err != nil {
			return &stopError{err}
		}
		fmt.Fprintf(g.stderr, "govledger: outcome of seq %d (handoff -> %s) recorded at seq %d\n", seq, in.AgentType, res.Entry.Seq)
		return nil
	}
	seq, err := findDecision(src, in, toolUse)
	if err != nil {
		return &stopError{err}
	}
	req.DecisionSeq = seq
	res, err := cl.Outcome(c.Context, req, client.OutcomeOptions{IdempotencyKey: key})
	if err != nil {
		return &stopError{remoteErr(cl, err)}
	}
	fmt.Fprintf(g.stderr, "govledger: outcome of seq %d (handoff -> %s) recorded at seq %d\n", seq, in.AgentType, res.Seq)
	return nil
}

// agentToolUse returns the id of the Agent tool call that ran subagent
// agentID, as the main session's transcript ties them (a line naming the
// agent id with the call's id as parentToolUseID, toolUseID or
// tool_use_id), or "" when the transcript does not say.
func agentToolUse(path, agentID string) string {
	if path == "" || agentID == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	needle, _ := json.Marshal(agentID)
	br := bufio.NewReaderSize(io.LimitReader(f, maxTranscript), 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if bytes.Contains(line, needle) {
			var v any
			if json.Unmarshal(bytes.TrimSpace(line), &v) == nil {
				if id := toolUseIDIn(v, 0); id != "" {
					return id
				}
			}
		}
		if rerr != nil {
			return ""
		}
	}
}

// toolUseIDIn finds a tool call id ("toolu_…") under a key that names one.
func toolUseIDIn(v any, depth int) string {
	if depth > 8 {
		return ""
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"parentToolUseID", "toolUseID", "tool_use_id"} {
			if s, ok := x[k].(string); ok && strings.HasPrefix(s, "toolu_") {
				return s
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if id := toolUseIDIn(x[k], depth+1); id != "" {
				return id
			}
		}
	case []any:
		for _, e := range x {
			if id := toolUseIDIn(e, depth+1); id != "" {
				return id
			}
		}
	}
	return ""
}

// transcriptSpan is the time between the first and the last timestamp of
// a transcript, in milliseconds: how long the subagent ran.
func transcriptSpan(path string) (int64, bool) {
	if path == "" {
		return 0, false
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var first, last time.Time
	br := bufio.NewReaderSize(io.LimitReader(f, maxTranscript), 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		var rec struct {
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(bytes.TrimSpace(line), &rec, json.RejectUnknownMembers(false)) == nil {
			if t, err := time.Parse(time.RFC3339Nano, rec.Timestamp); err == nil {
				if first.IsZero() {
					first = t
				}
				last = t
			}
		}
		if rerr != nil {
			break
		}
	}
	if first.IsZero() || last.Before(first) {
		return 0, false
	}
	return last.Sub(first).Milliseconds(), true
}

// decisionSource lists the entries naming an agent, newest first.
type decisionSource interface {
	agentEntries(agent string) ([]*entry.Entry, error)
}

type localDecisions struct{ l *ledger.Ledger }

// maxStopScan bounds the entries of an agent a SubagentStop looks through.
const maxStopScan = 1000

func (s localDecisions) agentEntries(agent string) ([]*entry.Entry, error) {
	seqs, err := s.l.Find(context.Background(), ledger.Query{Agent: agent, Limit: maxStopScan, Newest: true})
	if err != nil {
		return nil, err
	}
	var out []*entry.Entry
	for i := len(seqs) - 1; i >= 0; i-- {
		e, _, err := s.l.Get(context.Background(), seqs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

type remoteDecisions struct {
	c  *cli.Context
	cl *client.Client
}

func (s remoteDecisions) agentEntries(agent string) ([]*entry.Entry, error) {
	page, err := s.cl.Entries(s.c.Context, client.Query{Agent: agent, Limit: maxStopScan})
	if err != nil {
		return nil, remoteErr(s.cl, err)
	}
	var out []*entry.Entry
	for _, sv := range page.Entries {
		e, _, err := remoteEntry(sv)
		if err != nil {
			return nil, remoteErr(s.cl, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// findDecision finds the accepted handoff the stopping subagent ran
// under: the one recorded for its Agent call (key
// claude-code/SESSION/TOOL_USE_ID, prefixed by the principal's name on a
// server) when the transcript names the call; else the oldest handoff of
// this session to agent_type that has no outcome yet.
func findDecision(src decisionSource, in *hookInput, toolUse string) (uint64, error) {
	es, err := src.agentEntries(in.AgentType)
	if err != nil {
		return 0, err
	}
	finished := map[uint64]bool{}
	for _, e := range es {
		if e.Kind == entry.KindOutcome {
			finished[e.DecisionSeq] = true
		}
	}
	session := "claude-code/" + in.SessionID + "/"
	var oldest uint64
	for _, e := range es { // newest first
		if e.Kind != entry.KindHandoff || e.Decision != reason.Accepted || e.Target.S != in.AgentType {
			continue
		}
		k := e.IdempotencyKey
		if i := strings.Index(k, session); i < 0 || i > 0 && k[i-1] != '/' {
			continue
		}
		if toolUse != "" && strings.HasSuffix(k, session+toolUse) {
			return e.Seq, nil
		}
		if !finished[e.Seq] {
			oldest = e.Seq
		}
	}
	if oldest == 0 {
		return 0, fmt.Errorf("no accepted handoff to %s in session %s without an outcome (among its last %d entries)", in.AgentType, in.SessionID, maxStopScan)
	}
	return oldest, nil
}
