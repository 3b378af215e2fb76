package slack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// TestFindPostedParts: a replica posted part 0 of a two-message prompt and
// died before recording it. Find, as the replica that
// takes over asks it, returns that message from the channel's history by
// its metadata, newer messages of the bot in between notwithstanding; once
// part 1 is out too, both come back in part order. Another question, a
// window that starts after the posts, and a lookup from a later part find
// only what they should.
func TestFindPostedParts(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	ctx := context.Background()
	p := bigPlan()
	since := time.Now().Add(-time.Second)
	var first collect
	err := c.Send(ctx, engine.Delivery{Chat: "C1", Plan: p, Sent: func(ref engine.MessageRef) bool {
		first.sent(ref)
		return false // the replica died
	}})
	if err != nil || len(first.refs) != 1 {
		t.Fatalf("send: %v, %d parts", err, len(first.refs))
	}
	// The channel goes on without the prompt: 40 newer messages of the bot,
	// more than a page of history.
	for range 40 {
		if err := c.Notify(ctx, "C1", "", "something else"); err != nil {
			t.Fatal(err)
		}
	}
	found, err := c.Find(ctx, engine.Lookup{Chat: "C1", Plan: p, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0] != first.refs[0] {
		t.Fatalf("found %+v, want %+v", found, first.refs)
	}
	var rest collect
	if err := c.Send(ctx, engine.Delivery{Chat: "C1", Plan: p, From: 1, Sent: rest.sent}); err != nil {
		t.Fatal(err)
	}
	found, err = c.Find(ctx, engine.Lookup{Chat: "C1", Plan: p, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	want := append(first.refs, rest.refs...)
	if len(found) != 2 || found[0] != want[0] || found[1] != want[1] {
		t.Fatalf("found %+v, want %+v", found, want)
	}
	for _, tc := range []struct {
		name string
		l    engine.Lookup
		want int
	}{
		{"from part 1", engine.Lookup{Chat: "C1", Plan: p, From: 1, Since: since}, 1},
		{"another question", engine.Lookup{Chat: "C1", Plan: engine.Plan{ID: "other"}, Since: since}, 0},
		{"after the posts", engine.Lookup{Chat: "C1", Plan: p, Since: time.Now().Add(time.Second)}, 0},
	} {
		got, err := c.Find(ctx, tc.l)
		if err != nil || len(got) != tc.want {
			t.Errorf("%s: found %+v, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	for _, call := range fake.Calls("conversations.history") {
		if call.Form.Get("include_all_metadata") != "1" {
			t.Fatalf("history read without metadata: %v", call.Form)
		}
	}
}

// TestFindRefusals: a lookup Slack refuses comes back as the error it is
// (the engine then posts rather than guesses), and a message with the
// prompt's metadata posted by another user is not taken for the bot's.
func TestFindRefusals(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	fake.SetChannelError("C1", "missing_scope")
	_, err := c.Find(context.Background(), engine.Lookup{Chat: "C1", Plan: bigPlan()})
	var se *engine.SendError
	if !errors.As(err, &se) || se.Reason != "missing_scope" {
		t.Fatalf("err %v, want missing_scope", err)
	}
	m := slack.Message{Msg: slack.Msg{User: "U0SOMEONE", Metadata: promptMetadata("big", 0)}}
	if _, ok := promptPart(m, "big", "U0BOT"); ok {
		t.Fatal("another user's message taken for a part")
	}
	m.User = "U0BOT"
	if part, ok := promptPart(m, "big", "U0BOT"); !ok || part != 0 {
		t.Fatalf("the bot's part 0: %d %v", part, ok)
	}
	m.Metadata.EventPayload["part"] = -1.0
	if _, ok := promptPart(m, "big", "U0BOT"); ok {
		t.Fatal("a negative part accepted")
	}
}
