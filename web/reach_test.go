package web_test

// Tests of what reaching people adds to the page (ask-user.md §5): a
// question shown in several places, reminders, escalation steps and Seen.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/internal/webtest"
)

// seen presses Seen on the page's behalf: POST …/seen with {} and the
// headers hdr, as b.request sends them.
func seen(t testing.TB, b *webtest.Bridge, id string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	res, data := b.Request(t, http.MethodPost, "/api/questions/"+id+"/seen", "{}", hdr)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("seen reply %d is not JSON: %s", res.StatusCode, data)
	}
	return res.StatusCode, out
}

// waitListed waits until the page lists id as ok says, and returns it.
func waitListed(t testing.TB, b *webtest.Bridge, id, what string, ok func(webtest.ListedQuestion) bool) webtest.ListedQuestion {
	t.Helper()
	var q webtest.ListedQuestion
	var listed bool
	if !testwait.Until(10*time.Second, func() bool {
		q, listed = b.Open(t).Listed(id)
		return listed && ok(q)
	}) {
		t.Fatalf("%s never listed with %s; last listed %+v (%v)", id, what, q, listed)
	}
	return q
}

// placeQuestion stores question id (request req, a JSON request) in places
// as the engine would, and records a prompt in each place of shown, as
// the engine does once it has posted there. It is open for an hour; no
// reminder or escalation step is scheduled.
func placeQuestion(t testing.TB, b *webtest.Bridge, id, req string, places []askbridge.Place, shown ...int) {
	t.Helper()
	r, err := askbridge.DecodeRequest([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	now := b.Clock.Now()
	if _, _, err := b.Store.Create(t.Context(), engine.NewQuestion{
		ID: id, Request: r, Target: places[0].Target, Answerers: places[0].Answerers, Places: places,
		Created: now, Deadline: now.Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range shown {
		ref := engine.MessageRef{Platform: places[k].Target.Platform, Chat: places[k].Target.Chat, Message: id + "@" + places[k].Target.Platform, Place: k}
		if ref.Platform == "web" {
			ref.Chat, ref.Message = "web", id
		}
		if _, err := b.Store.AddMessage(t.Context(), id, ref); err != nil {
			t.Fatal(err)
		}
	}
}

// withPings is a one-question request with reminders every ten minutes,
// so its prompts offer Seen; extra is more fields, each with its comma.
func withPings(id, extra string) string {
	return fmt.Sprintf(`{"id":%q,"agent":"deploy-bot","remindEverySeconds":600%s,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]}`, id, extra)
}

// A question whose place on the page is not its first is the page's all
// the same: listed with where else it is open, answerable, and its answer
// says it was given on the page.
func TestWebSecondPlace(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	s, _ := b.OpenEvents(t, "", nil)
	id := b.Ask(t, `{"id":"second-1","to":["slack:C0123","web"],"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]}`)
	// Its requested event names the first place, Slack: the page gets it
	// because the question has a place on the page.
	s.Next(t, "requested", id)
	q := waitListed(t, b, id, "Slack as another place", func(q webtest.ListedQuestion) bool { return len(q.Places) == 1 })
	if q.Places[0] != (webtest.ListedPlace{Name: "slack:C0123", Platform: "slack"}) || !q.MayAnswer || q.OffersSeen || q.SeenBy != "" || len(q.Notes) != 0 {
		t.Errorf("listed %+v; want Slack as the other place, answerable, no Seen, no notes", q)
	}
	code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}})
	if code != http.StatusOK || out["status"] != "Answered by web page in web: Production" {
		t.Fatalf("answer = %d %v; want 200 naming the page as where", code, out)
	}
	res := b.Result(t, id, 5*time.Second)
	if res.Place != "web" || res.AnsweredBy == nil || res.AnsweredBy.Platform != "web" {
		t.Errorf("result = %+v; want it answered on the page", res)
	}
	// Its end names the first place too; the page gets it all the same.
	s.Next(t, "answered", id)
	if e := b.WaitHistory(t, id); e.Outcome != "answered" {
		t.Errorf("timeline entry = %+v", e)
	}
}

// Who may answer is decided for the page's own place, not the first one.
func TestWebPlaceAnswerers(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	slack := askbridge.Target{Platform: "slack", Chat: "C0123"}
	// Only slack:U1 may answer on Slack; anyone on the page.
	placeQuestion(t, b, "place-open", withPings("place-open", ""), []askbridge.Place{
		{Name: "slack:C0123", Target: slack, Answerers: []string{"slack:U1"}},
		{Name: "web", Target: pageTarget},
	}, 0, 1)
	// Anyone on Slack; only telegram:7 on the page.
	placeQuestion(t, b, "place-closed", withPings("place-closed", ""), []askbridge.Place{
		{Name: "slack:C0123", Target: slack},
		{Name: "web", Target: pageTarget, Answerers: []string{"telegram:7"}},
	}, 0, 1)
	l := b.WaitOpen(t, "place-open", "place-closed")
	if q, _ := l.Listed("place-open"); !q.MayAnswer {
		t.Errorf("place-open: mayAnswer = false; the page's place names no answerers")
	}
	if q, _ := l.Listed("place-closed"); q.MayAnswer {
		t.Errorf("place-closed: mayAnswer = true; the page's place is for telegram:7 only")
	}
	if code, out := seen(t, b, "place-closed", nil); code != http.StatusForbidden || out["notice"] != string(engine.NoticeNotForYou) {
		t.Errorf("seen on place-closed = %d %v; want 403 NotForYou", code, out)
	}
	if code, out := b.Answer(t, "place-closed", map[string]any{"skip": true}); code != http.StatusForbidden || out["notice"] != string(engine.NoticeNotForYou) {
		t.Errorf("answer to place-closed = %d %v; want 403 NotForYou", code, out)
	}
	if code, out := seen(t, b, "place-open", nil); code != http.StatusOK {
		t.Errorf("seen on place-open = %d %v; want 200", code, out)
	}
	if code, out := b.Answer(t, "place-open", map[string]any{"skip": true}); code != http.StatusOK {
		t.Errorf("answer to place-open = %d %v; want 200", code, out)
	}
}

// A question without a place on the page is not the page's, even when
// someone knows its id, nor are its events.
func TestNoWebPlace(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	s, _ := b.OpenEvents(t, "", nil)
	other := b.Ask(t, withPings("elsewhere-1", `,"to":["slack:C0123","telegram:42"]`))
	mine := b.Ask(t, withPings("elsewhere-2", `,"to":"web"`))
	b.WaitOpen(t, mine)
	if _, listed := b.Open(t).Listed(other); listed {
		t.Errorf("%s is listed", other)
	}
	if code, out := seen(t, b, other, nil); code != http.StatusNotFound {
		t.Errorf("seen = %d %v; want 404", code, out)
	}
	if code, out := b.Answer(t, other, map[string]any{"skip": true}); code != http.StatusNotFound {
		t.Errorf("answer = %d %v; want 404", code, out)
	}
	b.CancelQuestion(t, other)
	b.CancelQuestion(t, mine)
	// Events come in order: by the end of the page's question, every event
	// of the other one has been published, and none reached the page.
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-s.C:
			if ev.Data["id"] == other {
				t.Fatalf("the page got %v of a question not on the page", ev.Data)
			}
			if ev.Data["id"] == mine && ev.Data["event"] == "cancelled" {
				return
			}
		case <-timeout:
			t.Fatal("no cancelled event of the page's question")
		}
	}
}

