package slack

import (
	"context"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/askbridge/askbridge"
)

// dispatch runs handle for one acknowledged event, in the background and
// within HandleTimeout. Slack needs the acknowledgement within 3 seconds, so
// handling never holds it up; an event that fails after that is logged.
// It reports false, handling nothing, once Run is stopping.
func (c *Channel) dispatch(ir *inboxRef, handle func(ctx context.Context, in askbridge.Inbox)) bool {
	c.stopMu.Lock()
	if c.stopped || ir.ctx.Err() != nil {
		c.stopMu.Unlock()
		return false
	}
	c.handling.Add(1)
	c.stopMu.Unlock()
	go func() {
		defer c.handling.Done()
		c.slots <- struct{}{}
		defer func() { <-c.slots }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ir.ctx), c.cfg.HandleTimeout)
		defer cancel()
		handle(ctx, ir.in)
	}()
	return true
}

// firstSeen records an event key for askbridge.DedupeTTL (Slack retries an
// Events API delivery three times within about an hour: Events API,
// "Retries"); false for a repeat. When Redis cannot tell, the event is
// handled (the engine has its own dedupe for taps and messages).
func (c *Channel) firstSeen(ctx context.Context, key string) bool {
	first, err := c.coord.FirstSeen(ctx, Platform, key, askbridge.DedupeTTL)
	if err != nil {
		c.log.Error("dedupe event", "key", key, "err", err)
		return true
	}
	return first
}

// handleInteraction handles an interactive payload: each button of the
// bridge pressed (block_actions) is a tap; the tapper gets an ephemeral
// notice. The tapped message is edited only for TapClear (the question had
// already ended, the message may still show buttons); a tap that ended the
// question (TapDone) leaves every message to the engine's finisher, so a
// tap costs one chat.update per message.
func (c *Channel) handleInteraction(ctx context.Context, in askbridge.Inbox, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID == "" {
		return
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	ts := cb.Container.MessageTs
	if ts == "" {
		ts = cb.Message.Timestamp
	}
	if channel == "" || ts == "" {
		return
	}
	ref := askbridge.MessageRef{Platform: Platform, Chat: channel, Message: ts}
	name := cb.User.Name
	if name == "" {
		name = cb.User.RealName
	}
	person := askbridge.Person{Platform: Platform, ID: cb.User.ID, Name: name}
	for _, a := range cb.ActionCallback.BlockActions {
		if a == nil || !strings.HasPrefix(a.ActionID, actionIDPrefix) {
			continue
		}
		// The press itself: the same message, action time and person.
		eventID := ts + ":" + a.ActionTs + ":" + cb.User.ID
		if !c.firstSeen(ctx, "action:"+eventID) {
			continue
		}
		reply := in.Tap(ctx, askbridge.Tap{EventID: eventID, Message: ref, Person: person, Payload: a.Value})
		if reply.Notice != "" {
			err := askbridge.PostOwn(ctx, func(ctx context.Context) error {
				_, err := c.api.PostEphemeralContext(ctx, channel, cb.User.ID, slack.MsgOptionText(Escape(string(reply.Notice)), false))
				if err != nil {
					return c.classify(err)
				}
				return nil
			})
			if err != nil {
				c.log.Warn("post ephemeral notice", "chat", channel, "err", err)
			}
		}
		switch reply.Action {
		case askbridge.TapClear:
			if reply.Ending == nil {
				c.log.Warn("a tap to clear came without its ending", "question", reply.QuestionID, "chat", channel, "message", ts)
				continue
			}
			err := askbridge.PostOwn(ctx, func(ctx context.Context) error { return c.Finish(ctx, reply.Message, *reply.Ending) })
			if err != nil {
				c.log.Warn("finalize tapped message", "question", reply.QuestionID, "chat", channel, "message", ts, "err", err)
			}
		case askbridge.TapOpenReply:
			// Slack has no reply box (Capabilities.ReplyBox is false): the
			// notice asks for the answer in the thread, which is enough.
		case askbridge.TapDone:
			// The engine's finisher edits every message of the question.
		}
	}
}

// handleEvent handles an Events API event: a person's message is a text
// reply; a reply in a question's thread answers that question.
func (c *Channel) handleEvent(ctx context.Context, in askbridge.Inbox, ev slackevents.EventsAPIEvent) {
	outer, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || outer == nil {
		return
	}
	msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || msg == nil {
		return
	}
	if outer.EventID != "" && !c.firstSeen(ctx, "event:"+outer.EventID) {
		return
	}
	c.handleMessage(ctx, in, msg)
}

// handleMessage hands a person's message to the inbox and posts the
// engine's response in the thread. Bots (including this one), edits and
// other subtypes never answer.
func (c *Channel) handleMessage(ctx context.Context, in askbridge.Inbox, m *slackevents.MessageEvent) {
	if m.User == "" || m.Channel == "" || m.TimeStamp == "" || m.BotID != "" {
		return
	}
	if m.SubType != "" && m.SubType != "thread_broadcast" {
		return // bot_message, message_changed, message_deleted, joins…
	}
	if bot, _ := c.botUser.Load().(string); bot != "" && m.User == bot {
		return
	}
	reply := askbridge.TextReply{
		EventID: m.Channel + ":" + m.TimeStamp,
		Message: askbridge.MessageRef{Platform: Platform, Chat: m.Channel, Message: m.TimeStamp},
		Person:  askbridge.Person{Platform: Platform, ID: m.User},
		Text:    unescape(m.Text),
	}
	if m.ThreadTimeStamp != "" && m.ThreadTimeStamp != m.TimeStamp {
		reply.ReplyTo = m.ThreadTimeStamp
	}
	out := in.Reply(ctx, reply)
	if out.Respond == "" {
		return
	}
	thread := m.ThreadTimeStamp
	if thread == "" {
		thread = m.TimeStamp
	}
	if err := askbridge.PostOwn(ctx, func(ctx context.Context) error { return c.Notify(ctx, m.Channel, thread, out.Respond) }); err != nil {
		c.log.Warn("answer a text reply", "chat", m.Channel, "err", err)
	}
}
