package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/reason"
)

func handoffCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:  "handoff",
		Usage: "make hand-off documents",
		Description: `Commands that make hand-off documents for a registry.

Examples:
  govledger handoff new --from domain-05-product --to domain-02-analysis > handoff.json`,
		Subcommands: []*cli.Command{handoffNewCommand(g)},
		Action: func(c *cli.Context) error {
			return usageErr("handoff: name a subcommand: new")
		},
	}
}

// newHandoffDoc is a governed/1 document as handoff new writes it, in the
// field order of the format's example.
type newHandoffDoc struct {
	HandoffID       string          `json:"handoff_id"`
	Timestamp       string          `json:"timestamp"`
	ProtocolVersion string          `json:"protocol_version"`
	Source          governedAgent   `json:"source_agent"`
	Target          governedAgent   `json:"target_agent"`
	Context         governedContext `json:"context"`
	Governance      governedGov     `json:"governance"`
}

type governedContext struct {
	Request struct {
		Type           string         `json:"type"`
		Description    string         `json:"description"`
		InputData      map[string]any `json:"input_data"`
		Constraints    []string       `json:"constraints"`
		ExpectedOutput string         `json:"expected_output"`
	} `json:"request"`
	State struct {
		ConversationHistory []any          `json:"conversation_history"`
		AccumulatedContext  map[string]any `json:"accumulated_context"`
		DecisionsMade       []any          `json:"decisions_made"`
	} `json:"state"`
}

type governedGov struct {
	SourceVerified      bool   `json:"source_agent_verified"`
	TargetVerified      bool   `json:"target_agent_verified"`
	CompositionValid    bool   `json:"composition_valid"`
	BoundariesRespected bool   `json:"boundaries_respected"`
	AuditTrail          string `json:"audit_trail"`
}

func handoffNewCommand(g *globals) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "from", Usage: "source agent (default: the first agent of the registry that may hand off to another)"},
		&cli.StringFlag{Name: "to", Usage: "target agent (default: the first agent --from may hand off to)"},
		&cli.StringFlag{Name: "type", Usage: "the request's type (default: the target's first request type, else \"task\")"},
		&cli.StringFlag{Name: "description", Value: "describe the work handed over", Usage: "what the target is asked to do"},
		&cli.StringFlag{Name: "format", Value: "governed/1", Usage: "the document's format: governed/1, or a2a/1 (an A2A 0.3.0 message whose metadata names the agents and their locked prompt hashes)"},
	}
	for _, f := range decisionFlags() {
		if n := f.Names()[0]; n != "from" && n != "to" && n != "format" && n != "as" {
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:  "new",
		Usage: "write a fresh, valid governed/1 (or a2a/1) hand-off document for the registry",
		Description: `Writes a governed/1 document from --from to --to, stamped now with a new
handoff_id, naming each agent's type and version from the registry and its
prompt hash from the lock, to standard output. It is decided against the
registry and the lock before it is written, as 'validate' would: a pair the
registry does not allow is refused (exit 1) with the reasons, and nothing is
written. Without --from and --to it takes the first pair the registry allows.
Blocks are the ledger's: record it to see whether an agent is blocked.
--format a2a/1 writes an A2A 0.3.0 message instead: a new messageId, the
description as its text part, and metadata.govledger naming both agents with
their locked prompt hashes (with an Agent Cards registry: the cards' hashes).

Examples:
  govledger handoff new > handoff.json
  govledger handoff new --from domain-05-product --to domain-02-analysis > handoff.json
  govledger handoff new --from domain-05-product --to domain-02-analysis --description "validate the pricing hypothesis" | govledger record -
  govledger --manifest cards/ --lock cards-lock.json handoff new --format a2a/1 --from planner --to router > message.json`,
		Flags: flags,
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.Args().Present() {
				return usageErr("handoff new takes no arguments")
			}
			cfg, err := loadConfig(c, g)
			if err != nil {
				return err
			}
			format := c.String("format")
			if format != "governed/1" && format != "a2a/1" {
				return usageErr("handoff new --format %q: want governed/1 or a2a/1", format)
			}
			doc, err := newGovernedDoc(cfg, c.String("from"), c.String("to"), c.String("type"), c.String("description"), time.Now())
			if err != nil {
				return inputErr(fmt.Errorf("handoff new: %w", err))
			}
			var out any = doc
			if format == "a2a/1" {
				out = newA2ADoc(doc, c.String("description"))
			}
			b, err := json.Marshal(out, jsontext.WithIndent("  "), jsontext.EscapeForHTML(false))
			if err != nil {
				return internalErr(err)
			}
			b = append(b, '\n')
			p := &govern.Payload{Data: b, Size: int64(len(b)), SHA256: entry.Sum256(b)}
			o, err := govern.Validate(cfg, "handoff new", p, nil)
			if err != nil {
				return internalErr(err)
			}
			if o.Decision.Decision != reason.Accepted {
				fmt.Fprintf(g.stderr, "govledger: handoff new: the registry and the lock reject %s -> %s; nothing was written:\n", doc.Source.AgentID, doc.Target.AgentID)
				for _, r := range o.Decision.Reasons {
					fmt.Fprintf(g.stderr, "  %-8s %s %s\n", r.Severity, r.Code, reasonText(r))
				}
				return found()
			}
			_, err = g.stdout.Write(b)
			return err
		},
	}
}

