package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/web"
)

func TestListOpenQuestions(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	first := b.Ask(t, webtest.OneQuestion("list-1"))
	// The second is created once the first is listed, a millisecond later
	// on the engine's clock at least, so the order is defined.
	b.WaitOpen(t, first)
	b.Clock.Advance(time.Millisecond)
	second := b.Ask(t, webtest.ThreeQuestions("list-2"))
	l := b.WaitOpen(t, first, second)

	if len(l.Questions) != 2 || l.Questions[0].ID != first || l.Questions[1].ID != second {
		t.Fatalf("listed %+v; want %s then %s (oldest first)", l.Questions, first, second)
	}
	q := l.Questions[0]
	if q.Agent != "deploy-bot" || q.Intro != "Question from deploy-bot:" || !q.MayAnswer {
		t.Errorf("agent, intro, mayAnswer = %q, %q, %v", q.Agent, q.Intro, q.MayAnswer)
	}
	// The normalised questions: the header is cut to 12 characters.
	if got := q.Questions[0].Header; got != "Deployment t" {
		t.Errorf("header = %q; want the normalised %q", got, "Deployment t")
	}
	if len(q.Questions[0].Options) != 2 || q.Questions[0].Options[0].Description != "Safer default" {
		t.Errorf("options = %+v", q.Questions[0].Options)
	}
	if d := time.Duration(q.Deadline-q.Created) * time.Millisecond; d != 900*time.Second {
		t.Errorf("deadline - created = %s; want the default 900s", d)
	}
	if abs(l.Now-time.Now().UnixMilli()) > 5000 {
		t.Errorf("now = %d; want the server's clock", l.Now)
	}
	if len(l.Questions[1].Questions) != 3 || !l.Questions[1].Questions[1].MultiSelect {
		t.Errorf("three questions = %+v", l.Questions[1].Questions)
	}

	// An ended question is no longer listed.
	if code, out := b.Answer(t, first, map[string]any{"skip": true}); code != http.StatusOK {
		t.Fatalf("skip = %d %v", code, out)
	}
	l = b.Open(t)
	if len(l.Questions) != 1 || l.Questions[0].ID != second {
		t.Fatalf("after skipping %s listed %+v", first, l.Questions)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		request func(id string) string
		answers map[string][]string
		want    map[string][]string
		status  string
	}{
		{
			name:    "one question",
			request: webtest.OneQuestion,
			answers: map[string][]string{"deploy_target": {"Production"}},
			want:    map[string][]string{"deploy_target": {"Production"}},
			status:  "Answered: Production",
		},
		{
			name:    "label in another case takes the declared casing",
			request: webtest.OneQuestion,
			answers: map[string][]string{"deploy_target": {"  staging (recommended) "}},
			want:    map[string][]string{"deploy_target": {"Staging (Recommended)"}},
			status:  "Answered: Staging (Recommended)",
		},
		{
			name:    "multi-select keeps the order given",
			request: webtest.MultiSelect,
			answers: map[string][]string{"regions": {"US", "EU", "us"}},
			want:    map[string][]string{"regions": {"US", "EU"}},
			status:  "Answered: US, EU",
		},
		{
			name:    "several questions",
			request: webtest.ThreeQuestions,
			answers: map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Load"}, "window": {"Tonight"}},
			want:    map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Load"}, "window": {"Tonight"}},
			status:  "Answered: Staging, Unit, Load, Tonight",
		},
		{
			name:    "free text",
			request: webtest.OneQuestion,
			answers: map[string][]string{"deploy_target": {"  the canary pool  "}},
			want:    map[string][]string{"deploy_target": {"the canary pool"}},
			status:  "Answered",
		},
		{
			name:    "multi-select with free text",
			request: webtest.MultiSelect,
			answers: map[string][]string{"regions": {"EU", "Antarctica"}},
			want:    map[string][]string{"regions": {"EU", "Antarctica"}},
			status:  "Answered: EU",
		},
	}
	b := webtest.Start(t, webtest.Options{})
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := b.Ask(t, tc.request("answer-"+string(rune('a'+i))))
			b.WaitOpen(t, id)
			code, out := b.Answer(t, id, map[string]any{"answers": tc.answers})
			if code != http.StatusOK {
				t.Fatalf("answer = %d %v", code, out)
			}
			if out["outcome"] != "answered" || out["status"] != tc.status || out["locale"] != "en" {
				t.Errorf("reply = %v; want outcome answered, status %q", out, tc.status)
			}
			wantNotice(t, out, engine.NoticeRecorded, "en")
			res := b.Result(t, id, 5*time.Second)
			if res.Status != askbridge.StatusAnswered || res.Via != askbridge.ViaWeb || res.AnsweredBy == nil || res.AnsweredBy.Platform != "web" {
				t.Fatalf("result = %+v", res)
			}
			if !webtest.SameAnswers(res.Answers.Answers, tc.want) {
				t.Fatalf("answers = %v; want %v", res.Answers.Answers, tc.want)
			}
		})
	}
}

