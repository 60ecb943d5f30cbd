package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/internal/strictjson"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
)

func lockCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "write or refresh the prompt lock from the registry and prompt files",
		UsageText: "govledger [--manifest PATH] [--lock PATH] lock [--output text|json]",
		Description: `lock hashes every agent's prompt file (SHA-256 of the raw bytes) and writes
prompt-lock.json atomically: sorted, two-space indented, newline-terminated, so an
unchanged registry rewrites identical bytes ("unchanged"). An invalid registry is
refused with every problem listed, one per line, and exit code 2.

Examples:
  govledger lock                                  # prompt-manifest.json -> prompt-lock.json
  govledger --manifest skills/ lock               # a folder of */SKILL.md skills
  govledger lock check --output github            # the CI gate, see "govledger lock check --help"

` + exitCodeTable,
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.Args().Present() {
				return usageErr("lock: unknown argument %q (did you mean 'lock check'?)", c.Args().First())
			}
			return runLock(g)
		},
		Subcommands: []*cli.Command{lockCheckCommand(g)},
	}
}

func lockCheckCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "CI gate: report every drift between the registry, its prompt files and the lock",
		UsageText: "govledger [--manifest PATH] [--lock PATH] lock check [--output text|json|github|sarif]",
		Description: `check compares the registry and the SHA-256 of each prompt file's exact bytes with
prompt-lock.json, and lists every drift:

  CHANGED        the prompt's bytes differ from the lock (or it moved to another path);
                 when only line endings (CRLF/LF), a UTF-8 BOM, trailing white space or
                 the final newline differ, it says so: still drift, the lock pins bytes
  MISSING_FILE   a locked agent's prompt file does not exist
  UNLOCKED       an agent has no lock entry
  STALE_ENTRY    the lock names an agent the registry no longer has
  VERSION_DRIFT  the agent's version differs from the locked version

Output: text (one line per finding), json (schema govledger.lockcheck/v1), github
(workflow-command annotations) or sarif (SARIF 2.1.0 for code scanning upload).

Examples:
  govledger lock check
  govledger lock check --output github
  govledger --manifest skills/ lock check --output sarif > lockcheck.sarif
  GOVLEDGER_LOCK=ci/prompt-lock.json govledger lock check --output json

Exit codes: 0 in sync; 1 drift found; 2 unreadable or invalid registry or lock.
`,
		Action: func(c *cli.Context) error {
			if err := noFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.Args().Present() {
				return usageErr("lock check: unexpected argument %q", c.Args().First())
			}
			return runLockCheck(g)
		},
	}
}

// lockResult is what "lock" did.
type lockResult struct {
	Schema  string `json:"schema"`
	Lock    string `json:"lock"`
	Changed bool   `json:"changed"`
	Agents  int    `json:"agents"`
	// ChangedAgents are the agents whose locked prompt changed, appeared
	// or went away against the lock that was there (sorted): what a
	// reviewer must have looked at. Absent for a first lock, or when the
	// old lock could not be parsed.
	ChangedAgents []string `json:"changed_agents,omitzero"`
}

func runLock(g *globals) error {
	if g.output != "text" && g.output != "json" {
		return usageErr("lock: --output %q: want text or json", g.output)
	}
	reg, err := loadRegistry(g)
	if err != nil {
		return err
	}
	dir, err := lockfile.OpenDir(reg.Dir)
	if err != nil {
		return inputErr(fmt.Errorf("registry folder: %w", err))
	}
	defer dir.Close()
	lk, err := lockfile.Generate(reg, dir.ReadFile)
	if err != nil {
		return reportProblems(g, promptProblems(g, reg.Dir, err))
	}
	data := lk.Marshal()
	old, err := os.ReadFile(g.lock)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return inputErr(fmt.Errorf("lock: %w", err))
	}
	res := lockResult{Schema: "govledger.lock/v1", Lock: g.lock, Agents: len(lk.Agents), Changed: !bytes.Equal(old, data)}
	if res.Changed && old != nil {
		if prev, err := lockfile.Parse(g.lock, old); err == nil {
			res.ChangedAgents = lockfile.ChangedAgents(prev, lk)
		}
	}
	if res.Changed {
		if err := lockfile.WriteFile(g.lock, data, 0o644); err != nil {
			return internalErr(fmt.Errorf("writing %s: %w", g.lock, err))
		}
	}
	if g.output == "json" {
		return writeJSON(g.stdout, res)
	}
	state := "unchanged"
	if res.Changed {
		state = "written"
	}
	detail := count(res.Agents, "agent")
	if len(res.ChangedAgents) > 0 {
		detail += "; prompts changed: " + strings.Join(res.ChangedAgents, ", ")
	}
	_, err = fmt.Fprintf(g.stdout, "%s: %s (%s)\n", g.lock, state, detail)
	return err
}