// newGovernedDoc builds the document from source to target (either may be
// empty: the first pair the registry allows), stamped at now.
func newGovernedDoc(cfg *govern.Config, from, to, typ, description string, now time.Time) (*newHandoffDoc, error) {
	reg := cfg.Registry
	if from == "" {
		for _, a := range reg.Agents {
			if len(a.HandoffTo) > 0 {
				from = a.ID
				break
			}
		}
		if from == "" {
			return nil, fmt.Errorf("no agent of the registry may hand off to another (no handoff_to): name --from and --to")
		}
	}
	src, ok := reg.Agent(from)
	if !ok {
		return nil, fmt.Errorf("--from %q: no such agent in the registry", from)
	}
	if to == "" {
		if len(src.HandoffTo) == 0 {
			return nil, fmt.Errorf("agent %q may hand off to no one (no handoff_to): name --to", from)
		}
		to = src.HandoffTo[0]
	}
	dst, ok := reg.Agent(to)
	if !ok {
		return nil, fmt.Errorf("--to %q: no such agent in the registry", to)
	}
	if typ == "" {
		typ = "task"
		if len(dst.RequestTypes) > 0 {
			typ = dst.RequestTypes[0]
		}
	}
	agent := func(a *manifest.Agent) (governedAgent, error) {
		e, ok := cfg.Lock.Lookup(a.ID)
		if !ok {
			return governedAgent{}, fmt.Errorf("agent %q is not in the lock: run 'govledger lock'", a.ID)
		}
		return governedAgent{AgentType: a.Type, AgentID: a.ID, AgentVersion: a.Version,
			PromptHash: strings.TrimPrefix(e.PromptHash, lockfile.DigestPrefix)}, nil
	}
	doc := &newHandoffDoc{HandoffID: uuid.NewString(), Timestamp: now.UTC().Format(time.RFC3339), ProtocolVersion: "1.0.0",
		Governance: governedGov{SourceVerified: true, TargetVerified: true, CompositionValid: true,
			BoundariesRespected: slices.Contains(src.HandoffTo, to), AuditTrail: "govledger handoff new"}}
	var err error
	if doc.Source, err = agent(src); err != nil {
		return nil, err
	}
	if doc.Target, err = agent(dst); err != nil {
		return nil, err
	}
	r := &doc.Context.Request
	r.Type, r.Description, r.InputData, r.Constraints, r.ExpectedOutput = typ, description, map[string]any{}, []string{}, "the result of the work"
	s := &doc.Context.State
	s.ConversationHistory, s.AccumulatedContext, s.DecisionsMade = []any{}, map[string]any{}, []any{}
	return doc, nil
}

// a2aNewDoc is an a2a/1 message as handoff new writes it (A2A 0.3.0).
type a2aNewDoc struct {
	Kind      string        `json:"kind"`
	MessageID string        `json:"messageId"`
	Role      string        `json:"role"`
	Parts     []a2aTextPart `json:"parts"`
	Metadata  struct {
		Govledger struct {
			Source           string `json:"source"`
			Target           string `json:"target"`
			SourcePromptHash string `json:"source_prompt_hash"`
			TargetPromptHash string `json:"target_prompt_hash"`
		} `json:"govledger"`
	} `json:"metadata"`
}

type a2aTextPart struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// newA2ADoc is the a2a/1 message of the governed/1 document doc: its id,
// agents and locked prompt hashes, the description as its text.
func newA2ADoc(doc *newHandoffDoc, description string) *a2aNewDoc {
	m := &a2aNewDoc{Kind: "message", MessageID: doc.HandoffID, Role: "user", Parts: []a2aTextPart{{Kind: "text", Text: description}}}
	g := &m.Metadata.Govledger
	g.Source, g.Target = doc.Source.AgentID, doc.Target.AgentID
	g.SourcePromptHash, g.TargetPromptHash = lockfile.DigestPrefix+doc.Source.PromptHash, lockfile.DigestPrefix+doc.Target.PromptHash
	return m
}
