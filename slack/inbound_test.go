package slack

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// tapInbox answers every tap with reply and counts the taps.
type tapInbox struct {
	mu    sync.Mutex
	reply engine.TapReply
	taps  []engine.Tap
}

func (i *tapInbox) Tap(_ context.Context, t engine.Tap) engine.TapReply {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.taps = append(i.taps, t)
	return i.reply
}

func (i *tapInbox) Reply(context.Context, engine.TextReply) engine.ReplyOutcome {
	return engine.ReplyOutcome{}
}

func (i *tapInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

// press is the block_actions callback of user pressing a bridge button on
// message ts of channel.
func press(channel, ts, user, actionTS string) slack.InteractionCallback {
	var cb slack.InteractionCallback
	cb.Type = slack.InteractionTypeBlockActions
	cb.User.ID = user
	cb.Container.ChannelID = channel
	cb.Container.MessageTs = ts
	cb.ActionCallback.BlockActions = []*slack.BlockAction{{ActionID: actionIDPrefix + "0", Value: "payload", ActionTs: actionTS}}
	return cb
}

// What a tap costs besides its notice follows the engine's TapAction alone:
// a tap that ended the question (TapDone) edits nothing, as the engine's
// finisher edits every message, nor does a Seen (the engine updates the
// prompts), nor does a tap on a question that had already ended (the
// finisher makes sure the tapped message shows the end).
func TestTapActions(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	p := bigPlan()
	var posted collect
	if err := c.Send(context.Background(), engine.Delivery{Chat: "C1", Plan: p, Sent: posted.sent}); err != nil || len(posted.refs) != 2 {
		t.Fatalf("Send: %v, %+v", err, posted.refs)
	}
	second := posted.refs[1]
	// The notice is the code's words in the reply's language.
	for i, tc := range []struct {
		name   string
		reply  engine.TapReply
		notice string
	}{
		{"won", engine.TapReply{Notice: engine.NoticeRecorded, Locale: "en", QuestionID: "big", Action: engine.TapDone}, "Answer recorded."},
		{"won in thai", engine.TapReply{Notice: engine.NoticeRecorded, Locale: "th", QuestionID: "big", Action: engine.TapDone}, "บันทึกคำตอบแล้ว"},
		// Seen edits nothing itself either: the engine updates every
		// prompt of the question (Updater).
		{"seen", engine.TapReply{Notice: engine.NoticeSeen, Locale: "en", QuestionID: "big", Action: engine.TapDone}, "Marked as seen. The question stays open."},
		{"already seen in thai", engine.TapReply{Notice: engine.NoticeAlreadySeen, Locale: "th", QuestionID: "big", Action: engine.TapDone}, "มีคนกดรับทราบคำถามนี้ไปแล้ว"},
		{"open reply", engine.TapReply{Notice: engine.NoticeOther, Locale: "th", QuestionID: "big", Action: engine.TapOpenReply, ReplyTo: "Question 1?"}, "พิมพ์คำตอบของคุณในข้อความตอบกลับได้เลย"},
		// The engine's finisher makes sure the tapped message shows the end.
		{"already ended", engine.TapReply{Notice: engine.NoticeCancelled, Locale: "en", QuestionID: "big", Action: engine.TapDone}, "This question was cancelled."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := fake.Message("C1", second.Message)
			calls := len(fake.Calls("chat.update"))
			in := &tapInbox{reply: tc.reply}
			c.handleInteraction(context.Background(), in, press("C1", second.Message, "U1", fmt.Sprintf("9.%d", i)))
			if len(in.taps) != 1 || in.taps[0].Message != (engine.MessageRef{Platform: Platform, Chat: "C1", Message: second.Message}) {
				t.Fatalf("taps %+v", in.taps)
			}
			notices := fake.Ephemerals("U1")
			if len(notices) != i+1 || notices[i].Text != tc.notice {
				t.Errorf("notices %+v, want %q last", notices, tc.notice)
			}
			if n := len(fake.Calls("chat.update")) - calls; n != 0 {
				t.Errorf("%d chat.update calls, want none", n)
			}
			if now, _ := fake.Message("C1", second.Message); now.Updates != before.Updates {
				t.Errorf("the tapped message was edited %d times, want none", now.Updates-before.Updates)
			}
		})
	}
	// The first part was never touched.
	if first, _ := fake.Message("C1", posted.refs[0].Message); first.Updates != 0 {
		t.Errorf("the first part was edited %d times", first.Updates)
	}
}

func (*tapInbox) Locale() string { return "en" }