// loadRegistry loads --manifest; an invalid registry is reported one
// problem per line on stderr (and, for lock check, as annotations or
// SARIF results).
func loadRegistry(g *globals) (*manifest.Registry, error) {
	reg, err := manifest.Load(g.manifest)
	if err == nil {
		return reg, nil
	}
	var list manifest.ErrorList
	if errors.As(err, &list) {
		return nil, reportList(g, list)
	}
	return nil, reportProblems(g, []inputProblem{{Rule: ruleInvalidInput, File: relPath(g.manifest),
		Text: fmt.Sprintf("manifest %s: %v", g.manifest, err)}})
}

// inputProblem is a reason lock check could not compare: an invalid or
// missing registry, lock or prompt file.
type inputProblem struct {
	Rule      string // ruleMissingLock or ruleInvalidInput
	File      string // slash-separated, relative to the working directory
	Line, Col int    // 0 when unknown
	Message   string // for annotations: without the file and position
	Text      string // for stderr: the whole error
}

// Rules of the problems that stop lock check before it compares.
const (
	ruleMissingLock  = "MISSING_LOCK"
	ruleInvalidInput = "INVALID_INPUT"
)

func reportList(g *globals, list manifest.ErrorList) error {
	probs := make([]inputProblem, len(list))
	for i, e := range list {
		msg := e.Err.Error()
		if e.Field != "" {
			msg = e.Field + ": " + msg
		}
		probs[i] = inputProblem{Rule: ruleInvalidInput, File: relPath(e.File), Line: e.Line, Col: e.Col, Message: msg, Text: e.Error()}
	}
	return reportProblems(g, probs)
}

// reportProblems writes each problem on stderr, one line each, and also
// on stdout in the CI formats: an ::error annotation under --output
// github, a SARIF log with one result per problem under --output sarif
// (so an upload step gets a valid file that shows them). Exit 2.
func reportProblems(g *globals, probs []inputProblem) error {
	switch g.output {
	case outGitHub:
		var b strings.Builder
		for _, p := range probs {
			msg := p.Message
			if msg == "" {
				msg = p.Text
			}
			fmt.Fprintf(&b, "::error file=%s", ghProperty(p.File))
			if p.Line > 0 {
				fmt.Fprintf(&b, ",line=%d,col=%d", p.Line, max(p.Col, 1))
			}
			fmt.Fprintf(&b, ",title=%s::%s\n", p.Rule, ghData(msg))
		}
		if _, err := io.WriteString(g.stdout, b.String()); err != nil {
			return err
		}
	case outSARIF:
		if err := writeJSON(g.stdout, problemsSARIF(probs)); err != nil {
			return err
		}
	}
	switch g.output {
	case outGitHub:
		// The annotations are the log's lines already: not twice.
	case outSARIF:
		// Standard output is the SARIF file; the log gets one line.
		fmt.Fprintf(g.stderr, "govledger: %s written as SARIF results (exit 2)\n", count(len(probs), "problem"))
	default:
		for _, p := range probs {
			fmt.Fprintf(g.stderr, "govledger: %s\n", oneLine(p.Text))
		}
	}
	return &exitError{code: exitUsage, err: errFound}
}

