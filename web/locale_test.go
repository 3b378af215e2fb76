package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/locale"
)

type wordsReply struct {
	Lang     string                       `json:"lang"`
	Catalogs map[string]map[string]string `json:"catalogs"`
}

// words reads GET /words with the given query and headers.
func words(t testing.TB, b *webtest.Bridge, query string, hdr map[string]string) wordsReply {
	t.Helper()
	res, data := b.Request(t, http.MethodGet, "/words"+query, nil, hdr)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /words%s = %d %s", query, res.StatusCode, data)
	}
	var w wordsReply
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// The page's own text follows the browser's languages, in their order,
// matched to a shipped catalog; without a catalog for any, English.
func TestWordsLanguage(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tests := []struct {
		name, query    string
		acceptLanguage string
		want           string
	}{
		{"Thai with a region", "?lang=th-TH,th,en-US,en", "", "th"},
		{"English first", "?lang=en-US,th", "", "en"},
		{"British English first", "?lang=en-GB,th", "", "en"},
		{"no catalog for the first", "?lang=fr-FR,fr,th", "", "th"},
		{"no catalog for any", "?lang=fr,de", "", "en"},
		{"junk, then Thai", "?lang=%3Cscript%3E,,th", "", "th"},
		{"empty list", "?lang=", "th", "en"},
		{"the list wins over the header", "?lang=en", "th", "en"},
		{"no list: the header", "", "fr;q=0.9, th;q=0.8, en;q=0.1", "th"},
		{"no list: the header's weights", "", "en;q=0.5, th", "th"},
		{"nothing", "", "", "en"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.acceptLanguage != "" {
				hdr["Accept-Language"] = tc.acceptLanguage
			}
			if got := words(t, b, tc.query, hdr).Lang; got != tc.want {
				t.Errorf("lang = %q; want %q", got, tc.want)
			}
		})
	}
}

// Every shipped catalog comes with its words: each question's card is
// worded in the question's language, whatever the page's.
func TestWordsCatalogs(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Token: "words-test-token-0123456789"})
	// The page's words need no token: the token dialog is worded with them.
	w := words(t, b, "?lang=th", map[string]string{"Authorization": ""})
	if w.Lang != "th" {
		t.Fatalf("lang = %q", w.Lang)
	}
	var tags []string
	for tag := range w.Catalogs {
		tags = append(tags, tag)
	}
	sort.Strings(tags)
	if !slices.Equal(tags, locale.Tags()) {
		t.Fatalf("catalogs %v; want every shipped one %v", tags, locale.Tags())
	}
	ids := catalogIDs(t, "Web")
	if len(ids) < 30 {
		t.Fatalf("only %d Web messages in the English catalog", len(ids))
	}
	for _, tag := range tags {
		cat := locale.For(tag)
		for _, id := range append(ids, "ButtonSkip", "StatusSkipped", "StatusExpired", "ListSeparator") {
			if got := w.Catalogs[tag][id]; got == "" || got != cat.Get(id) {
				t.Errorf("%s: %s = %q; want the catalog's %q", tag, id, got, cat.Get(id))
			}
		}
		// A message with fields is the bridge's to fill, not the page's.
		if _, ok := w.Catalogs[tag]["StatusAnsweredWith"]; ok {
			t.Errorf("%s: StatusAnsweredWith (a message with fields) is served", tag)
		}
	}
	if w.Catalogs["th"]["ButtonSkip"] != "ข้าม" || w.Catalogs["th"]["WebSubmit"] == w.Catalogs["en"]["WebSubmit"] {
		t.Errorf("th words = %v", w.Catalogs["th"])
	}
}

