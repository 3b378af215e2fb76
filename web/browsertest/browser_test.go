package browsertest

// End-to-end tests of the page in a real headless Chromium, driven with
// chromedp, against the page served by httptest with a real engine and a
// real store. Each test has its own tab (and browser context) and its own
// key prefix, so they run in parallel in one browser. A screenshot of each
// state goes to $ASKBRIDGE_ARTIFACTS (default <repo>/artifacts/screenshots).
//
// Without Chromium the tests fail: a browser test that skips checks
// nothing. ASKBRIDGE_CHROMIUM names the browser binary when it is not on the
// PATH as chromium.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/locale"
)

// browser is the one Chromium the tests share.
var browser struct {
	once sync.Once
	ctx  context.Context
	stop func()
	err  error
}

// chromiumPath finds the browser: ASKBRIDGE_CHROMIUM, else Debian's
// chromium (or a Chrome) on the PATH.
func chromiumPath() string {
	if p := os.Getenv("ASKBRIDGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserContext starts the shared browser once, and fails the test when
// there is none.
func browserContext(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Fatal("Chromium not found: install Debian's chromium (apt-get install chromium), or set ASKBRIDGE_CHROMIUM to the browser binary")
	}
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "web-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(path),
			chromedp.UserDataDir(dir),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-background-timer-throttling", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.Flag("hide-scrollbars", true),
			chromedp.Flag("mute-audio", true),
			chromedp.Flag("force-color-profile", "srgb"),
			// A name of another site that resolves to this machine, as a
			// DNS rebinding attacker's would (browserRebinding).
			chromedp.Flag("host-resolver-rules", "MAP "+rebindHost+" 127.0.0.1"),
			chromedp.WindowSize(1100, 800),
		)
		ctx, cancelBrowser := chromedp.NewContext(allocCtx)
		browser.ctx = ctx
		browser.stop = func() {
			cancelBrowser()
			cancelAlloc()
			_ = os.RemoveAll(dir)
		}
		if err := chromedp.Do(ctx); err != nil {
			browser.err = fmt.Errorf("start %s: %w", path, err)
		}
	})
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	return browser.ctx
}

// stopBrowser ends the shared browser after the last test.
func stopBrowser() {
	if browser.stop != nil {
		browser.stop()
	}
}

// update rewrites testdata/thai.png, the picture of the page kept with the
// code, testdata/email-*.png, the pictures of an email, and
// testdata/matrix-*.png, the pictures of what the Matrix channel posts;
// without it a test writes only among the artifacts.
var update = flag.Bool("update", false, "rewrite testdata/thai.png, testdata/email-*.png and testdata/matrix-*.png from this run")

// artifactDir is where screenshots go.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ASKBRIDGE_ARTIFACTS")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", "..", "artifacts", "screenshots"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is one browser tab showing a bridge's page.
type tab struct {
	t   *testing.T
	ctx context.Context
	o   tabOptions
	mu  sync.Mutex
	bad []string // exceptions and security errors seen in the page
}

// openTab opens a tab of width x height in its own browser context (its
// own sessionStorage) and loads the bridge's page; fragment is appended to
// the URL ("#token=…"). It waits until the page has loaded its lists and
// its event stream is live, unless the page is expected to ask for a token.
func openTab(t *testing.T, b *webtest.Bridge, width, height int64, fragment string, mobile bool) *tab {
	t.Helper()
	return openTabAt(t, b.Server.URL, width, height, fragment, mobile)
}

// openTabAt is openTab with the page at base (scheme://host:port).
func openTabAt(t *testing.T, base string, width, height int64, fragment string, mobile bool) *tab {
	t.Helper()
	return openTabWith(t, base, fragment, tabOptions{width: width, height: height, mobile: mobile})
}

// tabOptions shape a tab: its viewport, and the language of its browser.
type tabOptions struct {
	width, height int64
	mobile        bool
	// lang is the browser's language (a BCP 47 tag, "th"): what the page
	// reads in navigator.languages, sends as Accept-Language and formats
	// dates with. Empty keeps the browser's own (English).
	lang string
	// init is a script run in the page before its own, on every load
	// (DevTools protocol: Page.addScriptToEvaluateOnNewDocument): a stub
	// of a browser API.
	init string
}

// openTabWith opens a tab in its own browser context, as o says, and loads
// the page at base, as openTab does. The language is the tab's own, so
// tabs of different languages share the one browser.
func openTabWith(t *testing.T, base, fragment string, o tabOptions) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	opts := []chromedp.EmulateViewportOption{}
	if o.mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(o.width, o.height, opts...)); err != nil {
		t.Fatal(err)
	}
	if o.lang != "" {
		if err := chromedp.Do(ctx, browserLanguage(o.lang)); err != nil {
			t.Fatal(err)
		}
	}
	for _, script := range []string{noticeRecorder, o.init} {
		if script == "" {
			continue
		}
		err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			return tg.Call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]string{"source": script}, nil)
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	tb := &tab{t: t, ctx: ctx, o: o}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// Network errors (an event stream cut when a test ends, a
			// refused token) are expected; script errors and CSP
			// violations are not.
			if m.IsException() || m.Source == "security" || (m.Source == "" && m.Type == chromedp.ConsoleError) {
				tb.mu.Lock()
				tb.bad = append(tb.bad, m.String())
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, m := range tb.bad {
			t.Errorf("page error: %s", m)
		}
	})
	tb.do(chromedp.Navigate(base + "/" + fragment))
	if !strings.HasPrefix(fragment, "#no-wait") {
		tb.waitReady()
	}
	return tb
}

// browserLanguage makes lang the tab's browser language: its
// Accept-Language and navigator.languages (the user agent stays the
// browser's), and the locale its dates are formatted in. (DevTools
// protocol: Emulation.setUserAgentOverride, Emulation.setLocaleOverride.)
func browserLanguage(lang string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ua, err := chromedp.Evaluate[string]("navigator.userAgent")(ctx, t)
		if err != nil {
			return err
		}
		if err := t.Call(ctx, "Emulation.setUserAgentOverride", map[string]string{"userAgent": ua, "acceptLanguage": lang}, nil); err != nil {
			return err
		}
		return t.Call(ctx, "Emulation.setLocaleOverride", map[string]string{"locale": strings.ReplaceAll(lang, "-", "_")}, nil)
	})
}

// waitReady waits for the lists and a live event stream.
func (tb *tab) waitReady() {
	tb.t.Helper()
	tb.do(chromedp.WaitReady(chromedp.CSS(`body[data-ready="1"]`)),
		chromedp.WaitReady(chromedp.CSS(`#connection[data-state="live"]`)))
}

// do runs actions with a timeout.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	tb.doWithin(20*time.Second, actions...)
}

