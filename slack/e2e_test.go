package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

const oneQuestion = `{"id":%q,"agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

const multiQuestion = `{"id":%q,"questions":[{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]}]}`

const threeQuestions = `{"id":%q,"questions":[
 {"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
 {"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},
 {"id":"notify","header":"Notify","question":"Who hears?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`

func answers(r askbridge.Result) string {
	if r.Answers == nil {
		return "<none>"
	}
	return fmt.Sprint(r.Answers.Answers)
}

func TestButtonAnswer(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(oneQuestion, "button-"+mode))
		m := e.prompt(opsChannel, id)
		if got := slacktest.Buttons(m.Blocks); fmt.Sprint(got) != "[Staging (Recommended) Production Skip]" {
			t.Fatalf("buttons %v", got)
		}
		e.press(alice, opsChannel, m.TS, "Production")
		r := e.Result(id, 10*time.Second)
		if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaButton || answers(r) != "map[deploy_target:[Production]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		if r.AnsweredBy == nil || *r.AnsweredBy != (askbridge.Person{Platform: "slack", ID: "UALICE", Name: "alice"}) {
			t.Errorf("answered by %+v", r.AnsweredBy)
		}
		e.waitEphemeral(alice.ID, engine.NoticeRecorded.Text("en"))
		ended := e.waitEnded(opsChannel, m.TS, "Answered: Production")
		if !strings.Contains(ended.Text, "Where should this deploy?") {
			t.Errorf("the text was not kept: %q", ended.Text)
		}
	})
}

func TestTextReplies(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		cases := []struct {
			name, body, text string
			thread           bool
			want             string
		}{
			{"number in thread", oneQuestion, "2", true, "map[deploy_target:[Production]]"},
			{"label in channel", oneQuestion, "staging", false, "map[deploy_target:[Staging (Recommended)]]"},
			{"free text", oneQuestion, "the canary <fleet> & friends", true, "map[deploy_target:[the canary <fleet> & friends]]"},
			{"multi-select", multiQuestion, "1, 3", true, "map[checks:[Unit Load]]"},
		}
		for i, c := range cases {
			id := e.Ask(fmt.Sprintf(c.body, fmt.Sprintf("text-%s-%d", mode, i)))
			m := e.prompt(opsChannel, id)
			thread := ""
			if c.thread {
				thread = m.TS
			}
			e.say(alice, opsChannel, thread, c.text)
			r := e.Result(id, 10*time.Second)
			if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaText || answers(r) != c.want {
				t.Errorf("%s: result %+v %s, want %s", c.name, r, answers(r), c.want)
			}
			if r.AnsweredBy == nil || r.AnsweredBy.ID != alice.ID || r.AnsweredBy.Platform != "slack" {
				t.Errorf("%s: answered by %+v", c.name, r.AnsweredBy)
			}
			status := "Answered"
			if strings.HasPrefix(c.want, "map[deploy_target:[Production") {
				status = "Answered: Production"
			}
			e.waitEnded(opsChannel, m.TS, status)
		}
	})
}

func TestThreeQuestionsWithCorrection(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(threeQuestions, "three-"+mode))
		m := e.prompt(opsChannel, id)
		if b := slacktest.Buttons(m.Blocks); fmt.Sprint(b) != "[Skip]" {
			t.Fatalf("a text prompt shows buttons %v", b)
		}
		e.say(alice, opsChannel, m.TS, "1: staging\n2: 1, 3")
		e.waitThreadReply(opsChannel, m.TS, "Notify")
		e.NoResult(id)
		e.say(alice, opsChannel, m.TS, "Staging\nUnit, Load\nmy manager")
		r := e.Result(id, 10*time.Second)
		if answers(r) != "map[checks:[Unit Load] notify:[my manager] target:[Staging]]" {
			t.Fatalf("answers %s", answers(r))
		}
		e.waitEnded(opsChannel, m.TS, "Answered: Staging, Unit, Load")
	})
}

func TestSkipTimeoutCancel(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		skip := e.Ask(fmt.Sprintf(oneQuestion, "skip-"+mode))
		ms := e.prompt(opsChannel, skip)
		e.press(alice, opsChannel, ms.TS, "Skip")
		if r := e.Result(skip, 10*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
			t.Errorf("skip: %+v", r)
		}
		e.waitEphemeral(alice.ID, engine.NoticeSkipped.Text("en"))
		e.waitEnded(opsChannel, ms.TS, "Skipped")

		cancelled := e.Ask(fmt.Sprintf(threeQuestions, "cancel-"+mode))
		mc := e.prompt(opsChannel, cancelled)
		e.Cancel(cancelled)
		if r := e.Result(cancelled, 10*time.Second); r.Reason != askbridge.ReasonCancelled {
			t.Errorf("cancel: %+v", r)
		}
		e.waitEnded(opsChannel, mc.TS, "Cancelled")

		expired := e.Ask(fmt.Sprintf(oneQuestion, "timeout-"+mode))
		mt := e.prompt(opsChannel, expired)
		e.clock.Advance(time.Hour)
		if r := e.Result(expired, 10*time.Second); r.Reason != askbridge.ReasonTimeout {
			t.Errorf("timeout: %+v", r)
		}
		e.waitEnded(opsChannel, mt.TS, "Expired")
	})
}