// wantNotice checks an answer reply's notice: its code (for decisions)
// and its text in catalog tag (for the person).
func wantNotice(t *testing.T, out map[string]any, n engine.Notice, tag string) {
	t.Helper()
	if out["notice"] != string(n) || out["message"] != n.Text(tag) {
		t.Errorf("notice, message = %v, %v; want %q, %q", out["notice"], out["message"], n, n.Text(tag))
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.ThreeQuestions("skip-1"))
	b.WaitOpen(t, id)
	code, out := b.Answer(t, id, map[string]any{"skip": true})
	if code != http.StatusOK || out["outcome"] != "skipped" || out["status"] != "Skipped" {
		t.Fatalf("skip = %d %v", code, out)
	}
	wantNotice(t, out, engine.NoticeSkipped, "en")
	res := b.Result(t, id, 5*time.Second)
	if res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonSkipped {
		t.Fatalf("result = %+v; want no_answer/skipped", res)
	}
}

func TestAnswerTwice(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.OneQuestion("twice-1"))
	b.WaitOpen(t, id)
	if code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}}); code != http.StatusOK {
		t.Fatalf("first answer = %d %v", code, out)
	}
	for _, body := range []map[string]any{
		{"answers": map[string][]string{"deploy_target": {"Staging (Recommended)"}}},
		{"skip": true},
	} {
		code, out := b.Answer(t, id, body)
		if code != http.StatusConflict {
			t.Fatalf("second answer = %d %v; want 409", code, out)
		}
		if out["outcome"] != "answered" || out["status"] != "Answered: Production" {
			t.Errorf("409 reply = %v; want the existing result", out)
		}
		wantNotice(t, out, engine.NoticeAlreadyAnswered, "en")
		res, _ := out["result"].(map[string]any)
		if res["status"] != "answered" {
			t.Errorf("409 result = %v", res)
		}
	}
	b.Result(t, id, 5*time.Second)
	if n := b.ResultCount(t, id); n != 0 {
		t.Fatalf("%d more results pushed after the first", n)
	}
}

