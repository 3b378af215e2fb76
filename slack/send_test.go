package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/slack/fakeslack"
)

// bigPlan needs more than 50 blocks, so it goes out as two messages.
func bigPlan() askbridge.Plan {
	p := askbridge.Plan{ID: "big", Mode: askbridge.ModeText, Intro: "Questions for you:", FreeText: "Something else?", Closing: "Reply."}
	for i := range 60 {
		p.Sections = append(p.Sections, askbridge.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1),
			Options: []askbridge.Option{{Label: "A"}, {Label: "B"}}})
	}
	p.Rows = [][]askbridge.Button{{{Label: "Skip", Choice: askbridge.Choice{Kind: askbridge.ControlSkip}, Payload: askbridge.EncodePayload("big", askbridge.Choice{Kind: askbridge.ControlSkip})}}}
	return p
}

// A long prompt is posted as several messages, all returned, even when
// Slack rate-limits a later part (Send waits it out); Finish edits each
// part as its own message.
func TestSendSplitAndFinishEachPart(t *testing.T) {
	fake := fakeslack.New(fakeslack.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	st := newMemStore()
	c, err := New(Config{BotToken: "xoxb-1", SigningSecret: "s", APIURL: fake.APIURL()}, st, discard())
	if err != nil {
		t.Fatal(err)
	}
	fake.SetRateLimit(1, 2*time.Second, 1)
	p := bigPlan()
	start := time.Now()
	refs, err := c.Send(context.Background(), "C1", p)
	if err != nil || len(refs) != 2 {
		t.Fatalf("Send: %v, %d messages", err, len(refs))
	}
	if fake.RateLimited() == 0 || time.Since(start) < time.Second {
		t.Errorf("the second part did not wait out the rate limit (%d 429s)", fake.RateLimited())
	}
	fake.SetRateLimit(0, 0, 0)
	msgs := fake.Messages("C1")
	if len(msgs) != 2 || len(fakeslack.Buttons(msgs[0].Blocks)) != 0 || len(fakeslack.Buttons(msgs[1].Blocks)) != 1 {
		t.Fatalf("messages %+v", msgs)
	}
	st.msgs["big"] = refs
	for i := len(refs) - 1; i >= 0; i-- {
		if err := c.Finish(context.Background(), refs[i], p, "Expired"); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range fake.Messages("C1") {
		if len(fakeslack.Buttons(m.Blocks)) != 0 || !strings.Contains(string(m.Blocks), `"Expired"`) || !strings.HasSuffix(m.Text, "\n\nExpired") {
			t.Errorf("part %d not finished: %s", i, m.Text)
		}
		if want := fmt.Sprintf("Question %d?", 1+i*48); !strings.Contains(string(m.Blocks), want) {
			t.Errorf("part %d was edited with other content: %s", i, m.Blocks)
		}
	}
	// Finishing again is fine (an update with the same content).
	if err := c.Finish(context.Background(), refs[0], p, "Expired"); err != nil {
		t.Errorf("repeat: %v", err)
	}
}

func TestSendErrors(t *testing.T) {
	fake := fakeslack.New(fakeslack.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c, err := New(Config{BotToken: "xoxb-1", SigningSecret: "s", APIURL: fake.APIURL()}, newMemStore(), discard())
	if err != nil {
		t.Fatal(err)
	}
	p := plan(t, "q", shapes[0].body)
	fake.SetRateLimit(1, time.Minute, 9)
	if _, err := c.Send(context.Background(), "C1", p); err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), "C1", p)
	var se *askbridge.SendError
	if !errors.As(err, &se) || se.Kind != askbridge.RateLimited || se.RetryAfter != 9*time.Second {
		t.Errorf("rate limited first part: %v", err)
	}
	fake.SetRateLimit(0, 0, 0)
	fake.SetChannelError("C1", "not_in_channel")
	if _, err := c.Send(context.Background(), "C1", p); !errors.As(err, &se) || se.Kind != askbridge.Permanent || se.Reason != "not_in_channel" {
		t.Errorf("not in channel: %v", err)
	}
	if err := c.Finish(context.Background(), askbridge.MessageRef{Platform: Platform, Chat: "C1", Message: "1.1"}, p, "Expired"); !errors.As(err, &se) || se.Kind != askbridge.Permanent {
		t.Errorf("finish in a refusing channel: %v", err)
	}
	fake.SetChannelError("C1", "")
	if err := c.Finish(context.Background(), askbridge.MessageRef{Platform: Platform, Chat: "C1", Message: "1.1"}, p, "Expired"); !errors.As(err, &se) || se.Reason != "message_not_found" {
		t.Errorf("finish of a deleted message: %v", err)
	}
	// A user target opens the DM once.
	for range 2 {
		refs, err := c.Send(context.Background(), "W0TEAM", p)
		if err != nil || len(refs) != 1 || refs[0].Chat != "D0TEAM" {
			t.Fatalf("DM: %+v %v", refs, err)
		}
	}
	if n := len(fake.Calls("conversations.open")); n != 1 {
		t.Errorf("conversations.open called %d times", n)
	}
	if err := c.Notify(context.Background(), "C1", "", "Reply to <!channel>"); err != nil {
		t.Fatal(err)
	}
	if msgs := fake.Messages("C1"); msgs[len(msgs)-1].Text != "Reply to &lt;!channel&gt;" {
		t.Errorf("notify text %q", msgs[len(msgs)-1].Text)
	}
}
