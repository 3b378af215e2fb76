package telegram

import (
	"context"

	"github.com/askbridge/askbridge/engine"
	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// Update edits message ref, part ref.Part of an open prompt, to show p:
// the part's text exactly as Send would post it now (p.Notes on the last
// part, such as "Seen by Alice") and, on the last part, p's buttons (the
// Seen button gone once someone pressed it). The notes never move a line
// to another part, so the message keeps its part. Telegram's "message is
// not modified" (it shows p already) is success, and so is a message that
// is gone. One try: any other refusal is a *engine.SendError, as
// Finish's are (a 429 with its retry_after). Safe to repeat; blocks while
// the chat is paced.
func (c *Channel) Update(ctx context.Context, ref engine.MessageRef, p engine.Plan) error {
	msgID, err := messageID(ref)
	if err != nil {
		return err
	}
	parts := promptParts(p)
	if ref.Part < 0 || ref.Part >= len(parts) {
		return noSuchPart(ref, p)
	}
	params := &bot.EditMessageTextParams{
		ChatID: chatID(ref.Chat), MessageID: msgID, Text: parts[ref.Part], ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
	}
	// An edit without reply_markup leaves a message without buttons, as
	// Send posts every part but the last.
	if kb := keyboard(p); kb != nil && ref.Part == len(parts)-1 {
		params.ReplyMarkup = kb
	}
	return c.editText(ctx, "update", p.ID, ref, params)
}

// Remind posts text (plain; escaped here) in the chat of prompt as a reply
// to it, which notifies the chat, and returns the message it posted
// (Platform, Chat and Message; the engine sets Part and Place). A prompt
// that is gone does not stop it (allow_sending_without_reply); link
// previews are off. One try: a refusal is a *engine.SendError. Blocks
// while the chat is paced. Not safe to repeat.
func (c *Channel) Remind(ctx context.Context, prompt engine.MessageRef, text string) (engine.MessageRef, error) {
	msg, err := c.postText(ctx, prompt.Chat, prompt.Message, text)
	if err != nil {
		return engine.MessageRef{}, err
	}
	return refOf(msg), nil
}

// Delete deletes message ref, which the bot posted (a reminder). A message
// already gone ("message to delete not found") is success. Telegram lets a
// bot delete its own messages for 48 hours: an older one ("message can't
// be deleted") is a Permanent *engine.SendError, like any other refusal
// the same request would get again. One try; safe to repeat; blocks while
// the chat is paced.
func (c *Channel) Delete(ctx context.Context, ref engine.MessageRef) error {
	msgID, err := messageID(ref)
	if err != nil {
		return err
	}
	err = c.call(ctx, "delete message", ref.Chat, func(ctx context.Context) error {
		_, err := c.bot.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: chatID(ref.Chat), MessageID: msgID})
		return err
	})
	if hasDescription(err, deleteNotFound) {
		c.log.Debug("message to delete is gone", "chat", ref.Chat, "message", ref.Message)
		return nil
	}
	return err
}
