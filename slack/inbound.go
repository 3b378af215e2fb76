package slack

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// maxHandling bounds the inbound events a replica handles at once.
const maxHandling = 64

// slotWait is how long an event waits for one of the maxHandling slots:
// well within the 3 seconds Slack gives an answer, so an event shed under
// load is answered 503 (Events API, interactivity) or left unacknowledged
// (socket mode) in time for Slack to deliver it again, to this replica or
// another.
const slotWait = time.Second

// Why dispatch handled nothing.
var (
	errStopping = errors.New("stopping")
	errBusy     = errors.New("every handling slot is taken")
)

// dispatch runs handle for one event, in the background and within
// HandleTimeout. Slack needs the event answered within 3 seconds, so
// handling never holds that up for long (see redelivery). A panic in handle
// is recovered and logged with its stack: one bad event never takes the
// process down. The event takes a slot before anything is started for it:
// it returns errBusy, handling nothing, when no slot frees up within
// slotWait (no goroutine waits on a slot: a Redis outage in busy channels
// sheds events to Slack's redelivery instead of piling them up here), and
// errStopping once Run is stopping.
func (c *Channel) dispatch(ir *inboxRef, handle func(ctx context.Context, in engine.Inbox)) error {
	if err := c.takeSlot(ir.ctx); err != nil {
		return err
	}
	c.stopMu.Lock()
	if c.stopped || ir.ctx.Err() != nil {
		c.stopMu.Unlock()
		<-c.slots
		return errStopping
	}
	c.handling.Add(1)
	c.stopMu.Unlock()
	go func() {
		defer c.handling.Done()
		defer func() { <-c.slots }()
		defer c.recovered("handle an event")
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ir.ctx), c.cfg.HandleTimeout)
		defer cancel()
		handle(ctx, ir.in)
	}()
	return nil
}

// takeSlot takes a handling slot, waiting at most slotWait.
func (c *Channel) takeSlot(ctx context.Context) error {
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(c.slotWait)
	defer t.Stop()
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-t.C:
		c.log.Warn("every handling slot is taken; event left for Slack to deliver again", "slots", cap(c.slots))
		return errBusy
	case <-ctx.Done():
		return errStopping
	}
}

// recovered, deferred, turns a panic into an error log with the stack.
func (c *Channel) recovered(op string) {
	if v := recover(); v != nil {
		engine.LogPanic(c.log, c.cfg.Panicked, "slack "+op, v)
	}
}

// decideWithin is how long an HTTP request of the Events API waits for its
// event's handling to decide whether Slack should deliver it again; Slack
// wants an answer within 3 seconds (Events API, "Responding to events").
const decideWithin = 2 * time.Second

// maxEventRetries: Slack delivers a failed event again at most three times
// (X-Slack-Retry-Num 1 to 3; Events API, "Retries").
const maxEventRetries = 3

// redelivery lets the handling of an Events API event that failed ask Slack
// for the event again while the HTTP request that brought it still waits
// for its answer (at most decideWithin): the request then answers 503 and
// Slack delivers the event again. A nil *redelivery (socket mode, Slack's
// last retry) never asks. Safe for concurrent use.
type redelivery struct {
	decided chan struct{}
	mu      sync.Mutex
	waiting bool // the request still waits
	again   bool
}

func newRedelivery() *redelivery { return &redelivery{decided: make(chan struct{}), waiting: true} }

// ask is called when the handling failed; it reports whether the request
// still waited, so Slack delivers the event again.
func (r *redelivery) ask() bool { return r.decide(true) }

// done tells the request the event needs no second delivery. Safe to
// repeat; a no-op after ask.
func (r *redelivery) done() { r.decide(false) }

func (r *redelivery) decide(again bool) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.waiting {
		return false
	}
	r.waiting, r.again = false, again
	close(r.decided)
	return true
}

// await waits up to d for the handling to decide and reports whether Slack
// should deliver the event again; after it, ask reports false.
func (r *redelivery) await(d time.Duration) bool {
	if r == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.decided:
	case <-t.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting = false
	return r.again
}

// firstSeen records an event key for engine.DedupeTTL (Slack retries an
// Events API delivery three times within about an hour: Events API,
// "Retries"); false for a repeat. When Redis cannot tell, the event is
// handled (the engine has its own dedupe for taps and messages).
func (c *Channel) firstSeen(ctx context.Context, key string) bool {
	first, err := c.coord.FirstSeen(ctx, Platform, key, engine.DedupeTTL)
	if err != nil {
		c.log.Error("dedupe event", "key", key, "err", err)
		return true
	}
	return first
}

// forget undoes the first-seen mark of an event whose handling failed, so
// the next delivery of it is handled; false when Redis could not be told
// either (the next delivery is then taken as seen).
func (c *Channel) forget(ctx context.Context, key string) bool {
	if err := c.coord.ForgetSeen(context.WithoutCancel(ctx), Platform, key); err != nil {
		c.log.Warn("forget a failed event; its next delivery will be taken as seen", "key", key, "err", err)
		return false
	}
	return true
}

