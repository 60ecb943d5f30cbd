// Package demo is govledger's worked example, embedded: a registry
// (registry/prompt-manifest.json and its prompts), the same agents as a
// skills folder (skills/*/SKILL.md), a dozen handoffs of every format —
// accepted, hash mismatch, blocked agent, boundary violation, replay,
// garbage bytes — and the files they refer to (root/). The demo command,
// the benchmarks and the tests build on it, so what they decide is what
// govledger decides in use.
package demo

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/govledger/govledger/govern"
	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
	"github.com/govledger/govledger/policy"
)

//go:embed data
var data embed.FS

// Epoch is the demo's pinned clock start, so every run of the demo prints
// the same hashes.
var Epoch = time.Date(2026, 2, 11, 0, 50, 0, 0, time.UTC)

// Unpack writes the embedded example data under dir: registry/ (a
// manifest), skills/ (a skills folder), handoffs/, and root/ (the files the
// hand-offs refer to).
func Unpack(dir string) error {
	return fs.WalkDir(data, "data", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("data", path)
		out := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := data.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
}

// Document returns an embedded hand-off by file name.
func Document(name string) ([]byte, error) { return fs.ReadFile(data, "data/handoffs/"+name) }

// Config loads the unpacked registry "registry" or "skills" under dir,
// locks it (writing dir/NAME-lock.json) and returns a decision config whose
// root is dir/root.
func Config(dir, name string) (*govern.Config, error) {
	root := filepath.Join(dir, "root")
	path := filepath.Join(dir, name)
	if name == "registry" {
		path = filepath.Join(path, "prompt-manifest.json")
	}
	reg, err := manifest.Load(path)
	if err != nil {
		return nil, err
	}
	lk, err := lockfile.Generate(reg, lockfile.DirOpener(reg.Dir))
	if err != nil {
		return nil, err
	}
	lockBytes := lk.Marshal()
	if err := os.WriteFile(filepath.Join(dir, name+"-lock.json"), lockBytes, 0o644); err != nil {
		return nil, err
	}
	return &govern.Config{
		Registry: reg, Lock: lk, LockBytes: lockBytes, Root: root,
		Params: policy.Params{MaxAge: int64(govern.DefaultMaxAge), MaxPayload: govern.DefaultMaxPayload},
	}, nil
}

var (
	reTimestamp = regexp.MustCompile(`(?m)^(\s*timestamp:\s*)"[^"]*"`)
	reExpires   = regexp.MustCompile(`(?m)^(\s*expires_at:\s*)"[^"]*"`)
	reWorkflow  = regexp.MustCompile(`(?m)^(\s*workflow_id:\s*)"?[^"\n]*"?`)
	rePayload   = regexp.MustCompile(`(?m)^\s*(payload_hash|payload_size_bytes):.*\n`)
)

// Retime returns a YAML hand-off (swarm/2, skill/1) with its timestamp set
// to now, its expiry to now+1h and its workflow id replaced, for
// generating distinct current documents (bench). The optional swarm/2
// payload_hash and payload_size_bytes lines are dropped, since they would
// no longer match.
func Retime(doc []byte, now time.Time, workflowID string) []byte {
	doc = rePayload.ReplaceAll(doc, nil)
	doc = reTimestamp.ReplaceAll(doc, []byte(`${1}"`+now.UTC().Format(time.RFC3339)+`"`))
	doc = reExpires.ReplaceAll(doc, []byte(`${1}"`+now.UTC().Add(time.Hour).Format(time.RFC3339)+`"`))
	return reWorkflow.ReplaceAll(doc, []byte(`${1}"`+workflowID+`"`))
}
