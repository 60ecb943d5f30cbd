package main

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/urfave/cli/v2"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

// walkCommands calls fn for every command and subcommand with its path
// ("lock check").
func walkCommands(cmds []*cli.Command, parent string, fn func(path string, c *cli.Command)) {
	for _, c := range cmds {
		path := strings.TrimSpace(parent + " " + c.Name)
		fn(path, c)
		walkCommands(c.Subcommands, path, fn)
	}
}

func testApp() *cli.App {
	return newApp(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" })
}

// TestCommandDocs holds every command to the help a user needs: a one-line
// Usage, a Description with an "Examples:" block showing the command, and
// a Usage for every flag.
func TestCommandDocs(t *testing.T) {
	app := testApp()
	if app.Usage == "" || !strings.Contains(app.Description, "Examples:") {
		t.Errorf("govledger: Usage %q, Description without Examples", app.Usage)
	}
	for _, f := range app.Flags {
		if f.(cli.DocGenerationFlag).GetUsage() == "" {
			t.Errorf("govledger --%s has no Usage", f.Names()[0])
		}
	}
	n := 0
	walkCommands(app.Commands, "", func(path string, c *cli.Command) {
		n++
		if c.Usage == "" {
			t.Errorf("%s: no Usage", path)
		}
		ex := strings.Index(c.Description, "Examples:")
		if ex < 0 {
			t.Errorf("%s: Description has no Examples: block", path)
		} else if !strings.Contains(c.Description[ex:], "govledger ") || !strings.Contains(c.Description[ex:], c.Name) {
			t.Errorf("%s: Examples do not show the command", path)
		}
		if c.Action == nil {
			t.Errorf("%s: no Action", path)
		}
		for _, f := range c.Flags {
			if f.(cli.DocGenerationFlag).GetUsage() == "" {
				t.Errorf("%s --%s has no Usage", path, f.Names()[0])
			}
		}
	})
	if n < 20 {
		t.Errorf("walked %d commands; the walk is broken", n)
	}
}

// TestExamplesParse: every example in the help (the app's and each
// command's) parses as the command it names: its flags come before its
// arguments (noFlagsAfterArgs refuses a flag after an argument, since
// urfave/cli would otherwise ignore it).
func TestExamplesParse(t *testing.T) {
	app := testApp()
	takesValue := func(flags []cli.Flag) map[string]bool {
		m := map[string]bool{}
		for _, f := range flags {
			_, boolean := f.(*cli.BoolFlag)
			for _, n := range f.Names() {
				m[n] = !boolean
			}
		}
		return m
	}
	global := takesValue(app.Flags)
	// skipFlags returns the index of the first word at or after i that is
	// not a flag of flags or its value.
	skipFlags := func(words []string, i int, flags map[string]bool) int {
		for i < len(words) && strings.HasPrefix(words[i], "-") && words[i] != "-" {
			name, _, hasValue := strings.Cut(strings.TrimLeft(words[i], "-"), "=")
			if !hasValue && flags[name] {
				i++
			}
			i++
		}
		return i
	}
	// Example lines by where they are: each help's Examples block, and
	// the README's shell code blocks.
	examples := map[string][]string{}
	add := func(where, d string) {
		if ex := strings.Index(d, "Examples:"); ex >= 0 {
			examples[where] = strings.Split(d[ex:], "\n")
		}
	}
	add("govledger --help", app.Description)
	walkCommands(app.Commands, "", func(path string, c *cli.Command) { add(path+" --help", c.Description) })
	// The README and every page of the manual.
	docs := []string{"../../README.md"}
	filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return err
	})
	for _, path := range docs {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		where := strings.TrimPrefix(path, "../../")
		inCode := false
		for _, line := range strings.Split(string(text), "\n") {
			switch {
			case strings.HasPrefix(line, "```"):
				inCode = !inCode && (line == "```sh" || line == "```bash" || line == "```shell")
			case inCode:
				examples[where] = append(examples[where], line)
			}
		}
	}
	// The viewer's templates show commands in <code> elements.
	templates, err := filepath.Glob("../../server/ui/templates/*.html")
	if err != nil || len(templates) == 0 {
		t.Fatalf("no viewer templates: %v", err)
	}
	for _, path := range templates {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`<code>(govledger [^<]*)</code>`).FindAllStringSubmatch(string(text), -1) {
			where := strings.TrimPrefix(path, "../../")
			examples[where] = append(examples[where], html.UnescapeString(m[1]))
		}
	}
	n := 0
	for where, lines := range examples {
		for _, line := range lines {
			line = strings.TrimSpace(line)
			words := shellWords(line)
			if len(words) == 0 || words[0] != "govledger" {
				continue
			}
			i := skipFlags(words, 1, global)
			var c *cli.Command
			for cmds := app.Commands; i < len(words); i++ {
				next := (*cli.Command)(nil)
				for _, sub := range cmds {
					if slices.Contains(sub.Names(), words[i]) {
						next = sub
					}
				}
				if next == nil {
					break
				}
				c, cmds = next, next.Subcommands
			}
			if c == nil {
				continue // the app's own flags alone
			}
			n++
			local := takesValue(c.Flags)
			arg := ""
			for i < len(words) {
				if j := skipFlags(words, i, local); j > i {
					for k := i; k < j; k++ {
						w := words[k]
						name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
						if _, ok := local[name]; !ok && name != "help" && name != "h" {
							t.Errorf("%s: example %q: %s has no flag %s", where, line, c.FullName(), w)
						} else if !hasValue && local[name] {
							k++ // its value
						}
					}
					if arg != "" {
						t.Errorf("%s: example %q: flag %s after the argument %q is refused", where, line, words[i], arg)
						break
					}
					i = j
					continue
				}
				arg = words[i]
				i++
			}
		}
	}
	if n < 40 {
		t.Errorf("checked %d examples; the parse is broken", n)
	}
}