func TestLateClick(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(oneQuestion, "late-"+mode))
		m := e.prompt(opsChannel, id)
		e.Cancel(id)
		e.Result(id, 10*time.Second)
		ended := e.waitEnded(opsChannel, m.TS, "Cancelled")
		// Bob's Slack still shows the buttons: his press is told what
		// happened, and the message is made right again.
		if _, err := e.fake.PressOn(bob, m, "Production"); err != nil {
			t.Fatal(err)
		}
		e.waitEphemeral(bob.ID, engine.NoticeCancelled.Text("en"))
		if !e.fake.Wait(5*time.Second, func() bool { now, _ := e.fake.Message(opsChannel, m.TS); return now.Updates > ended.Updates }) {
			t.Errorf("the tapped message was not finalized again")
		}
		e.waitEnded(opsChannel, m.TS, "Cancelled")
		e.settle()
		e.NoResult(id)
		if now, _ := e.fake.Message(opsChannel, m.TS); now.Updates != ended.Updates+1 {
			t.Errorf("a late press cost %d edits of the tapped message, want 1", now.Updates-ended.Updates)
		}
	})
}

// A press that answers the question costs one chat.update of the tapped
// message: the engine's finisher edits it, the channel does not edit it as
// well.
func TestWinningTapEditsOnce(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(oneQuestion, "one-edit-"+mode))
		m := e.prompt(opsChannel, id)
		e.press(alice, opsChannel, m.TS, "Production")
		if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		e.waitEphemeral(alice.ID, engine.NoticeRecorded.Text("en"))
		e.waitEnded(opsChannel, m.TS, "Answered: Production")
		// Every event handled, every edit under way done.
		e.settle()
		now, _ := e.fake.Message(opsChannel, m.TS)
		var calls int
		for _, c := range e.fake.Calls("chat.update") {
			if c.Form.Get("ts") == m.TS {
				calls++
			}
		}
		if now.Updates != 1 || calls != 1 {
			t.Errorf("one winning press cost %d chat.update calls (%d applied) of the tapped message, want 1", calls, now.Updates)
		}
	})
}

