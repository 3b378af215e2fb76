package matrix

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

const (
	// claimTTL is how long an event's first-seen mark lives before it is
	// settled: a replica killed while handling an event leaves a claim
	// that lapses after this, and the next syncer handles the event then.
	claimTTL = 20 * time.Second
	// settledTTL is how long a handled event is remembered; a since token
	// older than this is not replayed.
	settledTTL = 24 * time.Hour
	// noticeTTL is how long a notice told to a person about a question
	// (such as "already answered") is remembered, so it is told once.
	noticeTTL = 24 * time.Hour
)

// Store is what the channel needs of the store (store.Store implements
// it): the syncer lease, the since token it fences, the first-seen marks
// that make each event handled once across replicas, and the rate limits
// shared between replicas.
type Store interface {
	Cooldowns
	FirstSeen(ctx context.Context, platform, eventID string, ttl time.Duration) (bool, error)
	ForgetSeen(ctx context.Context, platform, eventID string) error
	Settle(ctx context.Context, platform, eventID string, ttl time.Duration) error
	Settled(ctx context.Context, platform, eventID string) (bool, error)
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (engine.Lease, bool, error)
	RenewLease(ctx context.Context, lease engine.Lease, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, lease engine.Lease) error
	TextCursor(ctx context.Context, name string) (string, bool, error)
	SetTextCursor(ctx context.Context, name, value string, lease engine.Lease) (bool, error)
}

// Poll responses, in the unstable form clients send today and the stable
// one.
var pollResponseKeys = map[string]string{
	"org.matrix.msc3381.poll.response": "org.matrix.msc3381.poll.response",
	"m.poll.response":                  "m.poll.response",
}

// handleEvent hands one timeline event to in once across replicas: its
// event id is claimed with a first-seen mark before it is handled and the
// mark settled after, so a failover neither loses nor repeats it. An
// event another replica claimed and has not settled is an error (the
// batch is fetched again until it is settled or the claim lapses); an
// event the engine could not handle gives its mark back and is an error.
func (c *Channel) handleEvent(ctx context.Context, in engine.Inbox, ev *event.Event) (err error) {
	if ev.Sender.String() == c.cfg.User || ev.StateKey != nil {
		return nil
	}
	kind := eventKind(ev)
	if kind == "" {
		return nil
	}
	key := "event:" + ev.ID.String()
	first, err := c.store.FirstSeen(ctx, Platform, key, claimTTL)
	if err != nil {
		return err
	}
	if !first {
		settled, err := c.store.Settled(ctx, Platform, key)
		if err != nil {
			return err
		}
		if !settled {
			return errClaimed
		}
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			engine.LogPanic(c.log, c.cfg.Panicked, "matrix event", v, "event", ev.ID)
			err = nil // it would panic again: counted as handled
		}
		if err != nil {
			if ferr := c.store.ForgetSeen(context.WithoutCancel(ctx), Platform, key); ferr != nil {
				c.log.Error("forget the mark of an event not handled", "event", ev.ID, "err", ferr)
			}
			return
		}
		if serr := c.store.Settle(context.WithoutCancel(ctx), Platform, key, settledTTL); serr != nil {
			c.log.Warn("settle the mark of a handled event", "event", ev.ID, "err", serr)
		}
	}()
	switch kind {
	case "vote":
		return c.onVote(ctx, in, ev)
	case "seen":
		return c.onSeen(ctx, in, ev)
	}
	return c.onText(ctx, in, ev)
}

// eventKind is "vote" for a poll response, "text" for a text message,
// "seen" for a 👀 reaction, "" for anything the channel ignores (other
// reactions among them).
func eventKind(ev *event.Event) string {
	if _, ok := pollResponseKeys[ev.Type.Type]; ok {
		return "vote"
	}
	if ev.Type.Type == typeReaction {
		if _, ok := seenReaction(ev); ok {
			return "seen"
		}
		return ""
	}
	if ev.Type.Type == typeMessage && (ev.Content.Raw["msgtype"] == msgText || ev.Content.Raw["msgtype"] == "m.emote") {
		if rel, _ := ev.Content.Raw[keyRelatesTo].(map[string]any); rel["rel_type"] == relReplace {
			return "" // an edit: the first words count
		}
		return "text"
	}
	return ""
}