func (tb *tab) doWithin(d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// noticeRecorder keeps every notice the page shows in
// window.__askbridgeNotices ({id, outcome, text}): the page takes a notice
// down after 12 s, and a test on a busy machine may look later than that.
const noticeRecorder = `(() => {
  window.__askbridgeNotices = [];
  new MutationObserver(ms => ms.forEach(m => m.addedNodes.forEach(n => {
    if (n.nodeType === 1 && n.dataset.testid === 'notice') {
      window.__askbridgeNotices.push({ id: n.dataset.id || '', outcome: n.dataset.outcome || '', text: n.textContent.trim() });
    }
  }))).observe(document, { childList: true, subtree: true });
})();`

// shownNotice waits until the page has shown a notice about question id
// with outcome (it may have taken it down since) and returns its text.
func (tb *tab) shownNotice(id, outcome string) string {
	tb.t.Helper()
	find := fmt.Sprintf(`(window.__askbridgeNotices || []).find(n => n.id === %s && n.outcome === %s)`, jsq(id), jsq(outcome))
	tb.waitJS(fmt.Sprintf("a notice about %s (%s)", id, outcome), "!!"+find, 10*time.Second)
	return eval[string](tb, find+".text")
}

// waitJS waits until a JavaScript expression is truthy.
func (tb *tab) waitJS(what, js string, within time.Duration) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, within+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(within))); err != nil {
		tb.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// text reads an element's text in one step in the page, so a re-render in
// between cannot pull the node away.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	s := eval[*string](tb, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.textContent : null; })()`, jsq(sel)))
	if s == nil {
		tb.t.Fatalf("no element %s", sel)
	}
	return strings.TrimSpace(*s)
}

func (tb *tab) click(sel string) { tb.t.Helper(); tb.do(chromedp.Click(chromedp.CSS(sel))) }

// settled waits until the page's animations (the arrival highlight) have
// ended, so a picture shows the settled state.
func (tb *tab) settled() {
	tb.t.Helper()
	tb.waitJS("the page's animations to end", `document.getAnimations().every(a => a.playState !== 'running')`, 10*time.Second)
}

// shot writes a full-page PNG screenshot.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	tb.settled()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactDir(tb.t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", path)
}

// shots writes two full-page screenshots of the page as it is now: on a
// phone, name-390x844.png (a mobile, touch viewport), and on a desktop,
// name-1280x800.png; then the tab gets its own viewport back.
func (tb *tab) shots(name string) {
	tb.t.Helper()
	for _, v := range []struct {
		w, h   int64
		mobile bool
		layout string
	}{{390, 844, true, "cards"}, {1280, 800, false, "panel"}} {
		tb.viewport(v.w, v.h, v.mobile)
		tb.waitJS("the "+v.layout+" layout", fmt.Sprintf(`document.body.dataset.layout === %q`, v.layout), 5*time.Second)
		tb.shot(fmt.Sprintf("%s-%dx%d", name, v.w, v.h))
	}
	tb.viewport(tb.o.width, tb.o.height, tb.o.mobile)
}

// viewport emulates a viewport of width x height, a phone's (mobile, touch)
// or not.
func (tb *tab) viewport(width, height int64, mobile bool) {
	tb.t.Helper()
	opts := []chromedp.EmulateViewportOption{}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	tb.do(chromedp.EmulateViewport(width, height, opts...))
}

// Selectors of the page (see the hooks documented at the top of app.js).
func promptSel(id string) string { return fmt.Sprintf(`[data-testid=prompt][data-id=%q]`, id) }
func optionSel(id, label string) string {
	return promptSel(id) + fmt.Sprintf(` [data-testid=option][data-label=%q]`, label)
}
func checkSel(id, label string) string {
	return promptSel(id) + fmt.Sprintf(` [data-testid=option-check][value=%q]`, label)
}
func entrySel(id string) string {
	return fmt.Sprintf(`#timeline [data-testid=history-entry][data-id=%q]`, id)
}
func jsq(s string) string { b, _ := json.Marshal(s); return string(b) }

// waitEnded waits until the prompt is gone and the timeline shows the
// question with outcome, as the server wrote it (not the page's
// provisional entry).
func (tb *tab) waitEnded(id, outcome string, within time.Duration) {
	tb.t.Helper()
	tb.waitJS(id+" ended as "+outcome, fmt.Sprintf(`!document.querySelector(%s) && !!document.querySelector(%s)`,
		jsq(promptSel(id)), jsq(entrySel(id)+fmt.Sprintf(`[data-outcome=%q]:not([data-provisional])`, outcome))), within)
}

func (tb *tab) stepCount(id string) string {
	return tb.text(promptSel(id) + ` [data-testid=step-count]`)
}

func wantResult(t *testing.T, res askbridge.Result, answers map[string][]string) {
	t.Helper()
	if res.Status != askbridge.StatusAnswered || res.Via != askbridge.ViaWeb {
		t.Fatalf("result = %+v; want answered on the web", res)
	}
	if !webtest.SameAnswers(res.Answers.Answers, answers) {
		t.Fatalf("answers = %v; want %v", res.Answers.Answers, answers)
	}
}

func TestBrowser(t *testing.T) {
	browserContext(t) // skip or fail early, before starting bridges
	t.Run("appears-and-click-answers", browserClick)
	t.Run("stepper", browserStepper)
	t.Run("multi-select", browserMultiSelect)
	t.Run("other", browserOther)
	t.Run("skip", browserSkip)
	t.Run("timeout", browserTimeout)
	t.Run("cancel", browserCancel)
	t.Run("narrow-cards", browserNarrow)
	t.Run("two-replicas", browserReplicas)
	t.Run("token", browserToken)
	t.Run("loopback-alias", browserLoopbackAlias)
	t.Run("dns-rebinding", browserRebinding)
	t.Run("thai", browserThai)
	t.Run("thai-question-english-page", browserThaiOnEnglishPage)
	t.Run("reach", browserReach)
	t.Run("quorum", browserQuorum)
	t.Run("order", browserOrder)
	t.Run("touch-hover", browserTouchHover)
	t.Run("error-hint", browserErrorHint)
	t.Run("unreachable", browserUnreachable)
	t.Run("recommended", browserRecommended)
	t.Run("own-words", browserOwnWords)
	t.Run("notify", browserNotify)
	t.Run("review", browserReview)
	t.Run("standing", browserStanding)
}

func browserClick(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	if tb.text(`[data-testid=open-count]`) != "0" {
		t.Errorf("open count on an empty page = %q", tb.text(`[data-testid=open-count]`))
	}
	tb.shot("01-empty")

	id := b.Ask(t, webtest.OneQuestion("b-click"))
	// No reload: the event stream brings it.
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	if got := tb.text(promptSel(id) + ` [data-testid=question-text]`); got != "Where should this deploy?" {
		t.Errorf("question text = %q", got)
	}
	if left := tb.text(promptSel(id) + ` [data-testid=remaining]`); !strings.HasSuffix(left, " left") || !strings.HasPrefix(left, "1") {
		t.Errorf("remaining = %q; want about 15:00 left", left)
	}
	layout := eval[map[string]any](tb, `(() => {
		const os = document.querySelectorAll('[data-testid=option]');
		return {layout: document.body.dataset.layout, sideBySide: os[0].getBoundingClientRect().top === os[1].getBoundingClientRect().top};
	})()`)
	if layout["layout"] != "panel" || layout["sideBySide"] != true {
		t.Errorf("desktop layout = %v; want the panel with options side by side", layout)
	}
	tb.shot("02-question-pending")

	tb.click(optionSel(id, "Production"))
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"deploy_target": {"Production"}})
	tb.waitEnded(id, "answered", 10*time.Second)
	if got := tb.text(entrySel(id) + ` [data-testid=entry-answer]`); got != "Production" {
		t.Errorf("timeline answer = %q; want Production", got)
	}
	// The entry shows the status line every channel shows.
	if got := tb.text(entrySel(id) + ` [data-testid=entry-status]`); got != "Answered: Production" {
		t.Errorf("status = %q; want the status line", got)
	}
	if eval[bool](tb, `document.querySelector('[data-testid=open-empty]').hidden`) {
		t.Error("the empty panel note is hidden after the only question was answered")
	}
	tb.shot("03-answered")
}