func TestUnauthorizedChangesNothing(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(`{"id":"auth-%s","answerers":["slack:UALICE"],"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, mode))
		m := e.prompt(opsChannel, id)
		e.press(bob, opsChannel, m.TS, "A")
		e.waitEphemeral(bob.ID, engine.NoticeNotForYou.Text("en"))
		e.say(bob, opsChannel, m.TS, "1")
		e.say(bob, opsChannel, "", "B")
		if err := e.fake.SayAsBot(opsChannel, "1"); err != nil {
			t.Fatal(err)
		}
		e.waitHandled(handledEvent{Tap: true, Person: bob.ID}, handledEvent{Person: bob.ID, Text: "1"}, handledEvent{Person: bob.ID, Text: "B"})
		e.NoResult(id)
		now, _ := e.fake.Message(opsChannel, m.TS)
		if now.Updates != 0 || len(slacktest.Buttons(now.Blocks)) != 3 {
			t.Fatalf("the prompt changed: %+v", now)
		}
		e.say(alice, opsChannel, m.TS, "2")
		if r := e.Result(id, 10*time.Second); answers(r) != "map[a:[B]]" || r.AnsweredBy.ID != alice.ID {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		// The other bot's message never reached an engine.
		e.settle()
		if got := e.handledEvents(); len(got) != 4 {
			t.Errorf("handled %+v, want bob's press, bob's two replies and alice's", got)
		}
	})
}

func TestDuplicateDeliveryOneResult(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		a := e.Ask(fmt.Sprintf(oneQuestion, "dup-a-"+mode))
		ma := e.prompt(opsChannel, a)
		d := e.press(alice, opsChannel, ma.TS, "Production")
		if err := e.fake.Deliver(d); err != nil {
			t.Fatal(err)
		}
		b := e.Ask(fmt.Sprintf(threeQuestions, "dup-b-"+mode))
		mb := e.prompt(opsChannel, b)
		_, db := e.say(alice, opsChannel, mb.TS, "1: staging")
		if err := e.fake.Deliver(db); err != nil {
			t.Fatal(err)
		}
		e.Result(a, 10*time.Second)
		e.waitEnded(opsChannel, ma.TS, "Answered: Production")
		e.settle()
		e.NoResult(a)
		if n := len(e.fake.Ephemerals(alice.ID)); n != 1 {
			t.Errorf("%d notices for one press delivered twice, want 1: %+v", n, e.fake.Ephemerals(alice.ID))
		}
		var corrections int
		for _, m := range e.fake.Messages(opsChannel) {
			if m.ThreadTS == mb.TS && m.BotID != "" {
				corrections++
			}
		}
		if corrections != 1 {
			t.Errorf("%d corrections for one message delivered twice, want 1", corrections)
		}
	})
}

func TestMentionsNeverNotify(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(`{"id":"mention-%s","agent":"<!channel>","context":"Ping <!channel>, <@U0BOSS> and @here **now** & <#C0GENERAL>","questions":[{"id":"a","header":"<!here>","question":"Tell <@U0BOSS> & <!channel>?","options":[{"label":"<!everyone>","description":"<#C0GENERAL> <https://evil|x>"},{"label":"B"}]}]}`, mode))
		m := e.prompt(opsChannel, id)
		posted := e.fake.Calls("chat.postMessage")
		var form url.Values
		for _, c := range posted {
			if strings.Contains(c.Form.Get("blocks"), askbridge.QuestionDigest(id)) {
				form = c.Form
			}
		}
		if form == nil {
			t.Fatal("no chat.postMessage of the prompt")
		}
		// Every text Slack parses for mentions (the fallback `text` and
		// each mrkdwn object) has no "<" left; plain_text (header, button
		// labels) is never parsed, so it shows the agent's text as is.
		texts := map[string]string{"text": form.Get("text")}
		for i, txt := range mrkdwnTexts(t, form.Get("blocks")) {
			texts[fmt.Sprintf("mrkdwn %d", i)] = txt
		}
		for where, v := range texts {
			if strings.ContainsAny(v, "<>") {
				t.Errorf("%s reaches Slack with markup unescaped: %q", where, v)
			}
		}
		if !strings.Contains(form.Get("text"), "Tell &lt;@U0BOSS&gt; &amp; &lt;!channel&gt;?") {
			t.Errorf("text %q", form.Get("text"))
		}
		// The context, as mrkdwn: its @here cannot work even with
		// link_names, which the channel never sends.
		if texts["mrkdwn 0"] != "Ping &lt;!channel&gt;, &lt;@\u2060U0BOSS&gt; and @\u2060here *now* &amp; &lt;#C0GENERAL&gt;" {
			t.Errorf("context %q", texts["mrkdwn 0"])
		}
		if !strings.Contains(texts["mrkdwn 1"], "[&lt;!here&gt;] Tell &lt;@U0BOSS&gt; &amp; &lt;!channel&gt;?") {
			t.Errorf("section %q", texts["mrkdwn 1"])
		}
		e.quiet(m)
		// The agent's label on the button is plain text, which Slack never
		// parses for mentions, and it answers like any label.
		e.press(alice, opsChannel, m.TS, "<!everyone>")
		if r := e.Result(id, 10*time.Second); answers(r) != "map[a:[<!everyone>]]" {
			t.Fatalf("answers %s", answers(r))
		}
		ended := e.waitEnded(opsChannel, m.TS, "Answered: &lt;!everyone&gt;")
		for _, v := range append(mrkdwnTexts(t, string(ended.Blocks)), ended.Text) {
			if strings.ContainsAny(v, "<>") {
				t.Errorf("the ended message has markup unescaped: %q", v)
			}
		}
	})
}

func TestBurstUnderRateLimit(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{sendBudget: 30 * time.Second})
		e.fake.SetRateLimit(3, time.Second, 1)
		const n = 8
		var ids []string
		for i := range n {
			ids = append(ids, e.Ask(fmt.Sprintf(oneQuestion, fmt.Sprintf("burst-%s-%d", mode, i))))
		}
		var prompts []slacktest.Message
		for _, id := range ids {
			prompts = append(prompts, e.prompt(opsChannel, id))
		}
		if e.fake.RateLimited() == 0 {
			t.Fatal("the burst never hit the rate limit")
		}
		if got := len(e.waitMessages(opsChannel, n)); got != n {
			t.Fatalf("%d prompts posted, want %d (one each)", got, n)
		}
		// Presses, their notices and the edits, still under a limit:
		// nothing is lost either.
		e.fake.SetRateLimit(6, time.Second, 1)
		limited := e.fake.RateLimited()
		for i, id := range ids {
			e.NoResult(id)
			e.press(alice, opsChannel, prompts[i].TS, "Production")
		}
		for i, id := range ids {
			if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
				t.Errorf("%s: %+v", id, r)
			}
			e.waitEnded(opsChannel, prompts[i].TS, "Answered: Production")
		}
		if !e.fake.Wait(15*time.Second, func() bool { return len(e.fake.Ephemerals(alice.ID)) == n }) {
			t.Errorf("%d notices for %d presses", len(e.fake.Ephemerals(alice.ID)), n)
		}
		if e.fake.RateLimited() == limited {
			t.Errorf("the presses never hit the rate limit")
		}
	})
}

func TestUndeliverableAndDM(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		for _, code := range []string{"not_in_channel", "is_archived"} {
			ch := "C0" + strings.ToUpper(strings.ReplaceAll(code, "_", ""))
			e.fake.AddChannel(ch)
			e.fake.SetChannelError(ch, code)
			id := e.Ask(fmt.Sprintf(`{"id":"undeliverable-%s-%s","to":"slack:%s","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, code, mode, ch))
			r := e.Result(id, 10*time.Second)
			if r.Reason != askbridge.ReasonUndeliverable || !strings.Contains(r.Error, code) {
				t.Errorf("%s: %+v", code, r)
			}
		}
		id := e.Ask(fmt.Sprintf(`{"id":"missing-%s","to":"slack:C0NOWHERE","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, mode))
		if r := e.Result(id, 10*time.Second); r.Reason != askbridge.ReasonUndeliverable || !strings.Contains(r.Error, "channel_not_found") {
			t.Errorf("missing channel: %+v", r)
		}
		dm := e.Ask(fmt.Sprintf(`{"id":"dm-%s","to":"slack:UBOB","answerers":["slack:UBOB"],"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, mode))
		m := e.prompt("DBOB", dm)
		e.say(bob, "DBOB", "", "b")
		if r := e.Result(dm, 10*time.Second); answers(r) != "map[a:[B]]" {
			t.Errorf("DM answer %+v", r)
		}
		e.waitEnded("DBOB", m.TS, "Answered: B")
	})
}

func TestBadSignatureRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpMode, envOpts{})
	id := e.Ask(fmt.Sprintf(oneQuestion, "signature"))
	m := e.prompt(opsChannel, id)
	srv := httptestServer(t, e.replicas[0].ch.HTTPHandler())
	d, err := pressPayload(e, m)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(url.Values{"payload": {string(d)}}.Encode())
	for _, sign := range []slacktest.Signing{slacktest.SignBad, slacktest.SignStale, slacktest.SignNone} {
		code, _, err := e.fake.PostSigned(srv+slack.InteractivityPath, "application/x-www-form-urlencoded", body, sign, 0)
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("signing %d: status %d, %v; want 401", sign, code, err)
		}
	}
	event := []byte(`{"type":"event_callback","event_id":"EvX","event":{"type":"message","user":"UALICE","text":"2","ts":"1.000001","channel":"C0OPS","thread_ts":"` + m.TS + `"}}`)
	for _, sign := range []slacktest.Signing{slacktest.SignBad, slacktest.SignStale} {
		if code, _, _ := e.fake.PostSigned(srv+slack.EventsPath, "application/json", event, sign, 0); code != http.StatusUnauthorized {
			t.Errorf("event signing %d: status %d, want 401", sign, code)
		}
	}
	// A refusal is answered before anything is handed on: the 401s above
	// mean nothing was started.
	e.NoResult(id)
	if now, _ := e.fake.Message(opsChannel, m.TS); now.Updates != 0 || len(e.fake.Ephemerals(alice.ID)) != 0 || len(e.handledEvents()) != 0 {
		t.Fatalf("a refused request changed something: %+v", now)
	}
	// url_verification is answered, signed.
	code, resp, err := e.fake.PostSigned(srv+slack.EventsPath, "application/json", []byte(`{"type":"url_verification","token":"x","challenge":"c-123"}`), slacktest.SignValid, 0)
	if err != nil || code != http.StatusOK || !strings.Contains(resp, `"challenge":"c-123"`) {
		t.Errorf("url_verification: %d %q %v", code, resp, err)
	}
	// The same press, signed, answers.
	if code, _, err := e.fake.PostSigned(srv+slack.InteractivityPath, "application/x-www-form-urlencoded", body, slacktest.SignValid, 0); err != nil || code != http.StatusOK {
		t.Fatalf("signed press: %d %v", code, err)
	}
	if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
		t.Fatalf("result %+v", r)
	}
}

func TestSocketDroppedMidQuestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, socketMode, envOpts{})
	id := e.Ask(fmt.Sprintf(oneQuestion, "drop"))
	m := e.prompt(opsChannel, id)
	opened := e.fake.Opened()
	if !e.fake.DropConnection(0) {
		t.Fatal("no connection to drop")
	}
	e.press(alice, opsChannel, m.TS, "Production")
	if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
		t.Fatalf("result %+v", r)
	}
	e.waitEnded(opsChannel, m.TS, "Answered: Production")
	// The dropped replica reconnects, and a refresh request is followed.
	if !e.fake.Wait(10*time.Second, func() bool { return e.fake.Connections() == 2 && e.fake.Opened() > opened }) {
		t.Fatalf("%d connections after the drop", e.fake.Connections())
	}
	opened = e.fake.Opened()
	e.fake.Disconnect(0)
	if !e.fake.Wait(10*time.Second, func() bool { return e.fake.Connections() == 2 && e.fake.Opened() > opened }) {
		t.Fatalf("no reconnect after disconnect: %d connections", e.fake.Connections())
	}
	if !e.fake.Wait(5*time.Second, func() bool { return e.fake.Unacked() == 0 }) {
		t.Errorf("%d envelopes unacknowledged", e.fake.Unacked())
	}
	if n := e.fake.Redelivered(); n != 0 {
		t.Errorf("%d envelopes delivered again though every one was acknowledged", n)
	}

	// A connection dies with a press in flight, before its ack: Slack
	// delivers the envelope again; the answer lands once.
	second := e.Ask(fmt.Sprintf(oneQuestion, "drop-in-flight"))
	m2 := e.prompt(opsChannel, second)
	e.fake.DropAfterNextDelivery()
	e.press(alice, opsChannel, m2.TS, "Staging (Recommended)")
	if r := e.Result(second, 10*time.Second); answers(r) != "map[deploy_target:[Staging (Recommended)]]" {
		t.Fatalf("result %+v", r)
	}
	e.waitEnded(opsChannel, m2.TS, "Answered: Staging (Recommended)")
	if !e.fake.Wait(10*time.Second, func() bool { return e.fake.Unacked() == 0 && e.fake.Connections() == 2 }) {
		t.Errorf("%d envelopes unacknowledged, %d connections", e.fake.Unacked(), e.fake.Connections())
	}
	if e.fake.Redelivered() == 0 {
		t.Errorf("the envelope of the dropped connection was never delivered again")
	}
	for _, r := range e.replicas {
		if r.ch.State() != engine.StateConnected {
			t.Errorf("state %q", r.ch.State())
		}
	}
	e.settle()
	e.NoResult(second)
	recorded := 0
	for _, n := range e.fake.Ephemerals(alice.ID) {
		if n.Text == engine.NoticeRecorded.Text("en") {
			recorded++
		}
	}
	if recorded != 2 {
		t.Errorf("%d \"recorded\" notices for two presses, want 2 (a redelivery must not notify again)", recorded)
	}
}

