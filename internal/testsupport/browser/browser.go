// Package browser loads a page in a real headless Chromium for tests: the
// HTML report of a run is checked as a person sees it, in the browser,
// with every script error, console error and network request the page
// caused recorded.
//
// The browser is Debian's chromium (scripts/install-chromium.sh installs
// it, and make test runs that script), or the binary SLUICE_CHROMIUM
// names. A test that needs it fails when it is missing; it is never
// skipped. It is driven through the DevTools protocol with chromedp, a
// maintained library, rather than a hand-written protocol client.
package browser

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path is the Chromium binary the tests use: SLUICE_CHROMIUM, else
// chromium (Debian's package) or chromium-browser on PATH.
func Path() (string, error) {
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: run scripts/install-chromium.sh (make test does), " +
		"or set SLUICE_CHROMIUM to a Chromium or Chrome binary")
}

// Page is one page loaded in its own headless browser, with what it did.
type Page struct {
	ctx    context.Context
	cancel func()
	url    string

	mu       sync.Mutex
	problems []string // script exceptions, console errors, log errors
	requests []string // URLs the page asked for, itself included
}

// Open starts a headless Chromium with a fresh profile and loads the file
// at path in a window of width by height CSS pixels, waiting until the
// page sets data-ready on its body (the report does when it has drawn
// itself) or data-failed (when it could not). The browser is stopped when the test ends. The flags
// keep Chromium from reaching for the network on its own (component
// updates, sync, background fetches, QUIC), which a machine without a
// network would otherwise see as errors.
func Open(t testing.TB, path string, width, height int64) *Page {
	t.Helper()
	bin, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(width), int(height)),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	p := &Page{ctx: ctx, cancel: func() { cancel(); acancel() }, url: (&url.URL{Scheme: "file", Path: abs}).String()}
	t.Cleanup(p.cancel)
	if err := chromedp.Listen(ctx, p.event); err != nil {
		t.Fatalf("browser: start %s: %v", bin, err)
	}
	lctx, lcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer lcancel()
	if err := chromedp.Do(lctx, chromedp.EmulateViewport(width, height), chromedp.Navigate(p.url)); err != nil {
		t.Fatalf("browser: load %s: %v", p.url, err)
	}
	if err := chromedp.Do(lctx, chromedp.WaitVisible(chromedp.CSS("body[data-ready], body[data-failed]"))); err != nil {
		t.Fatalf("browser: %s never drew itself (no body[data-ready]): %v; page problems: %v", path, err, p.Problems())
	}
	if Eval[bool](t, p, `document.body.dataset.failed === '1'`) {
		t.Fatalf("browser: %s failed to draw itself; page problems: %v", path, p.Problems())
	}
	return p
}

// Close stops the page's browser (it is stopped when the test ends
// anyway).
func (p *Page) Close() { p.cancel() }

// event records what the page did; it runs in chromedp's event loop, so
// it only takes notes.
func (p *Page) event(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += ": " + d.Exception.Description
		}
		p.problems = append(p.problems, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, text))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			p.problems = append(p.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " ")))
		}
	case *log.EventEntryAdded:
		if e := ev.Entry; e.Level == log.EntryLevelError || e.Level == log.EntryLevelWarning {
			p.problems = append(p.problems, fmt.Sprintf("log %s (%s): %s %s", e.Level, e.Source, e.Text, e.URL))
		}
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, ev.Request.URL)
	}
}

// Problems are the script exceptions, console errors and warnings, and
// errors the browser logged for the page (a Content-Security-Policy
// violation, a resource that failed to load), in order.
func (p *Page) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// Requests are the URLs the page asked for, other than the page itself.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, u := range p.requests {
		if u != p.url {
			out = append(out, u)
		}
	}
	return out
}

// Eval evaluates a JavaScript expression in the page and decodes its value
// into a T.
func Eval[T any](t testing.TB, p *Page, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v; page problems: %v", expr, err, p.Problems())
	}
	return v
}

// Wait evaluates a JavaScript expression until it is true, for at most
// ten seconds: for what the page does after an event (a link's
// hashchange).
func (p *Page) Wait(t testing.TB, cond string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if Eval[bool](t, p, "!!("+cond+")") {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("browser: %s never became true; page problems: %v", cond, p.Problems())
		}
	}
}

// Click clicks the first element the CSS selector matches, as a user's
// mouse does.
func (p *Page) Click(t testing.TB, selector string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible)); err != nil {
		t.Fatalf("browser: click %s: %v; page problems: %v", selector, err, p.Problems())
	}
}

// Screenshot is a PNG of the page's viewport.
func (p *Page) Screenshot(t testing.TB) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("browser: screenshot: %v", err)
	}
	return b
}