func browserStepper(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	id := b.Ask(t, webtest.ThreeQuestions("b-stepper"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Staging"))))
	if got := tb.stepCount(id); got != "1 / 3" {
		t.Fatalf("step count = %q; want 1 / 3", got)
	}
	tb.shot("04-stepper-question-1")

	// A single-select click selects and moves on.
	tb.click(optionSel(id, "Staging"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(id, "Unit"))))
	if got := tb.stepCount(id); got != "2 / 3" {
		t.Fatalf("step count = %q; want 2 / 3", got)
	}
	tb.click(checkSel(id, "Unit"))
	tb.click(checkSel(id, "Load"))
	tb.shot("05-stepper-question-2")
	tb.click(promptSel(id) + ` [data-testid=next]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Tonight"))))

	// Back keeps the answers.
	tb.click(promptSel(id) + ` [data-testid=back]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(id, "Unit"))))
	checked := eval[[]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].filter(c => c.checked).map(c => c.value)`, jsq(promptSel(id)+` [data-testid=option-check]`)))
	if !slices.Equal(checked, []string{"Unit", "Load"}) {
		t.Fatalf("after Back the checked boxes are %v; want Unit, Load", checked)
	}
	tb.click(promptSel(id) + ` li:nth-child(1) [data-testid=step]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Staging"))))
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute('aria-pressed')`, jsq(optionSel(id, "Staging")))); got != "true" {
		t.Errorf("question 1 lost its answer: aria-pressed = %q", got)
	}
	tb.click(promptSel(id) + ` li:nth-child(3) [data-testid=step]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Tonight"))))
	if got := tb.stepCount(id); got != "3 / 3" {
		t.Fatalf("step count = %q; want 3 / 3", got)
	}
	// On the last question a click selects and opens the review; Submit
	// there sends everything.
	if n := eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsq(promptSel(id)+` [data-testid=submit]`))); n != 0 {
		t.Errorf("a Submit button on the last question, before the review")
	}
	tb.shot("06-stepper-question-3")
	tb.click(optionSel(id, "Tonight"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(id) + ` [data-testid=review]`)))
	tb.click(promptSel(id) + ` [data-testid=submit]`)
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Load"}, "window": {"Tonight"}})
	tb.waitEnded(id, "answered", 10*time.Second)
	answers := eval[[]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(a => a.textContent)`, jsq(entrySel(id)+` [data-testid=entry-answer]`)))
	if !slices.Equal(answers, []string{"Staging", "Unit, Load", "Tonight"}) {
		t.Errorf("timeline answers = %q", answers)
	}
	tb.shot("07-stepper-answered")
}

func browserMultiSelect(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	id := b.Ask(t, webtest.MultiSelect("b-multi"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(id, "EU"))))
	tb.click(checkSel(id, "Asia"))
	tb.click(checkSel(id, "EU"))
	tb.shot("08-multi-select")
	tb.click(promptSel(id) + ` [data-testid=submit]`)
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"regions": {"EU", "Asia"}})
	tb.waitEnded(id, "answered", 10*time.Second)
	if got := tb.text(entrySel(id) + ` [data-testid=entry-answer]`); got != "EU, Asia" {
		t.Errorf("timeline answer = %q", got)
	}
}

func browserOther(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	id := b.Ask(t, webtest.OneQuestion("b-other"))
	input := promptSel(id) + ` [data-testid=other-input]`
	tb.do(chromedp.WaitVisible(chromedp.CSS(input)))
	// An empty Other is refused on the page, and the question stays open.
	tb.click(promptSel(id) + ` [data-testid=other-submit]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(id) + ` [data-testid=prompt-error]`)))
	tb.do(chromedp.SendKeys(chromedp.CSS(input), "the canary pool"))
	tb.shot("09-other-typed")
	tb.click(promptSel(id) + ` [data-testid=other-submit]`)
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"deploy_target": {"the canary pool"}})
	tb.waitEnded(id, "answered", 10*time.Second)
	// The bridge's timeline does not echo free text; this page shows its
	// own words, kept in this browser (see browserOwnWords).
	if got := tb.text(entrySel(id) + ` [data-testid=entry-answer] [data-testid=own-words]`); got != "the canary pool" {
		t.Errorf("timeline answer = %q; want the page's own words", got)
	}
	if e := b.WaitHistory(t, id); len(e.Sections[0].Answer) != 0 || !e.Sections[0].OwnWords {
		t.Errorf("the bridge's timeline entry = %+v; want own words and no text", e.Sections[0])
	}
	tb.shot("10-other-answered")
}

func browserSkip(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	id := b.Ask(t, webtest.ThreeQuestions("b-skip"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(id) + ` [data-testid=skip]`)))
	tb.click(promptSel(id) + ` [data-testid=skip]`)
	res := b.Result(t, id, 10*time.Second)
	if res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonSkipped {
		t.Fatalf("result = %+v; want no_answer/skipped", res)
	}
	tb.waitEnded(id, "skipped", 10*time.Second)
	if got := tb.text(entrySel(id) + ` [data-testid=entry-status]`); got != "Skipped" {
		t.Errorf("status = %q", got)
	}
	tb.shot("11-skipped")
}

func browserTimeout(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	id := b.Ask(t, `{"id":"b-timeout","to":"web","agent":"nightly-job","timeoutSeconds":30,"questions":[{"id":"retry","header":"Retry","question":"The nightly build failed twice. Retry it?","options":[{"label":"Retry now"},{"label":"Leave it"}]}]}`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(id))))
	if left := tb.text(promptSel(id) + ` [data-testid=remaining]`); !strings.HasPrefix(left, "0:") {
		t.Errorf("remaining = %q; want under 0:30", left)
	}
	tb.shot("12-timeout-pending")
	res := b.Result(t, id, 45*time.Second)
	if res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonTimeout {
		t.Fatalf("result = %+v; want no_answer/timeout", res)
	}
	tb.waitEnded(id, "expired", 10*time.Second)
	if got := tb.text(entrySel(id) + ` [data-testid=entry-status]`); got != "Expired" {
		t.Errorf("status = %q", got)
	}
	tb.shownNotice(id, "expired")
	tb.shot("13-expired")
}