// The list says, per question, where else it is open (only places with a
// prompt: not one that could not be reached, nor an escalation step not
// yet due), whether it offers Seen, and how many reminders the page has
// had; the events stream brings what happened.
func TestListReach(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	s, _ := b.OpenEvents(t, "", nil)
	id := b.Ask(t, withPings("reach-1", `,"to":["slack:C0123","discord:7","telegram:42","web"],"escalate":[{"afterSeconds":700,"to":"oncall-lead"}]`))
	ev := s.Next(t, "undeliverable", id)
	if ev.Data["to"] != "discord:7" || ev.Data["error"] != "chat not found" {
		t.Errorf("undeliverable event = %v; want discord:7 and the platform's words", ev.Data)
	}
	want := []webtest.ListedPlace{{Name: "slack:C0123", Platform: "slack"}, {Name: "telegram:42", Platform: "telegram"}}
	q := waitListed(t, b, id, "Slack and Telegram", func(q webtest.ListedQuestion) bool { return len(q.Places) == 2 })
	if !slices.Equal(q.Places, want) || !q.OffersSeen || q.SeenBy != "" || q.Reminders != 0 || len(q.Notes) != 0 || !q.MayAnswer {
		t.Errorf("listed %+v; want places %v, Seen offered, nothing more", q, want)
	}
	raw, _ := json.Marshal(q)
	if strings.Contains(string(raw), "answerers") {
		t.Errorf("the list tells who may answer elsewhere: %s", raw)
	}

	clk.Advance(601 * time.Second)
	ev = s.Next(t, "reminded", id)
	if ev.Data["to"] != "slack:C0123,telegram:42,web" {
		t.Errorf("reminded to = %v", ev.Data["to"])
	}
	waitListed(t, b, id, "one reminder", func(q webtest.ListedQuestion) bool { return q.Reminders == 1 })

	clk.Advance(100 * time.Second)
	if ev := s.Next(t, "escalated", id); ev.Data["to"] != "oncall-lead" {
		t.Errorf("escalated to = %v", ev.Data["to"])
	}
	want = append(want, webtest.ListedPlace{Name: "oncall-lead", Platform: "slack"})
	q = waitListed(t, b, id, "the escalation step's place", func(q webtest.ListedQuestion) bool { return len(q.Places) == 3 })
	if !slices.Equal(q.Places, want) || len(q.Notes) != 0 {
		t.Errorf("listed %+v; want places %v and no notes (the page is not the step's)", q, want)
	}

	// Seen on Slack, by Alice: the page learns it, and who.
	alice := askbridge.Person{Platform: "slack", ID: "U1", Name: "Alice"}
	if n, err := b.Engine.Acknowledge(t.Context(), id, alice, 0); err != nil || n != engine.NoticeSeen {
		t.Fatalf("Acknowledge = %v, %v", n, err)
	}
	if ev := s.Next(t, "acknowledged", id); ev.Data["by"] != "slack:U1" {
		t.Errorf("acknowledged event = %v", ev.Data)
	}
	q = waitListed(t, b, id, "Seen by Alice", func(q webtest.ListedQuestion) bool { return q.SeenBy != "" })
	if q.SeenBy != "Alice" || !slices.Equal(q.Notes, []string{"Seen by Alice"}) || !q.OffersSeen {
		t.Errorf("listed %+v; want seen by Alice, in the notes too", q)
	}
}