// shellWords splits an example command line as a shell would, as far as
// the examples need: words, '…' and "…" quoting, and an end at a pipe,
// a redirection, a command list or a comment.
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		case !inWord && strings.ContainsRune("|&;<>#", r):
			return out
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

// TestOutputTable: the outputs table names every command, and nothing
// else; a format a command does not write is refused with exit 2 before
// the command runs, by every command; the formats it writes pass.
func TestOutputTable(t *testing.T) {
	app := testApp()
	var formats []string
	for _, fs := range outputs {
		for _, f := range fs {
			if !slices.Contains(formats, f) {
				formats = append(formats, f)
			}
		}
	}
	if len(formats) != 5 {
		t.Fatalf("formats in the table: %v", formats)
	}
	seen := map[string]bool{"": true}
	walkCommands(app.Commands, "", func(path string, c *cli.Command) {
		seen[path] = true
		if _, ok := outputs[path]; !ok {
			t.Errorf("command %q is not in the outputs table (output.go): declare the formats it writes", path)
		}
	})
	for path := range outputs {
		if !seen[path] {
			t.Errorf("outputs table names %q, which is no command", path)
		}
	}
	dir := t.TempDir()
	walkCommands(app.Commands, "", func(path string, c *cli.Command) {
		for _, f := range formats {
			supported := slices.Contains(outputs[path], f)
			if err := checkOutput(path, f); (err == nil) != supported {
				t.Errorf("checkOutput(%q, %q) = %v; table says supported=%v", path, f, err, supported)
			}
			if supported {
				continue
			}
			// Nothing may run: the refusal comes before the action, so
			// even bench and demo return at once.
			args := append([]string{"govledger", "--db", filepath.Join(dir, "none.db"), "--output", f}, strings.Fields(path)...)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
			want := "govledger: " + path + ": --output \"" + f + "\": want " + orList(outputs[path]) + "\n"
			if code != exitUsage || stderr.String() != want || stdout.Len() != 0 {
				t.Errorf("%s --output %s: exit %d, stderr %q, stdout %q; want exit 2 and %q", path, f, code, stderr.String(), stdout.String(), want)
			}
		}
	})
	// The same refusal when the format comes after the command or from
	// the environment.
	for _, args := range [][]string{{"verify", "--output", "sarif"}, {"verify", "-o", "github"}} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "verify: --output") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"govledger", "stats"}, strings.NewReader(""), io.Discard, &stderr,
		func(k string) string { return map[string]string{"GOVLEDGER_OUTPUT": "seed-error"}[k] })
	if code != exitUsage || !strings.Contains(stderr.String(), `stats: --output "seed-error": want text or json`) {
		t.Errorf("GOVLEDGER_OUTPUT=seed-error stats: exit %d, %q", code, stderr.String())
	}
}