func browserCancel(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 800, "", false)
	// Agent text is shown as text, never as HTML.
	const sneaky = `Ship <b>it</b>? <img src=x onerror="window.pwned=1">`
	id := b.Ask(t, fmt.Sprintf(`{"id":"b-cancel","to":"web","agent":"<i>bot</i>","questions":[{"id":"ship","header":"<u>Ship</u>","question":%s,"options":[{"label":"<script>x</script>"},{"label":"No"}]}]}`, jsq(sneaky)))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(id))))
	if got := tb.text(promptSel(id) + ` [data-testid=question-text]`); got != sneaky {
		t.Errorf("question text = %q; want it verbatim", got)
	}
	if n := eval[int](tb, `document.querySelectorAll('#prompts img, #prompts b, #prompts i, #prompts u, #prompts script').length`); n != 0 {
		t.Errorf("agent text made %d elements", n)
	}
	tb.shot("14-cancel-pending")
	b.CancelQuestion(t, id)
	if res := b.Result(t, id, 10*time.Second); res.Reason != askbridge.ReasonCancelled {
		t.Fatalf("result = %+v; want cancelled", res)
	}
	tb.waitEnded(id, "cancelled", 10*time.Second)
	tb.shownNotice(id, "cancelled")
	if got := tb.text(entrySel(id) + ` [data-testid=entry-status]`); got != "Cancelled" {
		t.Errorf("status = %q", got)
	}
	if eval[bool](tb, `window.pwned === 1`) {
		t.Error("agent text ran a script")
	}
	tb.shot("15-cancelled")
}

func browserNarrow(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 390, 844, "", true)
	first := b.Ask(t, webtest.OneQuestion("b-narrow-1"))
	second := b.Ask(t, webtest.ThreeQuestions("b-narrow-2"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(first))), chromedp.WaitVisible(chromedp.CSS(promptSel(second))))
	got := eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const a = document.querySelector(%s), b = document.querySelector(%s);
		const os = a.querySelectorAll('[data-testid=option]');
		const o1 = os[0].getBoundingClientRect(), o2 = os[1].getBoundingClientRect();
		// The cards are in the order the agents asked, which this test
		// does not pin down (browserOrder does): measure the gap between
		// the upper and the lower one.
		const [ra, rb] = [a.getBoundingClientRect(), b.getBoundingClientRect()].sort((x, y) => x.top - y.top);
		const skip = a.querySelector('[data-testid=skip]').getBoundingClientRect();
		return {
			layout: document.body.dataset.layout,
			stacked: o2.top >= o1.bottom,
			fullWidth: o1.width >= ra.width * 0.8,
			tall: o1.height >= 44 && skip.height >= 44,
			separateCards: rb.top - ra.bottom >= 8,
			noSideScroll: document.documentElement.scrollWidth <= window.innerWidth,
		};
	})()`, jsq(promptSel(first)), jsq(promptSel(second))))
	for _, k := range []string{"stacked", "fullWidth", "tall", "separateCards", "noSideScroll"} {
		if got[k] != true {
			t.Errorf("narrow layout: %s is %v (%v)", k, got[k], got)
		}
	}
	if got["layout"] != "cards" {
		t.Errorf("layout = %v; want cards", got["layout"])
	}
	tb.shot("16-narrow-cards")
	tb.do(chromedp.Tap(chromedp.CSS(optionSel(first, "Staging (Recommended)"))))
	wantResult(t, b.Result(t, first, 10*time.Second), map[string][]string{"deploy_target": {"Staging (Recommended)"}})
	tb.waitEnded(first, "answered", 10*time.Second)
	tb.shot("17-narrow-answered")
}

func browserReplicas(t *testing.T) {
	t.Parallel()
	a := webtest.Start(t, webtest.Options{})
	b := webtest.Start(t, webtest.Options{Prefix: a.Prefix})
	pa := openTab(t, a, 1100, 800, "", false)
	pb := openTab(t, b, 1100, 800, "", false)
	id := a.Ask(t, webtest.OneQuestion("b-replicas"))
	pa.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	pb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	pb.shot("18-replica-b-pending")

	pa.click(optionSel(id, "Production"))
	pa.waitEnded(id, "answered", 10*time.Second)
	pb.waitEnded(id, "answered", 10*time.Second)
	pb.do(chromedp.WaitVisible(chromedp.CSS(entrySel(id) + `[data-elsewhere]`)))
	pb.shownNotice(id, "answered")
	if eval[bool](pa, fmt.Sprintf(`!!document.querySelector(%s)`, jsq(entrySel(id)+`[data-elsewhere]`))) {
		t.Error("page A marks its own answer as given elsewhere")
	}
	pb.shot("19-replica-b-answered-elsewhere")

	// One result, pushed once, although two engines and two pages saw it:
	// once the winner has finished the question (its timeline entry is
	// written) nothing more is pushed for it.
	a.WaitHistory(t, id)
	if n := a.ResultCount(t, id); n != 1 {
		t.Fatalf("LLEN result = %d; want 1", n)
	}
	wantResult(t, a.Result(t, id, time.Second), map[string][]string{"deploy_target": {"Production"}})
	raw, err := a.Store.History(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 1 {
		t.Errorf("%d timeline entries in Redis; want 1", len(raw))
	}
}

func browserToken(t *testing.T) {
	t.Parallel()
	const token = "browser-test-token-0123456789"
	b := webtest.Start(t, webtest.Options{Token: token})
	tb := openTab(t, b, 1100, 800, "#token="+token, false)
	if h := eval[string](tb, `location.hash`); h != "" {
		t.Errorf("the token stays in the address bar: %q", h)
	}
	if got := eval[string](tb, `sessionStorage.getItem('askbridge.token')`); got != token {
		t.Errorf("sessionStorage token = %q", got)
	}
	id := b.Ask(t, webtest.OneQuestion("b-token"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	tb.click(optionSel(id, "Production"))
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"deploy_target": {"Production"}})
	tb.waitEnded(id, "answered", 10*time.Second)

	// A fresh browser context without the token is asked for it.
	other := openTab(t, b, 1100, 800, "#no-wait", false)
	other.do(chromedp.WaitVisible(chromedp.CSS(`#auth`)))
	other.shot("20-token-needed")
	other.do(chromedp.SendKeys(chromedp.CSS(`#auth-token`), "wrong-token-wrong-token"), chromedp.Click(chromedp.CSS(`[data-testid=auth-submit]`)))
	other.do(chromedp.WaitVisible(chromedp.CSS(`#auth-error`)))
	other.do(chromedp.SendKeys(chromedp.CSS(`#auth-token`), token), chromedp.Click(chromedp.CSS(`[data-testid=auth-submit]`)))
	other.do(chromedp.WaitNotVisible(chromedp.CSS(`#auth`)))
	other.waitReady()
	other.do(chromedp.WaitVisible(chromedp.CSS(entrySel(id))))
}

// rebindHost is a name of another site that the browser resolves to
// 127.0.0.1 (host-resolver-rules), as a DNS rebinding attacker's name does
// once its short-lived record points there.
const rebindHost = "rebind.test"

