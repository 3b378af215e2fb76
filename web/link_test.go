package web_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/internal/webtest"
)

// alice is the person of the links of EmailQuestion's place.
var alice = askbridge.Person{Platform: askbridge.PlatformEmail, ID: "alice@example.com"}

// emailQuestion is one single-select question sent to alice by email,
// from deploy-bot, with the build-failure context, in locale lang ("" for
// the default).
func emailQuestion(id, lang string) string {
	loc := ""
	if lang != "" {
		loc = fmt.Sprintf(`"locale":%q,`, lang)
	}
	return fmt.Sprintf(`{"id":%q,"to":"email:alice@example.com","agent":"deploy-bot",%s"context":%q,`+
		`"questions":[{"id":"deploy_target","header":"Deployment target","question":"Where should this deploy?",`+
		`"options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`, id, loc, webtest.BuildFailure)
}

// claimsFor is a link to question id for alice in its first place, good
// for an hour.
func claimsFor(id string) link.Claims {
	return link.Claims{ID: id, Place: 0, Person: alice, Until: time.Now().Add(time.Hour)}
}

// waitQuestion waits until the bridge has taken question id up.
func waitQuestion(t *testing.T, b *webtest.Bridge, id string) engine.Record {
	t.Helper()
	var rec engine.Record
	if !testwait.Until(10*time.Second, func() bool {
		r, found, err := b.Store.Get(t.Context(), id)
		rec = r
		return err == nil && found
	}) {
		t.Fatalf("question %s was not taken up", id)
	}
	return rec
}

// linkResponse is a response of the link's page, its body read.
type linkResponse struct {
	code int
	hdr  http.Header
	body string
}

// linkRequest sends a request to the link's page at path, without
// following a redirect. A form is sent as the body of a POST, with the
// page's own Origin and Sec-Fetch-Site unless hdr says otherwise (an
// empty value removes a header).
func linkRequest(t *testing.T, b *webtest.Bridge, method, path string, form url.Values, hdr map[string]string) linkResponse {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.Server.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.Server.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	webtest.SetHeaders(req, hdr)
	c := *b.Server.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return linkResponse{code: res.StatusCode, hdr: res.Header, body: string(data)}
}

var formTokenField = regexp.MustCompile(`name="form" value="([^"]+)"`)

// formToken is the anti-forgery token of a page with a form.
func formToken(t *testing.T, page string) string {
	t.Helper()
	m := formTokenField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token on the page:\n%s", page)
	}
	return m[1]
}

// answerForm is the form that answers with the options of indexes
// chosen for question qid.
func answerForm(token, qid string, chosen ...string) url.Values {
	return url.Values{"form": {token}, "do": {"answer"}, "a." + qid: chosen}
}

func wantContains(t *testing.T, page string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(page, p) {
			t.Errorf("page lacks %q:\n%s", p, page)
		}
	}
}

