package browsertest

// Browser tests of how the page answers (issue 18): the order of the open
// questions, no sticky hover on phones, hints that go once a field is
// filled, the banner while the bridge cannot be reached, the recommended
// option, the page's own words on its timeline, notifications and the
// title badge of a tab in the background, and the review before Submit.
// Each writes its screenshots at 390×844 (a phone) and 1280×800 as
// 18-<what>-<width>x<height>.png.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/locale"
)

// unnamed is req without an id of its own: the bridge names the question
// after its requests stream entry, "<ms>-<seq>".
func unnamed(t *testing.T, req string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(req), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "id")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// twoPicks is a prompt of two single-select questions.
func twoPicks(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"release-bot","questions":[`+
		`{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},`+
		`{"id":"window","header":"Window","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight"}]}]}`, id)
}

// promptOrder is the ids of the open prompts, top to bottom.
func (tb *tab) promptOrder() []string {
	tb.t.Helper()
	return eval[[]string](tb, `[...document.querySelectorAll('[data-testid=prompt]')].map(p => p.dataset.id)`)
}

// browserOrder: the open questions are listed in the order the agents
// asked them (the requests stream entries of their asks), not the order a
// replica took them up in. The second ask is taken up with the bridge's
// clock two minutes back, so it is created before the first, as a replica
// that picks up a later ask first would; it is still listed after it.
func browserOrder(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	tb := openTab(t, b, 1280, 800, "", false)
	// Named and unnamed asks alike are placed by their stream entry.
	first := b.Ask(t, webtest.OneQuestion("b-order-first"))
	b.WaitOpen(t, first)
	clk.Advance(-2 * time.Minute)
	second := b.Ask(t, unnamed(t, webtest.ThreeQuestions("-")))
	b.WaitOpen(t, first, second)
	clk.Advance(2 * time.Minute)
	third := b.Ask(t, webtest.MultiSelect("b-order-named"))
	l := b.WaitOpen(t, first, second, third)

	r1, _, err1 := b.Store.Get(t.Context(), first)
	r2, _, err2 := b.Store.Get(t.Context(), second)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !r2.Created.Before(r1.Created) {
		t.Fatalf("created %v, %v: the second ask should have been taken up first", r1.Created, r2.Created)
	}
	want := []string{first, second, third}
	var listed []string
	for _, q := range l.Questions {
		listed = append(listed, q.ID)
	}
	if !slices.Equal(listed, want) {
		t.Errorf("API order = %q; want the order asked %q", listed, want)
	}
	if q, _ := l.Listed(second); q.Asked <= q.Created {
		t.Errorf("second: asked %d, created %d; want asked from its entry, after the clock's created", q.Asked, q.Created)
	}
	tb.waitJS("three prompts", `document.querySelectorAll('[data-testid=prompt]').length === 3`, 10*time.Second)
	if got := tb.promptOrder(); !slices.Equal(got, want) {
		t.Errorf("page order = %q; want the order asked %q", got, want)
	}
	tb.shots("18-order")
}

// browserTouchHover: on a phone there is no hover, so nothing looks chosen
// that was not: tapping the first option of a question moves on to the
// next, whose first option lies under the finger, and it looks like the
// others. Every :hover style of the page is inside @media (hover: hover).
func browserTouchHover(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 390, 844, "", true)
	css := eval[map[string]any](tb, `(() => {
		const bare = [], kept = [];
		const walk = (rules, hover) => {
			for (const r of rules) {
				if (r instanceof CSSMediaRule) walk(r.cssRules, hover || r.media.mediaText.includes('(hover: hover)'));
				else if (r.selectorText && r.selectorText.includes(':hover')) (hover ? kept : bare).push(r.selectorText);
			}
		};
		for (const s of document.styleSheets) walk(s.cssRules, false);
		return {bare, kept, hover: matchMedia('(hover: hover)').matches};
	})()`)
	if bare, _ := css["bare"].([]any); len(bare) > 0 {
		t.Errorf("hover styles outside @media (hover: hover): %v", bare)
	}
	if kept, _ := css["kept"].([]any); len(kept) == 0 {
		t.Errorf("no hover styles at all: %v", css)
	}
	if css["hover"] != false {
		t.Fatalf("the phone emulation has hover: %v", css)
	}

	id := b.Ask(t, twoPicks("b-touch"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Staging"))))
	tb.do(chromedp.Tap(chromedp.CSS(optionSel(id, "Staging"))))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Now"))))
	got := eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const os = [...document.querySelectorAll(%s)];
		const look = (e) => { const c = getComputedStyle(e); return [c.backgroundColor, c.borderColor, c.boxShadow].join(' | '); };
		const r = os[0].getBoundingClientRect();
		return {
			under: document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)?.closest('[data-testid=option]')?.dataset.label || '',
			hovered: os[0].matches(':hover'),
			first: look(os[0]), second: look(os[1]),
			pressed: os.filter(o => o.getAttribute('aria-pressed') === 'true').length,
		};
	})()`, jsq(promptSel(id)+` [data-testid=option]`)))
	t.Logf("after the tap: %v", got)
	if got["first"] != got["second"] || got["pressed"] != float64(0) {
		t.Errorf("question 2 after a tap on question 1: first option %v, second %v, %v pressed; want both alike and none pressed",
			got["first"], got["second"], got["pressed"])
	}
	// An option ticked and unticked again stays under the finger, which a
	// phone leaves it hovered by: it looks like the untouched ones.
	multi := b.Ask(t, webtest.MultiSelect("b-touch-multi"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(multi, "EU"))))
	tb.do(chromedp.Tap(chromedp.CSS(optionSel(multi, "EU"))))
	tb.waitJS("EU ticked", fmt.Sprintf(`document.querySelector(%s).checked`, jsq(checkSel(multi, "EU"))), 5*time.Second)
	tb.do(chromedp.Tap(chromedp.CSS(optionSel(multi, "EU"))))
	tb.waitJS("EU unticked", fmt.Sprintf(`!document.querySelector(%s).checked`, jsq(checkSel(multi, "EU"))), 5*time.Second)
	// Its colours fade in 0.12 s: wait until they have settled.
	same := fmt.Sprintf(`(() => {
		const os = [...document.querySelectorAll(%s)];
		const look = (e) => { const c = getComputedStyle(e); return [c.backgroundColor, c.borderColor, c.boxShadow].join(' | '); };
		return look(os[0]) === look(os[1]);
	})()`, jsq(promptSel(multi)+` [data-testid=option]`))
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](same, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Second)))
	cancel()
	if err != nil {
		t.Errorf("an unticked option under the finger (hovered: %v) does not look like an untouched one: %v",
			eval[bool](tb, fmt.Sprintf(`document.querySelector(%s).matches(':hover')`, jsq(optionSel(multi, "EU")))), err)
	}
	tb.shots("18-touch-no-sticky-hover")
	tb.do(chromedp.Tap(chromedp.CSS(optionSel(id, "Tonight"))))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(id) + ` [data-testid=review]`)))
	tb.do(chromedp.Tap(chromedp.CSS(promptSel(id) + ` [data-testid=submit]`)))
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"target": {"Staging"}, "window": {"Tonight"}})
}