// browserLoopbackAlias: the page opened at http://localhost:<port> while
// the bridge serves http://127.0.0.1:<port> answers like the page itself.
func browserLoopbackAlias(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	_, port, _ := strings.Cut(strings.TrimPrefix(b.Server.URL, "http://"), ":")
	tb := openTabAt(t, "http://localhost:"+port, 1100, 800, "", false)
	id := b.Ask(t, webtest.OneQuestion("b-alias"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	tb.click(optionSel(id, "Production"))
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"deploy_target": {"Production"}})
	tb.waitEnded(id, "answered", 10*time.Second)
}

// browserRebinding: a page of another site whose name resolves to
// 127.0.0.1 reaches the bridge's port, but neither lists nor answers the
// open questions of a bridge without a token: its requests carry its own
// name as Host, and its origin is not the bridge's.
func browserRebinding(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.OneQuestion("b-rebind"))
	b.WaitOpen(t, id)
	_, port, _ := strings.Cut(strings.TrimPrefix(b.Server.URL, "http://"), ":")
	evil := openTabAt(t, "http://"+rebindHost+":"+port, 1100, 800, "#no-wait", false)
	// The attacker's script, same-origin with the name it was loaded from.
	ctx, cancel := context.WithTimeout(evil.ctx, 10*time.Second)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(async () => {
		const list = await fetch('/api/questions');
		const listed = await list.text();
		const answer = await fetch('/api/questions/`+id+`/answer', {
			method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"skip":true}'});
		return {list: list.status, listed: listed.includes('`+id+`'), answer: answer.status};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got["list"] != float64(http.StatusMisdirectedRequest) || got["listed"] != false || got["answer"] != float64(http.StatusMisdirectedRequest) {
		t.Errorf("the rebinding page got %v; want 421 for both and nothing listed", got)
	}
	if l := b.Open(t); len(l.Questions) != 1 {
		t.Fatalf("the rebinding page ended the question: %+v", l.Questions)
	}
}

// thaiContext is the build-failure context, in Thai.
const thaiContext = "บิลด์ **#4812** ล้มเหลวบน `main`:\n```\nTestPay … FAIL\n```\nดู[บันทึก](https://ci.example.com/4812) — @everyone"

// browserThai: a browser whose language is Thai gets the page in Thai, and
// a Thai question (with context) is shown, answered with a Thai digit in
// the Other box and ended in Thai. Its screenshot goes to the artifacts;
// web/browsertest/testdata/thai.png, rewritten with -update, shows a reader
// what the page looks like. Thai must render as Thai letters, not boxes
// (Debian: fonts-thai-tlwg).
func browserThai(t *testing.T) {
	t.Parallel()
	th := locale.For("th")
	b := webtest.Start(t, webtest.Options{})
	tb := openTabWith(t, b.Server.URL, "", tabOptions{width: 480, height: 900, lang: "th"})

	// The page's own text.
	if got := eval[string](tb, `document.documentElement.lang`); got != "th" {
		t.Errorf("<html lang> = %q; want th", got)
	}
	for sel, id := range map[string]string{
		`#connection`:                     "WebLive",
		`#open-title [data-w]`:            "WebOpenTitle",
		`[data-testid=open-empty]`:        "WebOpenEmpty",
		`#history-title`:                  "WebTimelineTitle",
		`[data-testid=history-empty]`:     "WebTimelineEmpty",
		`#auth [data-testid=auth-submit]`: "WebTokenContinue",
	} {
		if got := tb.text(sel); got != th.Get(id) {
			t.Errorf("%s = %q; want %s in Thai, %q", sel, got, id, th.Get(id))
		}
	}
	if got := eval[string](tb, `document.title`); got != th.Get("WebTitle") {
		t.Errorf("title = %q", got)
	}

	first := b.Ask(t, webtest.ThaiQuestion("b-thai-1", thaiContext))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(first) + ` [data-testid=other-input]`)))
	card := func(sel string) string { return tb.text(promptSel(first) + " " + sel) }
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).lang`, jsq(promptSel(first)))); got != "th" {
		t.Errorf("card lang = %q", got)
	}
	for sel, want := range map[string]string{
		`[data-testid=prompt-intro]`:  "คำถามจาก deploy-bot",
		`[data-testid=question-text]`: "จะปล่อยขึ้นที่ไหน?",
		`[data-testid=skip]`:          "ข้าม",
		`[data-testid=other-submit]`:  th.Get("WebSend"),
		`.other label`:                th.Get("WebOtherLabel"),
	} {
		if got := card(sel); got != want {
			t.Errorf("card %s = %q; want %q", sel, got, want)
		}
	}
	if left, prefix := card(`[data-testid=remaining]`), strings.Split(th.Get("WebTimeLeft"), "{time}")[0]; !strings.HasPrefix(left, prefix) {
		t.Errorf("remaining = %q; want it to start with %q", left, prefix)
	}
	wantContext(t, tb, promptSel(first))

	// The second stays open for the picture: shown on Slack too, with
	// reminders, so its card has the other place and Seen.
	second := b.Ask(t, `{"id":"b-thai-2","to":["web","slack:C0123"],"remindEverySeconds":600,"agent":"deploy-bot","locale":"th",`+
		`"context":"รอบนี้มี **12** คอมมิต ดู[รายการเปลี่ยนแปลง](https://ci.example.com/4812/changes)\n\n- แก้ `+"`TestPay`"+`\n- เพิ่มการทดสอบโหลด","questions":[`+
		`{"id":"window","header":"ช่วงเวลา","question":"จะปล่อยเมื่อไร?","options":[{"label":"ตอนนี้"},{"label":"คืนนี้"}]},`+
		`{"id":"checks","header":"การทดสอบ","question":"ต้องรันชุดทดสอบใดก่อน?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"โหลด"}]}]}`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(second, "ตอนนี้"))))
	if got := tb.text(promptSel(second) + ` [data-testid=next]`); got != th.Get("WebNext") {
		t.Errorf("next = %q", got)
	}
	if got := tb.text(promptSel(second) + ` [data-testid=seen]`); got != "รับทราบ" {
		t.Errorf("Seen = %q; want the Thai button", got)
	}
	tb.waitJS("the other place, in Thai", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === %s`,
		jsq(promptSel(second)+` [data-testid=places]`), jsq("ถามไว้ที่อื่นด้วย: slack:C0123")), 10*time.Second)

	// A Thai digit in the Other box picks the second option.
	tb.do(chromedp.SendKeys(chromedp.CSS(promptSel(first)+` [data-testid=other-input]`), "๒"))
	tb.click(promptSel(first) + ` [data-testid=other-submit]`)
	wantResult(t, b.Result(t, first, 10*time.Second), map[string][]string{"deploy_target": {"โปรดักชัน"}})
	tb.waitEnded(first, "answered", 10*time.Second)
	wantEndedThai(t, tb, first)
	if got := tb.text(fmt.Sprintf(`[data-testid=notice][data-id=%q]`, first)); !strings.HasPrefix(got, "บันทึกคำตอบแล้ว") {
		t.Errorf("notice = %q; want the Thai notice", got)
	}
	if got := tb.text(`#open-title [data-w]`); got != th.Get("WebOpenTitle") {
		t.Errorf("open title after the answer = %q", got)
	}

	wantThaiGlyphs(t, tb, promptSel(second)+` [data-testid=question-text]`)
	// The picture kept with the code is rewritten only when asked (-update);
	// every run leaves its own among the artifacts.
	tb.shotTo(filepath.Join(artifactDir(t), "thai.png"))
	if *update {
		tb.shotTo(filepath.Join("testdata", "thai.png"))
	}
}

// browserThaiOnEnglishPage: on an English page, a Thai question's card is
// Thai and everything around it English.
func browserThaiOnEnglishPage(t *testing.T) {
	t.Parallel()
	en := locale.For("en")
	b := webtest.Start(t, webtest.Options{})
	tb := openTabWith(t, b.Server.URL, "", tabOptions{width: 1100, height: 800, lang: "en-US"})
	thai := b.Ask(t, webtest.ThaiQuestion("b-thai-en", thaiContext))
	english := b.Ask(t, webtest.OneQuestion("b-english"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(thai, "โปรดักชัน"))), chromedp.WaitVisible(chromedp.CSS(optionSel(english, "Production"))))

	if got := eval[string](tb, `document.documentElement.lang`); got != "en" {
		t.Errorf("<html lang> = %q; want en", got)
	}
	for sel, id := range map[string]string{`#connection`: "WebLive", `#open-title [data-w]`: "WebOpenTitle", `#history-title`: "WebTimelineTitle"} {
		if got := tb.text(sel); got != en.Get(id) {
			t.Errorf("%s = %q; want %q", sel, got, en.Get(id))
		}
	}
	for _, c := range []struct{ id, lang, skip, other string }{
		{thai, "th", "ข้าม", locale.For("th").Get("WebOtherLabel")},
		{english, "en", "Skip", en.Get("WebOtherLabel")},
	} {
		if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).lang`, jsq(promptSel(c.id)))); got != c.lang {
			t.Errorf("%s: card lang = %q; want %q", c.id, got, c.lang)
		}
		if got := tb.text(promptSel(c.id) + ` [data-testid=skip]`); got != c.skip {
			t.Errorf("%s: skip = %q; want %q", c.id, got, c.skip)
		}
		if got := tb.text(promptSel(c.id) + ` .other label`); got != c.other {
			t.Errorf("%s: other label = %q; want %q", c.id, got, c.other)
		}
	}
	wantContext(t, tb, promptSel(thai))
	if n := eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsq(promptSel(english)+` [data-testid=context]`))); n != 0 {
		t.Errorf("a question without context shows %d context blocks", n)
	}
	tb.shot("21-thai-question-english-page")

	tb.click(optionSel(thai, "โปรดักชัน"))
	wantResult(t, b.Result(t, thai, 10*time.Second), map[string][]string{"deploy_target": {"โปรดักชัน"}})
	tb.waitEnded(thai, "answered", 10*time.Second)
	wantEndedThai(t, tb, thai)
	if got := tb.text(`#history-title`); got != en.Get("WebTimelineTitle") {
		t.Errorf("timeline title = %q; want English", got)
	}
	tb.shot("22-thai-answered-english-page")
}