func TestLinkAnswerEndToEnd(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, emailQuestion("link-e2e", ""))
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))

	get := linkRequest(t, b, http.MethodGet, path, nil, nil)
	if get.code != http.StatusOK {
		t.Fatalf("GET = %d\n%s", get.code, get.body)
	}
	wantContains(t, get.body, `<html lang="en">`, "Question from deploy-bot:", "Answering as alice@example.com",
		"Where should this deploy?", "Deployment t", `<strong>#4812</strong>`, "Staging", "Safer default",
		`data-testid="recommended">Recommended<`, "Production", `type="radio" name="a.deploy_target" value="1"`,
		`name="o.deploy_target"`, ">Submit<", ">Skip<", `<link rel="stylesheet" href="link.css">`)
	if strings.Contains(get.body, "<script") || strings.Contains(get.body, "style=") {
		t.Errorf("the page has a script or an inline style:\n%s", get.body)
	}
	tok := formToken(t, get.body)

	post := linkRequest(t, b, http.MethodPost, path, answerForm(tok, "deploy_target", "1"), nil)
	if post.code != http.StatusSeeOther || post.hdr.Get("Location") != strings.TrimPrefix(path, link.PathPrefix) {
		t.Fatalf("POST = %d, Location %q; want 303 to the page\n%s", post.code, post.hdr.Get("Location"), post.body)
	}
	res := b.Result(t, id, 5*time.Second)
	if res.Status != askbridge.StatusAnswered || res.Via != askbridge.ViaLink || res.AnsweredBy == nil ||
		res.AnsweredBy.Platform != "email" || res.AnsweredBy.ID != "alice@example.com" {
		t.Fatalf("result = %+v; want answered via link by email alice@example.com", res)
	}
	if !webtest.SameAnswers(res.Answers.Answers, map[string][]string{"deploy_target": {"Production"}}) {
		t.Errorf("answers = %v", res.Answers.Answers)
	}

	after := linkRequest(t, b, http.MethodGet, path, nil, nil)
	if after.code != http.StatusOK || strings.Contains(after.body, "<form") {
		t.Fatalf("GET after = %d\n%s", after.code, after.body)
	}
	wantContains(t, after.body, "Your answer was recorded.", "Answered: Production", "Answered by alice@example.com at ")

	// A second POST is refused as a bad token is, and changes nothing.
	again := linkRequest(t, b, http.MethodPost, path, answerForm(tok, "deploy_target", "0"), nil)
	forged := linkRequest(t, b, http.MethodPost, link.PathPrefix+"AAAA", answerForm(tok, "deploy_target", "0"), nil)
	if again.code != http.StatusForbidden || again.body != forged.body || forged.code != http.StatusForbidden {
		t.Fatalf("second POST = %d, forged = %d; want the same 403\n%s\n%s", again.code, forged.code, again.body, forged.body)
	}
	rec, _, err := b.Store.Get(t.Context(), id)
	if err != nil || rec.Result == nil || rec.Result.Answers.Answers["deploy_target"][0] != "Production" {
		t.Fatalf("after the second POST: %+v, %v", rec.Result, err)
	}
	if n := b.ResultCount(t, id); n != 0 {
		t.Errorf("%d more results pushed", n)
	}
}

func TestLinkSkip(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, emailQuestion("link-skip", ""))
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))
	tok := formToken(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body)
	post := linkRequest(t, b, http.MethodPost, path, url.Values{"form": {tok}, "do": {"skip"}, "a.deploy_target": {"0"}}, nil)
	if post.code != http.StatusSeeOther {
		t.Fatalf("skip = %d\n%s", post.code, post.body)
	}
	if res := b.Result(t, id, 5*time.Second); res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonSkipped {
		t.Fatalf("result = %+v; want skipped", res)
	}
	wantContains(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body, "Skipped", "This question is closed.")
}

func TestLinkFormChoices(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	tests := []struct {
		name    string
		request func(id string) string
		form    func(tok string) url.Values
		want    map[string][]string
		problem string
	}{
		{
			name:    "free text wins over a chosen option on a single-select question",
			request: func(id string) string { return emailQuestion(id, "") },
			form: func(tok string) url.Values {
				return url.Values{"form": {tok}, "a.deploy_target": {"0"}, "o.deploy_target": {"  the canary pool "}}
			},
			want: map[string][]string{"deploy_target": {"the canary pool"}},
		},
		{
			name:    "multi-select: options then the free text",
			request: emailMulti,
			form: func(tok string) url.Values {
				return url.Values{"form": {tok}, "a.regions": {"1", "0", "1"}, "o.regions": {"Antarctica"}}
			},
			want: map[string][]string{"regions": {"US", "EU", "Antarctica"}},
		},
		{
			name:    "nothing chosen",
			request: func(id string) string { return emailQuestion(id, "") },
			form:    func(tok string) url.Values { return url.Values{"form": {tok}, "do": {"answer"}} },
			problem: "Answer “Deployment t”: choose an option or write your own answer.",
		},
		{
			name:    "two options on a single-select question",
			request: func(id string) string { return emailQuestion(id, "") },
			form:    func(tok string) url.Values { return answerForm(tok, "deploy_target", "0", "1") },
			problem: "“Deployment t” takes one answer: choose only one option.",
		},
		{
			name:    "no such option",
			request: func(id string) string { return emailQuestion(id, "") },
			form:    func(tok string) url.Values { return answerForm(tok, "deploy_target", "7") },
			problem: "This answer does not fit the question. Check your choices and try again.",
		},
		{
			name:    "free text too long for CheckAnswers",
			request: func(id string) string { return emailQuestion(id, "") },
			form: func(tok string) url.Values {
				return url.Values{"form": {tok}, "o.deploy_target": {strings.Repeat("x", 2100)}}
			},
			problem: "This answer does not fit the question. Check your choices and try again.",
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := b.Ask(t, tc.request(fmt.Sprintf("link-form-%d", i)))
			waitQuestion(t, b, id)
			path := b.LinkPath(t, claimsFor(id))
			tok := formToken(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body)
			post := linkRequest(t, b, http.MethodPost, path, tc.form(tok), nil)
			if tc.problem == "" {
				if post.code != http.StatusSeeOther {
					t.Fatalf("POST = %d\n%s", post.code, post.body)
				}
				if res := b.Result(t, id, 5*time.Second); !webtest.SameAnswers(res.Answers.Answers, tc.want) {
					t.Fatalf("answers = %v; want %v", res.Answers.Answers, tc.want)
				}
				return
			}
			if post.code != http.StatusUnprocessableEntity {
				t.Fatalf("POST = %d; want 422\n%s", post.code, post.body)
			}
			wantContains(t, post.body, tc.problem, `<form`, `name="form" value="`)
			if rec := waitQuestion(t, b, id); rec.Status != askbridge.StatusPending {
				t.Fatalf("status = %s; want still open", rec.Status)
			}
		})
	}
}

