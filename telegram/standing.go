package telegram

import (
	"context"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/askbridge/askbridge/engine"
)

// Standing answers (ask-user.md §9) on Telegram: the offer to keep an
// answer is the inline keyboard of the ended message (Finish shows
// Ending.Offer, RemoveOffer edits it away); a standing answer is shown by
// a message of its own in the chat it was kept in, with a Revoke button.
// Their taps are callback queries like any other: the engine decides and
// the notice is answered to the tapper alone.

var (
	_ engine.OfferShower    = (*Channel)(nil)
	_ engine.StandingShower = (*Channel)(nil)
)

// RemoveOffer edits message ref of an ended question to show end without
// the offer to keep its answer: what Finish shows. One try (a refusal is
// a *engine.SendError); safe to repeat; blocks while the chat is paced.
func (c *Channel) RemoveOffer(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	end.Offer = nil
	return c.Finish(ctx, ref, end)
}

// ShowStanding posts the message of standing answer s in the chat it was
// kept in, with its Revoke button, and returns it. One try (a refusal is
// a *engine.SendError); not safe to repeat (it posts again); blocks while
// the chat is paced.
func (c *Channel) ShowStanding(ctx context.Context, s engine.StandingAnswer) (engine.MessageRef, error) {
	v := engine.ViewStanding(s, engine.StandingKept, Capabilities)
	params := &bot.SendMessageParams{
		ChatID: chatID(s.Target.Chat), Text: esc(v.Text), ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
	}
	if kb := rowsKeyboard(v.Rows); kb != nil {
		params.ReplyMarkup = kb
	}
	msg, err := c.sendMessage(ctx, s.Target.Chat, params)
	if err != nil {
		return engine.MessageRef{}, err
	}
	return refOf(msg), nil
}

// EditStanding edits the message ref of standing answer s to show it in
// state: its use count, or that it was revoked or ended (the Revoke
// button then gone). One try (a refusal is a *engine.SendError); safe to
// repeat ("not modified" is success); blocks while the chat is paced.
func (c *Channel) EditStanding(ctx context.Context, ref engine.MessageRef, s engine.StandingAnswer, state engine.StandingState) error {
	msgID, err := messageID(ref)
	if err != nil {
		return err
	}
	v := engine.ViewStanding(s, state, Capabilities)
	params := &bot.EditMessageTextParams{
		ChatID: chatID(ref.Chat), MessageID: msgID, Text: esc(v.Text), ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		ReplyMarkup:        noKeyboard,
	}
	if kb := rowsKeyboard(v.Rows); kb != nil {
		params.ReplyMarkup = kb
	}
	return c.editText(ctx, "edit standing answer", s.Key, ref, params)
}
