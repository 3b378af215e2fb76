package browsertest

// Browser tests of the page of an answer link (ask-user.md §10): a person
// opens the link from their mail, picks an option, submits the form (no
// script: a plain form POST), and sees the outcome, in English and in
// Thai. Screenshots of the form and of the outcome, at 390×844 (a phone)
// and 1280×800, go among the artifacts as link-<lang>-<state>-<w>x<h>.png,
// and to testdata with -update.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/locale"
)

func TestBrowserLink(t *testing.T) {
	t.Parallel()
	t.Run("en", func(t *testing.T) { browserLink(t, "en", "Production") })
	t.Run("th", func(t *testing.T) { browserLink(t, "th", "โปรดักชัน") })
}

// linkRequest is a question for alice@example.com by email, with context,
// in English or Thai.
func linkRequest(id, lang string) string {
	if lang == "th" {
		return fmt.Sprintf(`{"id":%q,"to":"email:alice@example.com","agent":"deploy-bot","locale":"th","context":%q,`+
			`"questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?",`+
			`"options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า"},{"label":"โปรดักชัน","description":"ผู้ใช้จริงทุกคน"}]}]}`, id, thaiContext)
	}
	return fmt.Sprintf(`{"id":%q,"to":"email:alice@example.com","agent":"deploy-bot","context":%q,`+
		`"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?",`+
		`"options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production","description":"Every customer"}]}]}`, id, webtest.BuildFailure)
}

// browserLink answers a link's page in a browser: the form, one option
// picked, Submit, the outcome.
func browserLink(t *testing.T, lang, pick string) {
	t.Parallel()
	w := locale.For(lang)
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, linkRequest("b-link-"+lang, lang))
	if !testwait.Until(10*time.Second, func() bool {
		_, found, err := b.Store.Get(context.Background(), id)
		return err == nil && found
	}) {
		t.Fatalf("question %s not taken up", id)
	}
	alice := askbridge.Person{Platform: askbridge.PlatformEmail, ID: "alice@example.com"}
	path := b.LinkPath(t, link.Claims{ID: id, Person: alice, Until: time.Now().Add(time.Hour)})
	tb := linkTab(t, b.Server.URL+path)

	tb.do(chromedp.WaitVisible(chromedp.CSS(`[data-testid=form]`)))
	if got := eval[string](tb, `document.documentElement.lang`); got != lang {
		t.Errorf("lang = %q; want %q", got, lang)
	}
	if got := tb.text(`[data-testid=submit]`); got != w.Get("WebSubmit") {
		t.Errorf("Submit reads %q; want %q", got, w.Get("WebSubmit"))
	}
	if got := tb.text(`[data-testid=recommended]`); got != w.Get("WebRecommended") {
		t.Errorf("the recommended mark reads %q", got)
	}
	if lang == "th" {
		wantThaiGlyphs(t, tb, `.text`)
	}
	tb.linkShots(fmt.Sprintf("link-%s-form", lang))

	// The second option is the one picked: a tap on its label.
	opt := `label.option:has(input[name="a.deploy_target"][value="1"])`
	if got := tb.text(opt + ` .label`); got != pick {
		t.Fatalf("the second option reads %q; want %q", got, pick)
	}
	tb.click(opt + ` .label`)
	if !eval[bool](tb, `document.querySelector('input[name="a.deploy_target"][value="1"]').checked`) {
		t.Fatal("the tap on the label did not choose the option")
	}
	tb.click(`[data-testid=submit]`)
	tb.do(chromedp.WaitVisible(chromedp.CSS(`[data-testid=outcome]`)))
	if got := tb.text(`[data-testid=notice]`); got != w.Get("LinkRecorded") {
		t.Errorf("notice = %q; want %q", got, w.Get("LinkRecorded"))
	}
	if got := tb.text(`[data-testid=outcome] .status`); !strings.Contains(got, pick) {
		t.Errorf("status = %q; want the answer %q", got, pick)
	}
	res := b.Result(t, id, 10*time.Second)
	if res.Status != askbridge.StatusAnswered || res.Via != askbridge.ViaLink || res.AnsweredBy == nil ||
		res.AnsweredBy.Platform != "email" || res.AnsweredBy.ID != "alice@example.com" || res.Answers.Answers["deploy_target"][0] != pick {
		t.Fatalf("result = %+v", res)
	}
	tb.linkShots(fmt.Sprintf("link-%s-answered", lang))
}

// linkTab opens url in a tab of its own browser context, 1280×800, and
// records script errors and security (CSP) messages, which fail the test.
func linkTab(t *testing.T, url string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first action allocates the tab, with ctx itself: a context with
	// a timeout would close the tab when it ends.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	tb := &tab{t: t, ctx: ctx, o: tabOptions{width: 1280, height: 800}}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Source == "security" || m.Type == chromedp.ConsoleError {
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
	tb.do(chromedp.Navigate(url))
	return tb
}

// linkShots writes screenshots of the link's page as it is now, on a
// phone (name-390x844.png) and a desktop (name-1280x800.png), among the
// artifacts and, with -update, in testdata.
func (tb *tab) linkShots(name string) {
	tb.t.Helper()
	for _, v := range []struct {
		w, h   int64
		mobile bool
	}{{390, 844, true}, {1280, 800, false}} {
		tb.viewport(v.w, v.h, v.mobile)
		file := fmt.Sprintf("%s-%dx%d.png", name, v.w, v.h)
		tb.shotTo(filepath.Join(artifactDir(tb.t), file))
		if *update {
			tb.shotTo(filepath.Join("testdata", file))
		}
	}
	tb.viewport(tb.o.width, tb.o.height, tb.o.mobile)
}
