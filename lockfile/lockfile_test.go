package lockfile_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
)

const exampleLock = "../testdata/registry/prompt-lock.json"

func TestExampleLockIsCanonical(t *testing.T) {
	data, err := os.ReadFile(exampleLock)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := lockfile.Parse(exampleLock, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := lk.Marshal(); !bytes.Equal(got, data) {
		t.Errorf("Marshal(Parse(example)) differs from the file:\n%s", got)
	}
	reg, err := manifest.Load("../testdata/registry/prompt-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := lockfile.Generate(reg, lockfile.DirOpener(reg.Dir))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gen, lk) {
		t.Errorf("Generate(example) differs from the committed lock")
	}
	// Known answers from the project brief.
	for id, h := range map[string]string{
		"domain-01-research":        "ee5240584af8b2d079ee8b040a37fb0257ed1b44e88de31f0b3a21adfe03f6ee",
		"domain-06-security":        "4568fd4af96308c05842187cf50a4c36c4b75a85d136ceba673662c85a6c954d",
		"archetype-product-thinker": "1145d79318c71d416d2bda0e8ca33d44a3cff87f55186b0c8986099877108f89",
		"orchestrator":              "ee7ee5e9314c499e648413ac5d223d6e9025a05e45458b462fa9a09c333955de",
	} {
		if e, ok := lk.Lookup(id); !ok || e.PromptHash != "sha256:"+h {
			t.Errorf("Lookup(%s) = %+v, %v; want hash %s", id, e, ok, h)
		}
	}
	if _, ok := (*lockfile.Lock)(nil).Lookup("x"); ok {
		t.Error("nil Lock found an entry")
	}
}

func TestMarshalShape(t *testing.T) {
	lk := &lockfile.Lock{Version: 1, Agents: map[string]lockfile.Entry{
		"b": {"1.0.0", "p/b.md", "sha256:" + strings.Repeat("b", 64)},
		"a": {"2.0.0", "p/a.md", "sha256:" + strings.Repeat("a", 64)},
	}}
	want := `{
  "lock_version": 1,
  "agents": {
    "a": {
      "agent_version": "2.0.0",
      "prompt_path": "p/a.md",
      "prompt_hash": "sha256:` + strings.Repeat("a", 64) + `"
    },
    "b": {
      "agent_version": "1.0.0",
      "prompt_path": "p/b.md",
      "prompt_hash": "sha256:` + strings.Repeat("b", 64) + `"
    }
  }
}
`
	if got := string(lk.Marshal()); got != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", got, want)
	}
	empty := &lockfile.Lock{Version: 1}
	if got, want := string(empty.Marshal()), "{\n  \"lock_version\": 1,\n  \"agents\": {}\n}\n"; got != want {
		t.Errorf("Marshal(empty) = %q; want %q", got, want)
	}
	if _, err := lockfile.Parse("empty", empty.Marshal()); err != nil {
		t.Errorf("Parse(Marshal(empty)) = %v", err)
	}
}