// errorShown is the card's hint, or "" when it is hidden.
func (tb *tab) errorShown(id string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e && !e.hidden ? e.textContent : ''; })()`,
		jsq(promptSel(id)+` [data-testid=prompt-error]`)))
}

// browserErrorHint: a hint that a question needs an answer goes as soon as
// it has one, without sending anything: the empty Other box's, once text
// is typed; a step's, once an option is checked or text typed.
func browserErrorHint(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1280, 800, "", false)
	one := b.Ask(t, webtest.OneQuestion("b-hint-1"))
	input := promptSel(one) + ` [data-testid=other-input]`
	tb.do(chromedp.WaitVisible(chromedp.CSS(input)))
	tb.click(promptSel(one) + ` [data-testid=other-submit]`)
	tb.waitJS("the hint", fmt.Sprintf(`!document.querySelector(%s).hidden`, jsq(promptSel(one)+` [data-testid=prompt-error]`)), 5*time.Second)
	if got := tb.errorShown(one); got != "Type your answer first." {
		t.Errorf("hint = %q", got)
	}
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute('aria-invalid') || ''`, jsq(input))); got != "true" {
		t.Errorf("the Other box's aria-invalid = %q with the hint shown", got)
	}
	tb.shots("18-error-hint-shown")
	tb.do(chromedp.SendKeys(chromedp.CSS(input), "c"))
	tb.waitJS("the hint gone", fmt.Sprintf(`document.querySelector(%s).hidden`, jsq(promptSel(one)+` [data-testid=prompt-error]`)), 5*time.Second)
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute('aria-invalid') || ''`, jsq(input))); got != "" {
		t.Errorf("the Other box's aria-invalid = %q once filled", got)
	}
	if _, ok := b.Open(t).Listed(one); !ok {
		t.Fatal("typing sent the answer")
	}
	tb.shots("18-error-hint-cleared")

	// A step that needs an answer: checking an option, or typing, takes
	// the hint back.
	three := b.Ask(t, webtest.ThreeQuestions("b-hint-3"))
	card := promptSel(three)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(three, "Staging"))))
	tb.click(optionSel(three, "Staging"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(three, "Unit"))))
	tb.click(card + ` [data-testid=next]`)
	if got := tb.errorShown(three); got != "Choose an option or type an answer first." {
		t.Fatalf("hint on Next without an answer = %q", got)
	}
	tb.click(checkSel(three, "Unit"))
	if got := tb.errorShown(three); got != "" {
		t.Errorf("hint = %q once an option is checked", got)
	}
	tb.click(checkSel(three, "Unit"))
	tb.click(card + ` [data-testid=next]`)
	if got := tb.errorShown(three); got == "" {
		t.Fatal("no hint on Next after the option was unchecked")
	}
	tb.do(chromedp.SendKeys(chromedp.CSS(card+` [data-testid=other-input]`), "smoke"))
	if got := tb.errorShown(three); got != "" {
		t.Errorf("hint = %q once text is typed", got)
	}
	if got := tb.stepCount(three); got != "2 / 3" {
		t.Errorf("step = %q; the hint going should not move on", got)
	}
}

// controls is which of a card's controls are disabled, by test id.
func (tb *tab) controls(id string) map[string]any {
	tb.t.Helper()
	return eval[map[string]any](tb, fmt.Sprintf(`(() => {
		const out = {};
		for (const c of document.querySelectorAll(%s)) out[c.dataset.testid] = (out[c.dataset.testid] || false) || c.disabled;
		return out;
	})()`, jsq(promptSel(id)+` [data-testid]:is(button, input)`)))
}

// browserUnreachable: while the bridge cannot be reached (its event
// stream cut and every API request failing, as when the network goes), a
// banner says so and every button that answers is disabled; typing stays
// possible. Once it is back, the banner goes, the buttons come back and
// an answer goes through.
func browserUnreachable(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1280, 800, "", false)
	id := b.Ask(t, webtest.OneQuestion("b-offline"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	if eval[bool](tb, `!document.querySelector('#offline').hidden`) {
		t.Fatal("the banner shows while the bridge is reachable")
	}

	b.CutOff(true)
	tb.waitJS("the banner", `!document.querySelector('#offline').hidden && document.body.dataset.reach === 'down'`, 10*time.Second)
	if got := strings.Join(strings.Fields(tb.text(`#offline`)), " "); got != "Cannot reach the bridge Answering is paused until the page is connected again." {
		t.Errorf("banner = %q", got)
	}
	got := tb.controls(id)
	for _, c := range []string{"option", "other-submit", "skip"} {
		if got[c] != true {
			t.Errorf("%s is enabled while the bridge cannot be reached (%v)", c, got)
		}
	}
	if got["other-input"] != false {
		t.Errorf("the Other box is disabled while the bridge cannot be reached (%v)", got)
	}
	tb.do(chromedp.SendKeys(chromedp.CSS(promptSel(id)+` [data-testid=other-input]`), "later"))
	tb.shots("18-unreachable")

	b.CutOff(false)
	tb.waitJS("the banner gone", `document.querySelector('#offline').hidden && document.body.dataset.reach === 'up' && document.querySelector('#connection').dataset.state === 'live'`, 20*time.Second)
	got = tb.controls(id)
	for _, c := range []string{"option", "other-submit", "skip", "other-input"} {
		if got[c] != false {
			t.Errorf("%s is still disabled once the bridge is back (%v)", c, got)
		}
	}
	if v := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).value`, jsq(promptSel(id)+` [data-testid=other-input]`))); v != "later" {
		t.Errorf("the text typed meanwhile = %q", v)
	}
	tb.shots("18-reconnected")
	// A click on an option answers with it, whatever was typed.
	tb.click(optionSel(id, "Production"))
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"deploy_target": {"Production"}})
}

// browserRecommended: the option whose label ends in a catalog's
// recommended word in parentheses ("(Recommended)", "(แนะนำ)", full-width
// parentheses too, any catalog's on any card) shows its text once, with a
// badge in the card's language; the answer is still the declared label.
func browserRecommended(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1280, 800, "", false)
	en := b.Ask(t, webtest.OneQuestion("b-rec-en"))
	th := b.Ask(t, webtest.ThaiQuestion("b-rec-th", thaiContext))
	mixed := b.Ask(t, `{"id":"b-rec-mixed","to":"web","agent":"release-bot","questions":[{"id":"regions","header":"Regions","question":"Which regions should get the release?","multiSelect":true,`+
		`"options":[{"label":"EU （แนะนำ）"},{"label":"US"},{"label":"(Recommended)"}]}]}`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(en, "Production"))), chromedp.WaitVisible(chromedp.CSS(optionSel(th, "โปรดักชัน"))),
		chromedp.WaitVisible(chromedp.CSS(checkSel(mixed, "US"))))
	options := func(id string) [][]string {
		return eval[[][]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(o => {
			const label = o.querySelector('.label');
			const badge = o.querySelector('[data-testid=recommended]');
			return [o.dataset.label, label.firstChild.textContent, badge ? badge.textContent : '-', o.dataset.recommended || '-'];
		})`, jsq(promptSel(id)+` [data-testid=option]`)))
	}
	for _, c := range []struct {
		id   string
		want [][]string
	}{
		{en, [][]string{{"Staging (Recommended)", "Staging", "Recommended", "true"}, {"Production", "Production", "-", "-"}}},
		{th, [][]string{{"สเตจจิ้ง (แนะนำ)", "สเตจจิ้ง", "แนะนำ", "true"}, {"โปรดักชัน", "โปรดักชัน", "-", "-"}}},
		{mixed, [][]string{{"EU （แนะนำ）", "EU", "Recommended", "true"}, {"US", "US", "-", "-"}, {"(Recommended)", "(Recommended)", "-", "-"}}},
	} {
		if got := options(c.id); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%s: options = %q; want %q", c.id, got, c.want)
		}
	}
	if got := tb.text(optionSel(en, "Staging (Recommended)")); strings.Contains(got, "(Recommended)") || !strings.Contains(got, "Safer default") {
		t.Errorf("the recommended option reads %q", got)
	}
	tb.shots("18-recommended")
	tb.click(optionSel(en, "Staging (Recommended)"))
	wantResult(t, b.Result(t, en, 10*time.Second), map[string][]string{"deploy_target": {"Staging (Recommended)"}})
	tb.click(checkSel(mixed, "EU （แนะนำ）"))
	tb.click(promptSel(mixed) + ` [data-testid=submit]`)
	wantResult(t, b.Result(t, mixed, 10*time.Second), map[string][]string{"regions": {"EU （แนะนำ）"}})
}