// catalogIDs are the ids of the English catalog that start with prefix.
func catalogIDs(t *testing.T, prefix string) []string {
	t.Helper()
	buf, err := os.ReadFile(filepath.Join("..", "locale", "catalog", "en.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(buf, &m); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range m {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Every word the page shows comes from the catalogs: index.html holds no
// text but the product's name (and a count), every message id the page names is in the
// catalog, and every Web message is used.
func TestPageWordsFromCatalogs(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("static", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("static", "app.js"))
	if err != nil {
		t.Fatal(err)
	}
	html := regexp.MustCompile(`(?s)<!--.*?-->`).ReplaceAllString(string(page), "")
	for _, m := range regexp.MustCompile(`>([^<]*)<`).FindAllStringSubmatch(html, -1) {
		if text := strings.TrimSpace(m[1]); text != "" && text != "askbridge" && !regexp.MustCompile(`^\d+$`).MatchString(text) {
			t.Errorf("index.html shows %q; every word must come from a catalog (data-w)", text)
		}
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`data-w="(\w+)"`).FindAllStringSubmatch(html, -1) {
		used[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`'((?:Web|Status|Button|List)[A-Za-z]+)'`).FindAllStringSubmatch(string(script), -1) {
		used[m[1]] = true
	}
	en := locale.For("en")
	for id := range used {
		if en.Get(id) == id {
			t.Errorf("the page uses %s, which no catalog has", id)
		}
	}
	for _, id := range catalogIDs(t, "Web") {
		if !used[id] {
			t.Errorf("catalog message %s is not used by the page", id)
		}
	}
}

// A Thai question is listed with its language and its context as
// sanitised HTML, answered through the "Other" box with a Thai digit (read
// like a chat reply: option 2), and the reply, the status line and the
// timeline are in Thai, with codes beside the words.
func TestThaiQuestion(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.ThaiQuestion("thai-1", webtest.BuildFailure))
	l := b.WaitOpen(t, id)
	q := l.Questions[0]
	if q.Locale != "th" || q.Intro != "คำถามจาก deploy-bot:" {
		t.Errorf("locale, intro = %q, %q; want th and the Thai intro", q.Locale, q.Intro)
	}
	if want := markup.Parse(webtest.BuildFailure).HTML(); q.ContextHTML != want {
		t.Errorf("contextHTML = %q; want markup's %q", q.ContextHTML, want)
	}
	for _, want := range []string{
		"<strong>#4812</strong>", "<code>main</code>", "<pre><code>TestPay … FAIL</code></pre>",
		`<a href="https://ci.example.com/4812" rel="noopener noreferrer nofollow" target="_blank">the log</a>`, "@everyone",
	} {
		if !strings.Contains(q.ContextHTML, want) {
			t.Errorf("contextHTML %q lacks %q", q.ContextHTML, want)
		}
	}

	code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"๒"}}})
	if code != http.StatusOK {
		t.Fatalf("answer = %d %v", code, out)
	}
	if out["outcome"] != "answered" || out["status"] != "ตอบแล้ว: โปรดักชัน" || out["locale"] != "th" {
		t.Errorf("reply = %v; want answered, the Thai status line, locale th", out)
	}
	wantNotice(t, out, engine.NoticeRecorded, "th")
	if out["message"] != "บันทึกคำตอบแล้ว" {
		t.Errorf("message = %v", out["message"])
	}
	res := b.Result(t, id, 5*time.Second)
	if !webtest.SameAnswers(res.Answers.Answers, map[string][]string{"deploy_target": {"โปรดักชัน"}}) {
		t.Fatalf("answers = %v; want the second option", res.Answers.Answers)
	}

	e := b.WaitHistory(t, id)
	if e.Locale != "th" || e.Outcome != "answered" || e.Status != "ตอบแล้ว: โปรดักชัน" || e.Intro != "คำถามจาก deploy-bot:" {
		t.Errorf("entry = %s", mustJSON(t, e))
	}
	if e.ContextHTML != q.ContextHTML || e.Context != "" {
		t.Errorf("entry context = %q, html %q; want only the sanitised HTML", e.Context, e.ContextHTML)
	}

	// Thai too when the page may not answer, and when it is too late.
	only := b.Ask(t, `{"id":"thai-only","to":"web","locale":"th","answerers":["telegram:7"],"questions":[{"id":"q","header":"ก","question":"ข?","options":[{"label":"ค"},{"label":"ง"}]}]}`)
	b.WaitOpen(t, only)
	if code, out := b.Answer(t, only, map[string]any{"skip": true}); code != http.StatusForbidden ||
		out["notice"] != string(engine.NoticeNotForYou) || out["error"] != "คำถามนี้ไม่ได้ถามคุณ" {
		t.Errorf("answer to a question for others = %d %v; want 403 in Thai", code, out)
	}
	code, out = b.Answer(t, id, map[string]any{"skip": true})
	if code != http.StatusConflict || out["status"] != "ตอบแล้ว: โปรดักชัน" {
		t.Errorf("answer after the end = %d %v", code, out)
	}
	wantNotice(t, out, engine.NoticeAlreadyAnswered, "th")
}