// mrkdwnTexts lists the text of every mrkdwn object in blocks (sections
// and context elements).
func mrkdwnTexts(t *testing.T, blocks string) []string {
	t.Helper()
	var bs []struct {
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []json.RawMessage `json:"elements"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		if b.Text != nil && b.Text.Type == "mrkdwn" {
			out = append(out, b.Text.Text)
		}
		for _, raw := range b.Elements {
			var el struct {
				Type string `json:"type"`
				Text any    `json:"text"`
			}
			if json.Unmarshal(raw, &el) == nil && el.Type == "mrkdwn" {
				if s, ok := el.Text.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// A bad token never stops Run: it reports bad credentials and keeps
// retrying with backoff until it is stopped.
func TestBadCredentialsKeepRetrying(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, bot, app string }{
		{"bot token", "xoxb-wrong", appToken},
		{"app token", botToken, "xapp-wrong"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := slacktest.New(slacktest.Options{BotToken: botToken, AppToken: appToken, SigningSecret: signingSecret})
			defer fake.Close()
			ch, err := slack.New(slack.Config{BotToken: c.bot, AppToken: c.app, APIURL: fake.APIURL(), RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}, enginetest.NewMemCoord(), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ch.Run(ctx, nopInbox{}) }()
			if !fake.Wait(5*time.Second, func() bool { return ch.State() == engine.StateBadCredentials }) {
				t.Fatalf("state %q", ch.State())
			}
			// It tries again after the refusal that set the state.
			method := map[string]string{"bot token": "auth.test", "app token": "apps.connections.open"}[c.name]
			calls := len(fake.Calls(method))
			if !fake.Wait(5*time.Second, func() bool { return len(fake.Calls(method)) > calls }) {
				t.Errorf("no retry of %s", method)
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned: %v", err)
			default:
			}
			if fake.Opened() != 0 {
				t.Errorf("a socket opened with a bad token")
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		})
	}
}

func TestNewChecksConfig(t *testing.T) {
	st := enginetest.NewMemCoord()
	for _, c := range []struct {
		name string
		cfg  slack.Config
	}{
		{"no bot token", slack.Config{AppToken: appToken}},
		{"no inbound", slack.Config{BotToken: botToken}},
		{"api url without slash", slack.Config{BotToken: botToken, AppToken: appToken, APIURL: "http://x/api"}},
	} {
		if _, err := slack.New(c.cfg, st, nil); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := slack.New(slack.Config{BotToken: botToken, SigningSecret: signingSecret}, nil, nil); err == nil {
		t.Errorf("no coordinator: accepted")
	}
}

// With two questions open, a reply outside their threads is not taken as
// either: the person is asked, in a thread, to reply to the one they mean.
func TestSeveralOpenAsksWhich(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		a := e.Ask(fmt.Sprintf(oneQuestion, "which-a-"+mode))
		b := e.Ask(fmt.Sprintf(oneQuestion, "which-b-"+mode))
		ma, mb := e.prompt(opsChannel, a), e.prompt(opsChannel, b)
		ts, _ := e.say(alice, opsChannel, "", "2")
		e.waitThreadReply(opsChannel, ts, "Reply to the question you mean")
		e.NoResult(a)
		e.NoResult(b)
		e.say(alice, opsChannel, mb.TS, "2")
		if r := e.Result(b, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
			t.Fatalf("result %+v", r)
		}
		e.NoResult(a)
		e.waitEnded(opsChannel, mb.TS, "Answered: Production")
		if now, _ := e.fake.Message(opsChannel, ma.TS); now.Updates != 0 {
			t.Errorf("the other prompt changed")
		}
	})
}

// Stopping Run leaves no goroutine of the channel behind, in either mode.
func TestRunStopsCleanly(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			fake := slacktest.New(slacktest.Options{BotToken: botToken, AppToken: appToken, SigningSecret: signingSecret, PingEvery: 50 * time.Millisecond})
			defer fake.Close()
			client := &http.Client{Transport: &http.Transport{}}
			// The fake's own goroutines (its server, pings) run on.
			before := goleak.IgnoreCurrent()
			cfg := slack.Config{BotToken: botToken, SigningSecret: signingSecret, APIURL: fake.APIURL(), HTTPClient: client, PingInterval: time.Second}
			if mode == socketMode {
				cfg.AppToken = appToken
			}
			ch, err := slack.New(cfg, enginetest.NewMemCoord(), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ch.Run(ctx, nopInbox{}) }()
			if !fake.Wait(5*time.Second, func() bool { return ch.State() == engine.StateConnected }) {
				t.Fatalf("state %q", ch.State())
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			client.CloseIdleConnections()
			goleak.VerifyNone(t, before)
		})
	}
}

// Before Run starts, and after it stopped, HTTP mode answers 503 so that
// Slack delivers the event again (to a replica that runs); a signed
// url_verification is answered all the same.
func TestHTTPWhenNotRunning(t *testing.T) {
	t.Parallel()
	fake := slacktest.New(slacktest.Options{BotToken: botToken, SigningSecret: signingSecret})
	defer fake.Close()
	ch, err := slack.New(slack.Config{BotToken: botToken, SigningSecret: signingSecret, APIURL: fake.APIURL()}, enginetest.NewMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptestServer(t, ch.HTTPHandler())
	event := []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"message","user":"UALICE","text":"1","ts":"1.000001","channel":"C0OPS"}}`)
	post := func() int {
		code, _, err := fake.PostSigned(srv+slack.EventsPath, "application/json", event, slacktest.SignValid, 0)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	if code := post(); code != http.StatusServiceUnavailable {
		t.Errorf("before Run: %d", code)
	}
	if code, _, _ := fake.PostSigned(srv+slack.EventsPath, "application/json", []byte(`{"type":"url_verification","challenge":"c"}`), slacktest.SignValid, 0); code != http.StatusOK {
		t.Errorf("url_verification before Run: %d", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, nopInbox{}) }()
	if !fake.Wait(5*time.Second, func() bool { return ch.State() == engine.StateConnected }) {
		t.Fatalf("state %q", ch.State())
	}
	if code := post(); code != http.StatusOK {
		t.Errorf("running: %d", code)
	}
	cancel()
	<-done
	if code := post(); code != http.StatusServiceUnavailable {
		t.Errorf("after Run: %d", code)
	}
}

const thaiQuestion = `{"id":%q,"locale":"th","agent":"deploy-bot","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ค่าเริ่มต้นที่ปลอดภัยกว่า"},{"label":"โปรดักชัน"}]}]}`

// A Thai request is shown in Thai: the intro, the instructions, the Skip
// button. A reply in its thread of a Thai digit answers it, and the
// message ends in Thai with no instructions left; the reply ข้าม skips
// another; a tap on a third gets its notice in Thai.
func TestThai(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(thaiQuestion, "thai-digit-"+mode))
		m := e.prompt(opsChannel, id)
		if got := slacktest.Buttons(m.Blocks); fmt.Sprint(got) != "[สเตจจิ้ง (แนะนำ) โปรดักชัน ข้าม]" {
			t.Fatalf("buttons %v", got)
		}
		blocks := string(m.Blocks)
		for _, want := range []string{
			`"คำถามจาก deploy-bot:"`,
			"[เป้าหมาย] จะปล่อยขึ้นที่ไหน?",
			"ไม่มีตัวเลือกที่ใช่? พิมพ์ตอบด้วยคำของคุณเองได้เลย",
			"แตะเลือกคำตอบ หรือพิมพ์หมายเลข/ชื่อตัวเลือกตอบกลับมา ถ้าไม่ต้องการตอบ พิมพ์ \\\"ข้าม\\\"",
		} {
			if !strings.Contains(blocks, want) {
				t.Errorf("the prompt does not show %s: %s", want, blocks)
			}
		}
		for _, english := range []string{"Question", "Something else", "Tap an option", "Skip"} {
			if strings.Contains(blocks, english) || strings.Contains(m.Text, english) {
				t.Errorf("the Thai prompt shows %q: %s", english, blocks)
			}
		}
		if !strings.HasPrefix(m.Text, "คำถามจาก deploy-bot:\n\n[เป้าหมาย] จะปล่อยขึ้นที่ไหน?") {
			t.Errorf("notification text %q", m.Text)
		}
		e.quiet(m)
		e.say(alice, opsChannel, m.TS, "๒")
		r := e.Result(id, 10*time.Second)
		if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaText || answers(r) != "map[deploy_target:[โปรดักชัน]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		ended := e.waitEnded(opsChannel, m.TS, "ตอบแล้ว: โปรดักชัน")
		if !strings.Contains(string(ended.Blocks), "[เป้าหมาย] จะปล่อยขึ้นที่ไหน?") || !strings.Contains(ended.Text, "จะปล่อยขึ้นที่ไหน?") {
			t.Errorf("the question was not kept: %q %s", ended.Text, ended.Blocks)
		}

		skip := e.Ask(fmt.Sprintf(thaiQuestion, "thai-skip-"+mode))
		ms := e.prompt(opsChannel, skip)
		e.say(alice, opsChannel, ms.TS, "ข้าม")
		if r := e.Result(skip, 10*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
			t.Errorf("skip: %+v", r)
		}
		e.waitEnded(opsChannel, ms.TS, "ข้ามแล้ว")

		tap := e.Ask(fmt.Sprintf(thaiQuestion, "thai-tap-"+mode))
		mt := e.prompt(opsChannel, tap)
		e.press(alice, opsChannel, mt.TS, "สเตจจิ้ง (แนะนำ)")
		if r := e.Result(tap, 10*time.Second); answers(r) != "map[deploy_target:[สเตจจิ้ง (แนะนำ)]]" {
			t.Errorf("tap: %+v %s", r, answers(r))
		}
		e.waitEphemeral(alice.ID, "บันทึกคำตอบแล้ว")
		e.waitEnded(opsChannel, mt.TS, "ตอบแล้ว: สเตจจิ้ง (แนะนำ)")
		e.settle()
		for _, n := range e.fake.Ephemerals(alice.ID) {
			if n.Text != "บันทึกคำตอบแล้ว" {
				t.Errorf("notice %q, want only the Thai one", n.Text)
			}
		}
		e.quietCalls()
	})
}

