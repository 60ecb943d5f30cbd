package ui_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/govledger/govledger/internal/testenv"
)

var updateScreenshots = flag.Bool("screenshots", false, "write each page's screenshot to docs/screenshots/ (README)")

// One headless Chromium serves the whole test binary; each test opens
// tabs in browser contexts of their own (separate cookie jars).
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if browserCancel != nil {
		browserCancel()
	}
	os.Exit(code)
}

// chromiumPath finds Debian's chromium; without it the browser tests skip,
// or fail when CI is set.
func chromiumPath(t testing.TB) string {
	t.Helper()
	return testenv.LookPath(t, "apt-get install chromium; .ci/run installs it", "chromium", "chromium-browser", "google-chrome")
}

func startBrowser(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900),
			chromedp.Flag("disable-gpu", true))
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root (CI containers)
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		browserCtx, browserCancel = ctx, func() { cancel(); cancelAlloc() }
		_, browserErr = chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
	})
	if browserErr != nil {
		t.Fatalf("starting %s: %v", path, browserErr)
	}
	return browserCtx
}

// tab is a browser tab in a fresh browser context, with watchers that
// record what hostile content must never cause: dialogs, uncaught
// exceptions, CSP violations (markup that reached the DOM as markup) and
// the XSS corpus's window.__xss flag.
type tab struct {
	t       testing.TB
	ctx     context.Context
	s       *site
	mu      sync.Mutex
	dialogs []string
	errs    []string
}

const watchScript = `window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));
for (const f of ['alert', 'confirm', 'prompt']) {
  const orig = window[f];
  window[f] = function (...a) { window.__dialog = (window.__dialog || 0) + 1; return orig.apply(this, a); };
}`

func (s *site) tab(t testing.TB) *tab {
	t.Helper()
	parent := startBrowser(t)
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx, s: s}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchScript}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			tb.mu.Lock()
			tb.dialogs = append(tb.dialogs, ev.Message)
			tb.mu.Unlock()
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		case *runtime.EventExceptionThrown:
			tb.mu.Lock()
			tb.errs = append(tb.errs, ev.ExceptionDetails.Text)
			tb.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return tb
}

// do runs actions with a deadline.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds or d passes.
func (tb *tab) waitFor(what, predicate string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(tb.ctx, d+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(25*time.Millisecond)))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(tb.s.url+path), chromedp.WaitReady(chromedp.CSS("main h1")))
}

// inert fails the test when anything ran that the page's own code did not
// start.
func (tb *tab) inert(where string) {
	tb.t.Helper()
	if v := eval[string](tb, `String(window.__xss)`); v != "undefined" {
		tb.t.Errorf("%s: injected script ran (window.__xss = %s)", where, v)
	}
	if v := eval[string](tb, `String(window.__dialog)`); v != "undefined" {
		tb.t.Errorf("%s: a dialog was opened %s times", where, v)
	}
	if v := eval[[]string](tb, `window.__csp || []`); len(v) > 0 {
		tb.t.Errorf("%s: CSP violations (markup from data reached the DOM): %q", where, v)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.dialogs) > 0 || len(tb.errs) > 0 {
		tb.t.Errorf("%s: dialogs %q, uncaught exceptions %q", where, tb.dialogs, tb.errs)
	}
}

// login logs in through the form, as a reviewer does.
func (tb *tab) login(principal string) {
	tb.t.Helper()
	tb.do("login as "+principal,
		chromedp.Navigate(tb.s.url+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tb.s.tokens[principal]),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("count-entries")),
	)
}