func TestSuggest(t *testing.T) {
	cmds := []string{"lock", "validate", "record", "verify", "log", "show", "trace", "export", "stats", "verify-proof", "redact", "out"}
	for _, tc := range []struct {
		typed string
		want  []string
	}{
		{"recrod", []string{"record"}},
		{"RECORD", []string{"record"}},
		{"verfiy", []string{"verify"}},
		{"lgo", []string{"log"}},
		{"ver", []string{"verify", "verify-proof"}},
		{"stat", []string{"stats"}},
		{"expotr", []string{"export"}},
		{"frobnicate", nil},
		{"x", nil},
		{"", nil},
		{"zzzz", nil},
		{"bogus", nil}, // 3 edits from "out": too far for 5 letters
	} {
		if got := suggest(tc.typed, cmds); !slices.Equal(got, tc.want) {
			t.Errorf("suggest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"record", "recrod", 1}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"export", "exprot", 1}, {"ab", "ba", 1}, {"héllo", "hello", 1}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// TestDidYouMean: unknown commands and flags are usage errors (exit 2)
// that name the nearest command or flag, and nothing when none is near.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the whole stderr
	}{
		{[]string{"recrod"}, `govledger: unknown command "recrod": did you mean "record"? (see govledger --help)`},
		{[]string{"verfy", "x"}, `govledger: unknown command "verfy": did you mean "verify"? (see govledger --help)`},
		{[]string{"frobnicate"}, `govledger: unknown command "frobnicate" (see govledger --help)`},
		{[]string{"help"}, `govledger: unknown command "help": did you mean --help? (see govledger --help)`},
		{[]string{"lock", "chekc"}, `govledger: lock: unknown command "chekc": did you mean "check"? (see govledger lock --help)`},
		{[]string{"checkpoint", "rotat"}, `govledger: checkpoint: unknown command "rotat": did you mean "rotate"? (see govledger checkpoint --help)`},
		{[]string{"completion", "bahs"}, `govledger: completion: unknown command "bahs": did you mean "bash"? (see govledger completion --help)`},
		{[]string{"verify", "--exprot", "a.jsonl"}, `govledger: verify: flag provided but not defined: -exprot: did you mean --export?`},
		{[]string{"verify", "-exprot", "a.jsonl"}, `govledger: verify: flag provided but not defined: -exprot: did you mean --export?`},
		{[]string{"--outptu", "json", "verify"}, `govledger: flag provided but not defined: -outptu: did you mean --output?`},
		{[]string{"lock", "check", "--ouptut", "sarif"}, `govledger: lock check: flag provided but not defined: -ouptut: did you mean --output?`},
		{[]string{"record", "--stirct", "a.json"}, `govledger: record: flag provided but not defined: -stirct: did you mean --strict?`},
		{[]string{"log", "--zzz"}, `govledger: log: flag provided but not defined: -zzz`},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != exitUsage || strings.TrimSpace(stderr) != tc.want || stdout != "" {
			t.Errorf("%v: exit %d\nstderr %q\nwant   %q\nstdout %q", tc.args, code, stderr, tc.want, stdout)
		}
	}
}

// TestVersionOf covers the build information of each way to build.
func TestVersionOf(t *testing.T) {
	const mod = "github.com/govledger/govledger"
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		text string
		json versionResult
	}{
		{"go install @v1.2.0", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: mod, Version: "v1.2.0"}}, true,
			"govledger v1.2.0 (github.com/govledger/govledger, go1.26.0)\n",
			versionResult{Version: "v1.2.0", GoVersion: "go1.26.0"}},
		{"go build in a clean checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: mod, Version: "v0.0.0-20261102100000-3f2a9c1d0b7e"},
			Settings: vcs("vcs", "git", "vcs.revision", "3f2a9c1d0b7e4a5f", "vcs.time", "2026-11-02T10:00:00Z", "vcs.modified", "false")}, true,
			"govledger v0.0.0-20261102100000-3f2a9c1d0b7e revision 3f2a9c1d0b7e4a5f 2026-11-02T10:00:00Z (github.com/govledger/govledger, go1.26.0)\n",
			versionResult{Version: "v0.0.0-20261102100000-3f2a9c1d0b7e", Revision: "3f2a9c1d0b7e4a5f", Time: "2026-11-02T10:00:00Z", GoVersion: "go1.26.0"}},
		{"go build with uncommitted changes", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: mod, Version: "(devel)"},
			Settings: vcs("vcs.revision", "3f2a", "vcs.modified", "true")}, true,
			"govledger (devel) revision 3f2a, modified (github.com/govledger/govledger, go1.26.0)\n",
			versionResult{Version: "(devel)", Revision: "3f2a", Modified: true, GoVersion: "go1.26.0"}},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: mod, Version: "(devel)"}}, true,
			"govledger (devel) (github.com/govledger/govledger, go1.26.0)\n",
			versionResult{Version: "(devel)", GoVersion: "go1.26.0"}},
	} {
		v := versionOf(tc.bi, tc.ok)
		var b bytes.Buffer
		if err := renderVersion(&b, v); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, b.String(), tc.text)
		}
		tc.json.Schema, tc.json.Module = "govledger.version/v1", mod
		if v != tc.json {
			t.Errorf("%s: %+v, want %+v", tc.name, v, tc.json)
		}
	}
	if v := versionOf(nil, false); v.Version != "(unknown)" || v.Revision != "" {
		t.Errorf("no build info: %+v", v)
	}
	// Through the CLI: JSON with its schema first, and refused formats.
	code, out, _ := runCLI(t, "--output", "json", "--version")
	if code != 0 || !strings.HasPrefix(out, "{\n  \"schema\": \"govledger.version/v1\",") {
		t.Errorf("--version -o json: exit %d, %s", code, out)
	}
	if code, _, stderr := runCLI(t, "--output", "sarif", "--version"); code != exitUsage || !strings.Contains(stderr, `--output "sarif": want text or json`) {
		t.Errorf("--version -o sarif: exit %d, %s", code, stderr)
	}
}