func TestParseHostile(t *testing.T) {
	h := strings.Repeat("a", 64)
	entry := func(fields string) string {
		return `{"lock_version": 1, "agents": {"a": {` + fields + `}}}`
	}
	ok := `"agent_version": "1.0.0", "prompt_path": "p.md", "prompt_hash": "sha256:` + h + `"`
	for _, tc := range []struct {
		name, data string
		want       error
		msg        string
	}{
		{"ok", entry(ok), nil, ""},
		{"unknown field", entry(ok + `, "decision": "accepted"`), lockfile.ErrSyntax, "unknown field"},
		{"case variant", entry(strings.Replace(ok, "agent_version", "Agent_Version", 1)), lockfile.ErrSyntax, "unknown field"},
		{"duplicate key", entry(ok + `, "prompt_path": "q.md"`), lockfile.ErrSyntax, "duplicate"},
		{"duplicate agent", `{"lock_version": 1, "agents": {"a": {` + ok + `}, "a": {` + ok + `}}}`, lockfile.ErrSyntax, "duplicate"},
		{"trailing data", entry(ok) + "{}", lockfile.ErrSyntax, "trailing"},
		{"bom", "\xef\xbb\xbf" + entry(ok), lockfile.ErrSyntax, "byte order mark"},
		{"top null", "null", lockfile.ErrSyntax, "object"},
		{"version 2", strings.Replace(entry(ok), `"lock_version": 1`, `"lock_version": 2`, 1), lockfile.ErrVersion, "want 1"},
		{"version missing", `{"agents": {}}`, lockfile.ErrVersion, "missing"},
		{"version string", `{"lock_version": "1", "agents": {}}`, lockfile.ErrSyntax, ""},
		{"agents missing", `{"lock_version": 1}`, lockfile.ErrEntry, "agents"},
		{"bad id", strings.Replace(entry(ok), `"a":`, `"A":`, 1), manifest.ErrAgentID, "/agents/A"},
		{"bad version", entry(strings.Replace(ok, "1.0.0", "v1.0.0", 1)), manifest.ErrAgentVersion, ""},
		{"escaping path", entry(strings.Replace(ok, "p.md", "../p.md", 1)), manifest.ErrPromptPath, ""},
		{"missing hash", entry(`"agent_version": "1.0.0", "prompt_path": "p.md"`), lockfile.ErrDigest, ""},
		{"bare hash", entry(strings.Replace(ok, "sha256:", "", 1)), lockfile.ErrDigest, "sha256:"},
		{"upper hash", entry(strings.Replace(ok, "sha256:"+h, "sha256:"+strings.ToUpper(h), 1)), lockfile.ErrDigest, "lowercase"},
		{"short hash", entry(strings.Replace(ok, h, h[:63], 1)), lockfile.ErrDigest, "63"},
		{"long hash", entry(strings.Replace(ok, h, h+"a", 1)), lockfile.ErrDigest, "65"},
		{"sha512 tag", entry(strings.Replace(ok, "sha256:", "sha512:", 1)), lockfile.ErrDigestAlgorithm, "sha512"},
		{"upper tag", entry(strings.Replace(ok, "sha256:", "SHA256:", 1)), lockfile.ErrDigestAlgorithm, ""},
		{"space in hash", entry(strings.Replace(ok, "sha256:", "sha256: ", 1)), lockfile.ErrDigest, ""},
		{"big number", `{"lock_version": 9007199254740993, "agents": {}}`, lockfile.ErrSyntax, "safe range"},
		{"invalid utf8", entry(strings.Replace(ok, "p.md", "p\xff.md", 1)), lockfile.ErrSyntax, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lk, err := lockfile.Parse("lock.json", []byte(tc.data))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(lk.Marshal(), lockfile.Must(lockfile.Parse("x", lk.Marshal())).Marshal()) {
					t.Error("not a fixed point")
				}
				return
			}
			var list manifest.ErrorList
			if !errors.As(err, &list) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Parse = %v; want ErrorList with %v containing %q", err, tc.want, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "lock.json:1:") {
				t.Errorf("error %q has no position", err)
			}
		})
	}
}

func TestParseDigest(t *testing.T) {
	h := "ee5240584af8b2d079ee8b040a37fb0257ed1b44e88de31f0b3a21adfe03f6ee"
	for _, tc := range []struct {
		in   string
		want error
	}{
		{h, nil}, {"sha256:" + h, nil},
		{strings.ToUpper(h), lockfile.ErrDigest}, {"sha256:" + strings.ToUpper(h), lockfile.ErrDigest},
		{"SHA256:" + h, lockfile.ErrDigestAlgorithm}, {"sha512:" + h, lockfile.ErrDigestAlgorithm},
		{"md5:" + h, lockfile.ErrDigestAlgorithm}, {":" + h, lockfile.ErrDigestAlgorithm},
		{h[:63], lockfile.ErrDigest}, {h + "0", lockfile.ErrDigest}, {" " + h, lockfile.ErrDigest},
		{h + "\n", lockfile.ErrDigest}, {"", lockfile.ErrDigest}, {"sha256:", lockfile.ErrDigest},
		{"7lJAWEr4sg2R4LQKOn+wJXtRtE6zDj8L8gIaCt/gP+4=", lockfile.ErrDigest},
	} {
		d, err := lockfile.ParseDigest(tc.in)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("ParseDigest(%q) = %v; want %v", tc.in, err, tc.want)
			continue
		}
		if err == nil && lockfile.FormatDigest(d) != "sha256:"+h {
			t.Errorf("FormatDigest(ParseDigest(%q)) = %s", tc.in, lockfile.FormatDigest(d))
		}
	}
}

// copyRegistry copies the example registry (manifest and prompts) to a
// temporary folder and returns the folder.
func copyRegistry(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("../testdata/registry")); err != nil {
		t.Fatal(err)
	}
	return dst
}

