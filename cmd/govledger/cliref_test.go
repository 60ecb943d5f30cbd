package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// cliReference renders the command tree as the Markdown page
// docs/reference/cli.md: every command with its usage, its help text and
// a table of its flags, generated from the same cli.Command values the
// binary runs, so the page cannot say what the CLI does not do.
func cliReference(app *cli.App) string {
	var b strings.Builder
	b.WriteString("# CLI reference\n\n")
	b.WriteString("Generated from the command tree by `go test ./cmd/govledger -run TestCLIReference -update`;\n")
	b.WriteString("a test fails when this page and the binary differ. `govledger COMMAND --help` prints the same.\n\n")
	b.WriteString("## govledger\n\n")
	fmt.Fprintf(&b, "%s\n\n```text\n%s\n```\n\n", app.Usage, strings.TrimSpace(app.Description))
	flagTable(&b, "Global flags", app.Flags)
	walkCommands(app.Commands, "", func(path string, c *cli.Command) {
		if c.Hidden {
			return
		}
		fmt.Fprintf(&b, "## govledger %s\n\n%s\n\n", path, c.Usage)
		if c.ArgsUsage != "" {
			fmt.Fprintf(&b, "Arguments: `%s`\n\n", c.ArgsUsage)
		}
		if d := strings.TrimSpace(c.Description); d != "" {
			fmt.Fprintf(&b, "```text\n%s\n```\n\n", d)
		}
		flagTable(&b, "Flags", c.Flags)
	})
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func flagTable(b *strings.Builder, title string, flags []cli.Flag) {
	var rows []string
	for _, f := range flags {
		d, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		var names []string
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			names = append(names, "`"+dash+n+"`")
		}
		def := d.GetDefaultText()
		if def == "" && d.TakesValue() {
			def = d.GetValue()
		}
		if def != "" && def != `""` {
			def = "`" + def + "`"
		}
		if env := d.GetEnvVars(); len(env) > 0 {
			def = strings.TrimSpace(def + " (`$" + strings.Join(env, "`, `$") + "`)")
		}
		usage := strings.ReplaceAll(d.GetUsage(), "|", `\|`)
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", strings.Join(names, ", "), usage, def))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n\n| flag | meaning | default |\n|---|---|---|\n%s\n\n", title, strings.Join(rows, "\n"))
}

// TestCLIReference holds docs/reference/cli.md to the command tree; -update
// rewrites it.
func TestCLIReference(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "reference", "cli.md")
	got := cliReference(testApp())
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("docs/reference/cli.md is stale at line %d:\n  page: %s\n  CLI:  %s\nrun: go test ./cmd/govledger -run TestCLIReference -update", i+1, wl[i], gl[i])
			}
		}
		t.Fatalf("docs/reference/cli.md is stale (%d lines, the CLI gives %d): run go test ./cmd/govledger -run TestCLIReference -update", len(wl), len(gl))
	}
}