// browserOwnWords: the page shows its own free-text answer on the
// question's timeline entry, as this browser kept it (and still after a
// reload), only where the answer was free text. The bridge keeps none of
// it: its timeline says "own words", and another browser shows that.
func browserOwnWords(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1280, 800, "", false)
	one := b.Ask(t, webtest.OneQuestion("b-own-1"))
	input := promptSel(one) + ` [data-testid=other-input]`
	tb.do(chromedp.WaitVisible(chromedp.CSS(input)))
	tb.do(chromedp.SendKeys(chromedp.CSS(input), "the canary pool"))
	tb.click(promptSel(one) + ` [data-testid=other-submit]`)
	wantResult(t, b.Result(t, one, 10*time.Second), map[string][]string{"deploy_target": {"the canary pool"}})
	tb.waitEnded(one, "answered", 10*time.Second)

	three := b.Ask(t, webtest.ThreeQuestions("b-own-3"))
	card := promptSel(three)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(three, "Staging"))))
	tb.click(optionSel(three, "Staging"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(three, "Unit"))))
	tb.click(checkSel(three, "Unit"))
	tb.do(chromedp.SendKeys(chromedp.CSS(card+` [data-testid=other-input]`), "smoke tests"))
	tb.click(card + ` [data-testid=next]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(three, "Tonight"))))
	tb.click(optionSel(three, "Tonight"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=review]`)))
	tb.click(card + ` [data-testid=submit]`)
	wantResult(t, b.Result(t, three, 10*time.Second), map[string][]string{"target": {"Staging"}, "checks": {"Unit", "smoke tests"}, "window": {"Tonight"}})
	tb.waitEnded(three, "answered", 10*time.Second)

	check := func(tb *tab, who string, want map[string][][]string) {
		t.Helper()
		for id, w := range want {
			got := eval[[][]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(a => {
				const own = a.querySelector('[data-testid=own-words]');
				return [a.textContent, own ? own.textContent : '-'];
			})`, jsq(entrySel(id)+` [data-testid=entry-answer]`)))
			if !slices.EqualFunc(got, w, slices.Equal) {
				t.Errorf("%s: %s answers = %q; want %q", who, id, got, w)
			}
		}
	}
	mine := map[string][][]string{
		one:   {{"the canary pool", "the canary pool"}},
		three: {{"Staging", "-"}, {"Unit, smoke tests", "smoke tests"}, {"Tonight", "-"}},
	}
	check(tb, "this page", mine)
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).title`, jsq(entrySel(one)+` [data-testid=own-words]`))); got != locale.For("en").Get("WebOwnAnswerLocal") {
		t.Errorf("own words tooltip = %q", got)
	}
	tb.shots("18-own-words")

	// The bridge's timeline holds no free text.
	raw, err := json.Marshal(b.History(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "canary") || strings.Contains(string(raw), "smoke") {
		t.Errorf("the bridge's timeline holds free text: %s", raw)
	}

	// A reload keeps them; another browser has none.
	tb.do(chromedp.Reload())
	tb.waitReady()
	tb.do(chromedp.WaitVisible(chromedp.CSS(entrySel(three))))
	check(tb, "this page after a reload", mine)
	other := openTab(t, b, 1280, 800, "", false)
	other.do(chromedp.WaitVisible(chromedp.CSS(entrySel(three))))
	check(other, "another browser", map[string][][]string{
		one:   {{"own answer", "-"}},
		three: {{"Staging", "-"}, {"Unit, own answer", "-"}, {"Tonight", "-"}},
	})
}

// notifyStub replaces, before the page's own script runs, the browser's
// Notification with one that records what it shows and grants permission
// when asked, and document.hidden and visibilityState with a switch the
// test turns (setHiddenForTest), which also fires visibilitychange: a
// headless browser's tab is never in the background.
const notifyStub = `(() => {
	let hidden = false;
	Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => hidden });
	Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
	window.setHiddenForTest = (h) => { hidden = h; document.dispatchEvent(new Event('visibilitychange')); };
	window.notesForTest = [];
	window.permissionAskedForTest = 0;
	class FakeNotification {
		constructor(title, options) { window.notesForTest.push({ title, body: options.body, tag: options.tag, lang: options.lang }); }
		close() {}
		static requestPermission() {
			window.permissionAskedForTest++;
			FakeNotification.permission = 'granted';
			return Promise.resolve('granted');
		}
	}
	FakeNotification.permission = 'default';
	window.Notification = FakeNotification;
})();`

// browserNotify: a question that arrives while the tab is in the
// background prefixes the title with "(n) " until the tab is visible
// again; once the person opted in with "Notify me" (which asks the
// browser's permission), it also shows a notification, in the question's
// language. Nothing is shown for a question that arrives while the tab is
// visible, nor after the person turned notifications off.
func browserNotify(t *testing.T) {
	t.Parallel()
	en := locale.For("en")
	title := en.Get("WebTitle")
	b := webtest.Start(t, webtest.Options{})
	tb := openTabWith(t, b.Server.URL, "", tabOptions{width: 1280, height: 800, init: notifyStub})
	notes := func() []map[string]any { return eval[[]map[string]any](tb, `window.notesForTest`) }
	wantTitle := func(want string) {
		t.Helper()
		tb.waitJS("the title "+want, fmt.Sprintf(`document.title === %s`, jsq(want)), 10*time.Second)
	}
	if got := tb.text(`#notify`); got != en.Get("WebNotifyMe") {
		t.Errorf("notify button = %q", got)
	}

	// In the background, not opted in: the title badge only.
	eval[bool](tb, `setHiddenForTest(true), true`)
	first := b.Ask(t, webtest.OneQuestion("b-notify-1"))
	tb.do(chromedp.WaitReady(chromedp.CSS(promptSel(first))))
	wantTitle("(1) " + title)
	if n := notes(); len(n) != 0 {
		t.Errorf("notifications before opting in: %v", n)
	}
	eval[bool](tb, `setHiddenForTest(false), true`)
	wantTitle(title)

	// Opted in.
	tb.click(`#notify`)
	tb.waitJS("notifications on", `document.querySelector('#notify').dataset.state === 'on'`, 5*time.Second)
	if got := tb.text(`#notify`); got != en.Get("WebNotifyOn") {
		t.Errorf("notify button = %q once on", got)
	}
	if n := eval[int](tb, `window.permissionAskedForTest`); n != 1 {
		t.Errorf("permission asked %d times", n)
	}
	eval[bool](tb, `setHiddenForTest(true), true`)
	second := b.Ask(t, webtest.ThreeQuestions("b-notify-2"))
	tb.do(chromedp.WaitReady(chromedp.CSS(promptSel(second))))
	wantTitle("(1) " + title)
	third := b.Ask(t, webtest.ThaiQuestion("b-notify-3", thaiContext))
	tb.do(chromedp.WaitReady(chromedp.CSS(promptSel(third))))
	wantTitle("(2) " + title)
	want := []map[string]any{
		{"title": "Questions from release-bot", "body": "“Where should this deploy?” and 2 more", "tag": "askbridge:b-notify-2", "lang": "en"},
		{"title": "คำถามจาก deploy-bot", "body": "“จะปล่อยขึ้นที่ไหน?”", "tag": "askbridge:b-notify-3", "lang": "th"},
	}
	if got := notes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("notifications = %v; want %v", got, want)
	}
	// One ends elsewhere while the tab is hidden: the badge counts the
	// others.
	if code, _ := b.Answer(t, third, map[string]any{"skip": true}); code != 200 {
		t.Fatalf("skip = %d", code)
	}
	wantTitle("(1) " + title)
	tb.shots("18-notify")
	eval[bool](tb, `setHiddenForTest(false), true`)
	wantTitle(title)

	// Visible: no notification, no badge.
	fourth := b.Ask(t, twoPicks("b-notify-4"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(promptSel(fourth))))
	if got := notes(); len(got) != 2 || eval[string](tb, `document.title`) != title {
		t.Errorf("a question arriving in a visible tab: notifications %v, title %q", got, eval[string](tb, `document.title`))
	}

	// Turned off here: nothing more.
	tb.click(`#notify`)
	tb.waitJS("notifications off", `document.querySelector('#notify').dataset.state === 'off'`, 5*time.Second)
	eval[bool](tb, `setHiddenForTest(true), true`)
	fifth := b.Ask(t, webtest.MultiSelect("b-notify-5"))
	tb.do(chromedp.WaitReady(chromedp.CSS(promptSel(fifth))))
	wantTitle("(1) " + title)
	if got := notes(); len(got) != 2 {
		t.Errorf("notifications after turning them off: %v", got)
	}
	eval[bool](tb, `setHiddenForTest(false), true`)
}