// published waits until the events stream holds an event of kind for
// question id, as the agent reads it (the page may not be told).
func published(t testing.TB, b *webtest.Bridge, kind askbridge.EventKind, id string) {
	t.Helper()
	key := askbridge.Keys{Prefix: b.Prefix}.Events()
	testwait.For(t, 10*time.Second, fmt.Sprintf("a %s event of %s", kind, id), func() bool {
		entries, err := b.RDB.XRange(t.Context(), key, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(entries, func(e redis.XMessage) bool {
			return e.Values["event"] == string(kind) && e.Values["id"] == id
		})
	})
}

// A question whose place on the page comes with an escalation step is not
// the page's until the step is taken: before, the page does not list it,
// an answer or a Seen from the page is refused as for a question it does
// not know (404, the same reply), nothing of the question changes (still
// open, not seen, so the step still comes), and the page's event stream
// carries none of its events. Once the step is taken it is the page's as
// usual: its events, the list, Seen and the answer.
func TestPageWaitsForItsEscalationStep(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	s, _ := b.OpenEvents(t, "", nil)
	id := b.Ask(t, withPings("unreached-1", `,"to":"telegram:42","escalate":[{"afterSeconds":300,"to":"web"}]`))
	published(t, b, askbridge.EventDelivered, id) // on Telegram
	answer := map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}}

	if _, listed := b.Open(t).Listed(id); listed {
		t.Errorf("%s is listed before its step brings it to the page", id)
	}
	if code, out := seen(t, b, id, nil); code != http.StatusNotFound {
		t.Errorf("Seen before the step = %d %v; want 404", code, out)
	}
	unknownCode, unknown := b.Answer(t, "no-such-question", answer)
	if code, out := b.Answer(t, id, answer); code != http.StatusNotFound || fmt.Sprint(out) != fmt.Sprint(unknown) || unknownCode != http.StatusNotFound {
		t.Errorf("answer before the step = %d %v; want %d %v, as for an unknown question", code, out, unknownCode, unknown)
	}
	rec, found, err := b.Store.Get(t.Context(), id)
	if err != nil || !found || rec.Status != askbridge.StatusPending || rec.Acknowledged != nil || b.ResultCount(t, id) != 0 {
		t.Errorf("the question after the page's tries: %v %v %s, seen by %v, %d results; want it open and unseen", found, err, rec.Status, rec.Acknowledged, b.ResultCount(t, id))
	}
	// A question asked on the page after it: its first event comes after
	// every event of the first question so far, none of which the page
	// may have been sent.
	other := b.Ask(t, webtest.OneQuestion("unreached-2"))
	for ev := range s.C {
		if ev.Data["id"] == id {
			t.Errorf("the page was sent %v of %s before its step", ev.Data["event"], id)
		}
		if ev.Data["id"] == other {
			break
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	clk.Advance(301 * time.Second)
	if ev := s.Next(t, "escalated", id); ev.Data["to"] != "web" {
		t.Errorf("escalated to = %v", ev.Data["to"])
	}
	waitListed(t, b, id, "the step taken", func(q webtest.ListedQuestion) bool { return q.MayAnswer })
	if code, out := seen(t, b, id, nil); code != http.StatusOK {
		t.Errorf("Seen after the step = %d %v; want 200", code, out)
	}
	s.Next(t, "acknowledged", id)
	if code, out := b.Answer(t, id, answer); code != http.StatusOK || out["outcome"] != "answered" {
		t.Errorf("answer after the step = %d %v; want 200, answered", code, out)
	}
	s.Next(t, "answered", id)
}

// A question an escalation step brings to the page says why, in its notes.
func TestEscalatedToThePage(t *testing.T) {
	t.Parallel()
	clk := webtest.NewClock()
	b := webtest.Start(t, webtest.Options{Clock: clk})
	s, _ := b.OpenEvents(t, "", nil)
	id := b.Ask(t, withPings("escalated-1", `,"to":"slack:C0123","escalate":[{"afterSeconds":60,"to":"web"}]`))
	published(t, b, askbridge.EventDelivered, id) // on Slack
	if _, listed := b.Open(t).Listed(id); listed {
		t.Fatalf("%s is listed before its step brings it to the page", id)
	}
	clk.Advance(61 * time.Second)
	if ev := s.Next(t, "escalated", id); ev.Data["to"] != "web" {
		t.Errorf("escalated to = %v", ev.Data["to"])
	}
	q := waitListed(t, b, id, "its notes", func(q webtest.ListedQuestion) bool { return len(q.Notes) > 0 })
	if !slices.Equal(q.Notes, []string{"No answer after 1 min, so this is asked here too."}) ||
		!slices.Equal(q.Places, []webtest.ListedPlace{{Name: "slack:C0123", Platform: "slack"}}) || !q.MayAnswer {
		t.Errorf("listed %+v; want why it is asked here, and Slack", q)
	}
}

func TestSeen(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	s, _ := b.OpenEvents(t, "", nil)
	id := b.Ask(t, withPings("seen-1", `,"to":"web"`))
	if q := b.WaitOpen(t, id).Questions[0]; !q.OffersSeen || q.SeenBy != "" {
		t.Fatalf("listed %+v; want Seen offered, and not yet seen", q)
	}

	code, out := seen(t, b, id, nil)
	if code != http.StatusOK || out["id"] != id || out["locale"] != "en" || out["outcome"] != nil {
		t.Fatalf("seen = %d %v; want 200 with the question still open", code, out)
	}
	wantNotice(t, out, engine.NoticeSeen, "en")
	if ev := s.Next(t, "acknowledged", id); ev.Data["by"] != "web:web" {
		t.Errorf("acknowledged event = %v", ev.Data)
	}
	q, _ := b.Open(t).Listed(id)
	if q.SeenBy != "web page" || !slices.Equal(q.Notes, []string{"Seen by web page"}) {
		t.Errorf("listed %+v; want it seen by the web page", q)
	}

	code, out = seen(t, b, id, nil)
	if code != http.StatusConflict || out["outcome"] != nil {
		t.Errorf("seen again = %d %v; want 409 with the question open", code, out)
	}
	wantNotice(t, out, engine.NoticeAlreadySeen, "en")

	// Seen answers nothing: the question is still the page's to answer.
	if code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}}); code != http.StatusOK {
		t.Fatalf("answer after Seen = %d %v", code, out)
	}
	code, out = seen(t, b, id, nil)
	if code != http.StatusConflict || out["outcome"] != "answered" || out["status"] != "Answered: Production" {
		t.Errorf("seen after the answer = %d %v; want 409 saying how it ended", code, out)
	}
	wantNotice(t, out, engine.NoticeAlreadyAnswered, "en")
}