// TestCompletionCandidates runs the completion protocol in process: the
// word being completed comes last before completeFlag.
func TestCompletionCandidates(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"lock", "validate", "handoff", "record", "hook", "verify", "log", "show", "trace", "export", "copy", "stats", "unblock", "blocks",
			"demo", "bench", "keygen", "checkpoint", "publish", "prove", "verify-proof", "monitor", "redact", "registry", "token", "serve", "completion"}},
		{[]string{"ver"}, []string{"verify", "verify-proof"}},
		{[]string{"--o"}, []string{"--output", "--origin"}},
		{[]string{"verify"}, []string{"verify"}},
		{[]string{"lock", ""}, []string{"check"}},
		{[]string{"lock", "ch"}, []string{"check"}},
		{[]string{"checkpoint", "r"}, []string{"rotate"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"verify", "--ex"}, []string{"--export"}},
		// "--" is completed as "-" (urfave/cli stops at "--"); the shell
		// keeps the words that start with what was typed.
		{[]string{"verify", "--"}, []string{"--export", "--checkpoint", "--key", "--state", "--policy", "--server", "--idle-timeout", "--max-download", "--manifest", "--lock", "--db", "--output", "-o", "--origin"}},
		{[]string{"verify", "-o", ""}, []string{"text", "json"}},
		{[]string{"lock", "check", "--output", ""}, []string{"text", "json", "github", "sarif"}},
		{[]string{"lock", "check", "--output", "s"}, []string{"sarif"}},
		{[]string{"--output", ""}, []string{"text", "json", "github", "sarif", "seed-error"}},
		{[]string{"record", "--format", ""}, []string{"governed/1", "swarm/2", "skill/1", "vbw/1", "task/1", "a2a/1"}},
		{[]string{"log", "--decision", ""}, []string{"accepted", "rejected"}},
		{[]string{"log", "--kind", "s"}, []string{"snapshot"}},
		{[]string{"serve", "--witness-mode", ""}, []string{"fail-open", "fail-closed"}},
		{[]string{"log", "--kind", "o"}, []string{"outcome"}},
		{[]string{"record", "--wo"}, []string{"--workflow"}},
		{[]string{"record", "--strict", ""}, nil},    // files
		{[]string{"show", "12"}, nil},                // an argument
		{[]string{"--db", "x.db", "stats", ""}, nil}, // no subcommands
		{[]string{"record", "--format", "governed/1", ""}, nil},
	} {
		code, stdout, stderr := runCLI(t, append(tc.args, completeFlag)...)
		got := strings.Fields(stdout)
		if code != 0 || !slices.Equal(got, tc.want) || stderr != "" {
			t.Errorf("complete %q: exit %d, %q (stderr %q); want %q", tc.args, code, got, stderr, tc.want)
		}
	}
}