func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
		tb.t.Fatalf("screenshot %s: %d bytes, not a PNG", name, len(png))
	}
	if *updateScreenshots {
		dir := filepath.Join("..", "..", "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
}

// TestBrowserPages logs in through the form and renders every page in
// Chromium: each renders with no script from its data, is readable at a
// phone's width (no horizontal scrolling), labels every control, and is
// screenshot.
func TestBrowserPages(t *testing.T) {
	s := newSite(t, nil)
	tb := s.tab(t)
	tb.do("login page", chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")))
	tb.screenshot("login")
	tb.login(pOperator)
	pages := []struct{ name, path, ready string }{
		{"overview", "/ui/", "#count-entries"},
		{"timeline", "/ui/timeline", "table.entries"},
		{"entry", fmt.Sprintf("/ui/entries/%d", s.seeded.governed), "#proof-status.good"},
		{"entry-hostile", fmt.Sprintf("/ui/entries/%d", s.seeded.hostile), "#proof-status.good"},
		{"workflow", "/ui/workflows/" + s.seeded.workflow, "#graph"},
		{"workflow-hostile", "/ui/workflows/" + url.PathEscape(s.seeded.hostileWF), "#graph"},
		{"agent", "/ui/agents/coder", "#agent-status"},
		{"evidence", "/ui/evidence", "#bundle-seq"},
	}
	for _, p := range pages {
		tb.open(p.path)
		if err := tb.waitFor(p.name, fmt.Sprintf(`document.querySelector(%q) !== null`, p.ready), 5*time.Second); err != nil {
			t.Fatalf("page %s (%s): %v\n%s", p.name, p.path, err, eval[string](tb, `document.querySelector('main').innerText.slice(-1500)`))
		}
		tb.inert(p.name)
		unlabelled := eval[[]string](tb, `Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
		  .filter((el) => el.tagName === 'BUTTON' ? !el.textContent.trim() : !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
		  .map((el) => el.outerHTML.slice(0, 80))`)
		if len(unlabelled) > 0 {
			t.Errorf("page %s: controls without a label: %q", p.name, unlabelled)
		}
		if !strings.HasSuffix(p.name, "-hostile") {
			tb.screenshot(p.name)
		}
	}
	// A phone's width: nothing scrolls sideways but the wide tables and
	// the graph, inside their own boxes.
	tb.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	for _, p := range pages {
		tb.open(p.path)
		if err := tb.waitFor(p.name+" at 390px", `document.documentElement.scrollWidth <= window.innerWidth`, 2*time.Second); err != nil {
			w := eval[int](tb, `document.documentElement.scrollWidth`)
			t.Errorf("page %s at 390px wide scrolls sideways: document %dpx wide", p.name, w)
		}
		if p.name == "timeline" {
			tb.screenshot("timeline-phone")
		}
	}
	tb.do("desktop viewport", chromedp.EmulateViewport(1280, 900))
	// Keyboard: the skip link comes first, then the controls, in order.
	tb.open("/ui/timeline")
	var seen []string
	for range 14 {
		tb.do("tab", chromedp.KeyEvent("\t"))
		seen = append(seen, eval[string](tb, `(document.activeElement.id || document.activeElement.textContent || document.activeElement.tagName).trim()`))
	}
	for _, want := range []string{"Skip to content", "Timeline", "Log out", "f-agent", "f-decision", "f-format"} {
		found := false
		for _, s := range seen {
			found = found || s == want
		}
		if !found {
			t.Errorf("Tab never reached %q (focus went through %q)", want, seen)
		}
	}
	if seen[0] != "Skip to content" {
		t.Errorf("first Tab focused %q, want the skip link", seen[0])
	}
}

func rowSeqs(tb *tab) []int {
	return eval[[]int](tb, `Array.from(document.querySelectorAll('table.entries tbody tr')).map((r) => Number(r.dataset.seq))`)
}

// TestBrowserTimeline filters and pages in the browser and watches the
// live tail show new entries within two seconds of their POST.
func TestBrowserTimeline(t *testing.T) {
	s := newSite(t, nil)
	tb := s.tab(t)
	tb.login(pReader)
	tb.open("/ui/timeline")
	first := rowSeqs(tb)
	if len(first) != 20 || first[0] != s.seeded.total {
		t.Fatalf("first page rows %v: want 20, newest %d first", first, s.seeded.total)
	}
	tb.do("older page", chromedp.Click(chromedp.ID("older")), chromedp.WaitVisible(chromedp.CSS(`a[rel="first"]`)))
	older := rowSeqs(tb)
	if len(older) == 0 || older[0] != first[len(first)-1]-1 {
		t.Fatalf("older page rows %v do not follow %v", older, first)
	}
	if loc := eval[string](tb, `location.pathname + location.search`); loc != fmt.Sprintf("/ui/timeline?before=%d", first[len(first)-1]) {
		t.Errorf("older page URL %q", loc)
	}
	// Filters through the form: decision and agent.
	tb.open("/ui/timeline")
	tb.do("filter",
		chromedp.SetValue(chromedp.ID("f-decision"), "rejected"),
		chromedp.SendKeys(chromedp.ID("f-agent"), "coder"),
		chromedp.Submit(chromedp.ID("f-agent")),
		// The navigation's own Timeline link is on every page; only the
		// filtered page has the clear link.
		chromedp.WaitVisible(chromedp.ID("clear-filters")),
	)
	if loc := eval[string](tb, `location.search`); !strings.Contains(loc, "decision=rejected") || !strings.Contains(loc, "agent=coder") {
		t.Errorf("filtered URL %q", loc)
	}
	rows := eval[[]string](tb, `Array.from(document.querySelectorAll('table.entries tbody tr')).map((r) => r.cells[2].textContent + ' ' + r.cells[4].textContent)`)
	if len(rows) == 0 {
		t.Fatal("no rows for decision=rejected, agent=coder")
	}
	for _, r := range rows {
		if !strings.HasPrefix(r, "rejected ") || !strings.Contains(r, "coder") {
			t.Errorf("filtered row %q does not match", r)
		}
	}
	// Live tail: a POST shows up within two seconds, a filtered-out one never.
	tb.open("/ui/timeline?agent=planner")
	if err := tb.waitFor("live tail", `document.getElementById('live-status').textContent === 'Live tail: on'`, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	other := s.submit(govDoc(uuidN(600), "reviewer", "deployer", hashN(1), hashN(2), "not for this filter"))
	start := time.Now()
	seq := s.submit(govDoc(uuidN(601), "planner", "coder", hashN(1), hashN(2), hostile()))
	if err := tb.waitFor("new row", fmt.Sprintf(`document.querySelector('tr[data-seq="%d"]') !== null`, seq), 2*time.Second); err != nil {
		t.Fatalf("entry %d not in the live tail within 2s: %v", seq, err)
	}
	t.Logf("live tail showed entry %d %s after its POST", seq, time.Since(start).Round(time.Millisecond))
	if eval[bool](tb, fmt.Sprintf(`document.querySelector('tr[data-seq="%d"]') !== null`, other)) {
		t.Errorf("entry %d (reviewer -> deployer) tailed into a timeline filtered on planner", other)
	}
	if got := rowSeqs(tb); got[0] != int(seq) {
		t.Errorf("live row not on top: %v", got)
	}
	tb.inert("live tail of a hostile document")
}

// TestBrowserProof checks the in-browser proof: verified for a good
// entry, the failing step named for a tampered audit path and for a
// checkpoint signed by another key.
func TestBrowserProof(t *testing.T) {
	s := newSite(t, nil)
	tb := s.tab(t)
	tb.login(pReader)
	seq := s.seeded.governed
	status := func(want string) string {
		t.Helper()
		err := tb.waitFor("proof status", `(() => { const s = document.getElementById('proof-status').textContent; return s.startsWith('verified') || s.startsWith('FAILED'); })()`, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := eval[string](tb, `document.getElementById('proof-status').textContent`)
		if !strings.HasPrefix(got, want) {
			steps := eval[[]string](tb, `Array.from(document.querySelectorAll('#proof-steps li')).map((l) => l.textContent)`)
			t.Errorf("proof status %q, want %q (steps %q)", got, want, steps)
		}
		return got
	}
	for _, n := range []uint64{1, seq, s.seeded.hostile, uint64(s.seeded.total)} {
		tb.open(fmt.Sprintf("/ui/entries/%d", n))
		status(fmt.Sprintf("verified: entry %d is in ledger.example/test at tree size %d", n, s.seeded.total))
	}
	s.ledger.mu.Lock()
	s.ledger.tamper[seq] = true
	s.ledger.mu.Unlock()
	tb.do("check again", chromedp.Navigate(s.url+fmt.Sprintf("/ui/entries/%d", seq)))
	got := status(`FAILED at step "inclusion proof": the audit path leads to `)
	tb.screenshot("entry-proof-tampered")
	t.Logf("tampered: %s", got)
	s.ledger.mu.Lock()
	s.ledger.tamper[seq] = false
	s.ledger.wrongKey = true
	s.ledger.mu.Unlock()
	tb.do("check again", chromedp.Click(chromedp.ID("proof-check")))
	got = status(`FAILED at step "checkpoint signature": no signature by the configured key ledger.example/test+`)
	t.Logf("wrong key: %s", got)
	s.ledger.mu.Lock()
	s.ledger.wrongKey = false
	s.ledger.mu.Unlock()
	tb.do("check again", chromedp.Click(chromedp.ID("proof-check")))
	status("verified")
}

// TestBrowserOperator unblocks an agent and redacts a payload from the
// pages (typed reason and confirmation), then logs out.
func TestBrowserOperator(t *testing.T) {
	s := newSite(t, nil)
	tb := s.tab(t)
	tb.login(pOperator)
	tb.open("/ui/agents/coder")
	tb.do("unblock",
		chromedp.SendKeys(chromedp.ID("unblock-reason"), "prompt re-reviewed <b>by</b> security"),
		chromedp.SendKeys(chromedp.ID("unblock-confirm"), "coder"),
		chromedp.Submit(chromedp.ID("unblock-confirm")),
		chromedp.WaitVisible(chromedp.ID("note")),
	)
	if note := eval[string](tb, `document.getElementById('note').textContent`); note != "prompt re-reviewed <b>by</b> security" {
		t.Errorf("unblock entry note %q", note)
	}
	tb.open("/ui/agents/coder")
	if st := eval[string](tb, `document.getElementById('agent-status').textContent`); st != "Not blocked." {
		t.Errorf("after unblocking: %q", st)
	}
	tb.open(fmt.Sprintf("/ui/entries/%d", s.seeded.governed))
	tb.do("redact",
		chromedp.SendKeys(chromedp.ID("redact-reason"), "customer asked"),
		chromedp.SendKeys(chromedp.ID("redact-confirm"), fmt.Sprint(s.seeded.governed)),
		chromedp.Submit(chromedp.ID("redact-confirm")),
		chromedp.WaitVisible(chromedp.ID("note")),
	)
	tb.open(fmt.Sprintf("/ui/entries/%d", s.seeded.governed))
	if n := eval[string](tb, `document.getElementById('payload-note').textContent`); n != "redacted" {
		t.Errorf("redacted entry says %q", n)
	}
	tb.inert("operator pages")
	tb.do("logout", chromedp.Click(chromedp.CSS(".logout button")), chromedp.WaitVisible(chromedp.ID("token")))
	tb.do("after logout", chromedp.Navigate(s.url+"/ui/timeline"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := eval[string](tb, `location.pathname + location.search`); loc != "/ui/login?next=%2Fui%2Ftimeline" {
		t.Errorf("after logout /ui/timeline went to %q", loc)
	}
}
