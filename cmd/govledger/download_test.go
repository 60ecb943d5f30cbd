package main

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govledger/govledger/checkpoint"
)

// hostileServer is a loopback server that misbehaves by the first
// segment of the path: /stall never answers, /stallbody answers a first
// line and then stalls, /endless sends without end (an export, a JSON
// answer), /endlessall too (its checkpoint as well), /whole answers "all
// of it". Under /stallbody and /endless,
// <base>/v1/checkpoint and <base>/checkpoint answer a checkpoint signed by
// the key returned, so that verify --server and monitor reach their
// downloads. Handlers end when the client goes away.
func hostileServer(t *testing.T) (url, verifierKey string) {
	t.Helper()
	skey, vkey, err := checkpoint.GenerateKey(rand.Reader, "example.com/hostile")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: "example.com/hostile", Size: 1}, signer)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		// Bounded even when the client is not: a stall gives up after
		// 15s, an endless answer after 64 MiB (the test then fails on
		// the time taken or the exit code, and does not hang).
		wait := func() {
			select {
			case <-r.Context().Done():
			case <-done:
			case <-time.After(15 * time.Second):
			}
		}
		if (mode == "stallbody" || mode == "endless") && strings.HasSuffix(rest, "checkpoint") {
			w.Write(cp)
			return
		}
		switch mode {
		case "stall":
			wait()
		case "stallbody":
			w.Write([]byte(`{"first":"line"}` + "\n"))
			w.(http.Flusher).Flush()
			wait()
		case "endless", "endlessall":
			line := bytes.Repeat([]byte("x"), 1<<10)
			line[len(line)-1] = '\n'
			if !strings.HasSuffix(rest, "export") {
				w.Write([]byte(`{"entries":["`)) // a JSON answer that never closes
				line = bytes.Repeat([]byte("x"), 1<<10)
			}
			for range (64 << 20) / len(line) {
				if _, err := w.Write(line); err != nil {
					return
				}
				select {
				case <-done:
					return
				default:
				}
			}
		default:
			w.Write([]byte("all of it\n"))
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv.URL, vkey
}

// TestServerDownloadsBounded: every command that downloads from a server
// (--server, and monitor's --log) exits 3 naming the bound when the
// server stalls or sends without end, instead of waiting or filling the
// disk.
func TestServerDownloadsBounded(t *testing.T) {
	url, vkey := hostileServer(t)
	dir := t.TempDir()
	bounds := []string{"--idle-timeout", "300ms", "--max-download", "1048576"}
	for _, c := range []struct {
		mode string
		args []string
		want string
	}{
		{"stall", []string{"log"}, "--idle-timeout"},
		{"stall", []string{"show", "1"}, "--idle-timeout"},
		{"stall", []string{"trace", "wf-1"}, "--idle-timeout"},
		{"stall", []string{"blocks"}, "--idle-timeout"},
		{"stall", []string{"export"}, "--idle-timeout"},
		{"stall", []string{"verify", "--key", vkey}, "--idle-timeout"},
		{"stallbody", []string{"export", "--out", dir + "/export.jsonl"}, "--idle-timeout"},
		{"stallbody", []string{"verify", "--key", vkey}, "--idle-timeout"},
		{"endless", []string{"log"}, "--max-download"},
		{"endless", []string{"export"}, "--max-download"},
		{"endless", []string{"export", "--out", dir + "/export.jsonl"}, "--max-download"},
		{"endless", []string{"verify", "--key", vkey}, "--max-download"},
		{"stall", []string{"monitor", "--log", url + "/stall", "--key", vkey, "--state", dir + "/m1", "--once"}, "--idle-timeout"},
		{"endlessall", []string{"monitor", "--log", url + "/endlessall", "--key", vkey, "--state", dir + "/m2", "--once", "--max-download", "1000"}, "--max-download"},
	} {
		args := append([]string{c.args[0]}, bounds...)
		if c.want == "--max-download" {
			// An endless answer is cut by the cap; the idle timer must not
			// fire first because a loaded machine (-race, CI) paused the
			// server for 300ms.
			args = append([]string{c.args[0]}, "--idle-timeout", "5s", "--max-download", "1048576")
		}
		if c.args[0] != "monitor" {
			args = append(args, "--server", url+"/"+c.mode)
		}
		args = append(args, c.args[1:]...)
		start := time.Now()
		code, out, errOut := runCLI(t, args...)
		if code != 3 || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s %v: exit %d, want 3 naming %s\nstdout: %.300s\nstderr: %.300s", c.mode, c.args, code, c.want, out, errOut)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s %v took %s", c.mode, c.args, d)
		}
	}
	if _, err := os.Stat(dir + "/export.jsonl"); !os.IsNotExist(err) {
		t.Errorf("export --out left a file after cut downloads: %v", err)
	}
}