// TestOriginMismatch: --origin (or GOVLEDGER_ORIGIN) names a ledger when it
// is created; on an existing ledger with another origin every command
// refuses, naming both, instead of silently using the file.
func TestOriginMismatch(t *testing.T) {
	e := newCLIEnv(t) // creates with --origin govledger.test/cli
	if code, _, stderr := e.run("", "lock"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := e.run("", "record", e.doc("01-product-to-analysis.json")); code != 0 {
		t.Fatal(stderr)
	}
	db := filepath.Join(e.dir, "ledger.db")
	key := filepath.Join(e.dir, "k")
	if code, _, stderr := e.run("", "keygen", "--out", key, "govledger.test/cli"); code != 0 {
		t.Fatal(stderr)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	want := `govledger: --origin "example.org/other" differs from the origin "govledger.test/cli" of ledger $TMP/ledger.db (an origin is fixed when the ledger is created)` + "\n"
	for _, args := range [][]string{
		{"record", e.doc("02-thinker-to-technical.json")},
		{"validate", e.doc("02-thinker-to-technical.json")},
		{"verify"}, {"log"}, {"show", "1"}, {"trace", "wf"}, {"export"}, {"stats"},
		{"unblock", "--reason", "r", "domain-05-product"},
		{"redact", "--reason", "r", "3"},
		{"checkpoint", "--key", key + ".key"},
		{"checkpoint", "rotate", "--new-key", key + ".pub", "--reason", "r"},
		{"prove", "--key", key + ".key", "1"},
	} {
		code, stdout, stderr := e.run("", append([]string{"--origin", "example.org/other"}, args...)...)
		if code != exitUsage || stderr != want || stdout != "" {
			t.Errorf("%v: exit %d\nstderr %q\nwant   %q\nstdout %q", args, code, stderr, want, stdout)
		}
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("a refused command changed the ledger")
	}
	// The environment variable is held to the same rule; the right origin,
	// or none, is accepted.
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"govledger", "--db", db, "stats"}, strings.NewReader(""), io.Discard, &stderr,
		func(k string) string { return map[string]string{"GOVLEDGER_ORIGIN": "example.org/other"}[k] })
	if code != exitUsage || !strings.Contains(stderr.String(), `"example.org/other" differs from the origin "govledger.test/cli"`) {
		t.Errorf("GOVLEDGER_ORIGIN: exit %d, %q", code, stderr.String())
	}
	if code, _, stderr := e.run("", "verify"); code != 0 {
		t.Errorf("same origin: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--db", db, "stats"); code != 0 {
		t.Errorf("no --origin: exit %d, %s", code, stderr)
	}
}

// TestExitCodeTable: one condition gives one exit code and one message
// from every command that reads a ledger.
func TestExitCodeTable(t *testing.T) {
	// A ledger that verifies: two snapshots and two accepted handoffs.
	e := newCLIEnv(t)
	for _, args := range [][]string{{"lock"}, {"record", e.doc("01-product-to-analysis.json"), e.doc("02-thinker-to-technical.json")}} {
		if code, _, stderr := e.run("", args...); code != 0 {
			t.Fatalf("%v: %s", args, stderr)
		}
	}
	good := filepath.Join(e.dir, "ledger.db")
	dir := t.TempDir()
	key := filepath.Join(dir, "signer")
	if code, _, stderr := runCLI(t, "keygen", "--out", key, "govledger.test/cli"); code != 0 {
		t.Fatal(stderr)
	}
	variant := func(name string, damage func(path string) error) string {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := damage(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noop := func(string) error { return nil }
	locked := variant("locked.db", noop)
	holder, err := bolt.Open(locked, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()

	commands := []struct {
		name string
		args []string
	}{
		{"verify", []string{"verify"}},
		{"checkpoint", []string{"checkpoint", "--key", key + ".key"}},
		{"prove", []string{"prove", "--key", key + ".key", "4"}},
		{"log", []string{"log"}},
		{"show", []string{"show", "4"}},
		{"export", []string{"export"}},
		{"stats", []string{"stats"}},
	}
	// $CMD stands for the command's name in a message.
	conditions := []struct {
		name string
		db   string
		args map[string][]string // replaces the command's arguments
		code int
		msg  string // the whole stderr; "" when the command reports on stdout
	}{
		{name: "ok", db: good, code: exitOK},
		{name: "unparseable flag", db: good, args: map[string][]string{
			"verify": {"verify", "--bogus"}, "checkpoint": {"checkpoint", "--bogus"}, "prove": {"prove", "--bogus"},
			"log": {"log", "--bogus"}, "show": {"show", "--bogus"}, "export": {"export", "--bogus"}, "stats": {"stats", "--bogus"}},
			code: exitUsage, msg: "govledger: $CMD: flag provided but not defined: -bogus"},
		{name: "unparseable flag value", db: good, args: map[string][]string{
			"verify": {"--output", "yaml", "verify"}, "checkpoint": {"--output", "yaml", "checkpoint"}, "prove": {"--output", "yaml", "prove"},
			"log": {"--output", "yaml", "log"}, "show": {"--output", "yaml", "show"}, "export": {"--output", "yaml", "export"}, "stats": {"--output", "yaml", "stats"}},
			code: exitUsage, msg: `govledger: $CMD: --output "yaml": want text or json`},
		{name: "unreadable input file", db: good, args: map[string][]string{
			"verify":     {"verify", "--export", filepath.Join(dir, "missing")},
			"checkpoint": {"checkpoint", "--key", filepath.Join(dir, "missing")},
			"prove":      {"prove", "--checkpoint", filepath.Join(dir, "missing"), "4"}},
			code: exitUsage, msg: "govledger: open $DIR/missing: no such file or directory"},
		{name: "ledger missing", db: filepath.Join(dir, "none.db"), code: exitUsage,
			msg: "govledger: ledger $DIR/none.db: ledger does not exist: file does not exist"},
		{name: "ledger is a folder", db: dir, code: exitInternal,
			msg: "govledger: ledger $DIR could not be opened: open $DIR: is a directory: not a govledger ledger"},
		{name: "ledger is an empty file", db: variant("empty.db", func(p string) error { return os.WriteFile(p, nil, 0o600) }), code: exitUsage,
			msg: "govledger: ledger $DIR/empty.db: ledger file is empty (0 bytes) (ledger does not exist: file does not exist)"},
		{name: "ledger is not a database", db: variant("text.db", func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte("text\n"), 2000), 0o600) }),
			code: exitFound, msg: "govledger: ledger $DIR/text.db: ledger file is corrupt: invalid database"},
		{name: "ledger corrupt", db: variant("corrupt.db", func(p string) error { return bolttest.DeleteKey(p, "meta", []byte("version")) }),
			code: exitFound, msg: "govledger: ledger $DIR/corrupt.db: ledger file is corrupt: meta version is 0 bytes"},
		{name: "ledger of a newer format", db: variant("newer.db", func(p string) error {
			return bolttest.InsertKey(p, bolttest.BucketMeta, []byte("version"), bolttest.SeqKey(bolt.FormatVersion+1))
		}),
			code: exitInternal, msg: fmt.Sprintf("govledger: ledger $DIR/newer.db: format version %d, this build reads %d: ledger format version mismatch", bolt.FormatVersion+1, bolt.FormatVersion)},
		{name: "ledger locked", db: locked, code: exitInternal,
			msg: "govledger: ledger $DIR/locked.db is in use by another process: ledger is locked"},
		// A stored entry that fails verification: verify reports it; every
		// command that reads the entry refuses with the same message;
		// checkpoint signs the Merkle root stored when the entries were
		// appended, which the edit did not change (verify against that
		// checkpoint then fails).
		{name: "entry fails verification", db: variant("tampered.db", func(p string) error {
			return bolttest.FlipByte(p, "entries", bolttest.SeqKey(4), 30)
		}), code: exitFound, msg: "govledger: entry seq 4 of the ledger is damaged: run 'govledger verify' for the findings"},
	}
	for _, cond := range conditions {
		for _, cmd := range commands {
			args := cmd.args
			if cond.args != nil {
				var ok bool
				if args, ok = cond.args[cmd.name]; !ok {
					continue // the command reads no such input
				}
			}
			wantCode, wantMsg := cond.code, cond.msg
			switch {
			case cond.name == "entry fails verification" && cmd.name == "verify":
				wantMsg = "" // FAILED … first bad entry seq 4, on stdout
			case cond.name == "entry fails verification" && cmd.name == "checkpoint":
				wantCode, wantMsg = exitOK, ""
			}
			var stdout, stderr bytes.Buffer
			code := runWithOpenTimeout(append([]string{"govledger", "--db", cond.db}, args...), &stdout, &stderr, 100*time.Millisecond)
			got := strings.TrimSpace(strings.ReplaceAll(stderr.String(), dir, "$DIR"))
			want := strings.ReplaceAll(wantMsg, "$CMD", cmd.name)
			if code != wantCode || got != want {
				t.Errorf("%s / %s: exit %d, stderr %q\nwant exit %d, stderr %q", cond.name, cmd.name, code, got, wantCode, want)
			}
			if cond.name == "entry fails verification" && cmd.name == "verify" && !strings.Contains(stdout.String(), "first bad entry seq 4") {
				t.Errorf("verify of a damaged entry: %s", stdout.String())
			}
		}
	}
	// The table the user reads lists every code.
	code, out, _ := runCLI(t, "--exit-codes")
	for _, c := range []string{"0  ok", "1  the check found", "2  usage error", "3  internal failure"} {
		if code != 0 || !strings.Contains(out, c) {
			t.Errorf("--exit-codes lacks %q:\n%s", c, out)
		}
	}
}

// runWithOpenTimeout runs the CLI with a short wait for a locked ledger.
func runWithOpenTimeout(args []string, stdout, stderr *bytes.Buffer, d time.Duration) int {
	app := newApp(strings.NewReader(""), stdout, stderr, func(string) string { return "" })
	app.Metadata = map[string]any{"now": time.Now, "args": args, "open-timeout": d}
	return finish(app.RunContext(context.Background(), args), stderr)
}

// TestClassify: errors without a code get theirs from the library
// sentinel they wrap.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{ledger.ErrCorrupt, exitFound},
		{&ledger.RecordError{Seq: 9, Op: "get", Err: entry.ErrMalformed}, exitInternal}, // not through ledgerReadErr
		{os.ErrNotExist, exitUsage},
		{ledger.ErrLocked, exitInternal},
		{context.Canceled, exitInternal},
		{io.ErrUnexpectedEOF, exitInternal},
		{usageErr("x"), exitUsage},
		{found(), exitFound},
	} {
		if got := exitCode(classify(tc.err)); got != tc.code {
			t.Errorf("classify(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
	for _, tc := range []struct {
		err  error
		code int
		msg  string
	}{
		{&ledger.RecordError{Seq: 9, Op: "get", Err: entry.ErrMalformed}, exitFound, "entry seq 9 of the ledger is damaged: run 'govledger verify' for the findings"},
		{entry.ErrNotCanonical, exitFound, "the ledger's stored data is damaged: run 'govledger verify' for the findings"},
		{io.ErrUnexpectedEOF, exitInternal, io.ErrUnexpectedEOF.Error()},
	} {
		err := ledgerReadErr(0, tc.err)
		if exitCode(err) != tc.code || err.Error() != tc.msg {
			t.Errorf("ledgerReadErr(%v) = %d %q, want %d %q", tc.err, exitCode(err), err, tc.code, tc.msg)
		}
	}
	// A urfave/cli error that never went through an action is a usage error.
	if code, _, _ := runCLI(t, "unblock", "agent"); code != exitUsage {
		t.Errorf("missing required flag: exit %d", code)
	}
}

// TestExportWriteFailure: an export that cannot be written is an internal
// failure (3), not a finding about the ledger.
func TestExportWriteFailure(t *testing.T) {
	db := newTestLedger(t, 4)
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"govledger", "--db", db, "export"}, strings.NewReader(""), failWriter{}, &stderr,
		func(string) string { return "" })
	if code != exitInternal || !strings.Contains(stderr.String(), "writing standard output: ") {
		t.Errorf("export to a failing writer: exit %d, %q", code, stderr.String())
	}
	// --out in a folder that does not exist is the user's input.
	code, _, errOut := runCLI(t, "--db", db, "export", "--out", filepath.Join(t.TempDir(), "no", "such", "x.jsonl"))
	if code != exitUsage || !strings.Contains(errOut, "no such file or directory") {
		t.Errorf("export --out into a missing folder: exit %d, %s", code, errOut)
	}
}

// TestOutputWriteFailure: a command whose standard output cannot be
// written (a full disk) exits 3 and says so, instead of 0 with the report
// silently lost; a finding (exit 1) that could not be written is exit 3 too.
func TestOutputWriteFailure(t *testing.T) {
	db := newTestLedger(t, 4)
	for _, args := range [][]string{
		{"verify"}, {"log"}, {"show", "2"}, {"stats"}, {"-o", "json", "log"}, {"-o", "json", "verify"},
		{"trace", "--help"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"govledger", "--db", db}, args...), strings.NewReader(""), failWriter{}, &stderr,
			func(string) string { return "" })
		if code != exitInternal || !strings.Contains(stderr.String(), "writing standard output: ") {
			t.Errorf("%v to a failing writer: exit %d, %q; want 3 and the write error", args, code, stderr.String())
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestVersionJSONDecodes: the JSON version decodes into the struct the
// text is rendered from.
func TestVersionJSONDecodes(t *testing.T) {
	_, out, _ := runCLI(t, "-o", "json", "--version")
	var v versionResult
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Schema != "govledger.version/v1" || v.GoVersion == "" {
		t.Errorf("%v %+v", err, v)
	}
}