// A Seen after the end says how the question ended, in its language, even
// when nobody had seen it.
func TestSeenEnded(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, withPings("seen-ended", `,"to":"web","locale":"th"`))
	b.WaitOpen(t, id)
	b.CancelQuestion(t, id)
	if res := b.Result(t, id, 5*time.Second); res.Reason != askbridge.ReasonCancelled {
		t.Fatalf("result = %+v", res)
	}
	code, out := seen(t, b, id, nil)
	if code != http.StatusConflict || out["outcome"] != "cancelled" || out["status"] != "ยกเลิกแล้ว" || out["locale"] != "th" {
		t.Errorf("seen = %d %v; want 409, cancelled, in Thai", code, out)
	}
	wantNotice(t, out, engine.NoticeCancelled, "th")

	// And a Thai Seen is in Thai.
	open := b.Ask(t, withPings("seen-thai", `,"to":"web","locale":"th"`))
	b.WaitOpen(t, open)
	code, out = seen(t, b, open, nil)
	if code != http.StatusOK || out["message"] != "รับทราบแล้ว คำถามยังเปิดอยู่" {
		t.Errorf("Thai seen = %d %v", code, out)
	}
}

func TestSeenRefused(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	plain := b.Ask(t, webtest.OneQuestion("seen-plain"))
	others := b.Ask(t, withPings("seen-others", `,"to":"web","answerers":["telegram:7"]`))
	b.WaitOpen(t, plain, others)

	// A question without reminders or escalation offers no Seen.
	code, out := seen(t, b, plain, nil)
	if code != http.StatusBadRequest {
		t.Errorf("seen without pings = %d %v; want 400", code, out)
	}
	wantNotice(t, out, engine.NoticeUnknown, "en")
	if q, _ := b.Open(t).Listed(plain); q.OffersSeen {
		t.Errorf("listed %+v; want no Seen offered", q)
	}

	code, out = seen(t, b, others, nil)
	if code != http.StatusForbidden || out["notice"] != string(engine.NoticeNotForYou) || out["error"] != engine.NoticeNotForYou.Text("en") {
		t.Errorf("seen on a question for others = %d %v; want 403 NotForYou", code, out)
	}
	for _, id := range []string{"never-asked", "bad%7Bid%7D"} {
		if code, out := seen(t, b, id, nil); code != http.StatusNotFound {
			t.Errorf("seen on %s = %d %v; want 404", id, code, out)
		}
	}
	if q, _ := b.Open(t).Listed(others); q.SeenBy != "" {
		t.Errorf("%s was marked seen: %+v", others, q)
	}
}

