package slacktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

func newFake(t *testing.T) (*slacktest.Server, *slack.Client) {
	t.Helper()
	f := slacktest.New(slacktest.Options{BotToken: "xoxb-1", AppToken: "xapp-1", SigningSecret: "s", AckTimeout: 200 * time.Millisecond})
	t.Cleanup(f.Close)
	f.AddChannel("C1")
	return f, slack.New("xoxb-1", slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken("xapp-1"))
}

func button(id, value, label string) slack.BlockElement {
	return slack.NewButtonBlockElement(id, value, slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
}

func code(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// The fake refuses what Slack refuses, with Slack's error codes.
func TestWebAPILimitsAndErrors(t *testing.T) {
	f, api := newFake(t)
	section := func(n int) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", n), false, false), nil, nil)
	}
	many := func(n int) []slack.Block {
		var bs []slack.Block
		for range n {
			bs = append(bs, section(10))
		}
		return bs
	}
	var buttons []slack.BlockElement
	for i := range 26 {
		buttons = append(buttons, button("a"+strings.Repeat("x", i), "v", "B"))
	}
	cases := []struct {
		name   string
		blocks []slack.Block
		want   string
	}{
		{"50 blocks", many(50), ""},
		{"51 blocks", many(51), "invalid_blocks"},
		{"section of 3000", []slack.Block{section(3000)}, ""},
		{"section of 3001", []slack.Block{section(3001)}, "invalid_blocks"},
		{"button text 75", []slack.Block{slack.NewActionBlock("b", button("a", "v", strings.Repeat("é", 75)))}, ""},
		{"button text 76", []slack.Block{slack.NewActionBlock("b", button("a", "v", strings.Repeat("é", 76)))}, "invalid_blocks"},
		{"value 2001", []slack.Block{slack.NewActionBlock("b", button("a", strings.Repeat("v", 2001), "B"))}, "invalid_blocks"},
		{"action_id 256", []slack.Block{slack.NewActionBlock("b", button(strings.Repeat("a", 256), "v", "B"))}, "invalid_blocks"},
		{"same action_id twice", []slack.Block{slack.NewActionBlock("b", button("a", "v", "B"), button("a", "w", "C"))}, "invalid_blocks"},
		{"26 elements", []slack.Block{slack.NewActionBlock("b", buttons...)}, "invalid_blocks"},
		{"25 elements", []slack.Block{slack.NewActionBlock("b", buttons[:25]...)}, ""},
		{"empty section", []slack.Block{section(0)}, "invalid_blocks"},
		{"blank section", []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, " \n ", false, false), nil, nil)}, "invalid_blocks"},
		{"empty header", []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "", false, false))}, "invalid_blocks"},
		{"empty context element", []slack.Block{slack.NewContextBlock("c", slack.NewTextBlockObject(slack.MarkdownType, "", false, false))}, "invalid_blocks"},
		{"context element of 3000", []slack.Block{slack.NewContextBlock("c", slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3000), false, false))}, ""},
		{"context element of 3001", []slack.Block{slack.NewContextBlock("c", slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3001), false, false))}, "invalid_blocks"},
	}
	for _, c := range cases {
		_, _, err := api.PostMessage("C1", slack.MsgOptionText("t", false), slack.MsgOptionBlocks(c.blocks...))
		if code(err) != c.want || (c.want == "" && err != nil) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	_, _, err := api.PostMessage("C404", slack.MsgOptionText("t", false))
	if code(err) != "channel_not_found" {
		t.Errorf("unknown channel: %v", err)
	}
	f.SetChannelError("C1", "is_archived")
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("t", false)); code(err) != "is_archived" {
		t.Errorf("archived: %v", err)
	}
	f.SetChannelError("C1", "")
	if _, _, _, err := api.UpdateMessage("C1", "9.9", slack.MsgOptionText("t", false)); code(err) != "message_not_found" {
		t.Errorf("update of a missing message: %v", err)
	}
	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(f.APIURL()))
	if _, err := bad.AuthTest(); code(err) != "invalid_auth" {
		t.Errorf("bad token: %v", err)
	}
	ch, _, _, err := api.OpenConversation(&slack.OpenConversationParameters{Users: []string{"U7"}})
	if err != nil || ch.ID != "D7" {
		t.Errorf("conversations.open: %+v %v", ch, err)
	}
	// A thread reply and an update, read back as they now stand.
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("parent", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("child", false), slack.MsgOptionTS(ts)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("edited", false), slack.MsgOptionBlocks()); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Message("C1", ts); m.Text != "edited" || m.Updates != 1 || string(m.Blocks) != "[]" {
		t.Errorf("edited message %+v", m)
	}
}

