package discord

import (
	"context"
	"log/slog"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// handleTimeout bounds the handling of one event; an interaction token
// lives 15 minutes, so follow-ups still work after a slow engine.
const handleTimeout = 30 * time.Second

// knownCustomID checks a button's custom_id before the engine sees it: at
// most 100 characters (Discord's limit) and a payload this bridge makes (a
// question's or keep button's, or a standing answer's Revoke).
func knownCustomID(id string) bool {
	if id == "" || len(id) > maxCustomID {
		return false
	}
	if _, err := askbridge.DecodeRevokePayload(id); err == nil {
		return true
	}
	_, err := askbridge.DecodePayload(id)
	return err == nil
}

func person(u *discordgo.User) askbridge.Person {
	name := u.GlobalName
	if name == "" {
		name = u.Username
	}
	return askbridge.Person{Platform: Platform, ID: u.ID, Name: name}
}

// onInteraction answers a button press. Discord wants a first response
// within 3 seconds: the engine gets AckAfter to decide; when it is slower
// (Redis slow), the press is acknowledged with a deferred update (type 6),
// which leaves the message as it is, and answered afterwards (respond).
// When the engine could not handle the press (NoticeTryAgain: Redis could
// not be reached, or the inbox panicked) the presser is told privately to
// try again; the engine has forgotten the press, so Discord's delivery of
// it to another session is handled.
func (c *Channel) onInteraction(ctx context.Context, in engine.Inbox, i *discordgo.Interaction) {
	if i == nil || i.Type != discordgo.InteractionMessageComponent || i.Message == nil || i.Token == "" || i.ID == "" {
		return
	}
	data, ok := i.Data.(discordgo.MessageComponentInteractionData)
	if !ok {
		return
	}
	var u *discordgo.User
	switch {
	case i.Member != nil && i.Member.User != nil:
		u = i.Member.User
	case i.User != nil:
		u = i.User
	default:
		return
	}
	if i.AppID == "" {
		i.AppID = c.appIDValue()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	log := c.log.With("interaction", i.ID, "chat", i.ChannelID, "message", i.Message.ID, "by", u.ID)
	log.Debug("discord: button press")

	if !knownCustomID(data.CustomID) {
		// The engine never sees this press, so it is deduplicated here
		// (under the engine's key for presses).
		if first, err := c.coord.FirstSeen(ctx, Platform, "tap:"+i.ID, engine.DedupeTTL); err == nil && !first {
			return
		}
		log.Warn("discord: press with a custom_id this bridge did not make")
		c.respond(ctx, log, i, false, engine.TapReply{Notice: engine.NoticeUnknown, Locale: in.Locale()})
		return
	}
	// Remembered before the engine sees it: the finisher may want to edit
	// the message through it while the engine still answers (Finish).
	c.presses.add(i.Message.ID, i, time.Now())
	replies := make(chan engine.TapReply, 1)
	go func() {
		// A panic in the inbox still answers the press: try again.
		r := engine.TapReply{Notice: engine.NoticeTryAgain, Locale: in.Locale()}
		defer func() { replies <- r }()
		defer recovered(log, c.cfg.Panicked, "tap")
		r = in.Tap(ctx, engine.Tap{
			EventID: i.ID,
			Message: engine.MessageRef{Platform: Platform, Chat: i.ChannelID, Message: i.Message.ID},
			Person:  person(u),
			Payload: data.CustomID,
		})
	}()
	t := time.NewTimer(c.cfg.AckAfter)
	defer t.Stop()
	var r engine.TapReply
	deferred := false
	select {
	case r = <-replies:
	case <-t.C:
		deferred = true
		err := c.rest.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, discordgo.WithContext(ctx))
		if err != nil && restCode(err) != codeAlreadyAcked {
			log.Warn("discord: deferred acknowledgement", "err", c.classify("acknowledge", err))
		}
		r = <-replies
	}
	if !r.Ended {
		c.presses.drop(i.Message.ID, i)
	}
	if r.Action == engine.TapDuplicate {
		// Another session got the same press and answers it.
		return
	}
	c.respond(ctx, log, i, deferred, r)
}

// respond answers a press; the presser always gets the notice privately
// (a type 4 ephemeral message, or an ephemeral follow-up once the press was
// acknowledged). The channel never edits the pressed message itself: a
// press that ended the question leaves every message, the pressed one
// included, to the engine's finisher, so each message is edited once per
// press. A press on a question that had already ended (r.Ended) is
// acknowledged with a deferred update (type 6) and the notice follows:
// the finisher makes sure the pressed message shows the end, and Finish
// edits it through that press should the channel refuse the bot. The
// notice is r.Text(), in the question's language; TapOpenReply does
// nothing more (Discord has no reply box: caps.ReplyBox is false, so the
// planner makes no "Other…" button).
func (c *Channel) respond(ctx context.Context, log *slog.Logger, i *discordgo.Interaction, deferred bool, r engine.TapReply) {
	notice := escape(r.Text())
	ephemeral := func() {
		_, err := c.rest.FollowupMessageCreate(i, false, &discordgo.WebhookParams{
			Content: notice, Flags: discordgo.MessageFlagsEphemeral | noEmbeds, AllowedMentions: noPings(),
		}, discordgo.WithContext(ctx))
		if err != nil {
			log.Warn("discord: ephemeral follow-up", "err", c.classify("follow up", err))
		}
	}
	if r.Ended && !deferred {
		// Acknowledged with a deferred update, which keeps the pressed
		// message as the press's @original (Finish may edit through it).
		err := c.rest.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, discordgo.WithContext(ctx))
		if err == nil || restCode(err) == codeAlreadyAcked {
			deferred = true
		} else {
			log.Warn("discord: deferred acknowledgement", "err", c.classify("acknowledge", err))
		}
	}
	if deferred {
		if r.Ended && i.Message != nil {
			c.presses.acked(i.Message.ID, i)
		}
		ephemeral()
		return
	}
	err := c.rest.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: notice, Flags: discordgo.MessageFlagsEphemeral | noEmbeds, AllowedMentions: noPings()},
	}, discordgo.WithContext(ctx))
	if err != nil {
		if restCode(err) == codeAlreadyAcked {
			ephemeral()
			return
		}
		log.Warn("discord: ephemeral notice", "err", c.classify("acknowledge", err))
	}
}

// onMessage hands a text message to the engine and posts its answer, if
// any, as a reply: a correction, or, when the engine could not reach
// Redis, a request to try again (Discord has no ephemeral message outside
// an interaction, so it is a reply the channel sees).
func (c *Channel) onMessage(ctx context.Context, in engine.Inbox, m *discordgo.Message) {
	if m == nil || m.Author == nil || m.ID == "" || m.ChannelID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	me := c.me.Load()
	r := engine.TextReply{
		EventID: m.ID,
		Message: engine.MessageRef{Platform: Platform, Chat: m.ChannelID, Message: m.ID},
		Person:  person(m.Author),
		Text:    m.Content,
		FromBot: m.Author.Bot || (me != nil && m.Author.ID == me.ID),
	}
	if m.MessageReference != nil && m.MessageReference.MessageID != "" && m.MessageReference.Type != discordgo.MessageReferenceTypeForward {
		r.ReplyTo = m.MessageReference.MessageID
	}
	out := in.Reply(ctx, r)
	if out.Respond == "" {
		return
	}
	if err := c.Notify(ctx, m.ChannelID, m.ID, out.Respond); err != nil {
		c.log.Warn("discord: answer a reply", "chat", m.ChannelID, "message", m.ID, "err", err)
	}
}