// wantContext checks the context of the card at sel: the sanitised
// HTML's formatting, a link that opens in a new tab without a way back,
// and the mention shown as text.
func wantContext(t *testing.T, tb *tab, sel string) {
	t.Helper()
	got := eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const c = document.querySelector(%s);
		if (!c) return {};
		const a = c.querySelector('a');
		return {
			strong: (c.querySelector('strong') || {}).textContent || '',
			code: (c.querySelector('pre code') || {}).textContent || '',
			href: a ? a.href : '', target: a ? a.target : '', rel: a ? a.rel : '',
			text: c.textContent,
			beforeQuestion: !!(c.compareDocumentPosition(c.parentNode.querySelector('[data-testid=question]')) & Node.DOCUMENT_POSITION_FOLLOWING),
			scripts: c.querySelectorAll('script, img, iframe, [onclick], [onerror]').length,
		};
	})()`, jsq(sel+` [data-testid=context]`)))
	if got["strong"] != "#4812" || got["code"] != "TestPay … FAIL" || got["href"] != "https://ci.example.com/4812" || got["target"] != "_blank" {
		t.Errorf("context = %v", got)
	}
	rel, _ := got["rel"].(string)
	if !strings.Contains(rel, "noopener") || !strings.Contains(rel, "noreferrer") {
		t.Errorf("context link rel = %q; want noopener noreferrer", rel)
	}
	if text, _ := got["text"].(string); !strings.Contains(text, "@everyone") {
		t.Errorf("context text = %q", text)
	}
	if got["beforeQuestion"] != true || got["scripts"] != float64(0) {
		t.Errorf("context placement, active elements = %v, %v", got["beforeQuestion"], got["scripts"])
	}
}

// wantEndedThai checks the timeline entry of a Thai question answered
// with the second option: the question and its Thai status line, and
// nothing left to answer with.
func wantEndedThai(t *testing.T, tb *tab, id string) {
	t.Helper()
	got := eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		return {
			lang: e.lang,
			status: e.querySelector('[data-testid=entry-status]').textContent,
			question: e.querySelector('.qa-q').textContent,
			answer: e.querySelector('[data-testid=entry-answer]').textContent,
			controls: e.querySelectorAll('button, input, [data-testid=option]').length,
		};
	})()`, jsq(entrySel(id))))
	want := map[string]any{"lang": "th", "status": "ตอบแล้ว: โปรดักชัน", "question": "จะปล่อยขึ้นที่ไหน?", "answer": "โปรดักชัน", "controls": float64(0)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ended entry %s = %v; want %v", k, got[k], v)
		}
	}
}

// wantThaiGlyphs checks that the browser draws Thai letters with a font
// that has them: Thai letters of different shapes have different widths,
// where boxes for missing glyphs would all be as wide as each other (and
// as a character no font has).
func wantThaiGlyphs(t *testing.T, tb *tab, sel string) {
	t.Helper()
	got := eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const host = document.querySelector(%s);
		const width = (s) => {
			const e = document.createElement('span');
			e.textContent = s;
			e.style.cssText = 'position:absolute;white-space:pre;font-size:40px;visibility:hidden';
			host.append(e);
			const w = e.getBoundingClientRect().width;
			e.remove();
			return w;
		};
		return {thai: ['ใ', 'ม', 'ก', 'ฒ', 'ญ'].map(width), missing: width('\u{10FFFD}')};
	})()`, jsq(sel)))
	widths, _ := got["thai"].([]any)
	distinct := map[float64]bool{}
	for _, w := range widths {
		if f, ok := w.(float64); ok && f != got["missing"] {
			distinct[f] = true
		}
	}
	if len(distinct) < 2 {
		t.Errorf("Thai letters are drawn as boxes (widths %v, a missing glyph %v): install a Thai font (Debian: fonts-thai-tlwg)", widths, got["missing"])
	}
}

// shotTo writes a full-page PNG screenshot to path (relative to the
// package), for a picture kept with the code.
func (tb *tab) shotTo(path string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	tb.settled()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", path)
}

// activity is the kinds and texts of what a card or timeline entry at sel
// shows happened to its question while it was open.
func (tb *tab) activity(sel string) [][2]string {
	tb.t.Helper()
	got := eval[[][]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(li => [li.dataset.kind, li.firstChild.textContent])`,
		jsq(sel+` [data-testid=activity-item]`)))
	out := make([][2]string, len(got))
	for i, g := range got {
		out[i] = [2]string{g[0], g[1]}
	}
	return out
}