// reviewAnswers is the review's questions and answers, as [qid, answer].
func (tb *tab) reviewAnswers(id string) [][]string {
	tb.t.Helper()
	return eval[[][]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(i => [i.dataset.qid, i.querySelector('[data-testid=review-answer]').textContent])`,
		jsq(promptSel(id)+` [data-testid=review-item]`)))
}

// browserReview: a prompt with several questions is submitted only from
// its review, which lists every question with its answer, goes back to
// any one of them and returns; a question left unanswered is named, and
// Submit takes the person to it.
func browserReview(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tb := openTab(t, b, 1280, 800, "", false)
	id := b.Ask(t, webtest.ThreeQuestions("b-review"))
	card := promptSel(id)
	count := func(sel string) int {
		return eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsq(card+" "+sel)))
	}
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Staging"))))
	if count(`[data-testid=submit]`) != 0 {
		t.Error("Submit on question 1")
	}
	tb.click(optionSel(id, "Staging"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(id, "Unit"))))
	tb.click(checkSel(id, "Unit"))
	tb.click(card + ` [data-testid=next]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Tonight"))))
	if count(`[data-testid=submit]`) != 0 || count(`[data-testid=to-review]`) != 1 {
		t.Errorf("on the last question: %d Submit, %d Review buttons; want only Review", count(`[data-testid=submit]`), count(`[data-testid=to-review]`))
	}
	tb.click(optionSel(id, "Tonight"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=review]`)))
	if got, want := tb.reviewAnswers(id), [][]string{{"target", "Staging"}, {"checks", "Unit"}, {"window", "Tonight"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("review = %q; want %q", got, want)
	}
	if got := tb.stepCount(id); got != "3 / 3" {
		t.Errorf("step count on the review = %q", got)
	}
	if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute('aria-current') || ''`, jsq(card+` [data-testid=step-review]`))); got != "step" {
		t.Errorf("the review's step button: aria-current = %q", got)
	}
	if got := tb.text(card + ` [data-testid=review-title]`); got != "Review your answers" {
		t.Errorf("review title = %q", got)
	}
	tb.shots("18-review")

	// Back to one question, and back to the review.
	tb.click(card + ` [data-testid=review-item][data-qid=checks] [data-testid=review-edit]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(checkSel(id, "Load"))))
	if got := tb.stepCount(id); got != "2 / 3" {
		t.Errorf("step count after Change = %q", got)
	}
	if count(`[data-testid=next]`) != 0 || count(`[data-testid=to-review]`) != 1 {
		t.Error("a question changed from the review should lead back to it")
	}
	tb.click(checkSel(id, "Load"))
	tb.click(card + ` [data-testid=to-review]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=review]`)))
	if got, want := tb.reviewAnswers(id), [][]string{{"target", "Staging"}, {"checks", "Unit, Load"}, {"window", "Tonight"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("review after the change = %q; want %q", got, want)
	}
	// A single-select question changed from the review returns to it.
	tb.click(card + ` [data-testid=review-item][data-qid=target] [data-testid=review-edit]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(id, "Production"))))
	tb.click(optionSel(id, "Production"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=review]`)))
	if _, ok := b.Open(t).Listed(id); !ok {
		t.Fatal("the question ended before Submit")
	}
	tb.click(card + ` [data-testid=submit]`)
	wantResult(t, b.Result(t, id, 10*time.Second), map[string][]string{"target": {"Production"}, "checks": {"Unit", "Load"}, "window": {"Tonight"}})
	tb.waitEnded(id, "answered", 10*time.Second)

	// Straight to the review: nothing answered yet.
	rest := b.Ask(t, webtest.ThreeQuestions("b-review-missing"))
	card = promptSel(rest)
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=step-review]`)))
	tb.click(card + ` [data-testid=step-review]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=review]`)))
	if got := eval[[]string](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(i => i.dataset.answered)`, jsq(card+` [data-testid=review-item]`))); !slices.Equal(got, []string{"false", "false", "false"}) {
		t.Errorf("answered = %q", got)
	}
	if got := tb.reviewAnswers(rest); got[0][1] != "Not answered yet" {
		t.Errorf("review = %q", got)
	}
	tb.shots("18-review-unanswered")
	tb.click(card + ` [data-testid=submit]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(optionSel(rest, "Staging"))))
	if got := tb.errorShown(rest); got != "Answer “Target” first." {
		t.Errorf("hint = %q", got)
	}
	tb.click(optionSel(rest, "Staging"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(card + ` [data-testid=review]`)))
	if got := tb.errorShown(rest); got != "" {
		t.Errorf("hint = %q once answered", got)
	}
	if _, ok := b.Open(t).Listed(rest); !ok {
		t.Fatal("an incomplete answer was sent")
	}
}