// lockCheckResult is the report of "lock check", rendered by every output.
type lockCheckResult struct {
	Schema   string        `json:"schema"`
	Manifest string        `json:"manifest"`
	Lock     string        `json:"lock"`
	InSync   bool          `json:"in_sync"`
	Agents   int           `json:"agents"`
	Findings []lockFinding `json:"findings"`
}

type lockFinding struct {
	// File is the file at fault, relative to the working directory and
	// slash-separated: the prompt file, the lock for STALE_ENTRY, the
	// manifest for VERSION_DRIFT (a skills folder: the agent's SKILL.md).
	File string `json:"file"`
	// Line is the line of File at fault when known (the agent's
	// agent_version in a manifest), else 0.
	Line int `json:"line,omitzero"`
	lockfile.Finding
}

func runLockCheck(g *globals) error {
	switch g.output {
	case "text", "json", "github", "sarif":
	default:
		return usageErr("lock check: --output %q: want text, json, github or sarif", g.output)
	}
	reg, err := loadRegistry(g)
	if err != nil {
		return err
	}
	lockProblem := func(rule, msg string) error {
		return reportProblems(g, []inputProblem{{Rule: rule, File: relPath(g.lock), Message: msg, Text: "lock " + msg}})
	}
	data, err := os.ReadFile(g.lock)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return lockProblem(ruleMissingLock, fmt.Sprintf("%s does not exist: run 'govledger lock' first, and commit it", g.lock))
		}
		return lockProblem(ruleInvalidInput, err.Error())
	}
	lk, err := lockfile.Parse(g.lock, data)
	if err != nil {
		var list manifest.ErrorList
		if errors.As(err, &list) {
			return reportList(g, list)
		}
		return lockProblem(ruleInvalidInput, err.Error())
	}
	dir, err := lockfile.OpenDir(reg.Dir)
	if err != nil {
		return reportProblems(g, []inputProblem{{Rule: ruleInvalidInput, File: relPath(g.manifest),
			Text: fmt.Sprintf("registry folder: %v", err)}})
	}
	defer dir.Close()
	rep, err := lockfile.Check(reg, lk, dir.ReadFile)
	if err != nil {
		return reportProblems(g, promptProblems(g, reg.Dir, err))
	}
	res := lockCheckResult{Schema: "govledger.lockcheck/v1", Manifest: filepath.ToSlash(g.manifest), Lock: filepath.ToSlash(g.lock),
		InSync: rep.InSync, Agents: rep.Agents, Findings: make([]lockFinding, len(rep.Findings))}
	for i, f := range rep.Findings {
		lf := lockFinding{File: relPath(filepath.Join(reg.Dir, filepath.FromSlash(f.PromptPath))), Finding: f}
		switch {
		case f.Class == lockfile.StaleEntry:
			lf.File = relPath(g.lock)
		case f.Class == lockfile.VersionDrift && !reg.FromSkills:
			// The version is a line of the manifest, not of the prompt.
			lf.File, lf.Line = relPath(g.manifest), versionLine(reg, f.AgentID)
		}
		res.Findings[i] = lf
	}
	switch g.output {
	case "json":
		err = writeJSON(g.stdout, res)
	case "github":
		err = writeLockGitHub(g.stdout, res)
	case "sarif":
		err = writeJSON(g.stdout, lockSARIF(res))
	default:
		err = writeLockText(g.stdout, res)
	}
	if err != nil {
		return err
	}
	if !res.InSync {
		return found()
	}
	return nil
}

// versionLine is the line of agent id's agent_version in the manifest
// reg was parsed from (its snapshot holds the file's bytes), or 0.
func versionLine(reg *manifest.Registry, id string) int {
	for i, a := range reg.Agents {
		if a.ID == id {
			line, _ := strictjson.NewPositions(reg.Snapshot).At("/agents/" + strconv.Itoa(i) + "/agent_version")
			return line
		}
	}
	return 0
}

