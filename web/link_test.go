package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
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

func TestLinkRefusals(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Links: true})
	open := b.Ask(t, emailQuestion("link-ref-open", ""))
	ended := b.Ask(t, emailQuestion("link-ref-ended", ""))
	waitQuestion(t, b, open)
	waitQuestion(t, b, ended)
	good := b.LinkPath(t, claimsFor(open))
	goodTok := strings.TrimPrefix(good, link.PathPrefix)
	formTok := formToken(t, linkRequest(t, b, http.MethodGet, good, nil, nil).body)
	endedPath := b.LinkPath(t, claimsFor(ended))
	endedForm := formToken(t, linkRequest(t, b, http.MethodGet, endedPath, nil, nil).body)
	b.CancelQuestion(t, ended)
	b.Result(t, ended, 5*time.Second)

	other, err := link.NewSigner([]byte("another secret of at least 32 bytes"))
	if err != nil {
		t.Fatal(err)
	}
	otherTok, _ := other.Token(claimsFor(open))
	flipped := []byte(goodTok)
	flipped[len(flipped)/2] ^= 1
	if flipped[len(flipped)/2] == '-' || flipped[len(flipped)/2] == '_' {
		flipped[len(flipped)/2] = 'A'
	}
	expired := claimsFor(open)
	expired.Until = time.Now().Add(-time.Second)
	bob := claimsFor(open)
	bob.Person = askbridge.Person{Platform: "email", ID: "bob@example.com"}
	slackAlice := claimsFor(open)
	slackAlice.Person = askbridge.Person{Platform: "slack", ID: "alice@example.com"}
	outOfRange := claimsFor(open)
	outOfRange.Place = 3
	unknown := claimsFor("link-ref-nobody")

	bad := map[string]string{
		"forged (a flipped byte)": link.PathPrefix + string(flipped),
		"cut":                     good[:len(good)-4],
		"expired":                 b.LinkPath(t, expired),
		"another secret":          link.PathPrefix + otherTok,
		"another person":          b.LinkPath(t, bob),
		"another platform":        b.LinkPath(t, slackAlice),
		"place out of range":      b.LinkPath(t, outOfRange),
		"unknown question":        b.LinkPath(t, unknown),
		"not a token":             link.PathPrefix + "x/y",
		"empty":                   link.PathPrefix,
	}
	var getBody string
	for name, path := range bad {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			res := linkRequest(t, b, method, path, nil, nil)
			if res.code != http.StatusNotFound {
				t.Errorf("%s %s = %d; want 404", method, name, res.code)
			}
			if method == http.MethodGet {
				if getBody == "" {
					getBody = res.body
				} else if res.body != getBody {
					t.Errorf("GET %s: another body:\n%s", name, res.body)
				}
			}
		}
	}
	wantContains(t, getBody, "This link is not valid or has expired", "ลิงก์นี้ใช้ไม่ได้หรือหมดอายุแล้ว")

	posts := map[string]struct {
		path string
		form url.Values
		hdr  map[string]string
	}{
		"ended question":     {endedPath, answerForm(endedForm, "deploy_target", "0"), nil},
		"no form token":      {good, url.Values{"a.deploy_target": {"0"}}, nil},
		"wrong form token":   {good, answerForm(formTok[:len(formTok)-2]+"AA", "deploy_target", "0"), nil},
		"another's token":    {good, answerForm(endedForm, "deploy_target", "0"), nil},
		"cross-site Origin":  {good, answerForm(formTok, "deploy_target", "0"), map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": ""}},
		"cross-site fetch":   {good, answerForm(formTok, "deploy_target", "0"), map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": ""}},
		"null Origin, none":  {good, answerForm(formTok, "deploy_target", "0"), map[string]string{"Origin": "null", "Sec-Fetch-Site": "none"}},
		"not a form":         {good, answerForm(formTok, "deploy_target", "0"), map[string]string{"Content-Type": "text/plain"}},
		"body too big":       {good, url.Values{"form": {formTok}, "a.deploy_target": {"0"}, "pad": {strings.Repeat("x", 20<<10)}}, nil},
		"forged link":        {link.PathPrefix + string(flipped), answerForm(formTok, "deploy_target", "0"), nil},
		"expired link":       {b.LinkPath(t, expired), answerForm(formTok, "deploy_target", "0"), nil},
		"another person":     {b.LinkPath(t, bob), answerForm(formTok, "deploy_target", "0"), nil},
		"place out of range": {b.LinkPath(t, outOfRange), answerForm(formTok, "deploy_target", "0"), nil},
		"another secret":     {link.PathPrefix + otherTok, answerForm(formTok, "deploy_target", "0"), nil},
	}
	var postBody string
	for name, p := range posts {
		res := linkRequest(t, b, http.MethodPost, p.path, p.form, p.hdr)
		if res.code != http.StatusForbidden {
			t.Errorf("POST %s = %d; want 403\n%s", name, res.code, res.body)
		}
		if postBody == "" {
			postBody = res.body
		} else if res.body != postBody {
			t.Errorf("POST %s: another body:\n%s", name, res.body)
		}
	}
	wantContains(t, postBody, "This answer was not accepted", "ระบบไม่รับคำตอบนี้")
	if rec := waitQuestion(t, b, open); rec.Status != askbridge.StatusPending {
		t.Fatalf("the open question ended: %+v", rec.Result)
	}
	// The page's own form from a browser: Origin null (no-referrer) with
	// Sec-Fetch-Site same-origin answers.
	res := linkRequest(t, b, http.MethodPost, good, answerForm(formTok, "deploy_target", "0"), map[string]string{"Origin": "null"})
	if res.code != http.StatusSeeOther {
		t.Fatalf("POST with Origin null from the same origin = %d\n%s", res.code, res.body)
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
