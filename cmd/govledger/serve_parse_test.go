package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// hostileBodies are documents built to cost a parser the most per byte,
// of about size bytes each.
func hostileBodies(t *testing.T, size int) map[string][]byte {
	grow := func(head, unit, tail string) []byte {
		n := (size - len(head) - len(tail)) / len(unit)
		return []byte(head + strings.Repeat(unit, n) + tail)
	}
	task := string(demoDoc(t, "10-task-handoff.md"))
	return map[string][]byte{
		"yaml-flow":    grow("handoff:\n  source:\n    skill: perspective-swarm\n  flow: [", "1,", "1]\n"),
		"task-blank":   grow("", "\n", task),
		"json-zeros":   grow(`{"handoff_id":"x","source_agent":{"agent_id":"domain-05-product"},"zeros":[`, "0,", "0]}"),
		"yaml-keys":    []byte("handoff:\n  source:\n    skill: perspective-swarm\n  many:\n" + keys(size, "    k%x: 0\n")),
		"json-deep":    grow(`{"handoff_id":`, "[", ""),
		"json-tinykey": []byte(`{"handoff_id":"x","many":{` + keys(size, `"%x":0,`) + `"z":0}}`),
	}
}

func keys(size int, f string) string {
	var b strings.Builder
	for i := 0; b.Len() < size-64; i++ {
		fmt.Fprintf(&b, f, i)
	}
	return b.String()
}

// vmHWM is the peak resident set of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestServeParseMemory runs the real server at its default limits and
// sends it hostile bodies four at a time: 4 MiB ones (the default
// --max-body) from a principal scoped to one agent and from one that may
// submit for any, and ones just under the default --max-payload, which
// are parsed. Every answer is a 201 (a recorded rejection) or a refusal
// that writes nothing, and the server's peak RSS stays under 512 MiB.
func TestServeParseMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peak RSS is read from /proc/PID/status, which only Linux has (CI runs on Linux)")
	}
	if testing.Short() {
		t.Skip("-short: sends 60 MiB of hostile bodies")
	}
	e := newServeEnv(t, "registry")
	s := e.start()
	pid := s.cmd.Process.Pid
	send := func(principal string, body []byte, want ...int) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				a, err := e.try(s, "POST", "/v1/handoffs", principal, body, "Content-Type: application/octet-stream")
				if err != nil {
					t.Errorf("POST as %s: %v", principal, err)
					return
				}
				for _, w := range want {
					if a.status == w {
						return
					}
				}
				t.Errorf("POST of %d bytes as %s: %d, want one of %v\n%.300s", len(body), principal, a.status, want, a.body)
			})
		}
		wg.Wait()
	}
	for name, body := range hostileBodies(t, 4<<20) {
		t.Logf("%s: 4 MiB", name)
		send("product", body, 403) // scoped: refused unparsed
		send("writer", body, 201)  // PAYLOAD_TOO_LARGE, hash and size
	}
	for name, body := range hostileBodies(t, 1<<20-64) {
		t.Logf("%s: just under 1 MiB", name)
		send("writer", body, 201, 503) // parsed: PARSE_LIMIT, or the budget is full
		send("product", body, 201, 403, 503)
	}
	peak := vmHWM(t, pid)
	t.Logf("peak RSS of the server: %d MiB", peak>>20)
	if peak > 512<<20 {
		t.Errorf("peak RSS %d MiB, over 512 MiB", peak>>20)
	}
	if a := e.do(s, "GET", "/livez", "", nil); a.status != 200 {
		t.Errorf("livez after the attack: %d", a.status)
	}
}
