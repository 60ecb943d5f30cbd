package lockfile_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/govledger/govledger/lockfile"
	"github.com/govledger/govledger/manifest"
)

var bench10k struct {
	once sync.Once
	dir  string
	err  error
}

// tenK writes a registry of 10,000 domain agents with 4 KiB prompts, once
// per test binary, and returns its folder.
func tenK(b *testing.B) string {
	bench10k.once.Do(func() {
		dir, err := os.MkdirTemp("", "lockcheck10k")
		if err != nil {
			bench10k.err = err
			return
		}
		var agents []string
		buf := make([]byte, 4096)
		for i := range 10_000 {
			p := fmt.Sprintf("prompts/%02d/agent-%05d.md", i%100, i)
			if i%100 == i {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
			}
			rand.Read(buf)
			if err := os.WriteFile(filepath.Join(dir, p), buf, 0o644); err != nil {
				bench10k.err = err
				return
			}
			agents = append(agents, fmt.Sprintf(`{"agent_id":"agent-%05d","agent_type":"domain","agent_version":"1.0.0","prompt_path":%q}`, i, p))
		}
		m := `{"manifest_version":1,"agents":[` + strings.Join(agents, ",\n") + "]}\n"
		bench10k.err = os.WriteFile(filepath.Join(dir, "prompt-manifest.json"), []byte(m), 0o644)
		bench10k.dir = dir
	})
	if bench10k.err != nil {
		b.Fatal(bench10k.err)
	}
	return bench10k.dir
}

// BenchmarkLockCheck10k measures "lock check" over 10,000 prompt files of
// 4 KiB (warm page cache): reading each through an os.Root and hashing it.
func BenchmarkLockCheck10k(b *testing.B) {
	dir := tenK(b)
	reg, err := manifest.Load(filepath.Join(dir, "prompt-manifest.json"))
	if err != nil {
		b.Fatal(err)
	}
	d, err := lockfile.OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	lk, err := lockfile.Generate(reg, d.ReadFile)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(10_000 * 4096)
	b.ResetTimer()
	for b.Loop() {
		rep, err := lockfile.Check(reg, lk, d.ReadFile)
		if err != nil || !rep.InSync {
			b.Fatalf("Check = %v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(10_000*b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(10_000*4096*b.N)/1e6/b.Elapsed().Seconds(), "MB/s")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench10k.dir != "" {
		os.RemoveAll(bench10k.dir)
	}
	os.Exit(code)
}