// The agent's context shows between the intro and the question as Slack
// mrkdwn, its link never unfurled and its @everyone mentioning no one; the
// notification text has it as plain text; the ended message keeps it.
func TestContextShown(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		ctx, _ := json.Marshal("Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone")
		id := e.Ask(fmt.Sprintf(`{"id":"context-%s","agent":"ci-bot","context":%s,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`, mode, ctx))
		m := e.prompt(opsChannel, id)
		const section = "Build *#4812* failed on `main`:\n\n```TestPay … FAIL```\n\nSee <https://ci.example.com/4812|the log> — @\u2060everyone"
		texts := mrkdwnTexts(t, string(m.Blocks))
		if len(texts) < 2 || texts[0] != section || !strings.HasPrefix(texts[1], "[Target] Where should this deploy?") {
			t.Fatalf("sections %q", texts)
		}
		if !strings.HasPrefix(m.Text, "Question from ci-bot:\n\nBuild #4812 failed on main:\n\nTestPay … FAIL\n\nSee the log (https://ci.example.com/4812) — @\u2060everyone\n\n[Target]") {
			t.Errorf("notification text %q", m.Text)
		}
		e.quiet(m)
		e.press(alice, opsChannel, m.TS, "Production")
		e.Result(id, 10*time.Second)
		ended := e.waitEnded(opsChannel, m.TS, "Answered: Production")
		if texts := mrkdwnTexts(t, string(ended.Blocks)); texts[0] != section {
			t.Errorf("the ended message lost its context: %q", texts)
		}
		e.quietCalls()
	})
}

