package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/govledger/govledger/internal/testenv"
)

// TestServeViewerInBrowser drives a real headless Chromium against the
// real "govledger serve" binary with a ledger seeded over its API: a
// reviewer logs in with a token, reads a hostile handoff's entry page
// (the payload is inert text), the in-browser proof check verifies the
// entry against the signed checkpoint with the configured key, and the
// timeline's live tail shows a new entry within two seconds of its POST;
// the agent, evidence and filtered timeline pages render; served again
// with another verifier key, the proof check fails at the signature.
// The viewer's own package tests every page in depth against an
// in-process ledger; this test holds the wiring of serve, tokens, keys,
// the real backend and server-sent events together.
func TestServeViewerInBrowser(t *testing.T) {
	chromium := testenv.LookPath(t, "apt-get install chromium; .ci/run installs it", "chromium", "chromium-browser", "google-chrome")
	e := newServeEnv(t, "registry")
	keyBase := filepath.Join(e.dir, "ledger")
	if out, code := e.cli("--origin", "example.com/viewer-test", "keygen", "--out", keyBase, "example.com/viewer-test"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	// As the service quick start runs it: --key, no --verifier-key (the
	// viewer checks proofs with the key the server signs with).
	s := e.start("--key", keyBase+".key", "--origin", "example.com/viewer-test")

	// A hostile document: markup in a string field of a valid handoff.
	const xss = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`
	doc := bytes.Replace(demoDoc(t, "01-product-to-analysis.json"), []byte("validate product hypothesis"),
		[]byte(strings.ReplaceAll(xss, `"`, `\"`)), 1)
	a := e.do(s, "POST", "/v1/handoffs", "writer", doc)
	if a.status != 201 {
		t.Fatalf("POST hostile document: %d %s", a.status, a.body)
	}
	hostileSeq := seqOf(t, a)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root (CI containers)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	var thrown []string
	var mu sync.Mutex
	if err := chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			thrown = append(thrown, ev.ExceptionDetails.Text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	run := func(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	str := func(expr string) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	poll := func(what, predicate string, d time.Duration) error {
		c, cancel := context.WithTimeout(ctx, d+5*time.Second)
		defer cancel()
		if _, err := chromedp.Run(c, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}

	run("login", 30*time.Second,
		chromedp.Navigate(s.url+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), e.tok["auditor"]),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("count-entries")),
	)
	if got := str(`document.getElementById('count-entries').textContent.trim()`); got != fmt.Sprint(e.head(s)) {
		t.Errorf("overview counts %q entries, the ledger has %d", got, e.head(s))
	}

	run("entry page", 15*time.Second,
		chromedp.Navigate(fmt.Sprintf("%s/ui/entries/%d", s.url, hostileSeq)),
		chromedp.WaitReady(chromedp.CSS("main h1")),
	)
	if err := poll("proof check", `(() => { const s = document.getElementById('proof-status').textContent; return s.startsWith('verified') || s.startsWith('FAILED'); })()`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := str(`document.getElementById('proof-status').textContent`); !strings.HasPrefix(got, "verified") {
		steps := str(`Array.from(document.querySelectorAll('#proof-steps li')).map((l) => l.textContent).join(' | ')`)
		t.Errorf("in-browser proof check of entry %d: %q (steps: %s)", hostileSeq, got, steps)
	}
	if got := str(`document.getElementById('payload').textContent`); !strings.Contains(got, "<script>window.__xss=1</script><img src=x onerror=") {
		t.Errorf("payload not shown as text: %q", got)
	}
	if got := str(`String(window.__xss)`); got != "undefined" {
		t.Errorf("the hostile payload ran: window.__xss = %s", got)
	}
	if n := str(`String(document.querySelectorAll('main img, main script').length)`); n != "0" {
		t.Errorf("%s elements from the payload reached the DOM", n)
	}

	// The other pages render from the real backend, each with its data.
	for _, pg := range []struct{ path, want string }{
		{"/ui/agents/domain-05-product", "domain-05-product"},
		{"/ui/evidence", "Evidence"},
		{"/ui/timeline?decision=accepted", "accepted"},
	} {
		run(pg.path, 15*time.Second, chromedp.Navigate(s.url+pg.path), chromedp.WaitReady(chromedp.CSS("main h1")))
		if got := str(`document.querySelector('main').textContent`); !strings.Contains(got, pg.want) {
			t.Errorf("%s does not show %q", pg.path, pg.want)
		}
	}
	if rows := str(`Array.from(document.querySelectorAll('table.entries tbody tr')).map((r) => r.cells[2].textContent.trim()).join(',')`); rows != "accepted" {
		t.Errorf("timeline filtered on accepted shows decisions %q, want the one accepted handoff", rows)
	}

	run("timeline", 15*time.Second,
		chromedp.Navigate(s.url+"/ui/timeline"),
		chromedp.WaitReady(chromedp.CSS("main h1")),
	)
	if err := poll("live tail", `document.getElementById('live-status').textContent === 'Live tail: on'`, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	a = e.do(s, "POST", "/v1/handoffs", "writer", demoDoc(t, "02-thinker-to-technical.json"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	start, seq := time.Now(), seqOf(t, a)
	if err := poll("new row", fmt.Sprintf(`document.querySelector('tr[data-seq="%d"]') !== null`, seq), 2*time.Second); err != nil {
		t.Fatalf("entry %d not in the live tail within 2s of its POST: %v", seq, err)
	}
	t.Logf("live tail showed entry %d %s after its POST", seq, time.Since(start).Round(time.Millisecond))

	// The same ledger served with another verifier key: the proof check
	// names the step that fails.
	if code := s.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if out, code := e.cli("--origin", "example.com/viewer-test", "keygen", "--out", keyBase+"-other", "example.com/viewer-test"); code != 0 {
		t.Fatalf("keygen: %d %s", code, out)
	}
	s = e.start("--key", keyBase+".key", "--verifier-key", keyBase+"-other.pub", "--origin", "example.com/viewer-test")
	run("login again", 30*time.Second,
		chromedp.Navigate(s.url+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), e.tok["auditor"]),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("count-entries")),
		chromedp.Navigate(fmt.Sprintf("%s/ui/entries/%d", s.url, hostileSeq)),
		chromedp.WaitReady(chromedp.CSS("main h1")),
	)
	if err := poll("proof check", `document.getElementById('proof-status').textContent.startsWith('FAILED') || document.getElementById('proof-status').textContent.startsWith('verified')`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := str(`document.getElementById('proof-status').textContent`); !strings.Contains(got, `FAILED at step "checkpoint signature"`) {
		t.Errorf("proof check with another key: %q, want it to fail at the checkpoint signature", got)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(thrown) > 0 {
		t.Errorf("uncaught exceptions in the viewer: %q", thrown)
	}
}
