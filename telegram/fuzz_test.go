package telegram_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/telegram"
)

// fuzzInbox records what reaches it and answers with a reply picked by
// the first byte of the payload or text, so every action after the engine
// (reply box, finishing an ended question, corrections) runs.
type fuzzInbox struct {
	plan engine.Plan

	mu      sync.Mutex
	taps    []engine.Tap
	replies []engine.TextReply
}

func (f *fuzzInbox) Tap(_ context.Context, t engine.Tap) engine.TapReply {
	f.mu.Lock()
	f.taps = append(f.taps, t)
	f.mu.Unlock()
	switch sel(t.Payload) % 4 {
	case 0:
		return engine.TapReply{Notice: engine.NoticeUnknown}
	case 1:
		return engine.TapReply{Notice: engine.NoticeOther, Action: engine.TapOpenReply, QuestionID: f.plan.ID, ReplyTo: f.plan.Sections[0].Question}
	case 2:
		return engine.TapReply{Notice: engine.NoticeExpired, Action: engine.TapDuplicate, QuestionID: f.plan.ID}
	}
	return engine.TapReply{Notice: engine.Notice(t.Payload)}
}

func (f *fuzzInbox) Reply(_ context.Context, r engine.TextReply) engine.ReplyOutcome {
	f.mu.Lock()
	f.replies = append(f.replies, r)
	f.mu.Unlock()
	if sel(r.Text)%2 == 0 {
		return engine.ReplyOutcome{Claimed: true, Respond: r.Text}
	}
	return engine.ReplyOutcome{}
}

func (f *fuzzInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

func sel(s string) int {
	if s == "" {
		return 0
	}
	return int(s[0])
}

type fuzzRig struct {
	fake *telegramtest.Server
	ch   *telegram.Channel
	in   *fuzzInbox
}

func newFuzzRig(f *testing.F) *fuzzRig {
	fake := telegramtest.New(telegramtest.Options{})
	f.Cleanup(fake.Close)
	fake.AddChat(opsGroup, "supergroup", "Ops")
	req, err := askbridge.DecodeRequest([]byte(goldenShapes[0].request))
	if err != nil {
		f.Fatal(err)
	}
	ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, enginetest.NewMemCoord(), nil)
	if err != nil {
		f.Fatal(err)
	}
	plan := engine.BuildPlan("fuzz", req, ch.Capabilities())
	if _, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan); err != nil {
		f.Fatal(err)
	}
	return &fuzzRig{fake: fake, ch: ch, in: &fuzzInbox{plan: plan}}
}

// FuzzUpdate feeds arbitrary JSON to the update handler, as the poller
// and the webhook do: it must never panic, whatever Telegram (or someone
// posting to the webhook) sends.
func FuzzUpdate(f *testing.F) {
	rig := newFuzzRig(f)
	for _, seed := range []string{
		`{"update_id":1,"callback_query":{"id":"q1","from":{"id":1001,"is_bot":false,"first_name":"Alice"},"message":{"message_id":1,"date":1700000000,"chat":{"id":-100500,"type":"supergroup"}},"data":"q1:abcdefghijklmnop:0"}}`,
		`{"update_id":2,"callback_query":{"id":"q2","from":{"id":1001},"message":{"message_id":1,"date":0,"chat":{"id":-100500}},"data":"x"}}`,
		`{"update_id":3,"message":{"message_id":5,"date":1,"chat":{"id":-100500,"type":"supergroup"},"from":{"id":1002,"is_bot":false,"first_name":"Bob"},"reply_to_message":{"message_id":1,"date":1,"chat":{"id":-100500}},"text":"2"}}`,
		`{"update_id":4,"message":{"message_id":6,"date":1,"chat":{"id":-100500},"sender_chat":{"id":-100500},"text":"/skip@askbridge_test_bot"}}`,
		`{"update_id":5,"edited_message":{"message_id":6,"date":1,"chat":{"id":1},"text":"x"}}`,
		`{"update_id":6,"callback_query":{"id":"q3","from":{"id":1},"inline_message_id":"abc","data":"q1:abcdefghijklmnop:s"}}`,
		`{}`, `null`, `[]`, `{"update_id":"x"}`, `{"callback_query":null,"message":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := rig.ch.HandleUpdateJSON(context.Background(), rig.in, data); err != nil {
			t.Fatalf("the in-memory dedupe cannot fail: %v", err)
		}
	})
}

// FuzzCallbackPayload sends a tap with arbitrary callback data: the data
// reaches the inbox unchanged, the tap is answered with a notice Telegram
// takes (at most 200 characters), and nothing panics.
func FuzzCallbackPayload(f *testing.F) {
	rig := newFuzzRig(f)
	msgID := rig.fake.BotMessages(opsGroup)[0].ID
	for _, b := range rig.fake.BotMessages(opsGroup)[0].Keyboard {
		for _, btn := range b {
			f.Add(btn.Data)
		}
	}
	for _, seed := range []string{"", "q1::0", "q1:AAAAAAAAAAAAAAAA:9", "q1:AAAAAAAAAAAAAAAA:a", "q2:abcdefghijklmnop:o", "\x00\xff", string(make([]byte, 300))} {
		f.Add(seed)
	}
	var n int
	f.Fuzz(func(t *testing.T, data string) {
		if !utf8.ValidString(data) {
			// Telegram delivers callback data as a JSON string: UTF-8.
			return
		}
		n++
		qid, err := rig.fake.TapData(opsGroup, msgID, alice, "registers the query")
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(map[string]any{
			"update_id": 1000000 + n,
			"callback_query": map[string]any{
				"id": qid, "from": map[string]any{"id": 1001, "is_bot": false, "first_name": "Alice"},
				"message": map[string]any{"message_id": msgID, "date": 1700000000, "chat": map[string]any{"id": opsGroup, "type": "supergroup"}},
				"data":    data,
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = askbridge.DecodePayload(data)
		if err := rig.ch.HandleUpdateJSON(context.Background(), rig.in, body); err != nil {
			t.Fatal(err)
		}
		rig.in.mu.Lock()
		last := rig.in.taps[len(rig.in.taps)-1]
		rig.in.mu.Unlock()
		// No event id: the channel's own update dedupe is the one that
		// counts for Telegram.
		if last.Payload != data || last.EventID != "" || last.Person.ID != "1001" {
			t.Fatalf("tap %+v for data %q", last, data)
		}
		if _, ok := rig.fake.Answer(qid); !ok {
			t.Fatalf("the tap with data %q was not answered (Telegram refused the answer?)", data)
		}
	})
}

func (*fuzzInbox) Locale() string { return "en" }