// Seen changes state: it is protected as an answer is.
func TestSeenProtected(t *testing.T) {
	t.Parallel()
	const token = "seen-test-token-0123456789"
	b := webtest.Start(t, webtest.Options{Token: token})
	id := b.Ask(t, withPings("seen-guard", `,"to":"web"`))
	b.WaitOpen(t, id)
	host := strings.TrimPrefix(b.Server.URL, "http://")
	path := "/api/questions/" + id + "/seen"
	tests := []struct {
		name   string
		method string
		body   any
		hdr    map[string]string
		want   int
	}{
		{"without the token", http.MethodPost, "{}", map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"with a wrong token", http.MethodPost, "{}", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, http.StatusUnauthorized},
		{"another origin", http.MethodPost, "{}", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"null origin", http.MethodPost, "{}", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"cross-site fetch", http.MethodPost, "{}", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", http.MethodPost, "{}", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://" + host}, http.StatusForbidden},
		{"a form", http.MethodPost, "seen=1", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"plain text", http.MethodPost, "{}", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"no body", http.MethodPost, nil, map[string]string{"Content-Type": "application/json"}, http.StatusBadRequest},
		{"a field", http.MethodPost, `{"seen":true}`, nil, http.StatusBadRequest},
		{"two objects", http.MethodPost, "{} {}", nil, http.StatusBadRequest},
		{"GET", http.MethodGet, nil, nil, http.StatusMethodNotAllowed},
		{"same origin", http.MethodPost, "{}", map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, data := b.Request(t, tc.method, path, tc.body, tc.hdr)
			if res.StatusCode != tc.want {
				t.Fatalf("= %d %s; want %d", res.StatusCode, data, tc.want)
			}
			seen := b.Open(t).Questions[0].SeenBy != ""
			if seen != (tc.want == http.StatusOK) {
				t.Errorf("after a %d the question is seen: %v", res.StatusCode, seen)
			}
		})
	}
}

