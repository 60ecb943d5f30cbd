// Package story runs govledger's main job end to end on example data
// embedded in the binary: a registry, its lock, a dozen handoffs (accepted,
// hash mismatch, blocked agent, boundary violation, replay, garbage bytes,
// one of each format), a verify of the ledger, and a verify of a tampered
// copy. It returns the story; the CLI tells it.
package story

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/examples/demo"
	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/reason"
	"github.com/govledger/govledger/verify"
)

// Origin is the demo ledger's identity.
const Origin = "govledger.demo/example"

// Step is one handoff submitted in the demo.
type Step struct {
	File     string          `json:"file"`
	Story    string          `json:"story"`
	Format   string          `json:"format"`
	Source   string          `json:"source,omitzero"`
	Target   string          `json:"target,omitzero"`
	Decision string          `json:"decision,omitzero"`
	Reasons  []reason.Reason `json:"reasons,omitzero"`
	Seq      uint64          `json:"seq"`
	Hash     string          `json:"entry_hash"`
	Kind     string          `json:"kind"`
}

// Story is what the demo did.
type Story struct {
	Dir         string         `json:"dir"`
	Registry    string         `json:"registry"`
	Agents      int            `json:"agents"`
	Steps       []Step         `json:"steps"`
	Verified    *verify.Report `json:"verified"`
	TamperSeq   uint64         `json:"tampered_seq"`
	TamperWhat  string         `json:"tampered_what"`
	TamperCheck *verify.Report `json:"tampered_verify"`
}

type submission struct {
	file, story string
	registry    string // "registry" or "skills"
	from, to    string
	unblock     string // instead of a document: unblock this agent
}

var script = []submission{
	{file: "01-product-to-analysis.json", story: "product hands analysis a hypothesis to test (allowed by handoff_to)", registry: "registry"},
	{file: "02-thinker-to-technical.json", story: "an archetype delegates to one of its composition domains (sha256: hash form)", registry: "registry"},
	{file: "03-content-to-security.json", story: "content tries to reach security, outside its boundaries", registry: "registry"},
	{file: "04-research-hash-mismatch.json", story: "research runs a prompt that is not the reviewed one", registry: "registry"},
	{file: "05-research-blocked.json", story: "research tries again with the right hash: still blocked", registry: "registry"},
	{unblock: "domain-01-research", story: "an operator verifies the prompt and lifts the block"},
	{file: "05-research-blocked.json", story: "the same handoff after the unblock", registry: "registry"},
	{file: "06-replay-of-01.json", story: "someone replays the first handoff, byte for byte", registry: "registry"},
	{file: "07-rogue-agent.json", story: "an unregistered agent asks for customer data", registry: "registry"},
	{file: "08-garbage.bin", story: "bytes that are no handoff at all (still recorded)", registry: "registry"},
	{file: "09-qa-result.vbw.json", story: "a VBW qa_result message, agents given by --from/--to", registry: "registry", from: "domain-03-technical", to: "domain-02-analysis"},
	{file: "10-task-handoff.md", story: "a task file's ## Handoff section, orchestrator to content", registry: "registry", from: "orchestrator", to: "domain-04-content"},
	{file: "11-swarm-to-litpm.yaml", story: "perspective-swarm hands its synthesis to lit-pm (skills registry)", registry: "skills"},
	{file: "12-researcher-to-synthesizer.yaml", story: "a skill-to-skill handoff with a checksummed deliverable", registry: "skills"},
	{file: "13-swarm-expired.yaml", story: "a swarm payload past its expires_at", registry: "skills"},
}