// leadChannel is where escalated questions go next.
const leadChannel = "C0LEAD"

const escalatedQuestion = `{"id":%q,"agent":"deploy-bot","timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"slack:` + leadChannel + `"}],"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// A question that escalates offers Seen. Pressing it tells the presser the
// question stays open and edits the prompt in place: "Seen by alice", no
// Seen button, the options kept. A press of Seen on the prompt as it
// stood is told someone already has. An option answers as usual, and the
// ended message keeps "Seen by alice" before its status line. The
// escalation step, not yet due, never asks in its channel.
func TestSeenThenAnswer(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		e.fake.AddChannel(leadChannel)
		id := e.Ask(fmt.Sprintf(escalatedQuestion, "seen-"+mode))
		m := e.prompt(opsChannel, id)
		if got := slacktest.Buttons(m.Blocks); fmt.Sprint(got) != "[Staging (Recommended) Production Skip Seen]" {
			t.Fatalf("buttons %v", got)
		}
		e.press(alice, opsChannel, m.TS, "Seen")
		e.waitEphemeral(alice.ID, "Marked as seen. The question stays open.")
		var updated slacktest.Message
		if !e.fake.Wait(10*time.Second, func() bool {
			updated, _ = e.fake.Message(opsChannel, m.TS)
			return strings.Contains(string(updated.Blocks), "Seen by alice")
		}) {
			t.Fatalf("the prompt was not updated: %s", updated.Blocks)
		}
		if got := slacktest.Buttons(updated.Blocks); fmt.Sprint(got) != "[Staging (Recommended) Production Skip]" {
			t.Errorf("after Seen the prompt shows buttons %v", got)
		}
		if !strings.HasSuffix(updated.Text, "\n\nSeen by alice") || !strings.Contains(updated.Text, "Tap an option") {
			t.Errorf("after Seen the text is %q", updated.Text)
		}
		e.quiet(updated)
		e.NoResult(id)

		// Bob's Slack still shows the Seen button.
		if _, err := e.fake.PressOn(bob, m, "Seen"); err != nil {
			t.Fatal(err)
		}
		e.waitEphemeral(bob.ID, engine.NoticeAlreadySeen.Text("en"))
		e.NoResult(id)

		e.press(bob, opsChannel, m.TS, "Production")
		r := e.Result(id, 10*time.Second)
		if r.Status != askbridge.StatusAnswered || answers(r) != "map[deploy_target:[Production]]" || r.AnsweredBy == nil || r.AnsweredBy.ID != bob.ID {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		e.waitEphemeral(bob.ID, engine.NoticeRecorded.Text("en"))
		// A question with places to escalate to says where it was answered.
		const status = "Answered by bob in slack:C0OPS: Production"
		ended := e.waitEnded(opsChannel, m.TS, status)
		if !strings.Contains(string(ended.Blocks), `Seen by alice\n`+status) || !strings.HasSuffix(ended.Text, "\n\nSeen by alice\n"+status) {
			t.Errorf("the ended message lost who had seen it: %q %s", ended.Text, ended.Blocks)
		}
		e.settle()
		if msgs := e.fake.Messages(leadChannel); len(msgs) != 0 {
			t.Errorf("asked in %s before its time: %+v", leadChannel, msgs)
		}
		e.quietCalls()
	})
}

const remindedQuestion = `{"id":%q,"timeoutSeconds":900,"remindEverySeconds":120,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]}`

// A question with reminders is reminded in its prompt's thread, in plain
// text that unfurls nothing, while no one answers (about 13 minutes
// left); once it is answered,
// the reminder is deleted and the prompt ends as usual.
func TestReminderPostedThenDeleted(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{})
		id := e.Ask(fmt.Sprintf(remindedQuestion, "remind-"+mode))
		m := e.prompt(opsChannel, id)
		if got := slacktest.Buttons(m.Blocks); fmt.Sprint(got) != "[Staging Production Skip Seen]" {
			t.Fatalf("buttons %v", got)
		}
		e.clock.Advance(121 * time.Second)
		reminder := e.waitThreadReply(opsChannel, m.TS, "Still waiting for your answer")
		if reminder.Blocks != nil || !strings.HasPrefix(reminder.Text, "Still waiting for your answer — 1") || !strings.HasSuffix(reminder.Text, " min left.") {
			t.Errorf("reminder %+v, want plain text with the time left", reminder)
		}
		e.quiet(reminder)
		e.NoResult(id)
		e.press(alice, opsChannel, m.TS, "Production")
		if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		e.waitEnded(opsChannel, m.TS, "Answered: Production")
		if !e.fake.Wait(10*time.Second, func() bool { _, there := e.fake.Message(opsChannel, reminder.TS); return !there }) {
			t.Fatal("the reminder was not deleted once the question ended")
		}
		if d := e.fake.Deleted(opsChannel); len(d) != 1 || d[0].TS != reminder.TS {
			t.Errorf("deleted %+v, want the reminder alone", d)
		}
	})
}