// browserReach: a question shown in several places, with reminders (ask-
// user.md §5). Its card says where else it is open and which place could
// not be reached, counts the page's reminders, and has a Seen button;
// pressing it shows the notice and "Seen by web page", and the card keeps
// its answers. Another question comes to the page by an escalation step
// (its note says why), and is seen on Slack, by Alice: the page shows it
// without a reload. The timeline keeps what happened.
func browserReach(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	tb := openTab(t, b, 1100, 900, "", false)
	id := b.Ask(t, `{"id":"b-reach","to":["slack:C0123","telegram:42","discord:7","web"],"agent":"deploy-bot","remindEverySeconds":600,`+
		`"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]}`)
	card := promptSel(id)
	tb.waitJS("the other places", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Also open in: slack:C0123, telegram:42"`,
		jsq(card+` [data-testid=places]`)), 10*time.Second)
	tb.waitJS("the unreachable place", fmt.Sprintf(`!!document.querySelector(%s)`, jsq(card+` [data-testid=activity-item][data-kind=unreachable]`)), 10*time.Second)
	if got := tb.activity(card); !slices.Equal(got, [][2]string{{"unreachable", "Could not reach discord:7"}}) {
		t.Errorf("activity = %q", got)
	}
	if got := tb.text(card + ` [data-testid=seen]`); got != "Seen" {
		t.Errorf("Seen button = %q", got)
	}
	if n := eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsq(card+` [data-testid=reminders]:not([hidden])`))); n != 0 {
		t.Errorf("a reminder badge before any reminder")
	}

	// Escalated to the page after a minute: a card with its reason.
	up := b.Ask(t, `{"id":"b-escalated","to":"slack:C0123","agent":"nightly-job","escalate":[{"afterSeconds":60,"to":"web"}],`+
		`"questions":[{"id":"retry","header":"Retry","question":"The nightly build failed twice. Retry it?","options":[{"label":"Retry now"},{"label":"Leave it"}]}]}`)
	b.WaitOpen(t, id)
	// The clock moves on once the escalated question is created: its step
	// is due a minute after that (the intake may still be at it on a busy
	// machine).
	if !testwait.Until(10*time.Second, func() bool {
		_, found, err := b.Store.Get(context.Background(), up)
		return err == nil && found
	}) {
		t.Fatalf("%s never created", up)
	}
	clk.Advance(61 * time.Second)
	upCard := promptSel(up)
	tb.waitJS("the escalated question", fmt.Sprintf(`!!document.querySelector(%s)`, jsq(upCard+` [data-testid=activity-item][data-kind=escalated]`)), 10*time.Second)
	if got := tb.text(upCard + ` [data-testid=note]`); got != "No answer after 1 min, so this is asked here too." {
		t.Errorf("escalated note = %q", got)
	}
	if got := tb.text(upCard + ` [data-testid=places]`); got != "Also open in: slack:C0123" {
		t.Errorf("escalated places = %q", got)
	}
	if got := tb.activity(upCard); !slices.Equal(got, [][2]string{{"escalated", "Escalated to web"}}) {
		t.Errorf("escalated activity = %q", got)
	}

	// Ten minutes on, the first reminder: a badge on the card.
	clk.Advance(540 * time.Second)
	tb.waitJS("the reminder badge", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Reminder sent"`,
		jsq(card+` [data-testid=reminders][data-count="1"]:not([hidden])`)), 10*time.Second)
	tb.waitJS("the reminder in the activity", fmt.Sprintf(`!!document.querySelector(%s)`, jsq(card+` [data-testid=activity-item][data-kind=reminded]`)), 10*time.Second)
	if got := tb.activity(card)[1]; got != [2]string{"reminded", "Reminder sent in slack:C0123, telegram:42, web"} {
		t.Errorf("reminder activity = %q", got)
	}

	// Alice sees the escalated one on Slack.
	alice := askbridge.Person{Platform: "slack", ID: "U1", Name: "Alice"}
	if n, err := b.Engine.Acknowledge(t.Context(), up, alice, 0); err != nil || n != engine.NoticeSeen {
		t.Fatalf("Acknowledge = %v, %v", n, err)
	}
	tb.waitJS("Seen by Alice", fmt.Sprintf(`(document.querySelector(%s) || {}).dataset?.seen === "Alice"`, jsq(upCard)), 10*time.Second)
	if got := eval[[]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(n => n.textContent)`, jsq(upCard+` [data-testid=note]`))); !slices.Equal(got, []string{"No answer after 1 min, so this is asked here too.", "Seen by Alice"}) {
		t.Errorf("notes after Alice's Seen = %q", got)
	}

	// Seen on the page, with an answer begun: the answer stays.
	tb.do(chromedp.SendKeys(chromedp.CSS(card+` [data-testid=other-input]`), "the canary pool"))
	tb.shot("23-reach-pending")
	tb.click(card + ` [data-testid=seen]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-testid=notice][data-id=%q][data-notice=Seen]`, id))))
	if got := tb.text(fmt.Sprintf(`[data-testid=notice][data-id=%q]`, id)); got != "Marked as seen. The question stays open. — “Where should this deploy?”" {
		t.Errorf("notice = %q", got)
	}
	tb.waitJS("Seen by web page", fmt.Sprintf(`(document.querySelector(%s) || {}).dataset?.seen === "web page"`, jsq(card)), 10*time.Second)
	tb.waitJS("the Seen button gone", fmt.Sprintf(`!document.querySelector(%s)`, jsq(card+` [data-testid=seen]`)), 10*time.Second)
	if got := tb.text(card + ` [data-testid=note]`); got != "Seen by web page" {
		t.Errorf("note = %q", got)
	}
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).value`, jsq(card+` [data-testid=other-input]`))); got != "the canary pool" {
		t.Errorf("the answer begun = %q after Seen", got)
	}
	tb.waitJS("the Seen in the activity", fmt.Sprintf(`!!document.querySelector(%s)`, jsq(card+` [data-testid=activity-item][data-kind=acknowledged]`)), 10*time.Second)
	if got := tb.activity(card)[2]; got != [2]string{"acknowledged", "Seen by web page"} {
		t.Errorf("Seen activity = %q", got)
	}
	if n, _ := b.Open(t).Listed(id); n.SeenBy != "web page" {
		t.Errorf("listed %+v; want it seen by the web page", n)
	}
	tb.shot("24-reach-seen")

	// The answer ends it; the timeline keeps what happened.
	tb.click(card + ` [data-testid=other-submit]`)
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"deploy_target": {"the canary pool"}})
	tb.waitEnded(id, "answered", 10*time.Second)
	if got := tb.activity(entrySel(id)); len(got) != 3 || got[0][0] != "unreachable" || got[1][0] != "reminded" || got[2][0] != "acknowledged" {
		t.Errorf("timeline activity = %q", got)
	}
	if got := tb.text(entrySel(id) + ` [data-testid=entry-status]`); got != "Answered by web page in web" {
		t.Errorf("status = %q", got)
	}
	tb.shot("25-reach-answered")
}

