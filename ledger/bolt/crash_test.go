package bolt_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govledger/govledger/entry"
	"github.com/govledger/govledger/ledger/bolt"
	"github.com/govledger/govledger/ledger/bolt/bolttest"
)

var crashTrials = flag.Int("crash-trials", 0, "SIGKILL trials in TestCrash (default 50; 20 under -race, where each child starts ~5x slower)")

const crashEnv = "GOVLEDGER_CRASH_CHILD_DB"

// TestMain runs the test binary as TestCrash's child when crashEnv names
// a ledger, and the tests otherwise.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		os.Exit(3) // unreachable: the child appends until it is killed
	}
	os.Exit(m.Run())
}

// crashChild is the child of TestCrash: it appends from four goroutines
// until killed, printing "ACK seq hash" after each Append returns. It
// never returns.
func crashChild(path string) {
	l, err := bolt.Open(path, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				h := handoff(i)
				h.ID = fmt.Sprintf("p%d-w%d-%d", os.Getpid(), w, i)
				res, err := l.Append(context.Background(), h.Build())
				if err != nil {
					fmt.Println("ERR", err)
					os.Exit(3)
				}
				mu.Lock()
				for _, a := range res.Entries {
					fmt.Printf("ACK %d %s\n", a.Entry.Seq, a.Hash)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestCrash kills a writing child process at random moments: after each kill the ledger reopens, Check finds nothing, the chain
// walks, and every acknowledged seq is present with its hash.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: it starts and SIGKILLs dozens of child processes (~10 s)")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 2))
	t.Logf("seed %d", seed)
	trials := *crashTrials
	if trials == 0 {
		trials = 50
		if raceEnabled {
			trials = 20
		}
	}
	acked := map[uint64]entry.Hash{}
	for trial := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		first := true
		var kill <-chan time.Time
		for line := range lines {
			if strings.HasPrefix(line, "ERR") {
				t.Fatalf("trial %d: child: %s", trial, line)
			}
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "ACK" {
				continue
			}
			seq, err1 := strconv.ParseUint(f[1], 10, 64)
			h, err2 := entry.ParseHash(f[2])
			if err1 != nil || err2 != nil {
				continue // a line cut by the kill
			}
			if old, ok := acked[seq]; ok && old != h {
				t.Fatalf("trial %d: seq %d acknowledged as %s and %s (fork)", trial, seq, old, h)
			}
			acked[seq] = h
			if first {
				first = false
				kill = time.After(time.Duration(rng.IntN(100)) * time.Millisecond)
				go func(k <-chan time.Time) { <-k; cmd.Process.Kill() }(kill)
			}
		}
		cmd.Wait()
		l, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("trial %d: reopen: %v", trial, err)
		}
		chain := chainWalk(t, l)
		l.Close()
		bolttest.MustCheck(t, path)
		for seq, h := range acked {
			if seq > uint64(len(chain)) || chain[seq-1] != h {
				t.Fatalf("trial %d: acknowledged seq %d (%s) lost or changed (chain has %d)", trial, seq, h, len(chain))
			}
		}
	}
	t.Logf("%d kills, %d acknowledged entries, all present", trials, len(acked))
}