// A reply records its thread; chat.delete removes the bot's own messages
// only, as Slack does, and what is gone can be neither deleted, edited nor
// replied to again. A 429 holds chat.delete like every chat.* method.
func TestThreadsAndDelete(t *testing.T) {
	f, api := newFake(t)
	_, parent, err := api.PostMessage("C1", slack.MsgOptionText("parent", false))
	if err != nil {
		t.Fatal(err)
	}
	_, reply, err := api.PostMessage("C1", slack.MsgOptionText("reply", false), slack.MsgOptionTS(parent))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Message("C1", reply); m.ThreadTS != parent || m.BotID != slacktest.BotID {
		t.Errorf("reply %+v, want it in the thread %s", m, parent)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false), slack.MsgOptionTS("1.000001")); code(err) != "thread_not_found" {
		t.Errorf("reply to no message: %v", err)
	}
	person, _, err := f.Say(slacktest.Person{ID: "U1"}, "C1", "", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.DeleteMessage("C1", person); code(err) != "cant_delete_message" {
		t.Errorf("delete of a person's message: %v", err)
	}
	if ch, ts, err := api.DeleteMessage("C1", reply); err != nil || ch != "C1" || ts != reply {
		t.Fatalf("delete: %q %q %v", ch, ts, err)
	}
	if _, ok := f.Message("C1", reply); ok {
		t.Error("the deleted reply is still there")
	}
	if d := f.Deleted("C1"); len(d) != 1 || d[0].TS != reply || d[0].Text != "reply" {
		t.Errorf("deleted %+v", d)
	}
	if _, _, err := api.DeleteMessage("C1", reply); code(err) != "message_not_found" {
		t.Errorf("second delete: %v", err)
	}
	if _, _, _, err := api.UpdateMessage("C1", reply, slack.MsgOptionText("t", false)); code(err) != "message_not_found" {
		t.Errorf("update of a deleted message: %v", err)
	}
	if _, _, err := api.DeleteMessage("C404", parent); code(err) != "channel_not_found" {
		t.Errorf("delete in no channel: %v", err)
	}
	if _, _, err := api.DeleteMessage("C1", parent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false), slack.MsgOptionTS(parent)); code(err) != "thread_not_found" {
		t.Errorf("reply to a deleted message: %v", err)
	}
	_, last, err := api.PostMessage("C1", slack.MsgOptionText("last", false))
	if err != nil {
		t.Fatal(err)
	}
	f.SetRateLimit(1, time.Minute, 4)
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("t", false)); err != nil {
		t.Fatal(err)
	}
	var rl *slack.RateLimitedError
	if _, _, err := api.DeleteMessage("C1", last); !errors.As(err, &rl) || rl.RetryAfter != 4*time.Second {
		t.Errorf("delete past the rate limit: %v", err)
	}
	if _, ok := f.Message("C1", last); !ok {
		t.Error("a delete refused with 429 deleted the message")
	}
}