// clock is the demo's pinned ledger clock: one second per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// Run writes the example data under dir (which must exist and be empty or
// new), records the script into dir/demo.db, verifies it, then verifies a
// tampered copy.
func Run(ctx context.Context, dir string) (*Story, error) {
	if err := demo.Unpack(dir); err != nil {
		return nil, err
	}
	regs := map[string]*govern.Config{}
	for _, name := range []string{"registry", "skills"} {
		cfg, err := demo.Config(dir, name)
		if err != nil {
			return nil, err
		}
		regs[name] = cfg
	}
	clk := &clock{t: demo.Epoch}
	dbPath := filepath.Join(dir, "demo.db")
	l, err := bolt.Open(dbPath, &bolt.Options{Now: clk.now, Origin: Origin})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	st := &Story{Dir: dir, Registry: filepath.Join(dir, "registry", "prompt-manifest.json"), Agents: len(regs["registry"].Registry.Agents)}
	for _, s := range script {
		if s.unblock != "" {
			res, err := l.Append(ctx, &ledger.Request{Build: func(_ ledger.State, e *entry.Entry) error {
				e.Kind, e.Agent, e.Note = entry.KindUnblock, s.unblock, "prompt verified against the reviewed copy; incident INC-2211"
				return nil
			}})
			if err != nil {
				return nil, err
			}
			a := res.Entries[len(res.Entries)-1]
			st.Steps = append(st.Steps, Step{Story: s.story, Kind: entry.KindUnblock, Target: s.unblock, Seq: a.Entry.Seq, Hash: a.Hash.String()})
			continue
		}
		raw, err := demo.Document(s.file)
		if err != nil {
			return nil, err
		}
		cfg := *regs[s.registry]
		cfg.Params.From, cfg.Params.To = s.from, s.to
		cfg.Now = clk.now
		p, err := govern.ReadPayload(bytes.NewReader(raw), cfg.Params.MaxPayload)
		if err != nil {
			return nil, err
		}
		o, err := govern.Record(ctx, l, &cfg, s.file, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.file, err)
		}
		for _, sn := range o.Appended[:len(o.Appended)-1] {
			st.Steps = append(st.Steps, Step{Kind: entry.KindSnapshot, Seq: sn.Entry.Seq, Hash: sn.Hash.String(),
				Story: fmt.Sprintf("%s snapshot of the %s comes into force", sn.Entry.What, s.registry)})
		}
		a := o.Entry()
		step := Step{File: s.file, Story: s.story, Kind: entry.KindHandoff, Decision: o.Decision.Decision,
			Reasons: o.Decision.Reasons, Seq: a.Entry.Seq, Hash: a.Hash.String()}
		if r := o.Decision.Record; r != nil {
			step.Format, step.Source, step.Target = string(r.Format), r.Source.ID, r.Target.ID
		}
		st.Steps = append(st.Steps, step)
	}
	rep, err := verify.Replay(ctx, verify.LedgerSource(l), verify.Options{Structural: l.Check, Head: l.Head})
	if err != nil {
		return nil, err
	}
	st.Verified = rep
	// An insider will edit the first accepted handoff: remember its bytes.
	var victim []byte
	for _, s := range st.Steps {
		if s.Kind == entry.KindHandoff && s.Decision == reason.Accepted {
			if _, victim, err = l.Get(ctx, s.Seq); err != nil {
				return nil, err
			}
			st.TamperSeq = s.Seq
			break
		}
	}
	if err := l.Close(); err != nil {
		return nil, err
	}

	// An insider with write access edits the recorded target of the first
	// accepted handoff in a copy of the file.
	tampered := filepath.Join(dir, "tampered.db")
	if err := tamper(dbPath, tampered, victim, st); err != nil {
		return nil, err
	}
	tl, err := bolt.Open(tampered, &bolt.Options{ReadOnly: true, NoCreate: true})
	if err != nil {
		return nil, err
	}
	defer tl.Close()
	st.TamperCheck, err = verify.Replay(ctx, verify.LedgerSource(tl), verify.Options{Structural: tl.Check, Head: tl.Head})
	if err != nil && !errors.Is(err, ledger.ErrCorrupt) {
		return nil, err
	}
	return st, nil
}

// tamper copies src to dst and changes, in place, the stored target of
// the entry whose canonical bytes are victim (every copy of them in the
// file) to an agent id of the same length.
func tamper(src, dst string, victim []byte, st *Story) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	e, err := entry.Decode(victim)
	if err != nil {
		return err
	}
	i := bytes.Index(b, victim)
	target := e.Target.String()
	j := bytes.Index(victim, []byte(`"target":"`+target+`"`))
	if i < 0 || j < 0 || target == "" {
		return errors.New("demo: the entry to tamper with is not where expected")
	}
	forged := swapLast(target)
	// Every copy: the file may hold stale copies of the page in free
	// pages, and only one copy is the live entry.
	for i >= 0 {
		copy(b[i+j:], `"target":"`+forged+`"`)
		k := bytes.Index(b[i+1:], victim)
		if k < 0 {
			break
		}
		i += 1 + k
	}
	st.TamperWhat = fmt.Sprintf("target %q -> %q", target, forged)
	return os.WriteFile(dst, b, 0o600)
}

func swapLast(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 's' {
		b[len(b)-1] = 'z'
	} else {
		b[len(b)-1] = 's'
	}
	return string(b)
}