// Without a token, only loopback names reach the Seen of a question too.
func TestSeenLoopbackOnly(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, withPings("seen-rebind", `,"to":"web"`))
	b.WaitOpen(t, id)
	_, port, _ := strings.Cut(strings.TrimPrefix(b.Server.URL, "http://"), ":")
	code, _ := seen(t, b, id, map[string]string{"Host": "rebind.example:" + port, "Origin": "http://rebind.example:" + port, "Sec-Fetch-Site": "same-origin"})
	if code != http.StatusMisdirectedRequest {
		t.Errorf("seen under another name = %d; want 421", code)
	}
	if q, _ := b.Open(t).Listed(id); q.SeenBy != "" {
		t.Errorf("the question was marked seen: %+v", q)
	}
}

// The page as a channel that can update prompts and post reminders.
func TestChannelReach(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	ch := b.Channel
	prompt := engine.MessageRef{Platform: "web", Chat: "web", Message: "rem-1"}
	if err := ch.Update(t.Context(), prompt, engine.Plan{ID: "rem-1"}); err != nil {
		t.Errorf("Update = %v", err)
	}
	first, err := ch.Remind(t.Context(), prompt, "Still waiting for your answer — 12 min left.")
	if err != nil {
		t.Fatalf("Remind = %v", err)
	}
	second, err := ch.Remind(t.Context(), prompt, "Still waiting for your answer — 2 min left.")
	if err != nil {
		t.Fatalf("Remind = %v", err)
	}
	for _, ref := range []engine.MessageRef{first, second} {
		if ref.Platform != "web" || ref.Chat != "web" || !strings.HasPrefix(ref.Message, "rem-1/reminder/") || len(ref.Message) <= len("rem-1/reminder/") {
			t.Errorf("reminder = %+v; want web, web, rem-1/reminder/…", ref)
		}
		if err := ch.Delete(t.Context(), ref); err != nil {
			t.Errorf("Delete(%v) = %v", ref, err)
		}
	}
	if first.Same(second) {
		t.Errorf("two reminders share the reference %v", first)
	}
	// What is not the page's is refused for good.
	for _, ref := range []engine.MessageRef{{Platform: "slack", Chat: "C1", Message: "rem-1/reminder/x"}, prompt} {
		if err := ch.Delete(t.Context(), ref); !permanent(err) {
			t.Errorf("Delete(%v) = %v; want a permanent refusal", ref, err)
		}
	}
	if _, err := ch.Remind(t.Context(), engine.MessageRef{Platform: "slack", Chat: "C1", Message: "1.2"}, "x"); !permanent(err) {
		t.Errorf("Remind under a Slack message = %v; want a permanent refusal", err)
	}
}

func permanent(err error) bool {
	var se *engine.SendError
	return errors.As(err, &se) && se.Kind == engine.Permanent
}

// pageTarget is the target of the page's place.
var pageTarget = askbridge.Target{Platform: "web"}