// Every post, edit and ephemeral records how it asked Slack to show it:
// unfurling is off only when asked off, names are linked when asked.
func TestDisplayRecorded(t *testing.T) {
	f, api := newFake(t)
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("see https://x.test", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("edited", false),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("again", false), slack.MsgOptionLinkNames(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeral("C1", "U1", slack.MsgOptionText("psst", false), slack.MsgOptionParse(true), slack.MsgOptionDisableLinkUnfurl()); err != nil {
		t.Fatal(err)
	}
	m, _ := f.Message("C1", ts)
	want := []slacktest.Display{{UnfurlLinks: true, UnfurlMedia: true}, {}, {UnfurlLinks: true, UnfurlMedia: true, LinkNames: true}}
	if len(m.Displays) != len(want) {
		t.Fatalf("displays %+v, want %+v", m.Displays, want)
	}
	for i := range want {
		if m.Displays[i] != want[i] {
			t.Errorf("display %d: %+v, want %+v", i, m.Displays[i], want[i])
		}
	}
	if e := f.Ephemerals("U1"); len(e) != 1 || e[0].Display != (slacktest.Display{UnfurlMedia: true, LinkNames: true}) {
		t.Errorf("ephemerals %+v", e)
	}
}

func TestRateLimit(t *testing.T) {
	f, api := newFake(t)
	f.SetRateLimit(2, time.Minute, 7)
	for i := range 2 {
		if _, _, err := api.PostMessage("C1", slack.MsgOptionText("t", false)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, _, err := api.PostMessage("C1", slack.MsgOptionText("t", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Fatalf("third call: %v", err)
	}
	if f.RateLimited() != 1 {
		t.Errorf("%d 429s", f.RateLimited())
	}
}

// dial opens a raw socket-mode connection, as slack-go does.
func dial(t *testing.T, f *slacktest.Server) *websocket.Conn {
	t.Helper()
	api := slack.New("xoxb-1", slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken("xapp-1"))
	_, u, err := api.StartSocketModeContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Origin": {"https://api.slack.com"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

type frame struct {
	Type         string          `json:"type"`
	EnvelopeID   string          `json:"envelope_id"`
	RetryAttempt int             `json:"retry_attempt"`
	Payload      json.RawMessage `json:"payload"`
}

func read(t *testing.T, ws *websocket.Conn) frame {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(3 * time.Second))
	var fr frame
	if err := ws.ReadJSON(&fr); err != nil {
		t.Fatal(err)
	}
	return fr
}

// Envelopes go round robin to the open connections; one not acknowledged
// in time comes again with retry_attempt.
func TestSocketEnvelopesAcksAndRedelivery(t *testing.T) {
	f, _ := newFake(t)
	if _, _, err := slack.New("xoxb-1", slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken("xapp-wrong")).StartSocketModeContext(context.Background()); code(err) != "invalid_auth" {
		t.Errorf("bad app token: %v", err)
	}
	a, b := dial(t, f), dial(t, f)
	if read(t, a).Type != "hello" || read(t, b).Type != "hello" {
		t.Fatal("no hello")
	}
	p := slacktest.Person{ID: "U1", Name: "u"}
	if _, _, err := f.Say(p, "C1", "", "one"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Say(p, "C1", "", "two"); err != nil {
		t.Fatal(err)
	}
	first, second := read(t, a), read(t, b)
	if first.Type != "events_api" || second.Type != "events_api" || first.EnvelopeID == second.EnvelopeID {
		t.Fatalf("not one envelope per connection: %+v %+v", first, second)
	}
	// a acknowledges; b does not, so its envelope comes again.
	if err := a.WriteJSON(map[string]string{"envelope_id": first.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	// The redelivery goes to either connection. A connection whose read
	// timed out cannot be read again (gorilla/websocket), so a read of
	// one waits long; the other is read only after it timed out.
	var again frame
	for again.EnvelopeID != second.EnvelopeID {
		if fr, ok := tryRead(a); ok {
			again = fr
		} else if fr, ok := tryReadFor(b, 5*time.Second); ok {
			again = fr
		} else {
			t.Fatal("the unacknowledged envelope was not delivered again")
		}
	}
	// Which attempt is read first depends on where the round robin sent
	// the first redelivery: one sent to the connection not being read is
	// delivered again 200 ms later to the other. It is a retry all the same.
	if again.RetryAttempt < 1 || again.RetryAttempt > 3 || string(again.Payload) != string(second.Payload) {
		t.Errorf("redelivery %+v", again)
	}
	if f.Redelivered() < 1 {
		t.Errorf("redelivered %d", f.Redelivered())
	}
}

func tryRead(ws *websocket.Conn) (frame, bool) { return tryReadFor(ws, 3*time.Second) }

func tryReadFor(ws *websocket.Conn, d time.Duration) (frame, bool) {
	_ = ws.SetReadDeadline(time.Now().Add(d))
	var fr frame
	if err := ws.ReadJSON(&fr); err != nil {
		return fr, false
	}
	return fr, true
}

func TestSignedClient(t *testing.T) {
	f, _ := newFake(t)
	var got http.Header
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() })
	ts := httptestServer(t, h)
	for _, sign := range []slacktest.Signing{slacktest.SignValid, slacktest.SignBad, slacktest.SignStale, slacktest.SignNone} {
		if code, _, err := f.PostSigned(ts, "application/json", []byte("{}"), sign, 2); err != nil || code != 200 {
			t.Fatal(code, err)
		}
		if got.Get("X-Slack-Retry-Num") != "2" {
			t.Errorf("retry header %v", got)
		}
		if (sign == slacktest.SignNone) != (got.Get("X-Slack-Signature") == "") {
			t.Errorf("signing %d: header %q", sign, got.Get("X-Slack-Signature"))
		}
	}
}