// emailMulti is a multi-select question sent to alice by email.
func emailMulti(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"email:alice@example.com","questions":[{"id":"regions","header":"Regions","question":"Which regions?","multiSelect":true,"options":[{"label":"EU"},{"label":"US"},{"label":"Asia"}]}]}`, id)
}

func TestLinkKeepsChoices(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, emailMulti("link-keep"))
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))
	tok := formToken(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body)
	// A crafted body: an index that is no option, beside two that are.
	post := linkRequest(t, b, http.MethodPost, path, url.Values{"form": {tok}, "a.regions": {"0", "2", "9"}, "o.regions": {"Mars <b>"}}, nil)
	if post.code != http.StatusUnprocessableEntity {
		t.Fatalf("POST = %d\n%s", post.code, post.body)
	}
	wantContains(t, post.body, `type="checkbox" name="a.regions" value="0" checked`, `type="checkbox" name="a.regions" value="2" checked`,
		`>Mars &lt;b&gt;</textarea>`)
	if strings.Contains(post.body, `value="1" checked`) {
		t.Errorf("an option not chosen is checked:\n%s", post.body)
	}
}

func TestLinkThai(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, emailQuestion("link-th", "th"))
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))
	get := linkRequest(t, b, http.MethodGet, path, nil, nil)
	wantContains(t, get.body, `<html lang="th">`, "มีคำถามรอคำตอบจากคุณ", "ตอบในนามของ alice@example.com", ">ส่งคำตอบ<",
		"อื่น ๆ — ตอบด้วยคำของคุณเอง", "เลือกหนึ่งข้อ", "โปรดอย่าส่งต่อลิงก์นี้")
	tok := formToken(t, get.body)
	bad := linkRequest(t, b, http.MethodPost, path, url.Values{"form": {tok}, "do": {"answer"}}, nil)
	wantContains(t, bad.body, "โปรดตอบ “Deployment t”: เลือกตัวเลือก หรือพิมพ์คำตอบของคุณเอง")
	if post := linkRequest(t, b, http.MethodPost, path, answerForm(tok, "deploy_target", "0"), nil); post.code != http.StatusSeeOther {
		t.Fatalf("POST = %d\n%s", post.code, post.body)
	}
	b.Result(t, id, 5*time.Second)
	wantContains(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body, "บันทึกคำตอบของคุณแล้ว", "ตอบแล้ว: Staging (Recommended)", "ตอบโดย alice@example.com เมื่อ ")
}

// keyspace is every key of prefix with its type and its DUMP: any write
// to any of them changes it.
func keyspace(t *testing.T, b *webtest.Bridge) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := b.RDB.Keys(ctx, b.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ, err := b.RDB.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		dump, err := b.RDB.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl, _ := b.RDB.PTTL(ctx, k).Result()
		out[k] = fmt.Sprintf("%s %x ttl>0:%v", typ, dump, ttl > 0)
	}
	return out
}

// scanners are the User-Agents of unfurlers, mail filters and crawlers
// that open every link they see.
var scanners = []string{
	"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
	"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
	"Twitterbot/1.0",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Discordbot/2.0 (+https://discordapp.com)",
	"TelegramBot (like TwitterBot)",
	"WhatsApp/2.23.20.0",
	"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
	"Mozilla/4.0 (compatible; ms-office; MSOffice 16)",
	"Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17126; Pro)",
	"Mozilla/5.0 (compatible; Microsoft Safe Links)",
	"Proofpoint URL Defense",
	"Mimecast URL Protect",
	"Barracuda Sentinel (EE)",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
}

func TestLinkScannersChangeNothing(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	// A question with reminders, so a GET that acknowledged it would show.
	id := b.Ask(t, `{"id":"link-scan","to":"email:alice@example.com","remindEverySeconds":600,"questions":[{"id":"q","header":"Q","question":"Go?","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))
	// The engine stops, so only the page's requests could write.
	b.StopEngine()
	before := keyspace(t, b)
	events, err := b.RDB.XLen(t.Context(), b.Prefix+"events").Result()
	if err != nil {
		t.Fatal(err)
	}
	prefetch := []map[string]string{
		{"Sec-Purpose": "prefetch"}, {"Purpose": "prefetch"}, {"Sec-Purpose": "prefetch;prerender"},
		{"X-Moz": "prefetch"}, {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "cross-site"},
	}
	var first string
	for i := range 50 {
		hdr := map[string]string{"User-Agent": scanners[i%len(scanners)]}
		for k, v := range prefetch[i%len(prefetch)] {
			hdr[k] = v
		}
		method := http.MethodGet
		if i%3 == 1 {
			method = http.MethodHead
		}
		res := linkRequest(t, b, method, path, nil, hdr)
		if res.code != http.StatusOK {
			t.Fatalf("%s with %v = %d", method, hdr, res.code)
		}
		if method == http.MethodGet {
			page := formTokenField.ReplaceAllString(res.body, "")
			if first == "" {
				first = page
			} else if page != first {
				t.Fatalf("%v got another page:\n%s\nfirst:\n%s", hdr, page, first)
			}
		}
	}
	if after := keyspace(t, b); !sameMaps(before, after) {
		t.Fatalf("the keyspace changed:\nbefore %v\nafter  %v", before, after)
	}
	if n, _ := b.RDB.XLen(t.Context(), b.Prefix+"events").Result(); n != events {
		t.Fatalf("events stream: %d entries, then %d", events, n)
	}
	if rec := waitQuestion(t, b, id); rec.Status != askbridge.StatusPending || rec.Acknowledged != nil || rec.Result != nil {
		t.Fatalf("question after the scanners: %+v", rec)
	}
}

func sameMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// refusalCase is a link that points nowhere, or a question it may not
// answer.
type refusalCase struct {
	open, ended   string // the questions' ids
	good          string // the open question's link
	form          string // the form token of good's page
	endedPath     string // the ended question's link
	endedForm     string // the form token of its page, taken while it was open
	bad           map[string]string
	outOfRange    string
	forged        string
	expired       string
	otherSecret   string
	anotherPerson string
}

// refusals starts a bridge with an open question, an ended one (its page
// read while it was open) and links that point nowhere.
func refusals(t *testing.T) (*webtest.Bridge, refusalCase) {
	t.Helper()
	b := webtest.Start(t, webtest.Options{Links: true})
	c := refusalCase{open: b.Ask(t, emailQuestion("link-ref-open", "")), ended: b.Ask(t, emailQuestion("link-ref-ended", ""))}
	approvers := b.Ask(t, `{"id":"link-ref-approvers","to":"approvers","questions":[{"id":"q","header":"Q","question":"Go?","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	for _, id := range []string{c.open, c.ended, approvers} {
		waitQuestion(t, b, id)
	}
	c.good = b.LinkPath(t, claimsFor(c.open))
	c.form = formToken(t, linkRequest(t, b, http.MethodGet, c.good, nil, nil).body)
	c.endedPath = b.LinkPath(t, claimsFor(c.ended))
	c.endedForm = formToken(t, linkRequest(t, b, http.MethodGet, c.endedPath, nil, nil).body)
	b.CancelQuestion(t, c.ended)
	b.Result(t, c.ended, 5*time.Second)

	other, err := link.NewSigner([]byte("another secret of at least 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	otherTok, _ := other.Token(claimsFor(c.open))
	flipped := []byte(strings.TrimPrefix(c.good, link.PathPrefix))
	flipped[len(flipped)/2] ^= 1
	if flipped[len(flipped)/2] == '-' || flipped[len(flipped)/2] == '_' {
		flipped[len(flipped)/2] = 'A'
	}
	with := func(id string, change func(*link.Claims)) string {
		cl := claimsFor(id)
		change(&cl)
		return b.LinkPath(t, cl)
	}
	c.forged, c.otherSecret = link.PathPrefix+string(flipped), link.PathPrefix+otherTok
	c.expired = with(c.open, func(cl *link.Claims) { cl.Until = time.Now().Add(-time.Second) })
	c.anotherPerson = with(c.open, func(cl *link.Claims) { cl.Person.ID = "bob@example.com" })
	c.outOfRange = with(c.open, func(cl *link.Claims) { cl.Place = 3 })
	c.bad = map[string]string{
		"forged (a flipped byte)": c.forged,
		"cut":                     c.good[:len(c.good)-4],
		"expired":                 c.expired,
		"another secret":          c.otherSecret,
		"another person":          c.anotherPerson,
		"another platform":        with(c.open, func(cl *link.Claims) { cl.Person.Platform = "slack" }),
		"not among the answerers": with(approvers, func(cl *link.Claims) { cl.Person = askbridge.Person{Platform: "telegram", ID: "3"} }),
		"place out of range":      c.outOfRange,
		"unknown question":        b.LinkPath(t, claimsFor("link-ref-nobody")),
		"not a token":             link.PathPrefix + "x/y",
		"empty":                   link.PathPrefix,
	}
	return b, c
}

func TestLinkRefusedGet(t *testing.T) {
	t.Parallel()
	b, c := refusals(t)
	var body string
	for name, path := range c.bad {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			res := linkRequest(t, b, method, path, nil, nil)
			if res.code != http.StatusNotFound {
				t.Errorf("%s %s = %d; want 404", method, name, res.code)
			}
			if method == http.MethodGet {
				if body == "" {
					body = res.body
				} else if res.body != body {
					t.Errorf("GET %s: another body:\n%s", name, res.body)
				}
			}
		}
	}
	wantContains(t, body, "This link is not valid or has expired", "ลิงก์นี้ใช้ไม่ได้หรือหมดอายุแล้ว")
	// A link of an approver who is among the answerers opens.
	alice := b.LinkPath(t, claimsFor("link-ref-approvers"))
	if res := linkRequest(t, b, http.MethodGet, alice, nil, nil); res.code != http.StatusOK {
		t.Errorf("an answerer's link = %d", res.code)
	}
}

func TestLinkRefusedPost(t *testing.T) {
	t.Parallel()
	b, c := refusals(t)
	answer := answerForm(c.form, "deploy_target", "0")
	posts := map[string]struct {
		path string
		form url.Values
		hdr  map[string]string
	}{
		"ended question":     {c.endedPath, answerForm(c.endedForm, "deploy_target", "0"), nil},
		"no form token":      {c.good, url.Values{"a.deploy_target": {"0"}}, nil},
		"wrong form token":   {c.good, answerForm(c.form[:len(c.form)-2]+"AA", "deploy_target", "0"), nil},
		"another's token":    {c.good, answerForm(c.endedForm, "deploy_target", "0"), nil},
		"cross-site Origin":  {c.good, answer, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": ""}},
		"cross-site fetch":   {c.good, answer, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": ""}},
		"same-site fetch":    {c.good, answer, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": ""}},
		"null Origin, none":  {c.good, answer, map[string]string{"Origin": "null", "Sec-Fetch-Site": "none"}},
		"not a form":         {c.good, answer, map[string]string{"Content-Type": "text/plain"}},
		"body too big":       {c.good, url.Values{"form": {c.form}, "a.deploy_target": {"0"}, "pad": {strings.Repeat("x", 20<<10)}}, nil},
		"forged link":        {c.forged, answer, nil},
		"expired link":       {c.expired, answer, nil},
		"another person":     {c.anotherPerson, answer, nil},
		"place out of range": {c.outOfRange, answer, nil},
		"another secret":     {c.otherSecret, answer, nil},
	}
	var body string
	for name, p := range posts {
		res := linkRequest(t, b, http.MethodPost, p.path, p.form, p.hdr)
		if res.code != http.StatusForbidden {
			t.Errorf("POST %s = %d; want 403\n%s", name, res.code, res.body)
		}
		if body == "" {
			body = res.body
		} else if res.body != body {
			t.Errorf("POST %s: another body:\n%s", name, res.body)
		}
	}
	wantContains(t, body, "This answer was not accepted", "ระบบไม่รับคำตอบนี้")
	if rec := waitQuestion(t, b, c.open); rec.Status != askbridge.StatusPending {
		t.Fatalf("the open question ended: %+v", rec.Result)
	}
	// The page's own form from a browser: Origin null (no-referrer) with
	// Sec-Fetch-Site same-origin answers.
	res := linkRequest(t, b, http.MethodPost, c.good, answer, map[string]string{"Origin": "null"})
	if res.code != http.StatusSeeOther {
		t.Fatalf("POST with Origin null from the same origin = %d\n%s", res.code, res.body)
	}
}

func TestLinkEnded(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	cancelled := b.Ask(t, emailQuestion("link-end-cancel", ""))
	expired := b.Ask(t, `{"id":"link-end-timeout","to":"email:alice@example.com","timeoutSeconds":60,"questions":[{"id":"q","header":"Q","question":"Go?","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	other := b.Ask(t, strings.Replace(emailQuestion("link-end-other", ""), `"to":"email:alice@example.com"`, `"to":["email:alice@example.com","slack:C1"]`, 1))
	for _, id := range []string{cancelled, expired, other} {
		waitQuestion(t, b, id)
	}
	b.CancelQuestion(t, cancelled)
	b.Clock.Advance(2 * time.Minute)
	// Answered elsewhere: by a person in its other place, on Slack.
	if _, err := b.Engine.Submit(t.Context(), other, engine.Answer{By: askbridge.Person{Platform: "slack", ID: "U1", Name: "Bob"}, Via: askbridge.ViaButton, Place: 1, Values: map[string][]string{"deploy_target": {"Production"}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   string
		want []string
	}{
		{cancelled, []string{"Cancelled", "Ended at ", "This question is closed."}},
		{expired, []string{"Expired", "Ended at "}},
		{other, []string{"Answered by Bob in slack:C1: Production", "Answered by Bob at ", "This question is closed."}},
	}
	for _, tc := range tests {
		b.Result(t, tc.id, 10*time.Second)
		res := linkRequest(t, b, http.MethodGet, b.LinkPath(t, claimsFor(tc.id)), nil, nil)
		if res.code != http.StatusOK || strings.Contains(res.body, "<form") || strings.Contains(res.body, "Your answer was recorded") {
			t.Errorf("%s: %d\n%s", tc.id, res.code, res.body)
		}
		wantContains(t, res.body, tc.want...)
	}
}

func TestLinkHeaders(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, emailQuestion("link-hdr", ""))
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))
	tok := formToken(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body)
	kinds := []struct {
		name   string
		method string
		path   string
		form   url.Values
		hdr    map[string]string
		code   int
	}{
		{"page", http.MethodGet, path, nil, nil, http.StatusOK},
		{"head", http.MethodHead, path, nil, nil, http.StatusOK},
		{"style", http.MethodGet, link.PathPrefix + "link.css", nil, nil, http.StatusOK},
		{"icon", http.MethodGet, link.PathPrefix + "favicon.svg", nil, nil, http.StatusOK},
		{"not valid", http.MethodGet, link.PathPrefix + "nope", nil, nil, http.StatusNotFound},
		{"refused", http.MethodPost, path, url.Values{"form": {"x"}}, nil, http.StatusForbidden},
		{"form again", http.MethodPost, path, url.Values{"form": {tok}}, nil, http.StatusUnprocessableEntity},
		{"other host", http.MethodGet, path, nil, map[string]string{"Host": "rebound.example:80"}, http.StatusMisdirectedRequest},
		{"method", http.MethodPut, path, nil, nil, http.StatusMethodNotAllowed},
		{"answered", http.MethodPost, path, answerForm(tok, "deploy_target", "0"), nil, http.StatusSeeOther},
		{"outcome", http.MethodGet, path, nil, nil, http.StatusOK},
	}
	want := map[string]string{
		"Referrer-Policy":         "no-referrer",
		"X-Robots-Tag":            "noindex, nofollow",
		"Cache-Control":           "no-store",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	}
	for _, k := range kinds {
		res := linkRequest(t, b, k.method, k.path, k.form, k.hdr)
		if res.code != k.code {
			t.Errorf("%s = %d; want %d\n%s", k.name, res.code, k.code, res.body)
		}
		for h, v := range want {
			if got := res.hdr.Get(h); got != v {
				t.Errorf("%s: %s = %q; want %q", k.name, h, got, v)
			}
		}
	}
}

func TestLinkHostAndProxy(t *testing.T) {
	t.Parallel()
	// Without a token the page serves only this machine; the link's page
	// also serves through a proxy and at the public URL's host.
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, emailQuestion("link-host", ""))
	waitQuestion(t, b, id)
	path := b.LinkPath(t, claimsFor(id))
	proxied := map[string]string{"X-Forwarded-For": "203.0.113.7", "Via": "1.1 proxy"}
	if res := linkRequest(t, b, http.MethodGet, path, nil, proxied); res.code != http.StatusOK {
		t.Errorf("proxied GET of a link = %d; want 200", res.code)
	}
	if res, _ := b.Request(t, http.MethodGet, "/api/questions", nil, proxied); res.StatusCode != http.StatusForbidden {
		t.Errorf("proxied API request = %d; want 403 as before", res.StatusCode)
	}
	for _, host := range []string{"localhost:1", "127.0.0.1", "[::1]:8080"} {
		if res := linkRequest(t, b, http.MethodGet, path, nil, map[string]string{"Host": host}); res.code != http.StatusOK {
			t.Errorf("Host %s = %d; want 200", host, res.code)
		}
	}
	if res := linkRequest(t, b, http.MethodGet, path, nil, map[string]string{"Host": "attacker.example"}); res.code != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example = %d; want 421", res.code)
	}
}

func TestLinksOff(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	res, body := b.Request(t, http.MethodGet, link.PathPrefix+"anything", nil, nil)
	if res.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("<form")) {
		t.Fatalf("links off: %d %s", res.StatusCode, body)
	}
}

func TestLinkQuorum(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	id := b.Ask(t, `{"id":"link-quorum","to":"approvers","quorum":2,`+
		`"questions":[{"id":"change","header":"Change","question":"Approve the change?","options":[{"label":"Approve"},{"label":"Reject"}]}]}`)
	rec := waitQuestion(t, b, id)
	if len(rec.Places) != 1 || rec.Places[0].Target.Platform != "email" {
		t.Fatalf("places = %+v, result %+v", rec.Places, rec.Result)
	}
	path := b.LinkPath(t, claimsFor(id))
	tok := formToken(t, linkRequest(t, b, http.MethodGet, path, nil, nil).body)
	if post := linkRequest(t, b, http.MethodPost, path, answerForm(tok, "change", "0"), nil); post.code != http.StatusSeeOther {
		t.Fatalf("vote = %d\n%s", post.code, post.body)
	}
	page := linkRequest(t, b, http.MethodGet, path, nil, nil)
	wantContains(t, page.body, "Vote recorded (1 of 2 needed).", "The question stays open until enough people agree.")
	if strings.Contains(page.body, "<form") {
		t.Fatalf("a form after the vote:\n%s", page.body)
	}
	// A second vote from the same form: the first stands (409).
	again := linkRequest(t, b, http.MethodPost, path, answerForm(tok, "change", "1"), nil)
	if again.code != http.StatusConflict {
		t.Fatalf("second vote = %d\n%s", again.code, again.body)
	}
	wantContains(t, again.body, "You already answered; your first answer stands.")
	if rec := waitQuestion(t, b, id); len(rec.Votes) != 1 || rec.Votes[0].By.ID != "alice@example.com" {
		t.Fatalf("votes = %+v", rec.Votes)
	}
}

// FuzzLinkPost: no body answers without the page's form token, whatever
// else it holds, and none breaks the handler.
func FuzzLinkPost(f *testing.F) {
	for _, s := range []string{
		"", "do=answer&a.deploy_target=0", "form=&a.deploy_target=1", "form=0.AAAA&do=answer&a.deploy_target=0",
		"form=zzzzzz.zzzzzzzzzzzzzzzzzzzzzz&do=skip", "do=skip", "%zz", "form=%00&form=x", "a.deploy_target=0&o.deploy_target=" + strings.Repeat("y", 3000),
	} {
		f.Add(s)
	}
	b := webtest.Start(f, webtest.Options{Links: true})
	id := b.Ask(f, emailQuestion("link-fuzz", ""))
	if !testwait.Until(10*time.Second, func() bool {
		_, found, err := b.Store.Get(context.Background(), id)
		return err == nil && found
	}) {
		f.Fatal("question not taken up")
	}
	tok, err := b.Links.Token(claimsFor(id))
	if err != nil {
		f.Fatal(err)
	}
	c := *b.Server.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	f.Fuzz(func(t *testing.T, body string) {
		req, err := http.NewRequest(http.MethodPost, b.Server.URL+link.PathPrefix+tok, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("POST %q = %d; want 403", body, res.StatusCode)
		}
		rec, _, err := b.Store.Get(context.Background(), id)
		if err != nil || rec.Status != askbridge.StatusPending {
			t.Fatalf("after %q the question is %s (%v)", body, rec.Status, err)
		}
	})
}

var updateGolden = flag.Bool("update", false, "rewrite testdata/link/*.html from this run")

// goldenVolatile are the parts of a page that change from run to run: the
// form token (issued now) and the times it names.
var goldenVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{formTokenField, `name="form" value="FORM-TOKEN"`},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d UTC`), "YYYY-MM-DD hh:mm UTC"},
}

// TestLinkPagesGolden keeps what a person sees on a link's page in
// testdata/link (rewritten with -update), so a reviewer can read it: the
// form in English and Thai, a form sent back with its problem, the
// outcome, and the two refusals.
func TestLinkPagesGolden(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	en, th := b.Ask(t, emailQuestion("golden-en", "")), b.Ask(t, emailQuestion("golden-th", "th"))
	waitQuestion(t, b, en)
	waitQuestion(t, b, th)
	enPath, thPath := b.LinkPath(t, claimsFor(en)), b.LinkPath(t, claimsFor(th))
	pages := map[string]linkResponse{}
	pages["form-en"] = linkRequest(t, b, http.MethodGet, enPath, nil, nil)
	pages["form-th"] = linkRequest(t, b, http.MethodGet, thPath, nil, nil)
	tok := formToken(t, pages["form-en"].body)
	pages["problem-en"] = linkRequest(t, b, http.MethodPost, enPath, url.Values{"form": {tok}, "do": {"answer"}}, nil)
	if res := linkRequest(t, b, http.MethodPost, enPath, answerForm(tok, "deploy_target", "0"), nil); res.code != http.StatusSeeOther {
		t.Fatalf("answer = %d", res.code)
	}
	b.Result(t, en, 5*time.Second)
	pages["answered-en"] = linkRequest(t, b, http.MethodGet, enPath, nil, nil)
	pages["not-valid"] = linkRequest(t, b, http.MethodGet, link.PathPrefix+"nope", nil, nil)
	pages["refused"] = linkRequest(t, b, http.MethodPost, enPath, answerForm(tok, "deploy_target", "0"), nil)
	for name, res := range pages {
		got := res.body
		for _, v := range goldenVolatile {
			got = v.re.ReplaceAllString(got, v.with)
		}
		path := filepath.Join("testdata", "link", name+".html")
		if *updateGolden {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from %s (run with -update to rewrite it):\n%s", name, path, got)
		}
	}
}
