package browsertest

// The email a question sends (package email) as a mail reader that shows
// HTML draws it: the golden HTML part of the prompt, in English and Thai,
// on a phone (390×844) and a desktop (1280×800). Each picture goes among
// the artifacts, and with -update to testdata/email-<lang>-<w>x<h>.png,
// the pictures the docs show.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestEmailScreenshots renders email/testdata/prompt.<lang>.html: it must
// fit the viewport's width (no sideways scrolling on a phone), load
// nothing (no image, no request but the page's own), and show its answer
// button.
func TestEmailScreenshots(t *testing.T) {
	for _, lang := range []string{"en", "th"} {
		page, err := os.ReadFile(filepath.Join("..", "..", "email", "testdata", "prompt."+lang+".html"))
		if err != nil {
			t.Fatal(err)
		}
		requests := make(chan string, 16)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case requests <- r.URL.Path:
			default:
			}
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(page)
		}))
		for _, v := range []struct {
			w, h   int64
			mobile bool
		}{{390, 844, true}, {1280, 800, false}} {
			emailShot(t, srv.URL, fmt.Sprintf("email-%s-%dx%d", lang, v.w, v.h), v.w, v.h, v.mobile)
		}
		srv.Close()
		close(requests)
		for p := range requests {
			// The browser asks for a favicon on its own; a mail reader
			// does not, and the email names none.
			if p != "/" && p != "/favicon.ico" {
				t.Errorf("the %s email loaded %s", lang, p)
			}
		}
	}
}

// emailShot loads the email at url in a tab of w×h and takes its picture.
func emailShot(t *testing.T, url, name string, w, h int64, mobile bool) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	opts := []chromedp.EmulateViewportOption{}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	for _, a := range []chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(w, h, opts...), chromedp.Navigate(url)} {
		if err := chromedp.Do(ctx, a); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fits := evalIn[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`)
	loads := evalIn[int](t, ctx, `document.images.length + document.querySelectorAll('[src],link,script').length`)
	button := evalIn[bool](t, ctx, `(() => {
		const a = [...document.querySelectorAll('a')].find(a => a.style.display === 'inline-block');
		if (!a) return false;
		const r = a.getBoundingClientRect();
		return r.width > 0 && r.right <= window.innerWidth;
	})()`)
	if !fits || loads != 0 || !button {
		t.Errorf("%s: fits the width %v, loads %d things, answer button shown %v", name, fits, loads, button)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	paths := []string{filepath.Join(artifactDir(t), name+".png")}
	if *update {
		paths = append(paths, filepath.Join("testdata", name+".png"))
	}
	for _, p := range paths {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

// evalIn evaluates js in the tab of ctx.
func evalIn[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}