// onVote hands a poll response to in as a tap on the poll's button whose
// payload is the chosen answer id, and tells the voter the notice (once
// per person, question and notice) in the poll's thread.
func (c *Channel) onVote(ctx context.Context, in engine.Inbox, ev *event.Event) error {
	resp, _ := ev.Content.Raw[pollResponseKeys[ev.Type.Type]].(map[string]any)
	rel, _ := ev.Content.Raw[keyRelatesTo].(map[string]any)
	poll, _ := rel["event_id"].(string)
	answers, _ := resp["answers"].([]any)
	if poll == "" || len(answers) == 0 {
		return nil // a vote taken back: the first vote counts
	}
	payload, _ := answers[0].(string)
	room := ev.RoomID.String()
	reply := in.Tap(ctx, engine.Tap{
		EventID: ev.ID.String(),
		Message: engine.MessageRef{Platform: Platform, Chat: room, Message: poll},
		Person:  c.person(ctx, ev.Sender),
		Payload: payload,
	})
	if reply.Retry {
		c.tell(ctx, room, poll, reply.Text())
		return fmt.Errorf("vote %s: %w", ev.ID, errUnhandled)
	}
	if reply.Action == engine.TapDuplicate || reply.Notice == "" {
		return nil
	}
	once := "notice:" + reply.QuestionID + ":" + poll + ":" + ev.Sender.String() + ":" + string(reply.Notice)
	if first, err := c.store.FirstSeen(ctx, Platform, once, noticeTTL); err != nil || !first {
		return nil // told already (or unknown: better silent than twice)
	}
	c.tell(ctx, room, poll, reply.Text())
	return nil
}

// onText hands a text message to in as a reply: to the prompt it
// replies to (m.in_reply_to) or whose thread it is in (m.thread). The
// engine's response is posted in the prompt's thread, or as a reply to
// the message when it names no prompt.
func (c *Channel) onText(ctx context.Context, in engine.Inbox, ev *event.Event) error {
	body, _ := ev.Content.Raw["body"].(string)
	replyTo := replyTarget(ev)
	room := ev.RoomID.String()
	out := in.Reply(ctx, engine.TextReply{
		EventID: ev.ID.String(),
		Message: engine.MessageRef{Platform: Platform, Chat: room, Message: ev.ID.String()},
		ReplyTo: replyTo,
		Person:  c.person(ctx, ev.Sender),
		Text:    stripFallback(body),
	})
	if out.Respond != "" {
		anchor := replyTo
		if anchor == "" {
			anchor = ev.ID.String()
		}
		c.tell(ctx, room, anchor, out.Respond)
	}
	if out.Retry {
		return fmt.Errorf("reply %s: %w", ev.ID, errUnhandled)
	}
	return nil
}

// typeReaction is the event type of a reaction: an m.annotation relating
// to the event reacted to, its key the emoji.
const typeReaction = "m.reaction"

// seenKeys are the reaction keys that mark a prompt seen: 👀 (U+1F440),
// bare or with the emoji presentation selector (U+FE0F).
var seenKeys = map[string]bool{"\U0001F440": true, "\U0001F440\uFE0F": true}

// seenReaction is the event a reaction marks seen when it is a 👀
// annotation; ok is false for any other reaction.
func seenReaction(ev *event.Event) (target string, ok bool) {
	rel, _ := ev.Content.Raw[keyRelatesTo].(map[string]any)
	key, _ := rel["key"].(string)
	target, _ = rel["event_id"].(string)
	if rel["rel_type"] != "m.annotation" || target == "" || !seenKeys[key] {
		return "", false
	}
	return target, true
}