// ephemeral posts text (escaped) to user alone in channel, in the thread
// of thread when it is set, with engine.PostOwn's bounded retry.
func (c *Channel) ephemeral(ctx context.Context, channel, user, thread, text string) {
	opts := append(quiet(), slack.MsgOptionText(Escape(text), false))
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	err := engine.PostOwn(ctx, func(ctx context.Context) error {
		if _, err := c.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
			return c.classify(err)
		}
		return nil
	})
	if err != nil {
		c.log.Warn("post ephemeral notice", "chat", channel, "err", err)
	}
}

// handleInteraction handles an interactive payload: each button of the
// bridge pressed (block_actions) is a tap; the tapper gets an ephemeral
// notice. The channel edits nothing: a tap that ended the question leaves
// every message to the engine's finisher (so a tap costs one chat.update
// per message), and so does a tap on a question that had already ended
// (the finisher makes sure the tapped message shows the end).
func (c *Channel) handleInteraction(ctx context.Context, in engine.Inbox, cb slack.InteractionCallback) {
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
	ref := engine.MessageRef{Platform: Platform, Chat: channel, Message: ts}
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
		key := "action:" + eventID
		if !c.firstSeen(ctx, key) {
			continue
		}
		reply := in.Tap(ctx, engine.Tap{EventID: eventID, Message: ref, Person: person, Payload: a.Value})
		if reply.Retry {
			// The engine could not handle the press (and forgot it): so
			// does the channel, so a delivery of it again is handled.
			c.forget(ctx, key)
		}
		if reply.Notice != "" {
			c.ephemeral(ctx, channel, cb.User.ID, "", reply.Text())
		}
		switch reply.Action {
		case engine.TapOpenReply:
			// Slack has no reply box (Capabilities.ReplyBox is false): the
			// notice asks for the answer in the thread, which is enough.
		case engine.TapDone:
			// The engine's finisher edits the messages of the question (the
			// tapped one, when it had already ended).
		}
	}
}

// handleEvent handles an Events API event: a person's message is a text
// reply; a reply in a question's thread answers that question. When the
// handling fails (the engine could not reach the store), the event's mark
// is forgotten and, while again still lets it, Slack is asked to deliver
// the event again; else the person is told to try again.
func (c *Channel) handleEvent(ctx context.Context, in engine.Inbox, ev slackevents.EventsAPIEvent, again *redelivery) {
	defer again.done()
	outer, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || outer == nil {
		return
	}
	msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || msg == nil {
		return
	}
	key := "event:" + outer.EventID
	if outer.EventID != "" && !c.firstSeen(ctx, key) {
		return
	}
	c.handleMessage(ctx, in, msg, func() bool {
		if outer.EventID != "" && !c.forget(ctx, key) {
			return false
		}
		return again.ask()
	})
}

// handleMessage hands a person's message to the inbox and posts the
// engine's response in the thread. Bots (including this one), edits and
// other subtypes never answer. When the engine could not handle the
// message, failed is called; unless it reports that Slack delivers the
// message again, the person is told to try again, privately.
func (c *Channel) handleMessage(ctx context.Context, in engine.Inbox, m *slackevents.MessageEvent, failed func() (redelivered bool)) {
	if m.User == "" || m.Channel == "" || m.TimeStamp == "" || m.BotID != "" {
		return
	}
	if m.SubType != "" && m.SubType != "thread_broadcast" {
		return // bot_message, message_changed, message_deleted, joins…
	}
	if bot, _ := c.botUser.Load().(string); bot != "" && m.User == bot {
		return
	}
	reply := engine.TextReply{
		EventID: m.Channel + ":" + m.TimeStamp,
		Message: engine.MessageRef{Platform: Platform, Chat: m.Channel, Message: m.TimeStamp},
		Person:  askbridge.Person{Platform: Platform, ID: m.User},
		Text:    unescape(m.Text),
	}
	if m.ThreadTimeStamp != "" && m.ThreadTimeStamp != m.TimeStamp {
		reply.ReplyTo = m.ThreadTimeStamp
	}
	out := in.Reply(ctx, reply)
	thread := m.ThreadTimeStamp
	if thread == "" {
		thread = m.TimeStamp
	}
	if out.Retry {
		if redelivered := failed(); !redelivered && out.Respond != "" {
			c.ephemeral(ctx, m.Channel, m.User, thread, out.Respond)
		}
		return
	}
	if out.Respond == "" {
		return
	}
	if err := engine.PostOwn(ctx, func(ctx context.Context) error { return c.Notify(ctx, m.Channel, thread, out.Respond) }); err != nil {
		c.log.Warn("answer a text reply", "chat", m.Channel, "err", err)
	}
}
