package browsertest

// What the Matrix channel posts, drawn for the docs: the golden events of
// package matrix (matrix/testdata/<lang>/*.json), a text prompt's
// formatted_body and a poll's question and answers, each on a small page
// laid out like a chat client's timeline. The pages are built here from
// the events' content; they are not a Matrix client, and the pictures say
// so. Each picture goes among the artifacts, and with -update to
// testdata/matrix-<lang>-<kind>.png, the pictures docs/platforms.md shows.

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// matrixEvent is an event of a golden file of package matrix: the prompt
// as the bridge posts it.
type matrixEvent struct {
	Prompt struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	} `json:"prompt"`
}

// pollContent is what the poll card shows of a poll's content: the stable
// keys, which the bridge sends beside the unstable ones.
type pollContent struct {
	Poll struct {
		Question struct {
			Text string `json:"m.text"`
		} `json:"question"`
		Answers []struct {
			ID   string `json:"id"`
			Text string `json:"m.text"`
		} `json:"answers"`
	} `json:"m.poll.start"`
}

// textContent is what a text prompt shows: its formatted_body, and the
// plain body that says the same.
type textContent struct {
	Body   string `json:"body"`
	Format string `json:"format"`
	HTML   string `json:"formatted_body"`
}

// matrixPage is a chat timeline with one message from the bot: a poll
// card or an HTML body, and a caption that says where it comes from.
var matrixPage = template.Must(template.New("m").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Matrix prompt</title>
<style>
body { margin: 0; font: 15px/1.45 system-ui, "Noto Sans", "Loma", sans-serif; color: #17191c; background: #fff; }
.timeline { padding: 16px 16px 8px; }
.event { display: flex; gap: 12px; }
.avatar { flex: none; width: 32px; height: 32px; border-radius: 50%; background: #0dbd8b; color: #fff; font-weight: 600; display: flex; align-items: center; justify-content: center; }
.sender { font-weight: 600; color: #0dbd8b; margin-bottom: 2px; }
.body { overflow-wrap: anywhere; }
.body pre, .body code { font-family: ui-monospace, monospace; background: #f4f6fa; border-radius: 4px; }
.poll { border: 1px solid #e3e8f0; border-radius: 8px; padding: 12px 14px; max-width: 460px; }
.question { font-weight: 600; margin-bottom: 2px; }
.answer { display: flex; align-items: center; gap: 10px; border: 1px solid #e3e8f0; border-radius: 8px; padding: 8px 10px; margin-top: 8px; }
.radio { flex: none; width: 14px; height: 14px; border: 2px solid #8d97a5; border-radius: 50%; }
.caption { color: #737d8c; font-size: 12px; padding: 8px 16px 12px; border-top: 1px solid #e3e8f0; }
</style></head>
<body><div class="timeline"><div class="event"><div class="avatar">A</div><div class="main">
<div class="sender">askbridge</div>
{{if .Poll}}<div class="poll" id="poll"><div class="question">{{.Poll.Poll.Question.Text}}</div>
{{range .Poll.Poll.Answers}}<div class="answer"><span class="radio"></span><span class="label">{{.Text}}</span></div>
{{end}}</div>
{{else}}<div class="body" id="body">{{.Body}}</div>{{end}}
</div></div></div>
<div class="caption">Rendered from the event the bridge posts ({{.Source}}), not a screenshot of a Matrix client.</div>
</body></html>`))

// TestMatrixScreenshots draws the English and Thai poll (matrix's
// poll.json) and text prompt (text-multi.json): each page must fit a
// phone-wide column, load nothing, and show every answer of the poll, or
// the text's question.
func TestMatrixScreenshots(t *testing.T) {
	for _, lang := range []string{"en", "th"} {
		for _, kind := range []string{"poll", "text"} {
			file := map[string]string{"poll": "poll.json", "text": "text-multi.json"}[kind]
			page, want := matrixPageOf(t, lang, file)
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
			matrixShot(t, srv.URL, "matrix-"+lang+"-"+kind, want)
			srv.Close()
			close(requests)
			for p := range requests {
				if p != "/" && p != "/favicon.ico" {
					t.Errorf("the %s %s page loaded %s", lang, kind, p)
				}
			}
		}
	}
}

// matrixPageOf builds the page of golden file lang/file of package matrix
// and returns it with the texts it must show: the poll's question and
// each answer, or every line of the text's plain body (so the HTML shows
// what the body says, the agent's "<…>" as text).
func matrixPageOf(t *testing.T, lang, file string) (page []byte, want []string) {
	t.Helper()
	src := filepath.Join("matrix", "testdata", lang, file)
	b, err := os.ReadFile(filepath.Join("..", "..", src))
	if err != nil {
		t.Fatal(err)
	}
	var ev matrixEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	data := map[string]any{"Lang": lang, "Source": filepath.ToSlash(src)}
	switch ev.Prompt.Type {
	case "org.matrix.msc3381.poll.start":
		var c pollContent
		if err := json.Unmarshal(ev.Prompt.Content, &c); err != nil || len(c.Poll.Answers) == 0 || c.Poll.Question.Text == "" {
			t.Fatalf("%s: no poll under m.poll.start (%v)", src, err)
		}
		data["Poll"] = c
		want = append(want, c.Poll.Question.Text)
		for _, a := range c.Poll.Answers {
			want = append(want, a.Text)
		}
	case "m.room.message":
		var c textContent
		if err := json.Unmarshal(ev.Prompt.Content, &c); err != nil || c.Format != "org.matrix.custom.html" || c.HTML == "" {
			t.Fatalf("%s: no HTML body (%v)", src, err)
		}
		// The bridge's own formatted_body, its agent's text escaped by the
		// channel (matrix/render.go), shown as a client shows it.
		data["Body"] = template.HTML(c.HTML)
		for _, l := range strings.Split(c.Body, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				want = append(want, l)
			}
		}
	default:
		t.Fatalf("%s: a prompt of type %s", src, ev.Prompt.Type)
	}
	var out bytes.Buffer
	if err := matrixPage.Execute(&out, data); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), want
}

// matrixShot loads the page at url in a desktop tab 560 px wide, checks
// it, and takes its picture.
func matrixShot(t *testing.T, url, name string, want []string) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	for _, a := range []chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(560, 300), chromedp.Navigate(url)} {
		if err := chromedp.Do(ctx, a); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fits := evalIn[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`)
	loads := evalIn[int](t, ctx, `document.images.length + document.querySelectorAll('[src],link,script').length`)
	shown := evalIn[string](t, ctx, `document.querySelector('.main').innerText`)
	if !fits || loads != 0 {
		t.Errorf("%s: fits the width %v, loads %d things", name, fits, loads)
	}
	for _, w := range want {
		if !strings.Contains(shown, w) {
			t.Errorf("%s shows %q, want %q in it", name, shown, w)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil || len(png) == 0 {
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
