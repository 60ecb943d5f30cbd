package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"go.yaml.in/yaml/v3"

	"github.com/govledger/govledger/manifest"
)

// readmeSection returns the text of the README from heading to the next
// heading of the same or a higher level.
func readmeSection(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q", heading)
	}
	level := strings.Index(heading, " ") // number of #
	rest := readme[i+len(heading)+2:]
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^#{1,%d} `, level))
	if j := re.FindStringIndex(rest); j != nil {
		rest = rest[:j[0]]
	}
	return rest
}

// collectKeys adds every mapping key of a decoded JSON or YAML value.
func collectKeys(v any, keys map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			keys[k] = true
			collectKeys(x, keys)
		}
	case []any:
		for _, x := range v {
			collectKeys(x, keys)
		}
	}
}

// free-form values whose keys are the producer's, not the format's.
var freeForm = map[string]bool{"input_data": true, "accumulated_context": true, "conversation_history": true, "decisions_made": true}

func collectFormatKeys(v any, keys map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		if l, ok := v.([]any); ok {
			for _, x := range l {
				collectFormatKeys(x, keys)
			}
		}
		return
	}
	for k, x := range m {
		keys[k] = true
		if !freeForm[k] {
			collectFormatKeys(x, keys)
		}
	}
}

// TestFieldReference holds the field reference (docs/reference/files.md) to the code and
// the corpus: every field of the registry types, of the lock, of SKILL.md
// handoff blocks, and every key of every valid document of each hand-off
// format, is named in its subsection.
func TestFieldReference(t *testing.T) {
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "reference", "files.md"))
	if err != nil {
		t.Fatal(err)
	}
	ref := readmeSection(t, string(b), "## Field reference")
	named := func(section, key string) bool {
		// `key`, `a.key.b`, `…key`, `{key, …}`, `key[]`
		return regexp.MustCompile("(?:[`.{ ]|…)" + regexp.QuoteMeta(key) + "[`.,}\\[ ]").MatchString(section)
	}

	// The manifest: every field a manifest agent has (the skill-only
	// fields belong to the SKILL.md table).
	man := readmeSection(t, ref, "### prompt-manifest.json")
	skill := readmeSection(t, ref, "### SKILL.md front matter (`--manifest skills/`)")
	skillOnly := map[string]bool{"accepts_handoff": true, "handoff_categories": true, "handoff_description": true,
		"handoff_trigger": true, "protocol_version": true, "health_check": true, "requires": true, "optional_consumes": true}
	at := reflect.TypeFor[manifest.Agent]()
	for i := range at.NumField() {
		tag, _, _ := strings.Cut(at.Field(i).Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		section, name := man, "prompt-manifest.json"
		if skillOnly[tag] {
			section, name = skill, "SKILL.md"
		}
		if !named(section, tag) {
			t.Errorf("field reference (%s) does not name %q", name, tag)
		}
	}
	for _, k := range []string{"manifest_version", "agents", "percent"} {
		if !named(man, k) {
			t.Errorf("field reference (prompt-manifest.json) does not name %q", k)
		}
	}
	// SKILL.md: every key of the example skills' front matter.
	skillKeys := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "testdata", "skills", "*", "SKILL.md"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parts := bytes.SplitN(data, []byte("---\n"), 3)
		if len(parts) < 3 || !bytes.Contains(parts[1], []byte("\nhandoff:")) {
			continue
		}
		var fm map[string]any
		if err := yaml.Unmarshal(parts[1], &fm); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for k := range fm {
			if k != "description" && k != "license" {
				skillKeys[k] = true
			}
		}
		collectKeys(fm["handoff"], skillKeys)
	}
	if len(skillKeys) < 5 {
		t.Fatalf("found %d SKILL.md keys in testdata/skills", len(skillKeys))
	}
	for k := range skillKeys {
		if !named(skill, k) {
			t.Errorf("field reference (SKILL.md) does not name %q", k)
		}
	}
	// The lock: every key of the committed example lock.
	lock := readmeSection(t, ref, "### prompt-lock.json")
	var lk map[string]any
	lb, err := os.ReadFile(filepath.Join(root, "testdata", "registry", "prompt-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lb, &lk); err != nil {
		t.Fatal(err)
	}
	lockKeys := map[string]bool{"lock_version": true, "agents": true}
	for _, e := range lk["agents"].(map[string]any) {
		collectKeys(e, lockKeys)
	}
	for k := range lockKeys {
		if !named(lock, k) {
			t.Errorf("field reference (prompt-lock.json) does not name %q", k)
		}
	}

	// Hand-off formats: every key of every valid corpus document.
	docs := readmeSection(t, ref, "### Hand-off documents")
	// The section's first fenced block (``` or ~~~, prose may come before
	// it), else the section itself.
	handoffBlock := regexp.MustCompile("(?s)## Handoff[ \\t]*\n(?:[^`~]*?(?:```+|~~~+)(?:yaml|yml)?\n(.*?)(?:```|~~~)|(.*?)(?:\n#|\n---|$))")
	for _, format := range []string{"governed", "swarm", "skill", "vbw", "task"} {
		start := strings.Index(docs, "**"+format+"/")
		if start < 0 {
			t.Errorf("field reference has no **%s/…** part", format)
			continue
		}
		section := docs[start:]
		if end := strings.Index(section[2:], "\n**"); end >= 0 {
			section = section[:end+2]
		}
		keys := map[string]bool{}
		entries, err := os.ReadDir(filepath.Join(root, "testdata", "handoffs", format, "valid"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() == "expect.json" || strings.HasPrefix(e.Name(), "newer-version") || strings.HasPrefix(e.Name(), "unknown-fields") {
				continue // unknown fields on purpose
			}
			data, err := os.ReadFile(filepath.Join(root, "testdata", "handoffs", format, "valid", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			var v any
			switch {
			case strings.HasSuffix(e.Name(), ".json"):
				if err := json.Unmarshal(data, &v); err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
			case strings.HasSuffix(e.Name(), ".md"):
				m := handoffBlock.FindSubmatch(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
				if m == nil {
					continue // vbw/1 markdown: no fields
				}
				block := m[1]
				if block == nil {
					block = m[2]
				}
				if err := yaml.Unmarshal(block, &v); err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
			default:
				if err := yaml.Unmarshal(data, &v); err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
			}
			collectFormatKeys(v, keys)
		}
		if len(keys) < 5 {
			t.Errorf("%s: only %d keys found in the valid corpus", format, len(keys))
		}
		var missing []string
		for k := range keys {
			if !named(section, k) {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("field reference (%s/…) does not name %q", format, missing)
		}
	}
}

// TestDocLinks: every relative link of the README, the project files and
// the manual names a file of the repository (a user's clone has it).
func TestDocLinks(t *testing.T) {
	root := moduleRoot(t)
	pages := []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "CHANGELOG.md"}
	filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			pages = append(pages, rel)
		}
		return err
	})
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			p := filepath.Join(root, filepath.Dir(page), filepath.FromSlash(target))
			if rel, err := filepath.Rel(root, p); err != nil || !filepath.IsLocal(rel) {
				t.Errorf("%s links %s, outside the repository", page, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s: %v", page, m[1], err)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links found: the link pattern is broken", n)
	}
}
