package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/engine"
)

// Standing answers (ask-user.md §9) on Discord: the offer to keep an
// answer is the keep buttons of the ended message (Finish shows
// Ending.Offer, RemoveOffer edits them away); a standing answer is shown
// by a message of its own in the channel or DM it was kept in, with a
// Revoke button. Their presses are interactions like any other: the
// engine decides and the presser alone sees the notice (ephemeral).

var (
	_ engine.OfferShower    = (*Channel)(nil)
	_ engine.StandingShower = (*Channel)(nil)
)

// RemoveOffer edits message ref of an ended question to show end without
// the offer to keep its answer: what Finish shows. One PATCH (a refusal
// is a *engine.SendError); safe to repeat and to call concurrently.
func (c *Channel) RemoveOffer(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	end.Offer = nil
	return c.Finish(ctx, ref, end)
}

// ShowStanding posts the message of standing answer s in the channel it
// was kept in (opening the DM for "@<user id>"), escaped, pinging no one,
// with its Revoke button, and returns it. One try (a refusal is a
// *engine.SendError); not safe to repeat (it posts again); safe for
// concurrent use.
func (c *Channel) ShowStanding(ctx context.Context, s engine.StandingAnswer) (engine.MessageRef, error) {
	channelID, err := c.resolveChat(ctx, s.Target.Chat)
	if err != nil {
		return engine.MessageRef{}, err
	}
	v := engine.ViewStanding(s, engine.StandingKept, caps)
	ms := &discordgo.MessageSend{
		Content: cutTo(escape(v.Text), maxContent), AllowedMentions: noPings(), Flags: noEmbeds,
		Components: rowsComponents(v.Rows),
	}
	m, err := c.post(ctx, channelID, ms, "")
	if err != nil {
		return engine.MessageRef{}, c.classify("send standing answer", err)
	}
	return engine.MessageRef{Platform: Platform, Chat: channelID, Message: m.ID}, nil
}

// EditStanding edits message ref of standing answer s to show it in
// state: its use count, or that it was revoked or ended (the Revoke
// button then gone), in one PATCH. Safe to repeat and to call
// concurrently; a deleted message or channel counts as success. A
// refusal is a *engine.SendError.
func (c *Channel) EditStanding(ctx context.Context, ref engine.MessageRef, s engine.StandingAnswer, state engine.StandingState) error {
	v := engine.ViewStanding(s, state, caps)
	comps := []discordgo.MessageComponent{}
	comps = append(comps, rowsComponents(v.Rows)...)
	return c.edit(ctx, ref, s.Key, cutTo(escape(v.Text), maxContent), comps)
}
