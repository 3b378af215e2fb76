package discord

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

func FuzzCustomID(f *testing.F) {
	for _, c := range []askbridge.Choice{{Kind: askbridge.ControlOption, Option: 0}, {Kind: askbridge.ControlOption, Option: 3}, {Kind: askbridge.ControlSkip}, {Kind: askbridge.ControlOther}, {Kind: askbridge.ControlKeep, Option: 2}} {
		f.Add(askbridge.EncodePayload("question-1", c))
	}
	f.Add(askbridge.EncodeRevokePayload("gen_0123-AB"))
	f.Add("")
	f.Add("q1:AAAAAAAAAAAAAAAA:9")
	f.Add("r1:" + strings.Repeat("a", 33))
	f.Add(strings.Repeat("q", 101))
	f.Add("ocq:id=ask_0123;i=1")
	f.Fuzz(func(t *testing.T, id string) {
		if !knownCustomID(id) {
			return
		}
		if len(id) > maxCustomID {
			t.Fatalf("accepted a %d-character custom_id", len(id))
		}
		// What is accepted is exactly what the codec makes.
		if gen, err := askbridge.DecodeRevokePayload(id); err == nil {
			if again := askbridge.EncodeRevokePayload(gen); again != id {
				t.Fatalf("accepted %q, which re-encodes as %q", id, again)
			}
			return
		}
		p, err := askbridge.DecodePayload(id)
		if err != nil {
			t.Fatalf("accepted %q, which the codec refuses: %v", id, err)
		}
		version := "q1:"
		if p.Choice.Kind == askbridge.ControlKeep {
			version = "k1:"
		}
		if again := version + p.Digest + ":" + id[len(id)-1:]; again != id {
			t.Fatalf("accepted %q, which re-encodes as %q", id, again)
		}
	})
}

// stubTransport answers every REST call like Discord would on success,
// without a network.
type stubTransport struct{}

func (stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	status, body := 200, `{"id":"1","channel_id":"2","content":"","timestamp":"2026-01-01T00:00:00Z"}`
	if strings.HasSuffix(r.URL.Path, "/callback") {
		status, body = 204, ""
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// cannedInbox answers every tap and reply the same way.
type cannedInbox struct {
	tap   engine.TapReply
	reply engine.ReplyOutcome
}

func (c cannedInbox) Tap(context.Context, engine.Tap) engine.TapReply { return c.tap }
func (c cannedInbox) Reply(context.Context, engine.TextReply) engine.ReplyOutcome {
	return c.reply
}
func (c cannedInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

// FuzzInboundEvent feeds gateway dispatches (INTERACTION_CREATE,
// MESSAGE_CREATE) through the handlers, decoded the way discordgo decodes
// them, with every kind of engine answer: nothing may panic.
func FuzzInboundEvent(f *testing.F) {
	payload := askbridge.EncodePayload("q", askbridge.Choice{Kind: askbridge.ControlOption})
	f.Add(uint8(0), `{"id":"10","application_id":"1","type":3,"token":"tok","channel_id":"2","guild_id":"3","member":{"user":{"id":"4","username":"a"}},"message":{"id":"5","channel_id":"2","content":"hi"},"data":{"custom_id":"`+payload+`","component_type":2}}`)
	f.Add(uint8(1), `{"id":"10","type":3,"token":"tok","channel_id":"2","user":{"id":"4"},"message":{"id":"5"},"data":{"custom_id":"x","component_type":2}}`)
	f.Add(uint8(2), `{"id":"10","type":2,"token":"tok","data":{"name":"cmd"}}`)
	f.Add(uint8(3), `{"id":"6","channel_id":"2","author":{"id":"4","username":"a"},"content":"1","message_reference":{"message_id":"5"}}`)
	f.Add(uint8(4), `{"id":"6","channel_id":"2","author":{"id":"4","bot":true},"content":"@everyone"}`)
	f.Add(uint8(5), `{}`)
	f.Add(uint8(6), `null`)
	c, err := New(Config{Token: "t", Replica: "fuzz", AckAfter: time.Millisecond, HTTPClient: &http.Client{Transport: stubTransport{}}}, nopCoord{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	replies := []engine.TapReply{
		{Notice: engine.NoticeRecorded, Action: engine.TapDone},
		{Notice: engine.NoticeNotForYou},
		{Notice: engine.NoticeDuplicate, Action: engine.TapDuplicate},
		{Notice: engine.NoticeExpired, Action: engine.TapDone, QuestionID: "q"},
		{Notice: engine.NoticeOther, Action: engine.TapOpenReply, ReplyTo: "Q?"},
	}
	f.Fuzz(func(t *testing.T, sel uint8, data string) {
		in := cannedInbox{tap: replies[int(sel)%len(replies)], reply: engine.ReplyOutcome{Claimed: sel%2 == 0, Respond: strings.Repeat("<@1> ", int(sel)%3)}}
		ctx := context.Background()
		if sel%2 == 0 {
			var ic discordgo.InteractionCreate
			if json.Unmarshal([]byte(data), &ic) == nil && ic.Interaction != nil {
				c.onInteraction(ctx, in, ic.Interaction)
			}
			return
		}
		var m discordgo.MessageCreate
		if json.Unmarshal([]byte(data), &m) == nil {
			c.onMessage(ctx, in, m.Message)
		}
	})
}
func (cannedInbox) Locale() string { return "en" }