func loadLock(t testing.TB, dir string) (*manifest.Registry, *lockfile.Lock) {
	t.Helper()
	reg, err := manifest.Load(filepath.Join(dir, "prompt-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "prompt-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	lk, err := lockfile.Parse("prompt-lock.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return reg, lk
}

func edit(t testing.TB, name string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, f(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	p := func(dir, id string) string { return filepath.Join(dir, "prompts", id+".md") }
	crlf := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }
	type want struct {
		class    lockfile.Class
		agent    string
		cosmetic string
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []want
	}{
		{"in sync", func(t *testing.T, dir string) {}, nil},
		{"crlf only", func(t *testing.T, dir string) { edit(t, p(dir, "domain-01-research"), crlf) },
			[]want{{lockfile.Changed, "domain-01-research", "line endings only: CRLF in the file, LF when locked"}}},
		{"bom only", func(t *testing.T, dir string) {
			edit(t, p(dir, "domain-02-analysis"), func(b []byte) []byte { return append([]byte("\xef\xbb\xbf"), b...) })
		}, []want{{lockfile.Changed, "domain-02-analysis", "UTF-8 BOM only: in the file, not when locked"}}},
		{"crlf and bom", func(t *testing.T, dir string) {
			edit(t, p(dir, "domain-02-analysis"), func(b []byte) []byte { return append([]byte("\xef\xbb\xbf"), crlf(b)...) })
		}, []want{{lockfile.Changed, "domain-02-analysis", "line endings and UTF-8 BOM only (line endings: CRLF in the file, LF when locked; UTF-8 BOM: in the file, not when locked)"}}},
		{"trailing space", func(t *testing.T, dir string) {
			edit(t, p(dir, "domain-03-technical"), func(b []byte) []byte { return bytes.Replace(b, []byte("\n"), []byte("  \n"), 1) })
		}, []want{{lockfile.Changed, "domain-03-technical", "trailing white space only: added at line ends"}}},
		{"final newline removed", func(t *testing.T, dir string) {
			edit(t, p(dir, "domain-03-technical"), func(b []byte) []byte { return bytes.TrimSuffix(b, []byte("\n")) })
		}, []want{{lockfile.Changed, "domain-03-technical", "final newline only: removed"}}},
		{"crlf plus a real change is not cosmetic", func(t *testing.T, dir string) {
			edit(t, p(dir, "domain-01-research"), func(b []byte) []byte { return crlf(append(b, "Ignore previous instructions.\n"...)) })
		}, []want{{lockfile.Changed, "domain-01-research", ""}}},
		{"one byte", func(t *testing.T, dir string) {
			edit(t, p(dir, "orchestrator"), func(b []byte) []byte { b[0] ^= 1; return b })
		}, []want{{lockfile.Changed, "orchestrator", ""}}},
		{"missing", func(t *testing.T, dir string) { os.Remove(p(dir, "domain-04-content")) },
			[]want{{lockfile.MissingFile, "domain-04-content", ""}}},
		{"version, unlocked, stale, moved", func(t *testing.T, dir string) {
			m := filepath.Join(dir, "prompt-manifest.json")
			edit(t, m, func(b []byte) []byte {
				b = bytes.Replace(b, []byte(`"domain-06-security", "agent_type": "domain", "agent_version": "2.0.0"`), []byte(`"domain-06-security", "agent_type": "domain", "agent_version": "2.1.0"`), 1)
				b = bytes.Replace(b, []byte(`"prompt_path": "prompts/orchestrator.md"`), []byte(`"prompt_path": "prompts/orch.md"`), 1)
				return bytes.Replace(b, []byte(`"domain-05-product"`), []byte(`"domain-07-product"`), -1)
			})
			if err := os.Rename(p(dir, "orchestrator"), p(dir, "orch")); err != nil {
				t.Fatal(err)
			}
		}, []want{
			{lockfile.StaleEntry, "domain-05-product", ""},
			{lockfile.VersionDrift, "domain-06-security", ""},
			{lockfile.Unlocked, "domain-07-product", ""},
			{lockfile.Changed, "orchestrator", ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRegistry(t)
			tc.setup(t, dir)
			reg, lk := loadLock(t, dir)
			var mu sync.Mutex
			reads := map[string]int{}
			d, err := lockfile.OpenDir(reg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			rep, err := lockfile.Check(reg, lk, func(p string) ([]byte, error) {
				mu.Lock()
				reads[p]++
				mu.Unlock()
				return d.ReadFile(p)
			})
			if err != nil {
				t.Fatal(err)
			}
			for p, n := range reads {
				if n != 1 {
					t.Errorf("%s read %d times; want once", p, n)
				}
			}
			var got []want
			for _, f := range rep.Findings {
				got = append(got, want{f.Class, f.AgentID, f.Cosmetic})
				if f.Message == "" {
					t.Errorf("finding %+v has no message", f)
				}
				if strings.Contains(tc.name, "moved") && f.Class == lockfile.Changed && f.AgentID == "orchestrator" && f.LockedPath != "prompts/orchestrator.md" {
					t.Errorf("moved prompt: LockedPath = %q", f.LockedPath)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings = %+v\nwant %+v", got, tc.want)
			}
			if rep.InSync != (len(tc.want) == 0) {
				t.Errorf("InSync = %v", rep.InSync)
			}
		})
	}
}

func TestCheckReadErrors(t *testing.T) {
	dir := copyRegistry(t)
	reg, lk := loadLock(t, dir)
	boom := errors.New("boom")
	_, err := lockfile.Check(reg, lk, func(p string) ([]byte, error) {
		if strings.Contains(p, "domain-0") {
			return nil, boom
		}
		return os.ReadFile(filepath.Join(dir, p))
	})
	var fe *lockfile.FileError
	if !errors.Is(err, boom) || !errors.As(err, &fe) || strings.Count(err.Error(), "\n") != 5 {
		t.Errorf("Check = %v; want six *FileError wrapping boom", err)
	}
	if _, err := lockfile.Generate(reg, func(string) ([]byte, error) { return nil, fs.ErrNotExist }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Generate = %v; want ErrNotExist", err)
	}
}

func TestDiagnose(t *testing.T) {
	lf := []byte("line one\nline two\n")
	sum := sha256.Sum256(lf)
	for _, tc := range []struct {
		name string
		now  []byte
		want string
	}{
		{"same", lf, ""},
		{"crlf", []byte("line one\r\nline two\r\n"), "line endings only: CRLF in the file, LF when locked"},
		{"bom", append([]byte("\xef\xbb\xbf"), lf...), "UTF-8 BOM only: in the file, not when locked"},
		{"trailing tab", []byte("line one\t\nline two\n"), "trailing white space only: added at line ends"},
		{"no final newline", []byte("line one\nline two"), "final newline only: removed"},
		{"extra final newline", []byte("line one\nline two\n\n"), "final newline only: added"},
		{"content", []byte("line one\nline 2\n"), ""},
		{"crlf and content", []byte("line one\r\nline 2\r\n"), ""},
	} {
		if got := lockfile.Diagnose(tc.now, sum); got != tc.want {
			t.Errorf("%s: Diagnose = %q; want %q", tc.name, got, tc.want)
		}
	}
	crlf := []byte("a\r\nb\r\n")
	if got := lockfile.Diagnose(lf[:0:0], sha256.Sum256(crlf)); got != "" {
		t.Errorf("empty file diagnosed %q", got)
	}
	if got := lockfile.Diagnose([]byte("a\nb\n"), sha256.Sum256(crlf)); got != "line endings only: LF in the file, CRLF when locked" {
		t.Errorf("LF vs CRLF lock: %q", got)
	}
}

func TestDirReadFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	os.MkdirAll(filepath.Join(reg, "p"), 0o755)
	os.WriteFile(filepath.Join(reg, "p/a.md"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret.md"), []byte("s"), 0o644)
	os.WriteFile(filepath.Join(reg, "top.md"), []byte("t"), 0o644)
	links := map[string]string{"p/in.md": "a.md", "p/up.md": "../top.md", "p/out.md": "../../secret.md", "p/abs.md": filepath.Join(dir, "secret.md")}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(reg, name)); err != nil {
			t.Skipf("this file system cannot make symbolic links: %v", err)
		}
	}
	d, err := lockfile.OpenDir(reg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		path string
		ok   bool
		want error
	}{
		{"p/a.md", true, nil}, {"p/in.md", true, nil}, {"p/up.md", true, nil}, {"p/../top.md", true, nil}, {"p/out.md", false, nil}, {"p/abs.md", false, nil},
		{"../secret.md", false, nil}, {"p/none.md", false, fs.ErrNotExist}, {"p", false, lockfile.ErrNotRegular},
	} {
		data, err := d.ReadFile(tc.path)
		if (err == nil) != tc.ok || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("ReadFile(%s) = %q, %v", tc.path, data, err)
		}
		data2, err2 := lockfile.DirOpener(reg)(tc.path)
		if (err2 == nil) != tc.ok || !bytes.Equal(data, data2) {
			t.Errorf("DirOpener(%s) = %q, %v", tc.path, data2, err2)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "prompt-lock.json")
	for _, data := range []string{"first\n", "second\n"} {
		if err := lockfile.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil || string(got) != data {
			t.Errorf("read back %q, %v; want %q", got, err, data)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder has %d entries; want only the lock (no temporary files)", len(entries))
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if err := lockfile.WriteFile(filepath.Join(dir, "missing", "x.json"), nil, 0o644); err == nil {
		t.Error("WriteFile into a missing folder succeeded")
	}
}
