package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// bigPlan needs more than 50 blocks, so it goes out as two messages.
func bigPlan() engine.Plan {
	p := engine.Plan{ID: "big", Mode: engine.ModeText, Intro: "Questions for you:", FreeText: "Something else?", Closing: "Reply."}
	for i := range 60 {
		p.Sections = append(p.Sections, engine.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1),
			Options: []askbridge.Option{{Label: "A"}, {Label: "B"}}})
	}
	p.Rows = [][]engine.Button{{{Label: "Skip", Choice: askbridge.Choice{Kind: askbridge.ControlSkip}, Payload: askbridge.EncodePayload("big", askbridge.Choice{Kind: askbridge.ControlSkip})}}}
	return p
}

// collect is a Delivery's Sent that keeps what was posted.
type collect struct{ refs []engine.MessageRef }

func (c *collect) sent(ref engine.MessageRef) bool {
	c.refs = append(c.refs, ref)
	return true
}

func ending(p engine.Plan, status string) engine.Ending {
	return engine.Ending{Plan: p, Outcome: askbridge.OutcomeExpired, Status: status}
}

func newTestChannel(t *testing.T, fake *slacktest.Server) *Channel {
	t.Helper()
	c, err := New(Config{BotToken: "xoxb-1", SigningSecret: "s-long-enough-secret", APIURL: fake.APIURL()}, enginetest.NewMemCoord(), discard())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A long prompt is posted as several messages, each handed to Sent with its
// part number. A 429 on a later part is returned at once, with Slack's
// wait, after the parts before it were handed over; a try from the first
// part not posted completes the prompt. Finish edits each part with its own
// content from the plan alone: the coordinator has no messages to read
// (reading them would panic).
func TestSendSplitAndFinishEachPart(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	clock := clockwork.NewFakeClock()
	c.gate.clock = clock
	p := bigPlan()
	if n := len(render(p)); n != 2 {
		t.Fatalf("the plan renders as %d messages, want 2", n)
	}
	fake.SetRateLimit(1, time.Minute, 7)
	var got collect
	err := c.Send(context.Background(), engine.Delivery{Chat: "C1", Plan: p, Sent: got.sent})
	var se *engine.SendError
	if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter != 7*time.Second {
		t.Fatalf("Send under a rate limit: %v", err)
	}
	if len(got.refs) != 1 || got.refs[0].Part != 0 || got.refs[0].Chat != "C1" || got.refs[0].Platform != Platform {
		t.Fatalf("handed over %+v, want part 0 only", got.refs)
	}
	if n := len(fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("%d chat.postMessage calls, want 2 (one try of the second part)", n)
	}
	fake.SetRateLimit(0, 0, 0)
	clock.Advance(7 * time.Second) // the channel's Retry-After
	if err := c.Send(context.Background(), engine.Delivery{Chat: "C1", Plan: p, From: 1, Sent: got.sent}); err != nil {
		t.Fatal(err)
	}
	if len(got.refs) != 2 || got.refs[1].Part != 1 {
		t.Fatalf("handed over %+v, want parts 0 and 1", got.refs)
	}
	msgs := fake.Messages("C1")
	if len(msgs) != 2 || len(slacktest.Buttons(msgs[0].Blocks)) != 0 || len(slacktest.Buttons(msgs[1].Blocks)) != 1 {
		t.Fatalf("messages %+v", msgs)
	}
	for i, m := range msgs {
		if m.TS != got.refs[i].Message {
			t.Errorf("part %d is message %s, handed over as %s", i, m.TS, got.refs[i].Message)
		}
	}
	if !strings.Contains(string(msgs[1].Blocks), p.FreeText) {
		t.Fatalf("the last part does not show the instructions: %s", msgs[1].Blocks)
	}
	// Finished last part first, so that an edit that ignored Part (and
	// showed part 0 everywhere) would be seen.
	for i := len(got.refs) - 1; i >= 0; i-- {
		if err := c.Finish(context.Background(), got.refs[i], ending(p, "Expired")); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range fake.Messages("C1") {
		if len(slacktest.Buttons(m.Blocks)) != 0 || !strings.Contains(string(m.Blocks), `"Expired"`) || !strings.HasSuffix(m.Text, "\n\nExpired") {
			t.Errorf("part %d not finished: %s", i, m.Text)
		}
		if want := fmt.Sprintf("Question %d?", 1+i*48); !strings.Contains(string(m.Blocks), want) {
			t.Errorf("part %d was edited with other content: %s", i, m.Blocks)
		}
		if other := fmt.Sprintf("Question %d?", 1+(1-i)*48); strings.Contains(string(m.Blocks), other) {
			t.Errorf("part %d shows the other part's %q", i, other)
		}
		if m.Updates != 1 {
			t.Errorf("part %d edited %d times, want 1", i, m.Updates)
		}
		// Ended, a message no longer tells anyone how to answer.
		if strings.Contains(string(m.Blocks), p.FreeText) || strings.Contains(m.Text, p.FreeText) || strings.Contains(string(m.Blocks), p.Closing) {
			t.Errorf("part %d keeps the instructions: %s", i, m.Blocks)
		}
		// Posted and edited, it never asked for a preview or linked a name.
		for j, d := range m.Displays {
			if d != (slacktest.Display{}) {
				t.Errorf("part %d, write %d: %+v", i, j, d)
			}
		}
	}
	// Finishing again is fine (an update with the same content).
	if err := c.Finish(context.Background(), got.refs[0], ending(p, "Expired")); err != nil {
		t.Errorf("repeat: %v", err)
	}
	// A part the plan does not have cannot be shown: permanent.
	beyond := got.refs[1]
	beyond.Part = 2
	if err := c.Finish(context.Background(), beyond, ending(p, "Expired")); !errors.As(err, &se) || se.Kind != engine.Permanent {
		t.Errorf("finish of part 2 of 2: %v", err)
	}
}

// Send starts at d.From: past the last part it posts nothing; Sent saying
// stop stops it, with no error.
func TestSendFromAndSentStop(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	p := bigPlan()
	var got collect
	if err := c.Send(context.Background(), engine.Delivery{Chat: "C1", Plan: p, From: 2, Sent: got.sent}); err != nil || len(got.refs) != 0 {
		t.Fatalf("From past the end: %v, %+v", err, got.refs)
	}
	// Not even the DM of a user is opened for nothing.
	if err := c.Send(context.Background(), engine.Delivery{Chat: "W0TEAM", Plan: p, From: 2, Sent: got.sent}); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Calls("chat.postMessage")) + len(fake.Calls("conversations.open")); n != 0 {
		t.Fatalf("%d calls for a delivery with nothing left to post", n)
	}
	calls := 0
	err := c.Send(context.Background(), engine.Delivery{Chat: "C1", Plan: p, Sent: func(engine.MessageRef) bool { calls++; return false }})
	if err != nil || calls != 1 {
		t.Fatalf("Sent saying stop: %v after %d calls, want no error after 1", err, calls)
	}
	if n := len(fake.Messages("C1")); n != 1 {
		t.Errorf("%d messages posted after Sent said stop on the first, want 1", n)
	}
}

func TestSendErrors(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	clock := clockwork.NewFakeClock()
	c.gate.clock = clock
	p := plan(t, "q", shapes[0].body)
	send := func(chat string) ([]engine.MessageRef, error) {
		var got collect
		err := c.Send(context.Background(), engine.Delivery{Chat: chat, Plan: p, Sent: got.sent})
		return got.refs, err
	}
	fake.SetRateLimit(1, time.Minute, 9)
	if _, err := send("C1"); err != nil {
		t.Fatal(err)
	}
	refs, err := send("C1")
	var se *engine.SendError
	if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter != 9*time.Second || len(refs) != 0 {
		t.Errorf("rate limited first part: %v, %+v", err, refs)
	}
	fake.SetRateLimit(0, 0, 0)
	clock.Advance(9 * time.Second) // the channel's Retry-After
	fake.SetChannelError("C1", "not_in_channel")
	if _, err := send("C1"); !errors.As(err, &se) || se.Kind != engine.Permanent || se.Reason != "not_in_channel" {
		t.Errorf("not in channel: %v", err)
	}
	gone := engine.MessageRef{Platform: Platform, Chat: "C1", Message: "1.1"}
	if err := c.Finish(context.Background(), gone, ending(p, "Expired")); !errors.As(err, &se) || se.Kind != engine.Permanent {
		t.Errorf("finish in a refusing channel: %v", err)
	}
	fake.SetChannelError("C1", "")
	// A message that is gone counts as finished.
	if err := c.Finish(context.Background(), gone, ending(p, "Expired")); err != nil {
		t.Errorf("finish of a deleted message: %v", err)
	}
	if n := len(fake.Calls("chat.update")); n != 2 {
		t.Errorf("%d chat.update calls, want 2 (one try each)", n)
	}
	// A user target opens the DM once.
	for range 2 {
		refs, err := send("W0TEAM")
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
	if msgs := fake.Messages("C1"); msgs[len(msgs)-1].Text != "Reply to &lt;!channel&gt;" || fmt.Sprint(msgs[len(msgs)-1].Displays) != "[{false false false}]" {
		t.Errorf("notify %q shown as %+v", msgs[len(msgs)-1].Text, msgs[len(msgs)-1].Displays)
	}
}