// onSeen hands a 👀 reaction on a prompt to in as a Seen mark
// (engine.SeenMarker): the question is acknowledged as the reply word
// "seen" or the poll's Seen answer do, and the prompt is edited to say
// who has seen it. Nothing is said back, whatever the engine decided: a
// reaction from someone who may not answer, on a question that offers
// no Seen, on a prompt of no question or of one that has ended, or after
// someone else's Seen changes nothing; the edit is the answer.
func (c *Channel) onSeen(ctx context.Context, in engine.Inbox, ev *event.Event) error {
	marker, ok := in.(engine.SeenMarker)
	if !ok {
		return nil
	}
	target, _ := seenReaction(ev)
	n, err := marker.MarkSeen(ctx, engine.SeenMark{
		EventID: ev.ID.String(),
		Message: engine.MessageRef{Platform: Platform, Chat: ev.RoomID.String(), Message: target},
		Person:  c.person(ctx, ev.Sender),
	})
	if err != nil {
		c.log.Warn("seen reaction not taken", "event", ev.ID, "err", err)
		return fmt.Errorf("reaction %s: %w", ev.ID, errUnhandled)
	}
	c.log.Debug("seen reaction", "event", ev.ID, "prompt", target, "notice", n)
	return nil
}

// errUnhandled is the error of an event the engine could not handle: it
// could not reach the store.
var errUnhandled = fmt.Errorf("the engine could not handle it")

// replyTarget is the event a message answers: the thread's root for a
// thread reply, else the event of its rich reply; "" for neither.
func replyTarget(ev *event.Event) string {
	rel, _ := ev.Content.Raw[keyRelatesTo].(map[string]any)
	if rel == nil {
		return ""
	}
	if rel["rel_type"] == relThread {
		root, _ := rel["event_id"].(string)
		return root
	}
	if r, ok := rel["m.in_reply_to"].(map[string]any); ok {
		target, _ := r["event_id"].(string)
		return target
	}
	return ""
}

// stripFallback takes the quoted fallback of a rich reply ("> <@a:b>
// …" lines and the blank line after them) off a body.
func stripFallback(body string) string {
	if !strings.HasPrefix(body, "> ") {
		return body
	}
	lines := strings.Split(body, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "> ") {
		i++
	}
	return strings.TrimSpace(strings.Join(lines[i:], "\n"))
}

// tell posts words as a notice in the thread of event anchor in room,
// retrying on its own (engine.PostOwn); a failure is logged.
func (c *Channel) tell(ctx context.Context, room, anchor, words string) {
	err := engine.PostOwn(ctx, func(ctx context.Context) error {
		_, err := c.send(ctx, room, typeMessage, "", noticeContent(anchor, words))
		return err
	})
	if err != nil {
		c.log.Warn("notice not posted", "room", room, "err", err)
	}
}

// names caches display names by user id.
type names struct {
	mu sync.Mutex
	m  map[id.UserID]string
}

// person is the sender as the engine knows people: platform matrix, the
// user id, the display name (read once from the profile, "" if unset).
func (c *Channel) person(ctx context.Context, user id.UserID) askbridge.Person {
	c.names.mu.Lock()
	name, ok := c.names.m[user]
	c.names.mu.Unlock()
	if !ok {
		if resp, err := c.cli.GetDisplayName(ctx, user); err == nil {
			name = resp.DisplayName
		}
		c.names.mu.Lock()
		c.names.m[user] = name
		c.names.mu.Unlock()
	}
	return askbridge.Person{Platform: Platform, ID: user.String(), Name: name}
}

// onInvite joins a room the bot is invited to when its server is one of
// Config.AutoJoinServers; other invitations are left alone.
func (c *Channel) onInvite(ctx context.Context, room id.RoomID, _ *mautrix.SyncInvitedRoom) {
	server := room.String()
	if i := strings.Index(server, ":"); i >= 0 {
		server = server[i+1:]
	}
	for _, s := range c.cfg.AutoJoinServers() {
		if strings.EqualFold(s, server) {
			if _, err := c.cli.JoinRoomByID(ctx, room); err != nil {
				c.log.Warn("auto-join failed", "room", room, "err", err)
				return
			}
			c.log.Info("joined on invitation", "room", room)
			return
		}
	}
	c.log.Info("invitation ignored: its server is not in autoJoin", "room", room)
}