// What a person types in the "Other" box is read like a chat reply: a
// number in any script or a label picks that option; anything else is
// their own words.
func TestOtherBoxReadLikeAReply(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tests := []struct {
		name, typed string
		want        string
		status      string
	}{
		{"Thai digit", "๒", "โปรดักชัน", "ตอบแล้ว: โปรดักชัน"},
		{"Thai digit one", " ๑ ", "สเตจจิ้ง (แนะนำ)", "ตอบแล้ว: สเตจจิ้ง (แนะนำ)"},
		{"ASCII digit", "2", "โปรดักชัน", "ตอบแล้ว: โปรดักชัน"},
		{"label without its Thai suffix", "สเตจจิ้ง", "สเตจจิ้ง (แนะนำ)", "ตอบแล้ว: สเตจจิ้ง (แนะนำ)"},
		{"out of range", "๙", "๙", "ตอบแล้ว"},
		{"own words", "ค่อยว่ากัน", "ค่อยว่ากัน", "ตอบแล้ว"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := b.Ask(t, webtest.ThaiQuestion("other-"+string(rune('a'+i)), ""))
			b.WaitOpen(t, id)
			code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {tc.typed}}})
			if code != http.StatusOK || out["status"] != tc.status {
				t.Fatalf("answer %q = %d %v; want status %q", tc.typed, code, out, tc.status)
			}
			res := b.Result(t, id, 5*time.Second)
			if !webtest.SameAnswers(res.Answers.Answers, map[string][]string{"deploy_target": {tc.want}}) {
				t.Fatalf("answer %q gave %v; want %q", tc.typed, res.Answers.Answers, tc.want)
			}
		})
	}
}

// A Thai skip is worded in Thai, with its codes.
func TestThaiSkip(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.ThaiQuestion("thai-skip", ""))
	b.WaitOpen(t, id)
	code, out := b.Answer(t, id, map[string]any{"skip": true})
	if code != http.StatusOK || out["outcome"] != "skipped" || out["status"] != "ข้ามแล้ว" {
		t.Fatalf("skip = %d %v", code, out)
	}
	wantNotice(t, out, engine.NoticeSkipped, "th")
	if e := b.WaitHistory(t, id); e.Outcome != "skipped" || e.Status != "ข้ามแล้ว" || e.Locale != "th" || e.ContextHTML != "" {
		t.Errorf("entry = %s", mustJSON(t, e))
	}
}

// Context is agent text: only what markup allows comes through as HTML;
// anything else is text.
func TestContextSanitised(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	const hostile = "<script>alert(1)</script> <img src=x onerror=alert(1)>\n\n" +
		"[click](javascript:alert(1)) [mail](mailto:ops@example.com) <b onclick=x>bold</b>\n\n" +
		`[quote](https://example.com/"onmouseover="x)`
	req, _ := json.Marshal(hostile)
	id := b.Ask(t, `{"id":"ctx-hostile","to":"web","context":`+string(req)+`,"questions":[{"id":"q","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	l := b.WaitOpen(t, id)
	got := l.Questions[0].ContextHTML
	for _, bad := range []string{"<script", "<img", "<b ", `href="javascript`, `"onmouseover`, "onerror=alert(1)>"} {
		if strings.Contains(got, bad) {
			t.Errorf("contextHTML %q holds %q", got, bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "click (javascript:alert(1))", `<a href="mailto:ops@example.com"`} {
		if !strings.Contains(got, want) {
			t.Errorf("contextHTML %q lacks %q", got, want)
		}
	}
	// Without context there is no field at all.
	plain := b.Ask(t, webtest.OneQuestion("ctx-none"))
	for _, q := range b.WaitOpen(t, plain).Questions {
		if q.ID == plain && q.ContextHTML != "" {
			t.Errorf("contextHTML without context = %q", q.ContextHTML)
		}
	}
}