func TestEndedBeforeAnswer(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	expired := b.Ask(t, `{"id":"ended-timeout","to":"web","timeoutSeconds":30,"questions":[{"id":"q","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	cancelled := b.Ask(t, webtest.OneQuestion("ended-cancel"))
	b.WaitOpen(t, expired, cancelled)

	b.CancelQuestion(t, cancelled)
	if res := b.Result(t, cancelled, 5*time.Second); res.Reason != askbridge.ReasonCancelled {
		t.Fatalf("cancel result = %+v", res)
	}
	clk.Advance(31 * time.Second)
	if res := b.Result(t, expired, 5*time.Second); res.Reason != askbridge.ReasonTimeout {
		t.Fatalf("timeout result = %+v", res)
	}
	tests := []struct {
		id, outcome string
		notice      engine.Notice
	}{
		{expired, "expired", engine.NoticeExpired},
		{cancelled, "cancelled", engine.NoticeCancelled},
	}
	for _, tc := range tests {
		code, out := b.Answer(t, tc.id, map[string]any{"answers": map[string][]string{"q": {"A"}}})
		if code != http.StatusConflict || out["outcome"] != tc.outcome {
			t.Errorf("answer to %s = %d %v; want 409 %s", tc.id, code, out, tc.outcome)
		}
		wantNotice(t, out, tc.notice, "en")
	}
}

func TestBadAnswers(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.ThreeQuestions("bad-1"))
	b.WaitOpen(t, id)
	tests := []struct {
		name string
		body string
		want string
	}{
		{"unknown question", `{"answers":{"target":["Staging"],"checks":["Unit"],"window":["Now"],"color":["red"]}}`, "answers.color is not a question of this request"},
		{"missing question", `{"answers":{"target":["Staging"],"checks":["Unit"]}}`, "answers.window needs an answer"},
		{"two answers to a single-select", `{"answers":{"target":["Staging","Production"],"checks":["Unit"],"window":["Now"]}}`, "answers.target takes one answer"},
		{"blank answer", `{"answers":{"target":["   "],"checks":["Unit"],"window":["Now"]}}`, "answers.target needs an answer"},
		{"answers and skip", `{"answers":{"target":["Staging"]},"skip":true}`, "not both"},
		{"neither", `{}`, "answers is required"},
		{"unknown field", `{"answer":{"target":["Staging"]}}`, "unknown field"},
		{"not JSON", `target=Staging`, "JSON"},
		{"two objects", `{"skip":true} {"skip":true}`, "one JSON object"},
		{"wrong type", `{"answers":{"target":"Staging"}}`, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, data := b.Request(t, http.MethodPost, "/api/questions/"+id+"/answer", tc.body, nil)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), tc.want) {
				t.Fatalf("= %d %s; want 400 mentioning %q", res.StatusCode, data, tc.want)
			}
		})
	}
	t.Run("not JSON content type", func(t *testing.T) {
		res, data := b.Request(t, http.MethodPost, "/api/questions/"+id+"/answer", `{"skip":true}`, map[string]string{"Content-Type": "text/plain"})
		if res.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("= %d %s; want 415", res.StatusCode, data)
		}
	})
	t.Run("form post", func(t *testing.T) {
		res, data := b.Request(t, http.MethodPost, "/api/questions/"+id+"/answer", `skip=true`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if res.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("= %d %s; want 415", res.StatusCode, data)
		}
	})
	// Still open: nothing above ended it.
	if l := b.Open(t); len(l.Questions) != 1 {
		t.Fatalf("open after bad answers: %+v", l.Questions)
	}
}

func TestUnknownQuestion(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	for _, id := range []string{"never-asked", "bad%7Bid%7D", "x%20y"} {
		code, out := b.Answer(t, id, map[string]any{"skip": true})
		if code != http.StatusNotFound {
			t.Errorf("answer to %s = %d %v; want 404", id, code, out)
		}
	}
}

// A question of another platform is not the page's to answer, even when
// someone knows its id.
func TestOtherPlatformNotAnswerable(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	now := time.Now()
	req, err := askbridge.DecodeRequest([]byte(webtest.OneQuestion("tg-1")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Store.Create(t.Context(), engine.NewQuestion{
		ID: "tg-1", Request: req, Target: askbridge.Target{Platform: "telegram", Chat: "42"},
		Created: now, Deadline: now.Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	if code, out := b.Answer(t, "tg-1", map[string]any{"skip": true}); code != http.StatusNotFound {
		t.Fatalf("answer = %d %v; want 404", code, out)
	}
	if l := b.Open(t); len(l.Questions) != 0 {
		t.Fatalf("listed %+v", l.Questions)
	}
}

func TestAnswerersLimitThePage(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, `{"id":"only-ada","to":"web","answerers":["telegram:7"],"questions":[{"id":"q","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	l := b.WaitOpen(t, id)
	if l.Questions[0].MayAnswer {
		t.Errorf("mayAnswer = true for a question only telegram:7 may answer")
	}
	if code, out := b.Answer(t, id, map[string]any{"skip": true}); code != http.StatusForbidden ||
		out["notice"] != string(engine.NoticeNotForYou) || out["error"] != engine.NoticeNotForYou.Text("en") {
		t.Fatalf("answer = %d %v; want 403 with the notice NotForYou and its text", code, out)
	}
	// Still not the page's once it has ended: it learns nothing more.
	b.CancelQuestion(t, id)
	if res := b.Result(t, id, 5*time.Second); res.Reason != askbridge.ReasonCancelled {
		t.Fatalf("cancel result = %+v", res)
	}
	if code, out := b.Answer(t, id, map[string]any{"skip": true}); code != http.StatusForbidden {
		t.Fatalf("answer after the cancel = %d %v; want 403", code, out)
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-for-tests"
	b := webtest.Start(t, webtest.Options{Token: token})
	id := b.Ask(t, webtest.OneQuestion("token-1"))
	b.WaitOpen(t, id)

	tests := []struct {
		name   string
		method string
		path   string
		body   any
		hdr    map[string]string
		want   int
	}{
		{"list without", http.MethodGet, "/api/questions", nil, map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"list with a wrong one", http.MethodGet, "/api/questions", nil, map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, http.StatusUnauthorized},
		{"list with a prefix of it", http.MethodGet, "/api/questions", nil, map[string]string{"Authorization": "Bearer " + token[:len(token)-1]}, http.StatusUnauthorized},
		{"list with another scheme", http.MethodGet, "/api/questions", nil, map[string]string{"Authorization": "Basic " + token}, http.StatusUnauthorized},
		{"list in the query", http.MethodGet, "/api/questions?token=" + token, nil, map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"history without", http.MethodGet, "/api/history", nil, map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"answer without", http.MethodPost, "/api/questions/" + id + "/answer", map[string]any{"skip": true}, map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"list with", http.MethodGet, "/api/questions", nil, nil, http.StatusOK},
		{"history with", http.MethodGet, "/api/history", nil, map[string]string{"Authorization": "bearer " + token}, http.StatusOK},
		{"the page needs none", http.MethodGet, "/", nil, map[string]string{"Authorization": ""}, http.StatusOK},
		{"nor its script", http.MethodGet, "/app.js", nil, map[string]string{"Authorization": ""}, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, data := b.Request(t, tc.method, tc.path, tc.body, tc.hdr)
			if res.StatusCode != tc.want {
				t.Fatalf("= %d %s; want %d", res.StatusCode, data, tc.want)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("events", func(t *testing.T) {
		if _, res := b.OpenEvents(t, "", nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("events without a token = %d", res.StatusCode)
		}
		if _, res := b.OpenEvents(t, "?token=wrong-wrong-wrong-wrong", nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("events with a wrong token = %d", res.StatusCode)
		}
		s, res := b.OpenEvents(t, "?token="+token, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("events with the token in the query = %d", res.StatusCode)
		}
		s.Close()
		s, res = b.OpenEvents(t, "", map[string]string{"Authorization": "Bearer " + token})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("events with the token in the header = %d", res.StatusCode)
		}
		s.Close()
	})
	// The question is still open: the refused answer changed nothing.
	if code, out := b.Answer(t, id, map[string]any{"skip": true}); code != http.StatusOK {
		t.Fatalf("answer with the token = %d %v", code, out)
	}
}

func TestCrossSiteRefused(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.OneQuestion("xsite-1"))
	b.WaitOpen(t, id)
	host := strings.TrimPrefix(b.Server.URL, "http://")
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"another origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same host, another port", map[string]string{"Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		{"null origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://" + host}, http.StatusForbidden},
		{"same origin", map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	}
	for _, tc := range tests {
		res, data := b.Request(t, http.MethodPost, "/api/questions/"+id+"/answer", map[string]any{"skip": true}, tc.hdr)
		if res.StatusCode != tc.want {
			t.Errorf("%s: = %d %s; want %d", tc.name, res.StatusCode, data, tc.want)
		}
	}
}

func TestNoStateChangingGet(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.OneQuestion("get-1"))
	b.WaitOpen(t, id)
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
		res, _ := b.Request(t, method, "/api/questions/"+id+"/answer?skip=true", nil, nil)
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s on the answer URL = %d; want 405", method, res.StatusCode)
		}
	}
	if res, _ := b.Request(t, http.MethodPost, "/api/questions", map[string]any{"skip": true}, nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST on the list = %d; want 405", res.StatusCode)
	}
	if l := b.Open(t); len(l.Questions) != 1 {
		t.Fatalf("the question ended: %+v", l.Questions)
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	s, res := b.OpenEvents(t, "", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events = %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	id := b.Ask(t, webtest.OneQuestion("events-1"))
	s.Next(t, "requested", id)
	s.Next(t, "delivered", id)
	b.WaitOpen(t, id)
	if code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}}); code != http.StatusOK {
		t.Fatalf("answer = %d %v", code, out)
	}
	ev := s.Next(t, "answered", id)
	if ev.ID == "" || ev.Data["by"] != "web:web" {
		t.Errorf("answered event = %+v", ev)
	}
	s.Close()

	// A reconnect with Last-Event-ID gets what happened in between.
	id2 := b.Ask(t, webtest.OneQuestion("events-2"))
	b.WaitOpen(t, id2)
	if code, _ := b.Answer(t, id2, map[string]any{"skip": true}); code != http.StatusOK {
		t.Fatal("skip failed")
	}
	s2, res := b.OpenEvents(t, "", map[string]string{"Last-Event-ID": ev.ID})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("reconnect = %d", res.StatusCode)
	}
	s2.Next(t, "requested", id2)
	s2.Next(t, "skipped", id2)

	// Events of ended questions keep coming live after the replay.
	id3 := b.Ask(t, webtest.OneQuestion("events-3"))
	b.WaitOpen(t, id3)
	b.CancelQuestion(t, id3)
	s2.Next(t, "cancelled", id3)
}

func TestEventsHeartbeatAndClose(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Heartbeat: 50 * time.Millisecond})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.Server.URL+"/api/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 256)
	var got strings.Builder
	for !strings.Contains(got.String(), ": ping") {
		n, err := res.Body.Read(buf)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, got.String())
		}
		got.Write(buf[:n])
	}
	closed := make(chan struct{})
	go func() { b.Handler.Close(); close(closed) }()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	res2, _ := b.Request(t, http.MethodGet, "/api/events", nil, nil)
	if res2.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("events after Close = %d; want 503", res2.StatusCode)
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	answered := b.Ask(t, webtest.ThreeQuestions("hist-answered"))
	own := b.Ask(t, webtest.OneQuestion("hist-own"))
	expired := b.Ask(t, `{"id":"hist-expired","to":"web","timeoutSeconds":30,"questions":[{"id":"q","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	b.WaitOpen(t, answered, own, expired)

	if code, out := b.Answer(t, answered, map[string]any{"answers": map[string][]string{"target": {"Production"}, "checks": {"Unit", "a smoke test"}, "window": {"Now"}}}); code != http.StatusOK {
		t.Fatalf("answer = %d %v", code, out)
	}
	e := b.WaitHistory(t, answered)
	want := web.HistoryEntry{
		ID: answered, Agent: "release-bot", Locale: "en", Intro: "Questions from release-bot:", Outcome: "answered",
		Status: "Answered: Production, Unit, Now", By: "web page",
		Sections: []web.HistorySection{
			{Header: "Target", Question: "Where should this deploy?", Answer: []string{"Production"}},
			{Header: "Checks", Question: "Which checks should run first?", Answer: []string{"Unit"}, OwnWords: true},
			{Header: "Window", Question: "When should it go out?", Answer: []string{"Now"}},
		},
	}
	if e.Created == 0 || e.At < e.Created {
		t.Errorf("created, at = %d, %d", e.Created, e.At)
	}
	e.Created, e.At = 0, 0
	if !sameJSON(e, want) {
		t.Errorf("entry = %s\nwant    %s", mustJSON(t, e), mustJSON(t, want))
	}

	// Free text is never echoed back.
	if code, _ := b.Answer(t, own, map[string]any{"answers": map[string][]string{"deploy_target": {"my secret plan"}}}); code != http.StatusOK {
		t.Fatal("answer failed")
	}
	e = b.WaitHistory(t, own)
	if e.Status != "Answered" || len(e.Sections[0].Answer) != 0 || !e.Sections[0].OwnWords || strings.Contains(string(mustJSON(t, e)), "secret") {
		t.Errorf("own-words entry = %s", mustJSON(t, e))
	}

	clk.Advance(31 * time.Second)
	e = b.WaitHistory(t, expired)
	if e.Outcome != "expired" || e.Status != "Expired" || e.By != "" {
		t.Errorf("expired entry = %s", mustJSON(t, e))
	}

	// Newest first, each question once, in the API and in Redis.
	got := b.History(t)
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []string{expired, own, answered}) {
		t.Errorf("timeline = %v; want newest first", ids)
	}
	raw, err := b.Store.History(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 3 {
		t.Errorf("%d entries in Redis; want one per ended question", len(raw))
	}

	// A Finish repeated after an error adds the entry again; the page
	// shows it once.
	if err := b.Store.AppendHistory(t.Context(), raw[2]); err != nil {
		t.Fatal(err)
	}
	if got := b.History(t); len(got) != 3 {
		t.Errorf("after a repeat the timeline has %d entries; want 3", len(got))
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?limit=-1"} {
		if res, _ := b.Request(t, http.MethodGet, "/api/history"+q, nil, nil); res.StatusCode != http.StatusBadRequest {
			t.Errorf("history%s = %d; want 400", q, res.StatusCode)
		}
	}
	res, data := b.Request(t, http.MethodGet, "/api/history?limit=1", nil, nil)
	if res.StatusCode != http.StatusOK || strings.Count(string(data), `"id"`) != 1 {
		t.Errorf("history?limit=1 = %d %s", res.StatusCode, data)
	}
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStaticFiles(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	tests := []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/app.js", "text/javascript; charset=utf-8", "'use strict';"},
		{"/style.css", "text/css; charset=utf-8", "@media (max-width: 600px)"},
		{"/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res, data := b.Request(t, http.MethodGet, tc.path, nil, nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("= %d", res.StatusCode)
			}
			if got := res.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type = %q; want %q", got, tc.ctype)
			}
			if !strings.Contains(string(data), tc.contains) {
				t.Errorf("body does not contain %q", tc.contains)
			}
			for k, v := range map[string]string{
				"X-Content-Type-Options": "nosniff",
				"X-Frame-Options":        "DENY",
				"Referrer-Policy":        "no-referrer",
			} {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s = %q; want %q", k, got, v)
				}
			}
			csp := res.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("CSP = %q", csp)
			}
			etag := res.Header.Get("ETag")
			res2, _ := b.Request(t, http.MethodGet, tc.path, nil, map[string]string{"If-None-Match": etag})
			if etag == "" || res2.StatusCode != http.StatusNotModified {
				t.Errorf("revalidation with ETag %q = %d; want 304", etag, res2.StatusCode)
			}
		})
	}
	if res, _ := b.Request(t, http.MethodGet, "/nope.js", nil, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown file = %d; want 404", res.StatusCode)
	}
	res, _ := b.Request(t, http.MethodGet, "/api/questions", nil, nil)
	if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("API headers = %v", res.Header)
	}
}

// The page and its API can live under a base path.
func TestBasePath(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	cfg := b.Config()
	cfg.BasePath = "/ask/"
	h, err := web.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/ask/", http.StatusOK},
		{"/ask/app.js", http.StatusOK},
		{"/ask/api/questions", http.StatusOK},
		{"/", http.StatusNotFound},
		{"/api/questions", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Host = "127.0.0.1" // without a token, loopback names only
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET %s = %d; want %d", tc.path, rec.Code, tc.want)
		}
	}
}

func TestNewHandlerConfig(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	with := func(change func(*web.Config)) web.Config {
		cfg := b.Config()
		change(&cfg)
		return cfg
	}
	tests := []struct {
		name string
		cfg  web.Config
		want string
	}{
		{"no questions", with(func(c *web.Config) { c.Questions = nil }), "Questions is required"},
		{"no history", with(func(c *web.Config) { c.History = nil }), "History is required"},
		{"no events", with(func(c *web.Config) { c.Events = nil }), "Events is required"},
		{"no submitter", with(func(c *web.Config) { c.Submitter = nil }), "Submitter is required"},
		{"relative base", with(func(c *web.Config) { c.BasePath = "ask/" }), "base path"},
		{"base without slash", with(func(c *web.Config) { c.BasePath = "/ask" }), "base path"},
		{"base with a pattern", with(func(c *web.Config) { c.BasePath = "/{x}/" }), "base path"},
		{"short token", with(func(c *web.Config) { c.Token = "short" }), "at least 16"},
		{"origin with a path", with(func(c *web.Config) { c.Origins = []string{"http://127.0.0.1:8080/page"} }), "not an origin"},
		{"origin without a scheme", with(func(c *web.Config) { c.Origins = []string{"127.0.0.1:8080"} }), "not an origin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := web.NewHandler(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.1.2.3:80", true},
		{"[::1]:8080", true},
		{"localhost:8080", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"[::]:8080", false},
		{"192.168.1.10:8080", false},
		{"example.com:8080", false},
		{"127.0.0.1", false},
	}
	for _, tc := range tests {
		if got := web.Loopback(tc.addr); got != tc.want {
			t.Errorf("Loopback(%q) = %v; want %v", tc.addr, got, tc.want)
		}
	}
	a, b := web.NewToken(), web.NewToken()
	if len(a) < 16 || a == b {
		t.Errorf("NewToken = %q, %q", a, b)
	}
}

func TestChannel(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	ch := b.Channel
	if ch.Platform() != "web" || ch.State() != engine.StateConnected {
		t.Errorf("platform, state = %q, %q", ch.Platform(), ch.State())
	}
	caps := ch.Capabilities()
	if !caps.Buttons || caps.PayloadBytes != 64 || caps.ButtonsPerRow != 0 {
		t.Errorf("capabilities = %+v", caps)
	}
	req, err := askbridge.DecodeRequest([]byte(webtest.OneQuestion("send-1")))
	if err != nil {
		t.Fatal(err)
	}
	plan := engine.BuildPlan("send-1", req, caps)
	var sent []engine.MessageRef
	record := func(ref engine.MessageRef) bool { sent = append(sent, ref); return true }

	if err := ch.Send(t.Context(), engine.Delivery{Chat: "web", Plan: plan, Sent: record}); err != nil {
		t.Fatalf("Send = %v", err)
	}
	want := engine.MessageRef{Platform: "web", Chat: "web", Message: "send-1", Part: 0}
	if !slices.Equal(sent, []engine.MessageRef{want}) {
		t.Errorf("sent %v; want [%v]", sent, want)
	}

	// A later try has nothing left to post: the prompt is one part.
	sent = nil
	if err := ch.Send(t.Context(), engine.Delivery{Chat: "web", Plan: plan, From: 1, Sent: record}); err != nil || len(sent) != 0 {
		t.Errorf("Send from part 1 = %v, sent %v; want nil and nothing", err, sent)
	}

	// The engine saying stop (it could not record) is no error of Send's.
	if err := ch.Send(t.Context(), engine.Delivery{Chat: "web", Plan: plan, Sent: func(engine.MessageRef) bool { return false }}); err != nil {
		t.Errorf("Send with Sent saying stop = %v; want nil", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ch.Run(ctx, b.Engine); err != nil {
		t.Errorf("Run = %v; want nil when ctx is done", err)
	}
}

// The timeline entry comes from the Ending alone: how the question ended,
// who answered and when, even when its record has already left the store
// (here it never was in it) and whatever words the status line uses.
func TestFinishFromEnding(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	created := time.UnixMilli(1_760_000_000_000)
	ended := created.Add(42 * time.Second)
	fallback := created.Add(time.Hour)
	ch := web.NewChannel(b.Store, func() time.Time { return fallback })
	ada := &askbridge.Person{Platform: "telegram", ID: "7", Name: "Ada"}

	tests := []struct {
		name   string
		id     string
		res    askbridge.Result
		status string
		want   web.HistoryEntry
	}{
		{
			name:   "answered elsewhere",
			id:     "gone-answered",
			res:    askbridge.Answered("gone-answered", map[string][]string{"deploy_target": {"Production"}}, ada, askbridge.ViaButton).Stamp(created, ended),
			status: "Answered: Production",
			want: web.HistoryEntry{
				Outcome: "answered", Status: "Answered: Production", By: "Ada", At: ended.UnixMilli(),
				Sections: []web.HistorySection{{Header: "Deployment t", Question: "Where should this deploy?", Answer: []string{"Production"}}},
			},
		},
		{
			name:   "undeliverable",
			id:     "gone-undeliverable",
			res:    askbridge.NoAnswer("gone-undeliverable", askbridge.ReasonUndeliverable, "chat not found").Stamp(created, ended),
			status: "Not delivered",
			want:   web.HistoryEntry{Outcome: "undeliverable", Status: "Not delivered", At: ended.UnixMilli()},
		},
		{
			name:   "cancelled, in other words",
			id:     "gone-cancelled",
			res:    askbridge.NoAnswer("gone-cancelled", askbridge.ReasonCancelled, "").Stamp(created, ended),
			status: "Abgebrochen",
			want:   web.HistoryEntry{Outcome: "cancelled", Status: "Abgebrochen", At: ended.UnixMilli()},
		},
		{
			name:   "a result without an end time takes the channel's clock",
			id:     "gone-unstamped",
			res:    askbridge.NoAnswer("gone-unstamped", askbridge.ReasonTimeout, ""),
			status: "Expired",
			want:   web.HistoryEntry{Outcome: "expired", Status: "Expired", At: fallback.UnixMilli()},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := askbridge.DecodeRequest([]byte(webtest.OneQuestion(tc.id)))
			if err != nil {
				t.Fatal(err)
			}
			res := tc.res
			rec := engine.Record{
				ID: tc.id, Status: res.Status, Request: req, Target: askbridge.Target{Platform: "web"},
				Created: created, Deadline: created.Add(15 * time.Minute), Result: &res,
			}
			end := engine.Ending{
				Plan:    engine.BuildPlan(tc.id, req, ch.Capabilities()),
				Outcome: res.Outcome(), Status: tc.status, Question: rec,
			}
			ref := engine.MessageRef{Platform: "web", Chat: "web", Message: tc.id}
			if err := ch.Finish(t.Context(), ref, end); err != nil {
				t.Fatalf("Finish = %v", err)
			}
			want := tc.want
			want.ID, want.Agent, want.Locale, want.Intro, want.Created = tc.id, "deploy-bot", "en", "Question from deploy-bot:", created.UnixMilli()
			if want.Sections == nil {
				want.Sections = []web.HistorySection{{Header: "Deployment t", Question: "Where should this deploy?"}}
			}
			if got := b.WaitHistory(t, tc.id); !sameJSON(got, want) {
				t.Errorf("entry = %s\nwant    %s", mustJSON(t, got), mustJSON(t, want))
			}
		})
	}
}

// An answer to a question that could not be delivered gets the engine's
// notice for it.
func TestAnswerUndeliverable(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	const id = "undelivered-1"
	req, err := askbridge.DecodeRequest([]byte(webtest.OneQuestion(id)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := b.Store.Create(t.Context(), engine.NewQuestion{
		ID: id, Request: req, Target: askbridge.Target{Platform: "web"}, Created: now, Deadline: now.Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Store.End(t.Context(), id, askbridge.NoAnswer(id, askbridge.ReasonUndeliverable, "page gone"), now); err != nil || !r.Won {
		t.Fatalf("End = %+v, %v", r, err)
	}
	code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}})
	if code != http.StatusConflict || out["outcome"] != "undeliverable" || out["status"] != "Not delivered" {
		t.Fatalf("answer = %d %v; want 409 undeliverable", code, out)
	}
	wantNotice(t, out, engine.NoticeUndeliverable, "en")
}