// browserQuorum: a 2-of-3 question (ask-user.md §6). Alice has voted
// Reject; the page votes Approve: its notice counts the vote, the tally
// and who has voted change without a reload, and the card takes no second
// vote. Bob then agrees with the page: the card leaves the open list and
// the timeline shows the answer with every vote.
func browserQuorum(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1100, 900, "", false)
	id := b.Ask(t, webtest.QuorumQuestion("b-quorum", ""))
	card := promptSel(id)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Approve"))))
	b.Vote(t, id, webtest.Alice, webtest.Change("Reject"))
	// Alice's vote comes as an event: the tally and who has voted follow.
	tb.waitJS("Alice's vote", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Voted: Alice"`, jsq(card+` [data-testid=voters]`)), 10*time.Second)
	if got := tb.text(card + ` [data-testid=tally]`); got != "Votes: 1 of 2 needed — Approve 0, Reject 1" {
		t.Errorf("tally = %q", got)
	}
	if n := eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsq(card+` [data-testid=my-vote], `+card+` [data-testid=note]`))); n != 0 {
		t.Errorf("before the page's vote: %d my-vote or note elements", n)
	}
	tb.shot("26-quorum-pending")

	tb.click(optionSel(id, "Approve"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-testid=notice][data-id=%q][data-notice=Voted]`, id))))
	if got := tb.text(fmt.Sprintf(`[data-testid=notice][data-id=%q]`, id)); got != "Vote recorded (1 of 2 needed). — “Approve the change to the payment service?”" {
		t.Errorf("notice = %q", got)
	}
	tb.waitJS("the tally after the page's vote", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Votes: 1 of 2 needed — Approve 1, Reject 1"`,
		jsq(card+` [data-testid=tally]`)), 10*time.Second)
	tb.waitJS("the page among the voters", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Voted: Alice, web page"`,
		jsq(card+` [data-testid=voters]`)), 10*time.Second)
	if got := tb.text(card + ` [data-testid=my-vote]`); got != "You voted: Approve" {
		t.Errorf("my vote = %q", got)
	}
	locked := eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const c = document.querySelector(%s);
		const controls = [...c.querySelectorAll('[data-testid=option], [data-testid=other-input], [data-testid=other-submit], [data-testid=skip]')];
		return {voted: c.dataset.voted, state: c.dataset.state, controls: controls.length,
			disabled: controls.filter(e => e.getAttribute('aria-disabled') === 'true').length,
			readOnly: c.querySelector('[data-testid=other-input]').readOnly};
	})()`, jsq(card)))
	if locked["voted"] != "true" || locked["state"] != "pending" || locked["controls"] != float64(5) || locked["disabled"] != float64(5) || locked["readOnly"] != true {
		t.Errorf("card after the page's vote = %v; want it open, every answer control disabled", locked)
	}
	// Another attempt says why nothing happens, and sends nothing.
	tb.click(optionSel(id, "Reject"))
	tb.waitJS("the refusal", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "You already answered; your first answer stands."`,
		jsq(card+` [data-testid=prompt-error]:not([hidden])`)), 5*time.Second)
	tb.click(card + ` [data-testid=skip]`)
	if q, _ := b.Open(t).Listed(id); q.TallyLine != "Votes: 1 of 2 needed — Approve 1, Reject 1" || q.Abstained != 0 || len(q.Voters) != 2 {
		t.Errorf("after the attempts the question is listed as %+v", q)
	}
	tb.shot("27-quorum-voted")

	// Bob agrees with the page: answered.
	if sub := b.Vote(t, id, webtest.Bob, webtest.Change("Approve")); !sub.Won {
		t.Fatalf("Bob's vote = %+v; want the deciding one", sub)
	}
	if res := b.Result(t, id, 10*time.Second); res.Status != askbridge.StatusAnswered || !webtest.SameAnswers(res.Answers.Answers, webtest.Change("Approve")) {
		t.Fatalf("result = %+v", res)
	}
	tb.waitEnded(id, "answered", 10*time.Second)
	if got := tb.text(entrySel(id) + ` [data-testid=entry-status]`); got != "Answered: Approve" {
		t.Errorf("status = %q", got)
	}
	if got := tb.text(entrySel(id) + ` [data-testid=entry-answer]`); got != "Approve" {
		t.Errorf("timeline answer = %q", got)
	}
	votes := eval[[][]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(v => [v.dataset.by, v.querySelector('[data-testid=entry-vote-answer]').textContent])`,
		jsq(entrySel(id)+` [data-testid=entry-vote]`)))
	if want := [][]string{{"Alice", "Reject"}, {"web page", "Approve"}, {"Bob", "Approve"}}; !slices.EqualFunc(votes, want, slices.Equal) {
		t.Errorf("timeline votes = %q; want %q", votes, want)
	}
	if got := eval[bool](tb, fmt.Sprintf(`!!document.querySelector(%s)`, jsq(entrySel(id)+`:not([data-elsewhere])`))); !got {
		t.Error("a question the page voted on is shown as ended elsewhere")
	}
	if got := tb.shownNotice(id, "answered"); got != "Answered: “Approve the change to the payment service?”" {
		t.Errorf("end notice = %q", got)
	}
	tb.shot("28-quorum-answered")

	// Another: the page abstains, Alice and Bob disagree: no agreement.
	apart := b.Ask(t, webtest.QuorumQuestion("b-quorum-apart", ""))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(apart) + ` [data-testid=skip]`)))
	tb.click(promptSel(apart) + ` [data-testid=skip]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-testid=notice][data-id=%q][data-notice=Abstained]`, apart))))
	tb.waitJS("the abstention on the card", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "You abstained."`,
		jsq(promptSel(apart)+` [data-testid=my-vote]`)), 10*time.Second)
	b.Vote(t, apart, webtest.Alice, webtest.Change("Approve"))
	b.Vote(t, apart, webtest.Bob, webtest.Change("Reject"))
	tb.waitEnded(apart, "no_quorum", 10*time.Second)
	if got := tb.text(entrySel(apart) + ` [data-testid=entry-status]`); got != "No agreement" {
		t.Errorf("status = %q", got)
	}
	votes = eval[[][]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(v => [v.dataset.by, v.querySelector('[data-testid=entry-vote-answer]').textContent])`,
		jsq(entrySel(apart)+` [data-testid=entry-vote]`)))
	if want := [][]string{{"web page", "abstained"}, {"Alice", "Approve"}, {"Bob", "Reject"}}; !slices.EqualFunc(votes, want, slices.Equal) {
		t.Errorf("timeline votes = %q; want %q", votes, want)
	}
	if got := tb.shownNotice(apart, "no_quorum"); got != "No agreement: “Approve the change to the payment service?”" {
		t.Errorf("end notice = %q", got)
	}
	tb.shot("29-quorum-no-agreement")
}