// relPath makes p relative to the working directory when it is absolute
// and inside it, and slash-separated (SARIF and GitHub want repository
// paths).
func relPath(p string) string {
	if filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(r) {
				p = r
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// shortHash is the first 12 hex digits of a "sha256:..." digest.
func shortHash(h string) string {
	h = strings.TrimPrefix(h, lockfile.DigestPrefix)
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// findingLine is one finding without its class and file.
func findingLine(f lockFinding) string {
	var b strings.Builder
	switch {
	case f.LockedHash != "" && f.ActualHash != "" && f.LockedHash != f.ActualHash:
		fmt.Fprintf(&b, "locked %s, now %s: ", shortHash(f.LockedHash), shortHash(f.ActualHash))
	case f.LockedHash != "" && f.Class != lockfile.StaleEntry:
		fmt.Fprintf(&b, "locked %s: ", shortHash(f.LockedHash))
	case f.ActualHash != "":
		fmt.Fprintf(&b, "now %s: ", shortHash(f.ActualHash))
	}
	b.WriteString(f.Message)
	return b.String()
}

func writeLockText(w io.Writer, res lockCheckResult) error {
	var b strings.Builder
	if res.InSync {
		fmt.Fprintf(&b, "in sync: %s match %s\n", count(res.Agents, "agent"), res.Lock)
	} else {
		for _, f := range res.Findings {
			fmt.Fprintf(&b, "%s %s %s: %s\n", f.Class, f.AgentID, f.File, findingLine(f))
		}
		fmt.Fprintf(&b, "drift: %s for %s; review the prompts, then run 'govledger lock'\n", count(len(res.Findings), "finding"), count(res.Agents, "agent"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// GitHub workflow commands: https://docs.github.com/actions/reference/workflow-commands-for-github-actions
func writeLockGitHub(w io.Writer, res lockCheckResult) error {
	var b strings.Builder
	if res.InSync {
		fmt.Fprintf(&b, "::notice title=govledger lock check::in sync: %d agents match %s\n", res.Agents, ghData(res.Lock))
	}
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "::error file=%s", ghProperty(f.File))
		if f.Line > 0 {
			fmt.Fprintf(&b, ",line=%d", f.Line)
		}
		fmt.Fprintf(&b, ",title=%s::%s\n", ghProperty(string(f.Class)), ghData(f.AgentID+": "+findingLine(f)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), the subset
// GitHub code scanning reads.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string      `json:"id"`
	Name                 string      `json:"name"`
	ShortDescription     sarifText   `json:"shortDescription"`
	FullDescription      sarifText   `json:"fullDescription"`
	Help                 sarifText   `json:"help"`
	DefaultConfiguration sarifConfig `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitzero"`
}

const sarifSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

var lockRules = []sarifRule{
	{ID: string(lockfile.Changed), Name: "PromptChanged",
		ShortDescription: sarifText{"Prompt file differs from the lock"},
		FullDescription:  sarifText{"The SHA-256 of the prompt file's exact bytes differs from prompt-lock.json, or the prompt moved to another path. Line-ending, BOM and trailing-white-space changes are named but are still drift."},
		Help:             sarifText{"Review the prompt change; if it is intended, run 'govledger lock' and commit prompt-lock.json. For line-ending-only drift, check .gitattributes (eol=lf) and core.autocrlf."}},
	{ID: string(lockfile.MissingFile), Name: "PromptMissing",
		ShortDescription: sarifText{"Locked prompt file is missing"},
		FullDescription:  sarifText{"An agent in the lock has no prompt file at its prompt_path."},
		Help:             sarifText{"Restore the prompt file, or remove the agent from the registry and run 'govledger lock'."}},
	{ID: string(lockfile.Unlocked), Name: "AgentUnlocked",
		ShortDescription: sarifText{"Agent is not in the lock"},
		FullDescription:  sarifText{"The registry declares an agent that prompt-lock.json does not pin."},
		Help:             sarifText{"Review the new agent's prompt, then run 'govledger lock' and commit prompt-lock.json."}},
	{ID: string(lockfile.StaleEntry), Name: "StaleLockEntry",
		ShortDescription: sarifText{"Lock entry for an unknown agent"},
		FullDescription:  sarifText{"prompt-lock.json pins an agent that the registry no longer declares."},
		Help:             sarifText{"Run 'govledger lock' to drop the stale entry, and commit prompt-lock.json."}},
	{ID: string(lockfile.VersionDrift), Name: "VersionDrift",
		ShortDescription: sarifText{"Agent version differs from the lock"},
		FullDescription:  sarifText{"The agent_version in the registry differs from the version recorded in prompt-lock.json."},
		Help:             sarifText{"Review the version change, then run 'govledger lock' and commit prompt-lock.json."}},
}

func lockSARIF(res lockCheckResult) sarifLog {
	rules := make([]sarifRule, len(lockRules))
	for i, r := range lockRules {
		r.DefaultConfiguration.Level = "error"
		rules[i] = r
	}
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{Name: "govledger", Version: buildVersion().Version, InformationURI: "https://github.com/govledger/govledger",
			Rules: rules}},
		Results: []sarifResult{},
	}
	for _, f := range res.Findings {
		idx := 0
		for i, r := range lockRules {
			if r.ID == string(f.Class) {
				idx = i
			}
		}
		run.Results = append(run.Results, sarifResult{
			RuleID: string(f.Class), RuleIndex: idx, Level: "error",
			Message: sarifText{f.AgentID + ": " + findingLine(f)},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
				ArtifactLocation: sarifArtifact{URI: (&url.URL{Path: f.File}).EscapedPath()},
				Region:           sarifRegion{StartLine: max(f.Line, 1)},
			}}},
		})
	}
	return sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}
}

// promptProblems lists the prompt files lockfile.Check could not read
// (a joined error of *lockfile.FileError).
func promptProblems(g *globals, regDir string, err error) []inputProblem {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	probs := make([]inputProblem, len(errs))
	for i, e := range errs {
		p := inputProblem{Rule: ruleInvalidInput, File: relPath(g.manifest), Text: e.Error()}
		var fe *lockfile.FileError
		if errors.As(e, &fe) {
			p.File = relPath(filepath.Join(regDir, filepath.FromSlash(fe.Path)))
		}
		probs[i] = p
	}
	return probs
}

var problemRules = []sarifRule{
	{ID: ruleMissingLock, Name: "LockMissing",
		ShortDescription: sarifText{"The prompt lock does not exist"},
		FullDescription:  sarifText{"lock check found no prompt-lock.json to compare the registry with, so no prompt is pinned."},
		Help:             sarifText{"Review the prompts, run 'govledger lock' and commit prompt-lock.json."}},
	{ID: ruleInvalidInput, Name: "InvalidInput",
		ShortDescription: sarifText{"The registry, the lock or a prompt file cannot be read"},
		FullDescription:  sarifText{"lock check stopped before comparing: a file is missing, unreadable or invalid (the message names the field)."},
		Help:             sarifText{"Fix the file named in the result; 'govledger lock check' lists every problem."}},
}

// problemsSARIF is a SARIF log of problems that stopped lock check.
func problemsSARIF(probs []inputProblem) sarifLog {
	rules := make([]sarifRule, len(problemRules))
	for i, r := range problemRules {
		r.DefaultConfiguration.Level = "error"
		rules[i] = r
	}
	run := sarifRun{
		Tool:    sarifTool{Driver: sarifDriver{Name: "govledger", Version: buildVersion().Version, InformationURI: "https://github.com/govledger/govledger", Rules: rules}},
		Results: []sarifResult{},
	}
	for _, p := range probs {
		idx := 0
		for i, r := range problemRules {
			if r.ID == p.Rule {
				idx = i
			}
		}
		msg := p.Message
		if msg == "" {
			msg = p.Text
		}
		run.Results = append(run.Results, sarifResult{
			RuleID: p.Rule, RuleIndex: idx, Level: "error", Message: sarifText{msg},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
				ArtifactLocation: sarifArtifact{URI: (&url.URL{Path: p.File}).EscapedPath()},
				Region:           sarifRegion{StartLine: max(p.Line, 1), StartColumn: p.Col},
			}}},
		})
	}
	return sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}
}
