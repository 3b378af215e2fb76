package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/askbridge/askbridge"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fuzzInbox answers every tap with a notice naming its payload and every
// reply with a response to post.
type fuzzInbox struct {
	plan engine.Plan
}

func (f *fuzzInbox) Tap(_ context.Context, t engine.Tap) engine.TapReply {
	return engine.TapReply{Notice: engine.Notice("noticed <" + t.Payload + ">"), QuestionID: f.plan.ID}
}

func (f *fuzzInbox) Reply(_ context.Context, r engine.TextReply) engine.ReplyOutcome {
	return engine.ReplyOutcome{Claimed: true, Respond: "got " + r.Text}
}

func (f *fuzzInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

// okAPI is a Web API that says ok to everything.
func okAPI(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"channel":"C1","ts":"1.000001","message_ts":"1.000002"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/"
}

func fuzzChannel(t testing.TB) (*Channel, *fuzzInbox) {
	c, err := New(Config{BotToken: "xoxb-fuzz", SigningSecret: "fuzz-signing-secret", APIURL: okAPI(t), HandleTimeout: 5 * time.Second}, enginetest.NewMemCoord(), discard())
	if err != nil {
		t.Fatal(err)
	}
	req, err := askbridge.DecodeRequest([]byte(shapes[1].body))
	if err != nil {
		t.Fatal(err)
	}
	in := &fuzzInbox{plan: engine.BuildPlan("fuzz", req, c.Capabilities())}
	c.inbox.Store(&inboxRef{ctx: context.Background(), in: in})
	return c, in
}

var seedPayloads = []string{
	`{"type":"block_actions","user":{"id":"U1","username":"a"},"channel":{"id":"C1"},"container":{"type":"message","message_ts":"1.000001","channel_id":"C1"},"actions":[{"type":"button","action_id":"askbridge_0","block_id":"b","value":"q1:AAAAAAAAAAAAAAAA:0","action_ts":"2.1"}]}`,
	`{"type":"block_actions","user":{"id":"U1"},"message":{"ts":"1.1"},"channel":{"id":"C1"},"actions":[{"action_id":"askbridge_9","value":""},null]}`,
	`{"type":"view_submission","user":{"id":"U1"}}`,
	`{"type":"block_actions","actions":"nope"}`,
	`{"type":"event_callback","event_id":"Ev1","event":{"type":"message","user":"U1","text":"1 &amp; 2","ts":"1.2","channel":"C1","thread_ts":"1.1"}}`,
	`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","subtype":"message_changed","channel":"C1","message":{"text":"x"}}}`,
	`{"type":"event_callback","event":null}`,
	`{"type":"url_verification","challenge":"abc"}`,
	`{"type":"app_rate_limited"}`,
	`[]`, `null`, `"x"`, `{`,
}

// FuzzActionPayload feeds interaction payloads (block_actions and
// anything else) through the interactivity handling: it never panics.
func FuzzActionPayload(f *testing.F) {
	for _, s := range seedPayloads {
		f.Add([]byte(s))
	}
	c, in := fuzzChannel(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var cb slack.InteractionCallback
		if json.Unmarshal(data, &cb) == nil {
			c.handleInteraction(context.Background(), in, cb)
		}
		serveSigned(t, c, InteractivityPath, []byte(url.Values{"payload": {string(data)}}.Encode()))
	})
}

// FuzzInboundEnvelope feeds socket-mode envelopes, parsed the way slack-go
// parses them, and Events API bodies through the handlers: never a panic.
func FuzzInboundEnvelope(f *testing.F) {
	for _, s := range seedPayloads {
		f.Add("events_api", []byte(s))
		f.Add("interactive", []byte(s))
	}
	c, in := fuzzChannel(f)
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		envelope, err := json.Marshal(map[string]any{"envelope_id": "e1", "type": kind, "payload": json.RawMessage(payload)})
		if err != nil {
			return // not JSON: the library never hands such a frame on
		}
		var req socketmode.Request
		if json.Unmarshal(envelope, &req) != nil {
			return
		}
		switch req.Type {
		case socketmode.RequestTypeEventsAPI:
			if ev, err := slackevents.ParseEvent(req.Payload, slackevents.OptionNoVerifyToken()); err == nil {
				c.handleEvent(context.Background(), in, ev, nil)
			}
		case socketmode.RequestTypeInteractive:
			var cb slack.InteractionCallback
			if json.Unmarshal(req.Payload, &cb) == nil {
				c.handleInteraction(context.Background(), in, cb)
			}
		}
		serveSigned(t, c, EventsPath, payload)
	})
}

// serveSigned sends body, signed, through the HTTP handler and waits for
// the handling it started.
func serveSigned(t *testing.T, c *Channel, path string, body []byte) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", Sign("fuzz-signing-secret", ts, body))
	w := httptest.NewRecorder()
	c.HTTPHandler().ServeHTTP(w, r)
	if w.Code == http.StatusUnauthorized {
		t.Fatalf("a correctly signed request was refused")
	}
	c.handling.Wait()
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"event_callback"}`)
	sign := func(secret string, at time.Time) http.Header {
		h := http.Header{}
		ts := strconv.FormatInt(at.Unix(), 10)
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", Sign(secret, ts, body))
		return h
	}
	for _, c := range []struct {
		name   string
		header http.Header
		body   []byte
		ok     bool
	}{
		{"valid", sign("s", now), body, true},
		{"4 minutes old", sign("s", now.Add(-4*time.Minute)), body, true},
		{"6 minutes old", sign("s", now.Add(-6*time.Minute)), body, false},
		{"6 minutes ahead", sign("s", now.Add(6*time.Minute)), body, false},
		{"wrong secret", sign("t", now), body, false},
		{"body changed", sign("s", now), []byte(`{"type":"event_callback "}`), false},
		{"no headers", http.Header{}, body, false},
		{"not hex", http.Header{"X-Slack-Request-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "X-Slack-Signature": {"v0=zz"}}, body, false},
		{"no v0", http.Header{"X-Slack-Request-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "X-Slack-Signature": {"abc"}}, body, false},
	} {
		if got := Verify("s", c.header, c.body, now); got != c.ok {
			t.Errorf("%s: %v, want %v", c.name, got, c.ok)
		}
	}
}

func (*fuzzInbox) Locale() string { return "en" }
